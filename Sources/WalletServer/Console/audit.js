// Auditors: the ledger's head, verification, streamed exports, daily volume by kind with the
// period's totals, breakage and today's debt, and the outbox queues.

import { $, cell, element, row, text } from "./dom.js";
import { api, kinds } from "./api.js";
import { clearErrors, showProblem, submitting, value } from "./forms.js";
import { drawVolume } from "./charts.js";

export async function refreshHead() {
  try {
    const { data } = await api("GET", "/v1/ledger/head");
    $("#head-seq").textContent = data.seq;
    $("#head-hash").textContent = data.hash;
    $("#head-at").textContent = data.at || "";
  } catch (problem) {
    $("#verify-result").textContent = problem.detail;
  }
}

export async function verifyLedger() {
  const control = $("#verify");
  const result = $("#verify-result");
  control.disabled = true;
  result.textContent = "Verifying…";
  try {
    const { data } = await api("GET", "/v1/ledger/verify");
    result.textContent = data.ok ? "OK: " + data.transactions + " transactions, head hash " + data.head_hash
      : "Broken: the first bad seq is " + data.first_bad_seq;
  } catch (problem) {
    result.textContent = problem.detail;
  } finally {
    control.disabled = false;
  }
}

/// Exports stream to disk through a one-time link (a link carries no Authorization header, and
/// the key never goes in a URL): the page never holds the export.
export async function downloadExport(event) {
  event.preventDefault();
  const form = event.currentTarget;
  return submitting(form, async () => {
    const body = { format: $("#export-format").value };
    if (value("#export-from")) body.from = value("#export-from");
    if (value("#export-to")) body.to = value("#export-to");
    const { data } = await api("POST", "/v1/ledger/export/links", { body });
    const link = element("a", { href: data.url, download: "", hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    $(".result", form).textContent = "The export is downloading (ledger." + body.format + ").";
  });
}

function day(offsetDays) {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10) + "T00:00:00Z";
}

/// The period's volume: each kind the answer has, charted and listed (none left out for lack of
/// a colour or a place in a list).
export async function showVolume(event) {
  if (event) event.preventDefault();
  const form = $("#volume-form");
  clearErrors(form);
  const to = value("#volume-to") || day(1);
  const from = value("#volume-from") || day(-29);
  try {
    const [{ data }, order] = await Promise.all([api("GET", "/v1/ledger/volume?" + new URLSearchParams({ from, to })), kinds()]);
    drawVolume($("#volume-chart"), data.days, from, to, order);
    $("#volume tbody").replaceChildren(...data.days.map((entry) =>
      row(entry.day, entry.kind, entry.currency, cell(entry.count, "amount"), cell(entry.amount, "amount"))));
    showTotals(data);
  } catch (problem) {
    showProblem(form, problem);
  }
}

/// Per currency, "5 credits, 2 gems"; "none" when the answer has none.
function perCurrency(entries, say) {
  const said = Object.entries(entries || {}).sort(([a], [b]) => a.localeCompare(b)).map(([currency, value]) => say(value, currency));
  return said.length ? said.join(", ") : "none";
}

/// The period's totals per kind (every kind the answer has, as it sorts them), breakage and debt.
function showTotals(data) {
  const totals = data.totals || [];
  $("#volume-totals tbody").replaceChildren(...totals.map((total) =>
    row(total.kind, total.currency, cell(total.count, "amount"), cell(total.amount, "amount"))));
  $("#volume-totals").hidden = totals.length === 0;
  $("#volume-totals-none").hidden = totals.length !== 0;
  $("#breakage").textContent = perCurrency(data.breakage, (amount, currency) => text(amount) + " " + currency);
  $("#debt").textContent = perCurrency(data.debt, (debt, currency) =>
    text(debt.amount) + " " + currency + " owed by " + text(debt.wallets) + (debt.wallets === 1 ? " wallet" : " wallets"));
}

/// A queue's name as people say it.
function queueName(queue) {
  switch (queue.name) {
  case "apple_consumption_replies": return "App Store consumption answers";
  case "google_consumes": return "Google Play purchases to consume";
  case "google_acknowledges": return "Google Play purchases to acknowledge";
  case "webhook": return "Webhook endpoint " + text(queue.webhook_id) + (queue.webhook_status ? " (" + text(queue.webhook_status) + ")" : "");
  default: return text(queue.name);
  }
}

/// Whole seconds as the largest units that say them: "640 s (10 min 40 s)".
function age(seconds) {
  if (seconds === null || seconds === undefined) return "none waiting";
  const parts = [[86_400, "d"], [3_600, "h"], [60, "min"], [1, "s"]];
  let rest = Number(seconds);
  const said = [];
  for (const [size, unit] of parts) {
    if (rest >= size && said.length < 2) {
      said.push(Math.floor(rest / size) + " " + unit);
      rest %= size;
    }
  }
  return said.length > 1 || seconds >= 60 ? text(seconds) + " s (" + said.join(" ") + ")" : text(seconds) + " s";
}

export async function loadOutboxes() {
  const error = $("#outboxes-error");
  error.textContent = "";
  try {
    const { data } = await api("GET", "/v1/outboxes");
    $("#outboxes tbody").replaceChildren(...data.queues.map((queue) => {
      const failed = cell(queue.failed, "amount");
      if (queue.failed > 0) failed.classList.add("attention");
      return row(cell(queueName(queue), "wrap"), cell(queue.pending, "amount"), failed, age(queue.oldest_pending_age_seconds));
    }));
  } catch (problem) {
    error.textContent = problem.detail;
  }
}
