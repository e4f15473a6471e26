// Entitlements: what the player owns, and support's grant, revoke and extend.

import { $, cell, element, row, text } from "./dom.js";
import { api, walletPath } from "./api.js";
import { submitting, value, wholeNumber } from "./forms.js";
import { fillPlayerTable, page } from "./page.js";

/// One purchase or change behind an entitlement, as a sentence: what, when, from where, and
/// whether it still counts (a refunded purchase does not).
function describeItem(item) {
  let sentence = "seq " + item.seq + ": " + text(item.change).replaceAll("_", " ") + " from " + text(item.starts_at);
  if (item.period) sentence += " for " + item.period;
  if (item.product_id) sentence += ", " + item.product_id;
  if (item.store) sentence += " on " + item.store + (item.store_transaction_id ? " (" + item.store_transaction_id + ")" : "");
  if (!item.active) sentence += " (no longer counts)";
  return sentence;
}

function entitlementUntil(entitlement) {
  if (entitlement.forever) return "for ever";
  return entitlement.expires_at || "";
}

export async function loadEntitlements() {
  await fillPlayerTable("entitlements", "/entitlements", "entitlements", (entitlement) => {
    const list = element("ul", { className: "items" }, ...(entitlement.items || []).map((item) => element("li", { textContent: describeItem(item) })));
    return row(cell(entitlement.name, "wrap"), entitlement.active ? "yes" : "no", entitlementUntil(entitlement), element("td", { className: "wrap" }, list));
  });
}

/// Only the selected action's own field is sent (the API refuses another action's field rather
/// than ignore it), so the other one is disabled: out of the tab order and announced as such.
export function entitlementActionChanged() {
  const action = $("#entitlement-action").value;
  $("#entitlement-duration").disabled = action !== "grant";
  $("#entitlement-days").disabled = action !== "extend";
}

export function changeEntitlement(formKey) {
  return (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    return submitting(form, async () => {
      const action = $("#entitlement-action").value;
      const body = { action, entitlement: value("#entitlement-name"), reason_code: value("#entitlement-reason"), note: value("#entitlement-note") };
      if (action === "grant" && value("#entitlement-duration")) body.duration = value("#entitlement-duration");
      if (action === "extend") body.days = wholeNumber("#entitlement-days", "days", "days must be a whole number of days, such as 7");
      if (value("#entitlement-ticket")) body.ticket = value("#entitlement-ticket");
      const { data, replayed } = await api("POST", walletPath(page.player, "/entitlements"), { body, idempotencyKey: formKey.key });
      formKey.answered = true;
      const verb = { grant: "Granted", extend: "Extended", revoke: "Revoked" }[action];
      const now = data.entitlement.active ? "active " + (data.entitlement.forever ? "for ever" : "until " + data.entitlement.expires_at) : "not active";
      $(".result", form).textContent = (replayed || data.replayed ? "Already applied: " : verb + ": ") + data.entitlement.name + " (seq " + data.transaction.seq + "); it is " + now + ".";
      await page.refreshPlayer();
    });
  };
}
