// One player's page: balances (with what is held and what expires soon), lots, holds, history
// whose rows open to the whole transaction, and the statement.

import { $, cell, element, row, button, signed, text, facts } from "./dom.js";
import { api, kinds, walletPath, Problem } from "./api.js";
import { clearErrors, showProblem, randomKey, value } from "./forms.js";
import { drawBalance } from "./charts.js";
import { page, roleIn } from "./page.js";
import { loadEntitlements } from "./entitlements.js";

export async function findPlayer(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const id = value("#player-id");
  if (!id) return showProblem(form, Problem.field("player_id", "enter a player id"));
  try {
    await showPlayer(id);
  } catch (problem) {
    showProblem(form, problem);
  }
}

export async function showPlayer(id) {
  const { data } = await api("GET", walletPath(id));
  page.player = id;
  $("#player-name").textContent = id;
  const held = data.held || {};
  const expiring = data.expiring_within_7_days || {};
  const rows = Object.entries(data.balances).sort(([a], [b]) => a.localeCompare(b)).map(([currency, balance]) =>
    row(currency, cell(balance, "amount"), cell(held[currency] || 0, "amount"), cell(expiring[currency] || 0, "amount")));
  $("#balances tbody").replaceChildren(...rows);
  $("#player").hidden = false;
  await Promise.all([loadLots(), loadHolds(), loadEntitlements(), loadHistory(false)]);
}

page.refreshPlayer = () => showPlayer(page.player);

// ---- Lots and holds -----------------------------------------------------------------------------

function lotExpiry(lot) {
  if (!lot.expires_at) return "never";
  return lot.expired ? text(lot.expires_at) + " (expired)" : text(lot.expires_at);
}

async function loadLots() {
  const error = $("#lots-error");
  error.textContent = "";
  try {
    const { data } = await api("GET", walletPath(page.player, "/lots"));
    $("#lots tbody").replaceChildren(...data.lots.map((lot) =>
      row(lot.category, cell(lot.remaining, "amount"), cell(lot.amount, "amount"), lot.currency, lotExpiry(lot), cell(lot.source_seq, "amount"))));
    $("#lots").hidden = data.lots.length === 0;
    $("#lots-none").hidden = data.lots.length !== 0;
  } catch (problem) {
    $("#lots").hidden = true;
    $("#lots-none").hidden = true;
    error.textContent = problem.detail;
  }
}

/// One idempotency key per hold released from this page: a second click sends the same key.
const releaseKeys = new Map();

async function releaseHold(hold, control) {
  if (!window.confirm("Release the hold " + hold.id + "? Its " + hold.amount + " " + hold.currency + " go back to the player's lots.")) return;
  const error = $("#holds-error");
  error.textContent = "";
  if (!releaseKeys.has(hold.id)) releaseKeys.set(hold.id, randomKey());
  control.disabled = true;
  try {
    const { data, replayed } = await api("POST", "/v1/holds/" + encodeURIComponent(hold.id) + "/release", { body: {}, idempotencyKey: releaseKeys.get(hold.id) });
    $("#holds-result").textContent = (replayed ? "Already released: " : "Released: ") + "hold " + data.hold.id + ", " + data.hold.amount + " " + data.hold.currency
      + " (seq " + data.transaction.seq + "); the balance is " + data.balance + ".";
    await page.refreshPlayer();
  } catch (problem) {
    error.textContent = problem.detail;
    control.disabled = false;
  }
}

async function loadHolds() {
  const error = $("#holds-error");
  error.textContent = "";
  try {
    const { data } = await api("GET", walletPath(page.player, "/holds"));
    $("#holds tbody").replaceChildren(...data.holds.map((hold) => {
      const actions = element("td");
      if (hold.status === "open" && roleIn("support")) {
        const control = button("Release", "Release hold " + hold.id, () => releaseHold(hold, control));
        actions.append(control);
      }
      const amount = text(hold.amount) + (hold.captured !== undefined && hold.captured !== null ? " (captured " + hold.captured + ")" : "");
      return row(cell(hold.id, "wrap"), hold.status, cell(amount, "amount"), hold.currency, hold.expires_at, cell(hold.hold_seq, "amount"), actions);
    }));
    $("#holds").hidden = data.holds.length === 0;
    $("#holds-none").hidden = data.holds.length !== 0;
  } catch (problem) {
    $("#holds").hidden = true;
    $("#holds-none").hidden = true;
    error.textContent = problem.status === 403 ? "Holds are not shown to this key: " + problem.detail : problem.detail;
  }
}

// ---- History --------------------------------------------------------------------------------------

/// What a history row says besides its kind and amount: staff's reason, note and ticket, else the
/// product or note; an entitlement entry (whose reason code is in its metadata) says what changed.
function historyDetail(transaction) {
  const metadata = transaction.metadata || {};
  const reasonCode = transaction.reason_code || metadata.reason_code;
  let detail = reasonCode ? reasonCode + ": " + text(transaction.note) + (transaction.ticket ? " (" + transaction.ticket + ")" : "")
    : transaction.product_id || transaction.note || "";
  if (transaction.kind === "entitlement" && metadata.entitlement) {
    detail = text(metadata.change).replaceAll("_", " ") + " " + metadata.entitlement + (detail ? ", " + detail : "");
  }
  return detail;
}

/// The whole transaction as the history row carries it: its fields, postings, metadata and hashes.
function transactionDetail(transaction) {
  const parts = [facts([
    ["Transaction id", transaction.id],
    ["Idempotency key", transaction.idempotency_key, "wrap-text"],
    ["Store", transaction.store],
    ["Store transaction", transaction.store_transaction_id, "wrap-text"],
    ["Product", transaction.product_id, "wrap-text"],
    ["Quantity", transaction.quantity],
    ["Refund of seq", transaction.refund_of_seq],
    ["Uncollected", transaction.uncollected || null],
    ["Reason code", transaction.reason_code],
    ["Note", transaction.note, "wrap-text"],
    ["Ticket", transaction.ticket],
    ["Previous hash", transaction.prev_hash, "hash"],
    ["Hash", transaction.hash, "hash"],
  ])];
  const postings = element("table", { className: "postings" },
    element("caption", { textContent: "Postings of seq " + transaction.seq }),
    element("thead", {}, element("tr", {}, ...["Account", "Currency", "Amount", "Balance after"].map((name) => element("th", { scope: "col", textContent: name })))),
    element("tbody", {}, ...(transaction.postings || []).map((posting) =>
      row(cell(posting.account, "wrap"), posting.currency, cell(signed(posting.amount), "amount"), cell(posting.balance_after, "amount")))));
  parts.push(postings);
  if (transaction.metadata && Object.keys(transaction.metadata).length) {
    parts.push(element("p", { className: "label", textContent: "Metadata" }), element("pre", { className: "metadata", textContent: JSON.stringify(transaction.metadata, null, 2) }));
  }
  return parts;
}

/// A history row and the row under it that opens to the whole transaction (closed at first).
function historyRows(transaction) {
  const detailID = "transaction-" + transaction.seq;
  const detail = element("tr", { className: "transaction-detail", id: detailID, hidden: true });
  const opener = element("button", { type: "button", className: "disclosure" }, element("span", { className: "visually-hidden", textContent: "Transaction " }), text(transaction.seq));
  opener.setAttribute("aria-expanded", "false");
  opener.setAttribute("aria-controls", detailID);
  opener.addEventListener("click", () => {
    const open = opener.getAttribute("aria-expanded") !== "true";
    if (open && detail.childElementCount === 0) {
      const body = element("td", {}, ...transactionDetail(transaction));
      body.colSpan = 6;
      detail.append(body);
    }
    opener.setAttribute("aria-expanded", String(open));
    detail.hidden = !open;
  });
  const summary = row(element("td", {}, opener), transaction.created_at, transaction.kind, cell(signed(transaction.amount) + " " + transaction.currency, "amount"),
    cell(transaction.actor, "wrap"), cell(historyDetail(transaction), "wrap"));
  return [summary, detail];
}

/// The Kind filter offers every kind the ledger has, as the API's own document lists them.
export async function fillKinds() {
  const select = $("#history-kind");
  if (select.options.length > 1) return;
  const all = await kinds();
  select.append(...all.map((kind) => element("option", { value: kind, textContent: kind })));
}

export async function loadHistory(more) {
  const form = $("#history-form");
  clearErrors(form);
  const query = new URLSearchParams({ limit: "20" });
  const kind = $("#history-kind").value;
  const from = value("#history-from");
  const to = value("#history-to");
  if (kind) query.set("kind", kind);
  if (from) query.set("from", from);
  if (to) query.set("to", to);
  if (more && page.historyCursor) query.set("after", page.historyCursor);
  try {
    const { data } = await api("GET", walletPath(page.player, "/transactions?" + query));
    const rows = data.transactions.flatMap(historyRows);
    if (more) $("#history tbody").append(...rows);
    else $("#history tbody").replaceChildren(...rows);
    page.history = more ? page.history.concat(data.transactions) : data.transactions;
    drawBalance($("#balance-chart"), page.history, page.player, "credits");
    page.historyCursor = data.next || null;
    $("#history-more").hidden = !page.historyCursor;
  } catch (problem) {
    showProblem(form, problem);
  }
}

// ---- Statement --------------------------------------------------------------------------------------

export async function showStatement(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const query = new URLSearchParams();
  const from = value("#statement-from");
  const to = value("#statement-to");
  if (from) query.set("from", from);
  if (to) query.set("to", to);
  try {
    const { data } = await api("GET", walletPath(page.player, "/statement?" + query));
    page.statement = data;
    $("#statement-title").textContent = "Statement of " + data.player_id + (data.from ? " from " + data.from : "") + (data.to ? " to " + data.to : "");
    const parts = data.currencies.map((statement) => {
      const head = element("thead", {}, element("tr", {}, ...["Seq", "Time", "Kind", "Amount"].map((name) => element("th", { scope: "col", textContent: name }))));
      const body = element("tbody", {},
        row("", "", "opening balance", cell(statement.opening_balance + " " + statement.currency, "amount")),
        ...statement.transactions.map((transaction) =>
          row(transaction.seq, transaction.created_at, transaction.kind, cell(signed(transaction.amount) + " " + statement.currency, "amount"))),
        row("", "", "closing balance", cell(statement.closing_balance + " " + statement.currency, "amount")));
      return element("table", {}, head, body);
    });
    $("#statement-body").replaceChildren(...parts);
    $("#statement").hidden = false;
  } catch (problem) {
    showProblem(form, problem);
  }
}

/// The statement shown, as CSV: made from what the page already holds (a statement is one
/// player's period, unlike an export).
export function downloadStatement() {
  const data = page.statement;
  if (!data) return;
  const quote = (field) => /[",\n\r]/.test(String(field)) ? "\"" + String(field).replaceAll("\"", "\"\"") + "\"" : String(field);
  const lines = [["currency", "seq", "created_at", "kind", "amount", "balance"].join(",")];
  for (const statement of data.currencies) {
    lines.push([statement.currency, "", data.from || "", "opening_balance", "", statement.opening_balance].map(quote).join(","));
    let balance = statement.opening_balance;
    for (const transaction of statement.transactions) {
      balance += transaction.amount;
      lines.push([statement.currency, transaction.seq, transaction.created_at, transaction.kind, transaction.amount, balance].map(quote).join(","));
    }
    lines.push([statement.currency, "", data.to || "", "closing_balance", "", statement.closing_balance].map(quote).join(","));
  }
  const link = element("a", { href: URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" })), download: "statement-" + data.player_id + ".csv" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}
