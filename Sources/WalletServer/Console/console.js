// The CreditsWallet console's entry module: signing in and out, the sections each role sees, and
// the wiring of every form. Each section lives in its own module (players, entitlements, support,
// audit, admin) over the same API client (api.js) and page helpers (dom.js, forms.js, charts.js).

import { $, $$ } from "./dom.js";
import { api, session } from "./api.js";
import { clearErrors, keyPerForm, showProblem } from "./forms.js";
import { page } from "./page.js";
import { findPlayer, fillKinds, loadHistory, loadNotifications, releaseHold, cancelRelease, showStatement, downloadStatement } from "./players.js";
import { changeEntitlement, entitlementActionChanged } from "./entitlements.js";
import { adjust, grantBonus, refund, lookUpOrder, findPurchase, creditOrder } from "./support.js";
import { refreshHead, verifyLedger, downloadExport, showVolume, loadOutboxes } from "./audit.js";
import { loadKeys, createKey, loadProducts, addProduct, loadWebhooks, addWebhook } from "./admin.js";

async function signIn(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form);
  const key = $("#api-key").value.trim();
  if (!key) return showProblem(form, "enter an API key");
  session.remember(key);
  try {
    const { data } = await api("GET", "/v1/me");
    if (data.role === "service") {
      session.forget();
      return showProblem(form, "a service key is for game backends; sign in with a support, auditor or admin key");
    }
    $("#api-key").value = "";
    showSignedIn(data);
  } catch (problem) {
    session.forget();
    showProblem(form, problem);
  }
}

/// Forgets the key and everything shown with it: the page starts again, signed out.
function signOut() {
  session.forget();
  window.location.reload();
}

/// The key's name as people gave it, without a trailing "(role)" that would say the role twice
/// beside the role the API reports.
function displayName(me) {
  const suffix = " (" + me.role + ")";
  return me.name.endsWith(suffix) && me.name.length > suffix.length ? me.name.slice(0, -suffix.length) : me.name;
}

function showSignedIn(me) {
  page.me = me;
  $("#who-name").textContent = displayName(me);
  $("#who-role").textContent = me.role;
  $("#who").hidden = false;
  $("#sign-out").hidden = false;
  $("#sign-in-section").hidden = true;
  $("#tabs").hidden = false;
  // What the role cannot do is not shown (the API refuses it anyway).
  $$("[data-roles]").forEach((node) => {
    node.hidden = !node.dataset.roles.split(" ").includes(me.role);
  });
  const first = $$("#tabs button").find((control) => !control.hidden);
  if (first) openTab(first.dataset.tab);
}

function openTab(id) {
  $$(".tab").forEach((tab) => { tab.hidden = tab.id !== id; });
  // Keyboard users land on the section they opened.
  $("#" + id + " h2").focus();
  $$("#tabs button").forEach((control) => {
    if (control.dataset.tab === id) control.setAttribute("aria-current", "page");
    else control.removeAttribute("aria-current");
  });
  if (id === "players-section") fillKinds();
  if (id === "audit-section") { refreshHead(); showVolume(); loadOutboxes(); }
  if (id === "admin-section") { loadKeys(); loadProducts(); loadWebhooks(); }
}

function wire() {
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", signOut);
  $$("#tabs button").forEach((control) => control.addEventListener("click", () => openTab(control.dataset.tab)));
  $("#find-form").addEventListener("submit", findPlayer);
  $("#history-form").addEventListener("submit", (event) => { event.preventDefault(); loadHistory(false); });
  $("#history-more").addEventListener("click", () => loadHistory(true));
  $("#notifications-more").addEventListener("click", () => loadNotifications(true));
  $("#release-form").addEventListener("submit", releaseHold);
  $("#release-cancel").addEventListener("click", cancelRelease);
  $("#adjust-form").addEventListener("submit", adjust(keyPerForm($("#adjust-form"))));
  $("#bonus-form").addEventListener("submit", grantBonus(keyPerForm($("#bonus-form"))));
  $("#entitlement-form").addEventListener("submit", changeEntitlement(keyPerForm($("#entitlement-form"))));
  $("#entitlement-action").addEventListener("change", entitlementActionChanged);
  $("#order-form").addEventListener("submit", lookUpOrder);
  $("#purchase-form").addEventListener("submit", findPurchase);
  $("#purchase-credit-form").addEventListener("submit", creditOrder);
  $("#statement-form").addEventListener("submit", showStatement);
  $("#statement-print").addEventListener("click", () => window.print());
  $("#statement-download").addEventListener("click", downloadStatement);
  $("#refund-form").addEventListener("submit", refund);
  $("#head-refresh").addEventListener("click", refreshHead);
  $("#verify").addEventListener("click", verifyLedger);
  $("#export-form").addEventListener("submit", downloadExport);
  $("#volume-form").addEventListener("submit", showVolume);
  $("#outboxes-refresh").addEventListener("click", loadOutboxes);
  $("#key-form").addEventListener("submit", createKey);
  $("#product-form").addEventListener("submit", addProduct);
  $("#webhook-form").addEventListener("submit", addWebhook);
}

// A module runs once the document is parsed, like a deferred script.
wire();
// A reload of a signed-in tab stays signed in; a new tab starts signed out.
if (session.key()) {
  api("GET", "/v1/me").then(({ data }) => showSignedIn(data), signOut);
}
