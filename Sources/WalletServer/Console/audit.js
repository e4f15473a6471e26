// Auditors: the ledger's head, verification, streamed exports and daily volume by kind.

import { $, cell, element, row } from "./dom.js";
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
  } catch (problem) {
    showProblem(form, problem);
  }
}
