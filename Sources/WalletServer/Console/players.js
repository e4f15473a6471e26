// One player's page: balances (with what is held and what expires soon), lots, holds, store
// notifications, history whose rows open to the whole transaction, and the statement.

import { $, cell, element, row, button, signed, text, facts } from "./dom.js";
import { api, kinds, walletPath, Problem } from "./api.js";
import { clearErrors, showProblem, randomKey, submitting, value } from "./forms.js";
import { drawBalance } from "./charts.js";
import { fillPlayerTable, page, roleIn } from "./page.js";
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
  // A purchase refunded since it was opened has new corrections: what was read is read again.
  transactions.clear();
  await Promise.all([loadLots(), loadHolds(), loadEntitlements(), loadNotifications(false), loadHistory(false)]);
}

page.refreshPlayer = () => showPlayer(page.player);

// ---- Lots and holds -----------------------------------------------------------------------------

function lotExpiry(lot) {
  if (!lot.expires_at) return "never";
  return lot.expired ? text(lot.expires_at) + " (expired)" : text(lot.expires_at);
}

async function loadLots() {
  await fillPlayerTable("lots", "/lots", "lots", (lot) =>
    row(lot.category, cell(lot.remaining, "amount"), cell(lot.amount, "amount"), lot.currency, lotExpiry(lot), cell(lot.source_seq, "amount")));
}

/// One idempotency key per hold and reason sent from this page: a second click, or a retry after a
/// network error, sends the same key and never releases twice.
const releaseKeys = new Map();
/// The hold the release form is open for, and the button that opened it (focus returns there).
let releasing = null;

function openRelease(hold, control) {
  const form = $("#release-form");
  clearErrors(form);
  releasing = { hold, control };
  $("#release-what").textContent = "Release the hold " + hold.id + ": its " + hold.amount + " " + hold.currency + " go back to the player's lots.";
  $("#release-reason").value = "";
  form.hidden = false;
  $("#release-reason").focus();
}

export function cancelRelease() {
  $("#release-form").hidden = true;
  // The holds may have been drawn again since: focus goes back to the same hold's button.
  const again = releasing && Array.from(document.querySelectorAll("#holds button")).find((node) => node.getAttribute("aria-label") === "Release hold " + releasing.hold.id);
  if (again) again.focus();
  releasing = null;
}

/// Releases the hold the form is open for, with the reason typed (the ledger keeps it as the
/// release's note).
export function releaseHold(event) {
  event.preventDefault();
  const form = event.currentTarget;
  $("#holds-result").textContent = "";
  return submitting(form, async () => {
    if (!releasing) return;
    const { hold } = releasing;
    const reason = value("#release-reason");
    if (!reason) throw Problem.field("reason", "say why the hold is released: it is kept in the ledger");
    const keyed = hold.id + "\n" + reason;
    if (!releaseKeys.has(keyed)) releaseKeys.set(keyed, randomKey());
    const { data, replayed } = await api("POST", "/v1/holds/" + encodeURIComponent(hold.id) + "/release", { body: { reason }, idempotencyKey: releaseKeys.get(keyed) });
    $("#holds-result").textContent = (replayed ? "Already released: " : "Released: ") + "hold " + data.hold.id + ", " + data.hold.amount + " " + data.hold.currency
      + " (seq " + data.transaction.seq + "); the balance is " + data.balance + ".";
    form.hidden = true;
    releasing = null;
    await page.refreshPlayer();
  });
}

async function loadHolds() {
  const data = await fillPlayerTable("holds", "/holds", "holds", (hold) => {
    const actions = element("td");
    if (hold.status === "open" && roleIn("support")) {
      const control = button("Release", "Release hold " + hold.id, () => openRelease(hold, control));
      actions.append(control);
    }
    const amount = text(hold.amount) + (hold.captured !== undefined && hold.captured !== null ? " (captured " + hold.captured + ")" : "");
    return row(cell(hold.id, "wrap"), hold.status, cell(amount, "amount"), hold.currency, hold.expires_at, cell(hold.hold_seq, "amount"), actions);
  }, (problem) => problem.status === 403 ? "Holds are not shown to this key: " + problem.detail : problem.detail);
  // The form closes with its hold: another player's page, or the hold no longer open.
  if (data && releasing && !data.holds.some((hold) => hold.id === releasing.hold.id && hold.status === "open")) {
    $("#release-form").hidden = true;
    releasing = null;
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

// ---- One transaction, whole -------------------------------------------------------------------------

/// Transactions read whole on this page, by seq: each is asked for once (until the page is drawn again).
const transactions = new Map();

function readTransaction(seq) {
  if (!transactions.has(seq)) {
    const reading = api("GET", "/v1/transactions/" + encodeURIComponent(seq)).then(({ data }) => data);
    reading.catch(() => transactions.delete(seq));
    transactions.set(seq, reading);
  }
  return transactions.get(seq);
}

let disclosures = 0;

/// A button that opens and closes `box` (closed at first, announced by aria-expanded), filling
/// it by `fill` the first time it opens.
function disclosure(opener, box, fill) {
  box.id = box.id || "disclosure-" + (++disclosures);
  box.hidden = true;
  opener.setAttribute("aria-expanded", "false");
  opener.setAttribute("aria-controls", box.id);
  let filled = false;
  opener.addEventListener("click", () => {
    const open = opener.getAttribute("aria-expanded") !== "true";
    opener.setAttribute("aria-expanded", String(open));
    box.hidden = !open;
    if (open && !filled) {
      filled = true;
      fill(box);
    }
  });
  return opener;
}

/// A button naming another transaction (a refund's purchase, a purchase's refund), and the box
/// under it where that transaction opens whole.
function linkedTransaction(seq, label) {
  const box = element("div", { className: "linked-transaction" });
  const opener = element("button", { type: "button", className: "disclosure" }, label + " " + text(seq));
  disclosure(opener, box, (into) => fillTransaction(into, seq, null));
  return element("li", {}, opener, box);
}

/// Fills `box` with the transaction at `seq` as the API answers it whole; when it cannot be read,
/// with what the history row carries (`carried`), and why.
async function fillTransaction(box, seq, carried) {
  box.replaceChildren(element("p", { className: "hint", textContent: "Reading seq " + text(seq) + "…" }));
  try {
    box.replaceChildren(...transactionDetail(await readTransaction(seq)));
  } catch (problem) {
    const why = element("p", { className: "error", textContent: "The whole transaction could not be read: " + problem.detail });
    box.replaceChildren(why, ...(carried ? transactionParts(carried) : []));
  }
}

/// The transaction's fields, postings and metadata.
function transactionParts(transaction) {
  const parts = [facts([
    ["Seq", transaction.seq],
    ["Kind", transaction.kind],
    ["Player", transaction.player_id, "wrap-text"],
    ["Time", transaction.created_at],
    ["Actor", transaction.actor, "wrap-text"],
    ["Transaction id", transaction.id],
    ["Idempotency key", transaction.idempotency_key, "wrap-text"],
    ["Store", transaction.store],
    ["Store transaction", transaction.store_transaction_id, "wrap-text"],
    ["Product", transaction.product_id, "wrap-text"],
    ["Quantity", transaction.quantity],
    ["Uncollected", transaction.uncollected || null],
    ["Reason code", transaction.reason_code, "wrap-text"],
    ["Note", transaction.note, "wrap-text"],
    ["Ticket", transaction.ticket, "wrap-text"],
    ["Previous hash", transaction.prev_hash, "hash"],
    ["Hash", transaction.hash, "hash"],
  ])];
  parts.push(element("table", { className: "postings" },
    element("caption", { textContent: "Postings of seq " + text(transaction.seq) }),
    element("thead", {}, element("tr", {}, ...["Account", "Currency", "Amount", "Balance after"].map((name) => element("th", { scope: "col", textContent: name })))),
    element("tbody", {}, ...(transaction.postings || []).map((posting) =>
      row(cell(posting.account, "wrap"), posting.currency, cell(signed(posting.amount), "amount"), cell(posting.balance_after, "amount"))))));
  if (transaction.metadata && Object.keys(transaction.metadata).length) {
    parts.push(element("p", { className: "label", textContent: "Metadata" }), element("pre", { className: "metadata", textContent: JSON.stringify(transaction.metadata, null, 2) }));
  }
  return parts;
}

/// The whole transaction as GET /v1/transactions/{seq} answers it: its fields, the purchase it
/// corrects or the refunds correcting it (each opens in turn), postings, lot draws and metadata.
function transactionDetail(detail) {
  const transaction = detail.transaction;
  const parts = transactionParts(transaction);
  const links = [];
  if (transaction.refund_of_seq !== undefined && transaction.refund_of_seq !== null) {
    links.push(linkedTransaction(transaction.refund_of_seq, "Purchase seq"));
  }
  for (const seq of detail.corrections || []) links.push(linkedTransaction(seq, "Refund or reversal seq"));
  if (links.length) {
    const said = transaction.refund_of_seq !== undefined && transaction.refund_of_seq !== null ? "Corrects the purchase" : "Refunds and reversals of this purchase";
    parts.splice(1, 0, element("p", { className: "label", textContent: said }), element("ul", { className: "links" }, ...links));
  }
  const draws = detail.lot_draws || [];
  if (draws.length) {
    parts.push(element("table", { className: "lot-draws" },
      element("caption", { textContent: "Lots drawn by seq " + text(transaction.seq) + " (a negative amount went back to the lot)" }),
      element("thead", {}, element("tr", {}, ...["Lot", "Category", "Source seq", "Expires", "Amount"].map((name) => element("th", { scope: "col", textContent: name })))),
      element("tbody", {}, ...draws.map((draw) =>
        row(cell(draw.lot_id, "amount"), draw.category, cell(draw.source_seq, "amount"), draw.expires_at || "never", cell(draw.amount, "amount"))))));
  }
  return parts;
}

/// A history row and the row under it that opens to the whole transaction (closed at first).
function historyRows(transaction) {
  const detail = element("tr", { className: "transaction-detail", id: "transaction-" + transaction.seq });
  const body = element("td");
  body.colSpan = 6;
  detail.append(body);
  const opener = element("button", { type: "button", className: "disclosure" }, element("span", { className: "visually-hidden", textContent: "Transaction " }), text(transaction.seq));
  disclosure(opener, detail, () => fillTransaction(body, transaction.seq, transaction));
  const summary = row(element("td", {}, opener), transaction.created_at, transaction.kind, cell(signed(transaction.amount) + " " + transaction.currency, "amount"),
    cell(transaction.actor, "wrap"), cell(historyDetail(transaction), "wrap"));
  return [summary, detail];
}

// ---- Store notifications ----------------------------------------------------------------------------

let notificationsCursor = null;

/// What the wallet did about a notification, in words.
const outcomes = {
  refunded: "refunded", refund_reversed: "refund reversed", consumption_recorded: "consumption answer recorded", no_purchase: "no purchase of ours",
  no_refund: "nothing to refund", already_applied: "applied before", superseded: "superseded", invalid: "invalid", recorded: "recorded",
};

function notificationRows(notification) {
  const what = text(notification.type) + (notification.subtype ? " / " + text(notification.subtype) : "");
  const outcome = outcomes[notification.outcome] || text(notification.outcome);
  const share = notification.spent_share_millipercent !== undefined && notification.spent_share_millipercent !== null
    ? " (" + (notification.spent_share_millipercent / 1000) + "% spent)" : "";
  const seqCell = element("td");
  const rows = [];
  if (notification.ledger_seq !== undefined && notification.ledger_seq !== null) {
    const detail = element("tr", { className: "transaction-detail" });
    const body = element("td");
    body.colSpan = 6;
    detail.append(body);
    const opener = element("button", { type: "button", className: "disclosure" }, element("span", { className: "visually-hidden", textContent: "Notified transaction " }), text(notification.ledger_seq));
    disclosure(opener, detail, () => fillTransaction(body, notification.ledger_seq, null));
    seqCell.append(opener);
    rows.push(detail);
  }
  const received = element("td", { className: "wrap" }, text(notification.received_at), element("small", { textContent: text(notification.notification_uuid) }));
  rows.unshift(row(received, notification.store, cell(what, "wrap"), cell(notification.store_transaction_id, "wrap"), cell(outcome + share, "wrap"), seqCell));
  return rows;
}

export async function loadNotifications(more) {
  const error = $("#notifications-error");
  error.textContent = "";
  const query = new URLSearchParams({ limit: "20" });
  if (more && notificationsCursor) query.set("before", notificationsCursor);
  try {
    const player = page.player;
    const { data } = await api("GET", walletPath(player, "/notifications?" + query));
    // Another player was opened meanwhile: this answer is not for the page shown.
    if (player !== page.player) return;
    const rows = data.notifications.flatMap(notificationRows);
    if (more) $("#notifications tbody").append(...rows);
    else $("#notifications tbody").replaceChildren(...rows);
    notificationsCursor = data.next || null;
    const none = !more && data.notifications.length === 0;
    $("#notifications").hidden = none;
    $("#notifications-none").hidden = !none;
    $("#notifications-more").hidden = !notificationsCursor;
  } catch (problem) {
    if (!more) {
      $("#notifications").hidden = true;
      $("#notifications-none").hidden = true;
      $("#notifications-more").hidden = true;
    }
    error.textContent = problem.detail;
  }
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
    const player = page.player;
    const { data } = await api("GET", walletPath(player, "/transactions?" + query));
    // Another player was opened meanwhile: this answer is not for the page shown.
    if (player !== page.player) return;
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
    const player = page.player;
    const { data } = await api("GET", walletPath(player, "/statement?" + query));
    // Another player was opened meanwhile: this answer is not for the page shown.
    if (player !== page.player) return;
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
