// Support's changes: adjustments, bonus credits, refunds, store order lookups, and finding a
// purchase by its store transaction id (crediting its Apple order when it never was).

import { $, cell, facts, row, signed, text } from "./dom.js";
import { api, walletPath, Problem } from "./api.js";
import { clearErrors, submitting, value, wholeNumber } from "./forms.js";
import { page, roleIn } from "./page.js";

/// The answer to a change of the balance, as one sentence.
function booked(verb, replayed, data) {
  return (replayed ? "Already applied: " : verb + ": ") + signed(data.transaction.amount) + " " + data.transaction.currency
    + " (seq " + data.transaction.seq + "); the balance is " + data.balance + ".";
}

export function adjust(formKey) {
  return (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    return submitting(form, async () => {
      const amount = wholeNumber("#adjust-amount", "amount", "the amount must be a whole number, such as 50 or -20", { signed: true });
      const body = { amount, reason_code: value("#adjust-reason"), note: value("#adjust-note") };
      if (value("#adjust-ticket")) body.ticket = value("#adjust-ticket");
      const { data, replayed } = await api("POST", walletPath(page.player, "/adjustments"), { body, idempotencyKey: formKey.key });
      formKey.answered = true;
      $(".result", form).textContent = booked("Adjusted", replayed, data);
      await page.refreshPlayer();
    });
  };
}

/// Bonus credits: a lot of their own, which may expire (purchased credits never do).
export function grantBonus(formKey) {
  return (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    return submitting(form, async () => {
      const amount = wholeNumber("#bonus-amount", "amount", "the amount must be a whole number of credits, such as 50");
      const body = { amount, reason_code: value("#bonus-reason") };
      for (const [field, selector] of [["expires_at", "#bonus-expires"], ["note", "#bonus-note"], ["campaign", "#bonus-campaign"]]) {
        if (value(selector)) body[field] = value(selector);
      }
      const { data, replayed } = await api("POST", walletPath(page.player, "/bonuses"), { body, idempotencyKey: formKey.key });
      formKey.answered = true;
      $(".result", form).textContent = booked("Granted", replayed, data) + (body.expires_at ? " What is left of it expires at " + body.expires_at + "." : "");
      await page.refreshPlayer();
    });
  };
}

/// Refunds are keyed by the store transaction (and share): sending one again answers the first.
export async function refund(event) {
  event.preventDefault();
  const form = event.currentTarget;
  return submitting(form, async () => {
    const percentage = wholeNumber("#refund-percentage", "percentage", "the percentage must be a whole number from 1 to 100");
    const body = { store: value("#refund-store"), store_transaction_id: value("#refund-transaction"), percentage, policy: $("#refund-policy").value };
    const { data, replayed } = await api("POST", "/v1/refunds", { body });
    $(".result", form).textContent = (replayed ? "Already applied: " : "Refunded: ") + signed(data.transaction.amount) + " " + data.transaction.currency
      + " from " + data.transaction.player_id + " (seq " + data.transaction.seq + "); their balance is " + data.balance + ".";
    if (page.player === data.transaction.player_id) await page.refreshPlayer();
  });
}

// ---- Store orders: where each of an order's transactions was credited ------------------------

/// Apple's lookup answers each transaction of the order as Apple lists it, with its status here.
function appleOrderRows(data) {
  return data.transactions.map((entry) => {
    const credit = entry.credit;
    let status = String(entry.status).replaceAll("_", " ");
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

export async function lookUpOrder(event) {
  event.preventDefault();
  const form = event.currentTarget;
  $("#order").hidden = true;
  return submitting(form, async () => {
    const store = $("#order-store").value;
    const orderID = value("#order-id");
    if (!orderID) throw Problem.field("order_id", "enter the order id from the player's receipt");
    const { data } = await api("GET", "/v1/" + store + "/orders/" + encodeURIComponent(orderID));
    const rows = store === "apple" ? appleOrderRows(data) : googleOrderRows(data);
    $("#order-title").textContent = (store === "apple" ? "Apple order " : "Google Play order ") + data.order_id;
    $("#order tbody").replaceChildren(...rows.map((values) => row(...values.map((entry, index) => cell(entry, index >= 4 ? "amount" : "wrap")))));
    $("#order").hidden = rows.length === 0;
    let summary = rows.length === 0 ? "No transactions under order " + data.order_id + "." : rows.length + (rows.length === 1 ? " transaction" : " transactions") + " under order " + data.order_id + ".";
    if (data.voids_error) summary += " Google's voided purchases could not be read: " + data.voids_error;
    $(".result", form).textContent = summary;
  });
}

// ---- A purchase by its store transaction id ------------------------------------------------------

/// What the store reported of the purchase beside the credit (order, type, region, finishing).
function storeFacts(storePurchase) {
  if (!storePurchase) return [];
  const finish = storePurchase.finish;
  return [
    ["Order id", storePurchase.order_id, "wrap-text"],
    ["Purchase type", storePurchase.purchase_type],
    ["Region", storePurchase.region],
    ["Store's finishing", finish ? text(finish.action || "finish") + " " + text(finish.status) + (finish.last_error ? ": " + text(finish.last_error) : "") : null, "wrap-text"],
  ];
}

/// What a correction says besides its kind and amount: its reason, note or ticket.
function correctionDetail(transaction) {
  const metadata = transaction.metadata || {};
  return [transaction.reason_code, transaction.note, metadata.policy ? "policy " + metadata.policy : null].filter((part) => part).map(text).join("; ");
}

export async function findPurchase(event) {
  event.preventDefault();
  const form = event.currentTarget;
  $("#purchase").hidden = true;
  $("#purchase-credit-form").hidden = true;
  return submitting(form, async () => {
    const store = $("#purchase-store").value;
    const id = value("#purchase-transaction");
    if (!id) throw Problem.field("store_transaction_id", "enter the store transaction id (Google: the purchase token)");
    let data;
    try {
      ({ data } = await api("GET", "/v1/purchases/" + encodeURIComponent(store) + "/" + encodeURIComponent(id)));
    } catch (problem) {
      if (problem.status !== 404) throw problem;
      $(".result", form).textContent = "The wallet never credited " + store + " transaction " + id + ".";
      // Support may credit the Apple order it belongs to (Google purchases are redeemed by the game).
      if (store === "apple" && roleIn("support")) {
        clearErrors($("#purchase-credit-form"));
        $("#credit-player").value = page.player || "";
        $("#purchase-credit-form").hidden = false;
      }
      return;
    }
    const purchase = data.purchase;
    $("#purchase-facts").replaceChildren(facts([
      ["Credited to", data.player_id, "wrap-text"],
      ["Seq", purchase.seq],
      ["Time", purchase.created_at],
      ["Product", purchase.product_id, "wrap-text"],
      ["Quantity", purchase.quantity],
      ["Amount", signed(purchase.amount) + " " + text(purchase.currency)],
      ["Store", purchase.store],
      ["Store transaction", purchase.store_transaction_id, "wrap-text"],
      ...storeFacts(data.store_purchase),
    ]));
    $("#purchase-corrections tbody").replaceChildren(...data.corrections.map((correction) =>
      row(cell(correction.seq, "amount"), correction.created_at, correction.kind, cell(signed(correction.amount) + " " + text(correction.currency), "amount"), cell(correctionDetail(correction), "wrap"))));
    $("#purchase-corrections").hidden = data.corrections.length === 0;
    $("#purchase-no-corrections").hidden = data.corrections.length !== 0;
    $("#purchase").hidden = false;
    const refunded = data.corrections.length ? ", " + data.corrections.length + (data.corrections.length === 1 ? " correction" : " corrections") : "";
    $(".result", form).textContent = "Credited to " + text(data.player_id) + " (seq " + purchase.seq + ")" + refunded + ".";
  });
}

/// Credits the Apple order's transactions not yet credited to the player (the API credits each
/// once, whoever asks again).
export async function creditOrder(event) {
  event.preventDefault();
  const form = event.currentTarget;
  return submitting(form, async () => {
    const orderID = value("#credit-order");
    const playerID = value("#credit-player");
    if (!orderID) throw Problem.field("order_id", "enter the order id from the player's receipt");
    if (!playerID) throw Problem.field("player_id", "enter the player to credit");
    const { data } = await api("POST", "/v1/apple/orders/" + encodeURIComponent(orderID) + "/credit", { body: { player_id: playerID } });
    const now = data.transactions.filter((entry) => entry.status === "credited_now");
    const sentences = appleOrderRows(data).map((values) => values.filter((part) => part !== "").join(", "));
    $(".result", form).textContent = (now.length ? "Credited now: " + now.length + " of " : "Nothing credited now: ") + data.transactions.length
      + " under order " + data.order_id + ". " + sentences.join("; ") + (sentences.length ? "." : "");
    if (page.player === playerID) await page.refreshPlayer();
  });
}
