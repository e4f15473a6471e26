// The JSON API, called with the signed-in key like any client: the API checks every call, and
// the console only hides what the role cannot do. The key lives in this tab's sessionStorage:
// never in a URL, a cookie or localStorage.

const storageKey = "creditswallet.apiKey";

export const session = {
  key: () => sessionStorage.getItem(storageKey),
  remember: (key) => sessionStorage.setItem(storageKey, key),
  forget: () => sessionStorage.removeItem(storageKey),
};

/// A refusal: the problem document's `code` and `detail`, and its `errors` (one per request field
/// it names, `{field, detail}`) when it has them.
export class Problem extends Error {
  constructor(status, code, detail, errors = []) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.errors = errors;
  }

  /// A refusal the page makes itself, about one field, before asking the API.
  static field(field, detail) {
    return new Problem(0, "invalid_request", detail, [{ field, detail }]);
  }
}

/// The `errors` of a problem document, keeping only well-formed entries.
function fieldErrors(data) {
  if (!data || !Array.isArray(data.errors)) return [];
  return data.errors.filter((entry) => entry && typeof entry.field === "string" && typeof entry.detail === "string");
}

export async function api(method, path, { body, idempotencyKey } = {}) {
  const headers = { Accept: "application/json" };
  const key = session.key();
  if (key) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "omit", cache: "no-store" });
  } catch {
    throw new Problem(0, "network", "the server could not be reached; try again (a retry never applies anything twice)");
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    throw new Problem(response.status, (data && data.code) || "http_" + response.status, (data && data.detail) || "HTTP " + response.status, fieldErrors(data));
  }
  return { data, replayed: response.headers.get("Idempotent-Replayed") === "true", status: response.status };
}

/// The path of a wallet's route: the id as one path segment.
export function walletPath(playerID, rest = "") {
  return "/v1/wallets/" + encodeURIComponent(playerID) + rest;
}

let transactionKinds = null;

/// Every transaction kind, from the API's own OpenAPI document (served open), so that a kind the
/// ledger gains shows up here without a list in the page to keep in step.
export async function kinds() {
  if (!transactionKinds) {
    transactionKinds = fetch("/openapi.json", { credentials: "omit" })
      .then((response) => response.json())
      .then((document) => document.components.schemas.TransactionKind.enum.filter((kind) => typeof kind === "string"))
      .catch(() => { transactionKinds = null; return []; });
  }
  return transactionKinds;
}
