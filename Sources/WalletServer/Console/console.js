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
  // A field's own hint (`data-hint`, the id of its description) stays with it; only the error goes.
  $$("[aria-invalid]", form).forEach((node) => {
    node.removeAttribute("aria-invalid");
    if (node.dataset.hint) node.setAttribute("aria-describedby", node.dataset.hint);
    else node.removeAttribute("aria-describedby");
  });
  const formError = $(".error", form);
  if (formError) formError.textContent = "";
}

/// The problem's detail beside the field it names (the longest of the fields' `data-field`
/// names found in it as whole words), else under the form.
function showProblem(form, problem) {
  const detail = problem instanceof Problem ? problem.detail : String(problem);
  const lower = detail.toLowerCase();
  const names = (input) => new RegExp("\\b" + input.dataset.field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "\\b").test(lower);
  const field = $$("[data-field]", form).filter(names).sort((a, b) => b.dataset.field.length - a.dataset.field.length)[0];
  if (field) {
    const message = document.createElement("p");
    message.className = "field-error";
    message.id = field.id + "-error";
    message.textContent = detail;
    field.setAttribute("aria-invalid", "true");
    field.setAttribute("aria-describedby", field.dataset.hint ? message.id + " " + field.dataset.hint : message.id);
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

// ---- Charts: plain SVG -----------------------------------------------------------------------

const svgNS = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(svgNS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/// A chart's frame: width × height, with a label for assistive technology.
function chartFrame(width, height, label) {
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label });
}

/// The player's balance after each transaction shown (one currency), oldest first.
function drawBalance(transactions, player, currency) {
  const account = "player:" + player;
  const points = transactions.slice().reverse().flatMap((transaction) => {
    const posting = (transaction.postings || []).find((p) => p.account === account && transaction.currency === currency);
    return posting ? [{ at: transaction.created_at, seq: transaction.seq, balance: posting.balance_after }] : [];
  });
  const box = $("#balance-chart");
  if (points.length === 0) {
    box.replaceChildren();
    return;
  }
  const width = 640, height = 180, left = 48, right = 12, top = 12, bottom = 24;
  const values = points.map((p) => p.balance);
  const low = Math.min(0, ...values), high = Math.max(1, ...values);
  const x = (index) => left + (points.length === 1 ? (width - left - right) / 2 : index * (width - left - right) / (points.length - 1));
  const y = (value) => top + (high - value) * (height - top - bottom) / (high - low);
  const chart = chartFrame(width, height, `Balance of ${player} in ${currency} after each of the ${points.length} transactions shown, from ${points[0].balance} to ${values[values.length - 1]}`);
  chart.append(svg("line", { class: "axis", x1: left, y1: y(0), x2: width - right, y2: y(0) }));
  chart.append(svg("text", { x: left - 6, y: y(high) + 4, "text-anchor": "end" }, high));
  chart.append(svg("text", { x: left - 6, y: y(low) + 4, "text-anchor": "end" }, low));
  chart.append(svg("polyline", { class: "line", points: points.map((p, index) => `${x(index)},${y(p.balance)}`).join(" ") }));
  points.forEach((p, index) => {
    const dot = svg("circle", { class: "dot", cx: x(index), cy: y(p.balance), r: 3 });
    dot.append(svg("title", {}, `seq ${p.seq}, ${p.at}: ${p.balance} ${currency}`));
    chart.append(dot);
  });
  chart.append(svg("text", { x: left, y: height - 6 }, points[0].at.slice(0, 10)));
  chart.append(svg("text", { x: width - right, y: height - 6, "text-anchor": "end" }, points[points.length - 1].at.slice(0, 10)));
  box.replaceChildren(chart);
}

const kinds = ["purchase", "spend", "adjustment", "refund", "refund_reversal", "entitlement"];

/// Stacked bars: transactions per day, by kind, every UTC day of the period drawn (quiet ones empty).
function drawVolume(days, from, to) {
  const byDay = new Map();
  const last = new Date(to).getTime();
  for (let day = Date.parse(from.slice(0, 10) + "T00:00:00Z"); day < last && byDay.size <= 366; day += 86_400_000) {
    byDay.set(new Date(day).toISOString().slice(0, 10), {});
  }
  for (const row of days) {
    const counts = byDay.get(row.day) || {};
    counts[row.kind] = (counts[row.kind] || 0) + row.count;
    byDay.set(row.day, counts);
  }
  const box = $("#volume-chart");
  const entries = Array.from(byDay.entries());
  if (days.length === 0) {
    box.replaceChildren(Object.assign(document.createElement("p"), { textContent: "No transactions in this period." }));
    return;
  }
  const width = 640, height = 220, left = 40, right = 8, top = 10, bottom = 28;
  const totals = entries.map(([, counts]) => Object.values(counts).reduce((a, b) => a + b, 0));
  const high = Math.max(1, ...totals);
  const slot = (width - left - right) / entries.length;
  const chart = chartFrame(width, height, `Transactions per day by kind, ${entries.length} days from ${entries[0][0]} to ${entries[entries.length - 1][0]}; most in a day: ${high}`);
  chart.append(svg("line", { class: "axis", x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
  chart.append(svg("text", { x: left - 6, y: top + 8, "text-anchor": "end" }, high));
  entries.forEach(([day, counts], index) => {
    let base = height - bottom;
    for (const kind of kinds) {
      const count = counts[kind] || 0;
      if (!count) continue;
      const barHeight = count * (height - top - bottom) / high;
      base -= barHeight;
      const bar = svg("rect", { class: "kind-" + kind, x: left + index * slot + slot * 0.1, y: base, width: Math.max(1, slot * 0.8), height: barHeight });
      bar.append(svg("title", {}, `${day}: ${count} ${kind}`));
      chart.append(bar);
    }
  });
  chart.append(svg("text", { x: left, y: height - 8 }, entries[0][0]));
  chart.append(svg("text", { x: width - right, y: height - 8, "text-anchor": "end" }, entries[entries.length - 1][0]));
  const legend = document.createElement("ul");
  legend.className = "legend";
  for (const kind of kinds) {
    const item = document.createElement("li");
    const swatch = svg("svg", { viewBox: "0 0 10 10", "aria-hidden": "true" });
    swatch.append(svg("rect", { class: "kind-" + kind, width: 10, height: 10 }));
    item.append(swatch, kind);
    legend.append(item);
  }
  box.replaceChildren(chart, legend);
}

async function showVolume(event) {
  if (event) event.preventDefault();
  const form = $("#volume-form");
  clearErrors(form);
  const to = $("#volume-to").value.trim() || new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) + "T00:00:00Z";
  const from = $("#volume-from").value.trim() || new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10) + "T00:00:00Z";
  try {
    const { data } = await api("GET", "/v1/ledger/volume?" + new URLSearchParams({ from, to }));
    drawVolume(data.days, from, to);
    $("#volume tbody").replaceChildren(...data.days.map((row) => {
      const tr = document.createElement("tr");
      tr.append(cell(row.day), cell(row.kind), cell(row.currency), cell(row.count, "amount"), cell(row.amount, "amount"));
      return tr;
    }));
  } catch (problem) {
    showProblem(form, problem);
  }
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

/// Forgets the key and everything shown with it: the page starts again, signed out.
function signOut() {
  sessionStorage.removeItem(storageKey);
  window.location.reload();
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

/// A random key for idempotency (crypto.randomUUID exists only in secure contexts).
function randomKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/// One idempotency key per filled-in form: a double click, or a retry after a network error,
/// sends the same key and never applies twice; changing the form after an answer starts a new one.
function keyPerForm(form) {
  const keyed = { key: randomKey(), answered: false };
  form.addEventListener("input", () => {
    if (keyed.answered) {
      keyed.key = randomKey();
      keyed.answered = false;
      $(".result", form).textContent = "";
    }
  });
  return keyed;
}

const formKeys = {};

function openTab(id) {
  $$(".tab").forEach((tab) => { tab.hidden = tab.id !== id; });
  // Keyboard users land on the section they opened.
  $("#" + id + " h2").focus();
  $$("#tabs button").forEach((button) => {
    if (button.dataset.tab === id) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  });
  if (id === "audit-section") { refreshHead(); showVolume(); }
  if (id === "admin-section") { loadKeys(); loadProducts(); loadWebhooks(); }
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
  await Promise.all([loadEntitlements(), loadHistory(false)]);
}

/// What a history row says besides its kind and amount: staff's reason, note and ticket, else the
/// product or note; an entitlement entry (whose reason code is in its metadata) says what changed.
function historyDetail(transaction) {
  const metadata = transaction.metadata || {};
  const reasonCode = transaction.reason_code || metadata.reason_code;
  let detail = reasonCode ? reasonCode + ": " + (transaction.note || "") + (transaction.ticket ? " (" + transaction.ticket + ")" : "")
    : transaction.product_id || transaction.note || "";
  if (transaction.kind === "entitlement" && metadata.entitlement) {
    detail = String(metadata.change || "").replaceAll("_", " ") + " " + metadata.entitlement + (detail ? ", " + detail : "");
  }
  return detail;
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
      const detail = historyDetail(transaction);
      row.append(cell(transaction.seq), cell(transaction.created_at), cell(transaction.kind), cell(signed(transaction.amount) + " " + transaction.currency, "amount"),
        cell(transaction.actor), cell(detail));
      return row;
    });
    if (more) $("#history tbody").append(...rows);
    else $("#history tbody").replaceChildren(...rows);
    state.history = more ? (state.history || []).concat(data.transactions) : data.transactions;
    drawBalance(state.history, state.player, "credits");
    state.historyCursor = data.next || null;
    $("#history-more").hidden = !state.historyCursor;
  } catch (problem) {
    showProblem(form, problem);
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
    const { data, replayed } = await api("POST", "/v1/wallets/" + encodeURIComponent(state.player) + "/adjustments", { body, idempotencyKey: formKeys.adjust.key });
    formKeys.adjust.answered = true;
    $(".result", form).textContent = (replayed ? "Already applied: " : "Adjusted: ") + signed(data.transaction.amount) + " " + data.transaction.currency
      + " (seq " + data.transaction.seq + "); the balance is " + data.balance + ".";
    await showPlayer(state.player);
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    button.disabled = false;
  }
}

// ---- Entitlements: what the player owns, and support's grant, revoke and extend -------------

/// One purchase or change behind an entitlement, as a sentence: what, when, from where, and
/// whether it still counts (a refunded purchase does not).
function describeItem(item) {
  let text = "seq " + item.seq + ": " + item.change.replaceAll("_", " ") + " from " + item.starts_at;
  if (item.period) text += " for " + item.period;
  if (item.product_id) text += ", " + item.product_id;
  if (item.store) text += " on " + item.store + (item.store_transaction_id ? " (" + item.store_transaction_id + ")" : "");
  if (!item.active) text += " (no longer counts)";
  return text;
}

function entitlementUntil(entitlement) {
  if (entitlement.forever) return "for ever";
  return entitlement.expires_at || "";
}

async function loadEntitlements() {
  const error = $("#entitlements-error");
  error.textContent = "";
  try {
    const { data } = await api("GET", "/v1/wallets/" + encodeURIComponent(state.player) + "/entitlements");
    $("#entitlements tbody").replaceChildren(...data.entitlements.map((entitlement) => {
      const row = document.createElement("tr");
      const items = document.createElement("td");
      const list = document.createElement("ul");
      list.className = "items";
      list.append(...(entitlement.items || []).map((item) => Object.assign(document.createElement("li"), { textContent: describeItem(item) })));
      items.append(list);
      row.append(cell(entitlement.name), cell(entitlement.active ? "yes" : "no"), cell(entitlementUntil(entitlement)), items);
      return row;
    }));
    $("#entitlements").hidden = data.entitlements.length === 0;
    $("#entitlements-none").hidden = data.entitlements.length !== 0;
  } catch (problem) {
    $("#entitlements").hidden = true;
    $("#entitlements-none").hidden = true;
    error.textContent = problem instanceof Problem ? problem.detail : String(problem);
  }
}

/// Only the selected action's own field is sent (the API refuses another action's field rather
/// than ignore it), so the other one is disabled: out of the tab order and announced as such.
function entitlementActionChanged() {
  const action = $("#entitlement-action").value;
  $("#entitlement-duration").disabled = action !== "grant";
  $("#entitlement-days").disabled = action !== "extend";
}

async function changeEntitlement(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const action = $("#entitlement-action").value;
  const body = { action, entitlement: $("#entitlement-name").value.trim(), reason_code: $("#entitlement-reason").value.trim(), note: $("#entitlement-note").value.trim() };
  if (action === "grant") {
    const duration = $("#entitlement-duration").value.trim();
    if (duration) body.duration = duration;
  }
  if (action === "extend") {
    const days = $("#entitlement-days").value.trim();
    if (!/^\d+$/.test(days)) return showProblem(form, "days must be a whole number of days, such as 7");
    body.days = Number(days);
  }
  const ticket = $("#entitlement-ticket").value.trim();
  if (ticket) body.ticket = ticket;
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const { data, replayed } = await api("POST", "/v1/wallets/" + encodeURIComponent(state.player) + "/entitlements", { body, idempotencyKey: formKeys.entitlement.key });
    formKeys.entitlement.answered = true;
    const verb = { grant: "Granted", extend: "Extended", revoke: "Revoked" }[action];
    const now = data.entitlement.active ? "active " + (data.entitlement.forever ? "for ever" : "until " + data.entitlement.expires_at) : "not active";
    $(".result", form).textContent = (replayed || data.replayed ? "Already applied: " : verb + ": ") + data.entitlement.name + " (seq " + data.transaction.seq + "); it is " + now + ".";
    await showPlayer(state.player);
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    button.disabled = false;
  }
}

async function showStatement(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const query = new URLSearchParams();
  const from = $("#statement-from").value.trim();
  const to = $("#statement-to").value.trim();
  if (from) query.set("from", from);
  if (to) query.set("to", to);
  try {
    const { data } = await api("GET", "/v1/wallets/" + encodeURIComponent(state.player) + "/statement?" + query);
    state.statement = data;
    $("#statement-title").textContent = "Statement of " + data.player_id + (data.from ? " from " + data.from : "") + (data.to ? " to " + data.to : "");
    const parts = data.currencies.map((statement) => {
      const table = document.createElement("table");
      const head = document.createElement("thead");
      head.innerHTML = "<tr><th scope=\"col\">Seq</th><th scope=\"col\">Time</th><th scope=\"col\">Kind</th><th scope=\"col\">Amount</th></tr>";
      const body = document.createElement("tbody");
      const opening = document.createElement("tr");
      opening.append(cell(""), cell(""), cell("opening balance"), cell(statement.opening_balance + " " + statement.currency, "amount"));
      body.append(opening);
      for (const transaction of statement.transactions) {
        const row = document.createElement("tr");
        row.append(cell(transaction.seq), cell(transaction.created_at), cell(transaction.kind), cell(signed(transaction.amount) + " " + statement.currency, "amount"));
        body.append(row);
      }
      const closing = document.createElement("tr");
      closing.append(cell(""), cell(""), cell("closing balance"), cell(statement.closing_balance + " " + statement.currency, "amount"));
      body.append(closing);
      table.append(head, body);
      return table;
    });
    $("#statement-body").replaceChildren(...parts);
    $("#statement").hidden = false;
  } catch (problem) {
    showProblem(form, problem);
  }
}

/// The statement shown, as CSV: made from what the page already holds (a statement is one
/// player's period, unlike an export).
function downloadStatement() {
  const data = state.statement;
  if (!data) return;
  const quote = (value) => /[",\n\r]/.test(String(value)) ? "\"" + String(value).replaceAll("\"", "\"\"") + "\"" : String(value);
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
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" }));
  link.download = "statement-" + data.player_id + ".csv";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/// Refunds are keyed by the store transaction (and share): sending one again answers the first.
async function refund(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  $(".result", form).textContent = "";
  const percentage = $("#refund-percentage").value.trim();
  if (!/^\d+$/.test(percentage)) return showProblem(form, "the percentage must be a whole number from 1 to 100");
  const body = { store: $("#refund-store").value.trim(), store_transaction_id: $("#refund-transaction").value.trim(), percentage: Number(percentage), policy: $("#refund-policy").value };
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const { data, replayed } = await api("POST", "/v1/refunds", { body });
    $(".result", form).textContent = (replayed ? "Already applied: " : "Refunded: ") + signed(data.transaction.amount) + " " + data.transaction.currency
      + " from " + data.transaction.player_id + " (seq " + data.transaction.seq + "); their balance is " + data.balance + ".";
    if (state.player === data.transaction.player_id) await showPlayer(state.player);
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    button.disabled = false;
  }
}

// ---- Store orders: where each of an order's transactions was credited ------------------------

/// Apple's lookup answers each transaction of the order as Apple lists it, with its status here.
function appleOrderRows(data) {
  return data.transactions.map((entry) => {
    const credit = entry.credit;
    let status = entry.status.replaceAll("_", " ");
    if (entry.refusal) status += ": " + entry.refusal.detail;
    return [entry.store_transaction_id || "", entry.product_id || (credit && credit.product_id) || "", status,
      credit ? credit.player_id : "", credit ? credit.seq : "", credit ? signed(credit.amount) + " " + credit.currency : ""];
  });
}

/// Google's lookup answers the purchases recorded under the order, with their refunds, Google's
/// consumption and what Google lists as voided.
function googleOrderRows(data) {
  return data.purchases.map(({ purchase, credit }) => {
    const states = [credit ? "credited" : "recorded"];
    if (purchase.corrections.length) states.push("refunds and reversals: seq " + purchase.corrections.join(", "));
    if (data.voids.some((v) => v.purchaseToken === purchase.store_transaction_id)) states.push("voided by Google");
    if (purchase.finish) states.push("consumption " + purchase.finish.status);
    return [purchase.store_transaction_id, credit ? credit.product_id || "" : "", states.join("; "),
      credit ? credit.player_id : "", purchase.seq, credit ? signed(credit.amount) + " " + credit.currency : ""];
  });
}

async function lookUpOrder(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  $(".result", form).textContent = "";
  $("#order").hidden = true;
  const store = $("#order-store").value;
  const orderID = $("#order-id").value.trim();
  if (!orderID) return showProblem(form, "enter the order id from the player's receipt");
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const { data } = await api("GET", "/v1/" + store + "/orders/" + encodeURIComponent(orderID));
    const rows = store === "apple" ? appleOrderRows(data) : googleOrderRows(data);
    $("#order-title").textContent = (store === "apple" ? "Apple order " : "Google Play order ") + data.order_id;
    $("#order tbody").replaceChildren(...rows.map((values) => {
      const row = document.createElement("tr");
      row.append(...values.map((value, index) => cell(value, index >= 4 ? "amount" : undefined)));
      return row;
    }));
    $("#order").hidden = rows.length === 0;
    let summary = rows.length === 0 ? "No transactions under order " + data.order_id + "." : rows.length + (rows.length === 1 ? " transaction" : " transactions") + " under order " + data.order_id + ".";
    if (data.voids_error) summary += " Google's voided purchases could not be read: " + data.voids_error;
    $(".result", form).textContent = summary;
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
      // The whole product is sent again: only `active` changes (its store restriction stays).
      const update = { credits: product.credits, currency: product.currency, active: !product.active };
      if (product.store) update.store = product.store;
      button.addEventListener("click", () => setProduct(product.product_id, update).catch((problem) => showProblem($("#product-form"), problem)));
      action.append(button);
      row.append(cell(product.product_id), cell(product.credits, "amount"), cell(product.currency), cell(product.store || "any"), cell(product.active ? "yes" : "no"), action);
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
    const body = { credits: Number(credits), currency: $("#product-currency").value.trim() || "credits" };
    const store = $("#product-store").value.trim();
    if (store) body.store = store;
    await setProduct($("#product-id").value.trim(), body);
    form.reset();
  } catch (problem) {
    showProblem(form, problem);
  }
}

// ---- Admin: webhook endpoints ------------------------------------------------------------------

/// When the next attempt may start: only an active endpoint is sent to.
function nextAttempt(endpoint) {
  return endpoint.status === "active" ? endpoint.next_attempt_at : "none while " + endpoint.status;
}

function webhookButton(label, endpoint, action) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.setAttribute("aria-label", label + " " + endpoint.url);
  button.addEventListener("click", () => setWebhook(endpoint, action, button));
  return button;
}

async function loadWebhooks() {
  try {
    const { data } = await api("GET", "/v1/webhooks");
    $("#webhooks tbody").replaceChildren(...data.webhooks.map((endpoint) => {
      const row = document.createElement("tr");
      const where = cell(endpoint.url, "wrap");
      if (endpoint.description) where.append(Object.assign(document.createElement("small"), { textContent: endpoint.description }));
      const status = document.createElement("td");
      status.append(Object.assign(document.createElement("span"), { className: "status status-" + endpoint.status, textContent: endpoint.status }));
      const actions = document.createElement("td");
      // A failing endpoint may be resumed (Enable) or switched off for good (Disable).
      if (endpoint.status !== "disabled") actions.append(webhookButton("Disable", endpoint, "disable"));
      if (endpoint.status !== "active") actions.append(webhookButton("Enable", endpoint, "enable"));
      const types = endpoint.types.length === 1 && endpoint.types[0] === "*" ? "all (*)" : endpoint.types.join(", ");
      // The buttons stand beside the status they change, in view on a narrow screen too.
      row.append(where, cell(types, "names"), status, actions, cell(endpoint.cursor_seq, "amount"), cell(endpoint.delivered, "amount"),
        cell(endpoint.attempts, "amount"), cell(endpoint.last_error || "", "wrap"), cell(nextAttempt(endpoint)));
      return row;
    }));
    $("#webhooks").hidden = data.webhooks.length === 0;
    $("#webhooks-none").hidden = data.webhooks.length !== 0;
  } catch (problem) {
    showProblem($("#webhook-form"), problem);
  }
}

async function setWebhook(endpoint, action, button) {
  const form = $("#webhook-form");
  clearErrors(form);
  button.disabled = true;
  try {
    await api("POST", "/v1/webhooks/" + encodeURIComponent(endpoint.id) + "/" + action);
  } catch (problem) {
    showProblem(form, problem);
  }
  await loadWebhooks();
}

/// The list as typed: names separated by commas (spaces around them do not matter). An empty
/// list is sent as it is, so that the API's detail says what to write.
function webhookTypes(text) {
  return text.split(",").map((name) => name.trim()).filter((name) => name !== "");
}

async function addWebhook(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const secret = $("#webhook-secret");
  secret.replaceChildren();
  const body = { url: $("#webhook-url").value.trim(), types: webhookTypes($("#webhook-types").value) };
  const description = $("#webhook-description").value.trim();
  if (description) body.description = description;
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const { data } = await api("POST", "/v1/webhooks", { body });
    // The secret leaves the wallet this once: the page says so, and holds it nowhere else.
    const code = Object.assign(document.createElement("code"), { id: "webhook-secret-value", textContent: data.secret });
    secret.append("Added " + data.endpoint.url + ". Its signing secret is shown this once: copy it now into the receiver's configuration. ", code);
    form.reset();
    await loadWebhooks();
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    button.disabled = false;
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
  formKeys.adjust = keyPerForm($("#adjust-form"));
  $("#entitlement-form").addEventListener("submit", changeEntitlement);
  $("#entitlement-action").addEventListener("change", entitlementActionChanged);
  formKeys.entitlement = keyPerForm($("#entitlement-form"));
  $("#order-form").addEventListener("submit", lookUpOrder);
  $("#statement-form").addEventListener("submit", showStatement);
  $("#statement-print").addEventListener("click", () => window.print());
  $("#statement-download").addEventListener("click", downloadStatement);
  $("#refund-form").addEventListener("submit", refund);
  $("#head-refresh").addEventListener("click", refreshHead);
  $("#verify").addEventListener("click", verifyLedger);
  $("#export-form").addEventListener("submit", downloadExport);
  $("#volume-form").addEventListener("submit", showVolume);
  $("#key-form").addEventListener("submit", createKey);
  $("#product-form").addEventListener("submit", addProduct);
  $("#webhook-form").addEventListener("submit", addWebhook);
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
