// The CreditsWallet console: plain JavaScript over the JSON API, with the signed-in key's own
// permissions (the API checks every call; the console only hides what the role cannot do).
// The key lives in this tab's sessionStorage: never in a URL, a cookie or localStorage.
"use strict";

const storageKey = "creditswallet.apiKey";
const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

const state = { me: null, player: null, historyCursor: null };

// ---- The API -------------------------------------------------------------------------------

class Problem extends Error {
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

async function api(method, path, { body, idempotencyKey } = {}) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(storageKey);
  if (key) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "omit", cache: "no-store" });
  } catch (error) {
    throw new Problem(0, "network", "the server could not be reached; try again (a retry never applies anything twice)");
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    throw new Problem(response.status, data && data.code || "http_" + response.status, data && data.detail || "HTTP " + response.status);
  }
  return { data, replayed: response.headers.get("Idempotent-Replayed") === "true", status: response.status };
}

// ---- Showing errors next to their field ------------------------------------------------------

function clearErrors(form) {
  $$(".field-error", form).forEach((node) => node.remove());
  $$("[aria-invalid]", form).forEach((node) => { node.removeAttribute("aria-invalid"); node.removeAttribute("aria-describedby"); });
  const formError = $(".error", form);
  if (formError) formError.textContent = "";
}

/// The problem's detail beside the field it names (by the field's `data-field` words), else
/// under the form.
function showProblem(form, problem) {
  const detail = problem instanceof Problem ? problem.detail : String(problem);
  const lower = detail.toLowerCase();
  const field = $$("[data-field]", form).find((input) => lower.includes(input.dataset.field));
  if (field) {
    const message = document.createElement("p");
    message.className = "field-error";
    message.id = field.id + "-error";
    message.textContent = detail;
    field.setAttribute("aria-invalid", "true");
    field.setAttribute("aria-describedby", message.id);
    field.insertAdjacentElement("afterend", message);
    field.focus();
  } else {
    $(".error", form).textContent = detail;
  }
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  return td;
}

function signed(amount) {
  return (amount > 0 ? "+" : "") + amount;
}

// ---- Signing in and out --------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const key = $("#api-key").value.trim();
  if (!key) return showProblem(form, "enter an API key");
  sessionStorage.setItem(storageKey, key);
  try {
    const { data } = await api("GET", "/v1/me");
    if (data.role === "service") {
      sessionStorage.removeItem(storageKey);
      return showProblem(form, "a service key is for game backends; sign in with a support, auditor or admin key");
    }
    $("#api-key").value = "";
    showSignedIn(data);
  } catch (problem) {
    sessionStorage.removeItem(storageKey);
    showProblem(form, problem);
  }
}

function signOut() {
  sessionStorage.removeItem(storageKey);
  state.me = null;
  state.player = null;
  $("#who").hidden = true;
  $("#sign-out").hidden = true;
  $("#tabs").hidden = true;
  $$(".tab").forEach((tab) => { tab.hidden = true; });
  $("#player").hidden = true;
  $$("tbody").forEach((body) => body.replaceChildren());
  $$("form").forEach((form) => { form.reset(); clearErrors(form); $$(".result", form).forEach((node) => { node.textContent = ""; }); });
  $("#sign-in-section").hidden = false;
  $("#api-key").focus();
}

function showSignedIn(me) {
  state.me = me;
  $("#who-name").textContent = me.name;
  $("#who-role").textContent = me.role;
  $("#who").hidden = false;
  $("#sign-out").hidden = false;
  $("#sign-in-section").hidden = true;
  $("#tabs").hidden = false;
  // What the role cannot do is not shown (the API refuses it anyway).
  $$("[data-roles]").forEach((node) => {
    node.hidden = !node.dataset.roles.split(" ").includes(me.role);
  });
  const first = $$("#tabs button").find((button) => !button.hidden);
  if (first) openTab(first.dataset.tab);
}

function openTab(id) {
  $$(".tab").forEach((tab) => { tab.hidden = tab.id !== id; });
  $$("#tabs button").forEach((button) => {
    if (button.dataset.tab === id) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  });
  if (id === "audit-section") refreshHead();
  if (id === "admin-section") { loadKeys(); loadProducts(); }
}

// ---- Players: balances, history, adjustments -------------------------------------------------

async function findPlayer(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const id = $("#player-id").value.trim();
  if (!id) return showProblem(form, "enter a player id");
  try {
    await showPlayer(id);
  } catch (problem) {
    showProblem(form, problem);
  }
}

async function showPlayer(id) {
  const { data } = await api("GET", "/v1/wallets/" + encodeURIComponent(id));
  state.player = id;
  $("#player-name").textContent = id;
  const rows = Object.entries(data.balances).sort(([a], [b]) => a.localeCompare(b)).map(([currency, balance]) => {
    const row = document.createElement("tr");
    row.append(cell(currency), cell(balance, "amount"));
    return row;
  });
  $("#balances tbody").replaceChildren(...rows);
  $("#player").hidden = false;
  await loadHistory(false);
}

async function loadHistory(more) {
  const form = $("#history-form");
  clearErrors(form);
  const query = new URLSearchParams({ limit: "20" });
  const kind = $("#history-kind").value;
  const from = $("#history-from").value.trim();
  const to = $("#history-to").value.trim();
  if (kind) query.set("kind", kind);
  if (from) query.set("from", from);
  if (to) query.set("to", to);
  if (more && state.historyCursor) query.set("after", state.historyCursor);
  try {
    const { data } = await api("GET", "/v1/wallets/" + encodeURIComponent(state.player) + "/transactions?" + query);
    const rows = data.transactions.map((transaction) => {
      const row = document.createElement("tr");
      const detail = transaction.reason_code ? transaction.reason_code + ": " + (transaction.note || "") + (transaction.ticket ? " (" + transaction.ticket + ")" : "")
        : transaction.product_id || transaction.note || "";
      row.append(cell(transaction.seq), cell(transaction.created_at), cell(transaction.kind), cell(signed(transaction.amount) + " " + transaction.currency, "amount"),
        cell(transaction.actor), cell(detail));
      return row;
    });
    if (more) $("#history tbody").append(...rows);
    else $("#history tbody").replaceChildren(...rows);
    state.historyCursor = data.next || null;
    $("#history-more").hidden = !state.historyCursor;
  } catch (problem) {
    showProblem(form, problem);
  }
}

/// One idempotency key per filled-in form: a double click, or a retry after a network error,
/// sends the same key and never adjusts twice; changing the form after an answer starts a new one.
const adjustment = { key: crypto.randomUUID(), answered: false };

function adjustFormChanged() {
  if (adjustment.answered) {
    adjustment.key = crypto.randomUUID();
    adjustment.answered = false;
    $("#adjust-form .result").textContent = "";
  }
}

async function adjust(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const amountText = $("#adjust-amount").value.trim();
  if (!/^[+-]?\d+$/.test(amountText)) return showProblem(form, "the amount must be a whole number, such as 50 or -20");
  const body = { amount: Number(amountText), reason_code: $("#adjust-reason").value.trim(), note: $("#adjust-note").value.trim() };
  const ticket = $("#adjust-ticket").value.trim();
  if (ticket) body.ticket = ticket;
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const { data, replayed } = await api("POST", "/v1/wallets/" + encodeURIComponent(state.player) + "/adjustments", { body, idempotencyKey: adjustment.key });
    adjustment.answered = true;
    $(".result", form).textContent = (replayed ? "Already applied: " : "Adjusted: ") + signed(data.transaction.amount) + " " + data.transaction.currency
      + " (seq " + data.transaction.seq + "); the balance is " + data.balance + ".";
    await showPlayer(state.player);
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    button.disabled = false;
  }
}

// ---- Audit ---------------------------------------------------------------------------------

async function refreshHead() {
  try {
    const { data } = await api("GET", "/v1/ledger/head");
    $("#head-seq").textContent = data.seq;
    $("#head-hash").textContent = data.hash;
    $("#head-at").textContent = data.at || "";
  } catch (problem) {
    $("#verify-result").textContent = problem.detail;
  }
}

async function verifyLedger() {
  const button = $("#verify");
  const result = $("#verify-result");
  button.disabled = true;
  result.textContent = "Verifying…";
  try {
    const { data } = await api("GET", "/v1/ledger/verify");
    result.textContent = data.ok ? "OK: " + data.transactions + " transactions, head hash " + data.head_hash
      : "Broken: the first bad seq is " + data.first_bad_seq;
  } catch (problem) {
    result.textContent = problem.detail;
  } finally {
    button.disabled = false;
  }
}

/// Exports stream to disk through a one-time link (a link carries no Authorization header, and
/// the key never goes in a URL): the page never holds the export.
async function downloadExport(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  $(".result", form).textContent = "";
  const body = { format: $("#export-format").value };
  const from = $("#export-from").value.trim();
  const to = $("#export-to").value.trim();
  if (from) body.from = from;
  if (to) body.to = to;
  try {
    const { data } = await api("POST", "/v1/ledger/export/links", { body });
    const link = document.createElement("a");
    link.href = data.url;
    link.download = "";
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    $(".result", form).textContent = "The export is downloading (ledger." + body.format + ").";
  } catch (problem) {
    showProblem(form, problem);
  }
}

// ---- Admin: keys and catalog -----------------------------------------------------------------

async function loadKeys() {
  try {
    const { data } = await api("GET", "/v1/keys");
    $("#keys tbody").replaceChildren(...data.keys.map((key) => {
      const row = document.createElement("tr");
      const action = document.createElement("td");
      if (!key.revoked_at) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = "Revoke";
        button.setAttribute("aria-label", "Revoke " + key.name);
        button.addEventListener("click", () => revokeKey(key));
        action.append(button);
      }
      row.append(cell(key.id), cell(key.name), cell(key.role), cell(key.created_at), cell(key.revoked_at || ""), action);
      return row;
    }));
  } catch (problem) {
    showProblem($("#key-form"), problem);
  }
}

async function revokeKey(key) {
  if (!window.confirm("Revoke the key " + key.name + "? Callers using it are refused within a second.")) return;
  try {
    await api("POST", "/v1/keys/" + encodeURIComponent(key.id) + "/revoke");
  } catch (problem) {
    showProblem($("#key-form"), problem);
  }
  await loadKeys();
}

async function createKey(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  $("#key-secret").textContent = "";
  try {
    const { data } = await api("POST", "/v1/keys", { body: { name: $("#key-name").value.trim(), role: $("#key-role").value } });
    $("#key-secret").textContent = "The secret of " + data.key.name + ", shown this once: " + data.secret;
    form.reset();
    await loadKeys();
  } catch (problem) {
    showProblem(form, problem);
  }
}

async function loadProducts() {
  try {
    const { data } = await api("GET", "/v1/products");
    $("#products tbody").replaceChildren(...data.products.map((product) => {
      const row = document.createElement("tr");
      const action = document.createElement("td");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = product.active ? "Deactivate" : "Activate";
      button.setAttribute("aria-label", button.textContent + " " + product.product_id);
      button.addEventListener("click", () => setProduct(product.product_id, { credits: product.credits, currency: product.currency, active: !product.active }));
      action.append(button);
      row.append(cell(product.product_id), cell(product.credits, "amount"), cell(product.currency), cell(product.active ? "yes" : "no"), action);
      return row;
    }));
  } catch (problem) {
    showProblem($("#product-form"), problem);
  }
}

async function setProduct(id, body) {
  await api("PUT", "/v1/products/" + encodeURIComponent(id), { body });
  await loadProducts();
}

async function addProduct(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const credits = $("#product-credits").value.trim();
  if (!/^\d+$/.test(credits)) return showProblem(form, "credits must be a whole number");
  try {
    await setProduct($("#product-id").value.trim(), { credits: Number(credits), currency: $("#product-currency").value.trim() || "credits" });
    form.reset();
  } catch (problem) {
    showProblem(form, problem);
  }
}

// ---- Wiring --------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", async () => {
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", signOut);
  $$("#tabs button").forEach((button) => button.addEventListener("click", () => openTab(button.dataset.tab)));
  $("#find-form").addEventListener("submit", findPlayer);
  $("#history-form").addEventListener("submit", (event) => { event.preventDefault(); loadHistory(false); });
  $("#history-more").addEventListener("click", () => loadHistory(true));
  $("#adjust-form").addEventListener("submit", adjust);
  $("#adjust-form").addEventListener("input", adjustFormChanged);
  $("#head-refresh").addEventListener("click", refreshHead);
  $("#verify").addEventListener("click", verifyLedger);
  $("#export-form").addEventListener("submit", downloadExport);
  $("#key-form").addEventListener("submit", createKey);
  $("#product-form").addEventListener("submit", addProduct);
  // A reload of a signed-in tab stays signed in; a new tab starts signed out.
  if (sessionStorage.getItem(storageKey)) {
    try {
      const { data } = await api("GET", "/v1/me");
      showSignedIn(data);
    } catch {
      signOut();
    }
  }
});
