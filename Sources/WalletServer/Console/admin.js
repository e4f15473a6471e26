// Admins: API keys, the catalog, and webhook endpoints.

import { $, cell, element, row, button } from "./dom.js";
import { api } from "./api.js";
import { clearErrors, showProblem, submitting, value, wholeNumber } from "./forms.js";

// ---- Keys ---------------------------------------------------------------------------------------------

export async function loadKeys() {
  try {
    const { data } = await api("GET", "/v1/keys");
    $("#keys tbody").replaceChildren(...data.keys.map((key) => {
      const action = element("td");
      if (!key.revoked_at) action.append(button("Revoke", "Revoke " + key.name, () => revokeKey(key)));
      return row(key.id, cell(key.name, "wrap"), key.role, key.created_at, key.revoked_at || "", action);
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

export async function createKey(event) {
  event.preventDefault();
  const form = event.currentTarget;
  return submitting(form, async () => {
    const { data } = await api("POST", "/v1/keys", { body: { name: value("#key-name"), role: $("#key-role").value } });
    $("#key-secret").textContent = "The secret of " + data.key.name + ", shown this once: " + data.secret;
    form.reset();
    await loadKeys();
  });
}

// ---- Catalog --------------------------------------------------------------------------------------

/// What a product grants besides credits: the entitlement, for ever or for its pass's duration.
function grants(product) {
  if (!product.entitlement) return "";
  return product.entitlement + (product.duration ? " for " + product.duration : " for ever");
}

export async function loadProducts() {
  try {
    const { data } = await api("GET", "/v1/products");
    $("#products tbody").replaceChildren(...data.products.map((product) => {
      // The whole product is sent again: only `active` changes (its type, entitlement and store stay).
      const update = { credits: product.credits, currency: product.currency, active: !product.active };
      for (const field of ["store", "type", "entitlement", "duration"]) if (product[field]) update[field] = product[field];
      const label = product.active ? "Deactivate" : "Activate";
      const action = element("td", {}, button(label, label + " " + product.product_id,
        () => setProduct(product.product_id, update).catch((problem) => showProblem($("#product-form"), problem))));
      return row(cell(product.product_id, "wrap"), product.type || "consumable", cell(product.credits, "amount"), product.currency, cell(grants(product), "wrap"),
        product.store || "any", product.active ? "yes" : "no", action);
    }));
  } catch (problem) {
    showProblem($("#product-form"), problem);
  }
}

async function setProduct(id, body) {
  await api("PUT", "/v1/products/" + encodeURIComponent(id), { body });
  await loadProducts();
}

export async function addProduct(event) {
  event.preventDefault();
  const form = event.currentTarget;
  return submitting(form, async () => {
    const body = { credits: wholeNumber("#product-credits", "credits", "credits must be a whole number"), currency: value("#product-currency") || "credits" };
    if (value("#product-store")) body.store = value("#product-store");
    await setProduct(value("#product-id"), body);
    form.reset();
  });
}

// ---- Webhook endpoints ------------------------------------------------------------------------------

/// When the next attempt may start: only an active endpoint is sent to.
function nextAttempt(endpoint) {
  return endpoint.status === "active" ? endpoint.next_attempt_at : "none while " + endpoint.status;
}

export async function loadWebhooks() {
  try {
    const { data } = await api("GET", "/v1/webhooks");
    $("#webhooks tbody").replaceChildren(...data.webhooks.map((endpoint) => {
      const where = cell(endpoint.url, "wrap");
      if (endpoint.description) where.append(element("small", { textContent: endpoint.description }));
      const status = element("td", {}, element("span", { className: "status status-" + endpoint.status, textContent: endpoint.status }));
      const actions = element("td");
      // A failing endpoint may be resumed (Enable) or switched off for good (Disable).
      for (const [label, action, shown] of [["Disable", "disable", endpoint.status !== "disabled"], ["Enable", "enable", endpoint.status !== "active"]]) {
        if (!shown) continue;
        const control = button(label, label + " " + endpoint.url, () => setWebhook(endpoint, action, control));
        actions.append(control);
      }
      const types = endpoint.types.length === 1 && endpoint.types[0] === "*" ? "all (*)" : endpoint.types.join(", ");
      // The buttons stand beside the status they change, in view on a narrow screen too.
      return row(where, cell(types, "names"), status, actions, cell(endpoint.cursor_seq, "amount"), cell(endpoint.delivered, "amount"),
        cell(endpoint.attempts, "amount"), cell(endpoint.last_error || "", "wrap"), nextAttempt(endpoint));
    }));
    $("#webhooks").hidden = data.webhooks.length === 0;
    $("#webhooks-none").hidden = data.webhooks.length !== 0;
  } catch (problem) {
    showProblem($("#webhook-form"), problem);
  }
}

async function setWebhook(endpoint, action, control) {
  const form = $("#webhook-form");
  clearErrors(form);
  control.disabled = true;
  try {
    await api("POST", "/v1/webhooks/" + encodeURIComponent(endpoint.id) + "/" + action);
  } catch (problem) {
    showProblem(form, problem);
  }
  await loadWebhooks();
}

/// The list as typed: names separated by commas (spaces around them do not matter). An empty
/// list is sent as it is, so that the API's detail says what to write.
function webhookTypes(typed) {
  return typed.split(",").map((name) => name.trim()).filter((name) => name !== "");
}

export async function addWebhook(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const secret = $("#webhook-secret");
  secret.replaceChildren();
  return submitting(form, async () => {
    const body = { url: value("#webhook-url"), types: webhookTypes($("#webhook-types").value) };
    if (value("#webhook-description")) body.description = value("#webhook-description");
    const { data } = await api("POST", "/v1/webhooks", { body });
    // The secret leaves the wallet this once: the page says so, and holds it nowhere else.
    const code = element("code", { id: "webhook-secret-value", textContent: data.secret });
    secret.append("Added " + data.endpoint.url + ". Its signing secret is shown this once: copy it now into the receiver's configuration. ", code);
    form.reset();
    await loadWebhooks();
  });
}
