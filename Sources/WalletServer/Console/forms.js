// Forms: refusals shown beside the field they concern, and one idempotency key per filled-in form.

import { $, $$, element } from "./dom.js";
import { Problem } from "./api.js";

export function clearErrors(form) {
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

/// The control of `form` that sends the request field `name` (its `data-field`), if it is in use.
function control(form, name) {
  return $$("[data-field]", form).find((node) => node.dataset.field === name && !node.disabled && !node.closest("[hidden]"));
}

function markInvalid(input, detail) {
  const message = element("p", { className: "field-error", id: input.id + "-error", textContent: detail });
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", input.dataset.hint ? message.id + " " + input.dataset.hint : message.id);
  input.insertAdjacentElement("afterend", message);
}

/// Each of the problem's field errors beside the control that sends that field (matched by the
/// field's name, never by words of the detail); the rest, or the detail when the problem names no
/// field, under the form. The first field marked gets the focus.
export function showProblem(form, problem) {
  if (!(problem instanceof Problem)) problem = new Problem(0, "invalid_request", String(problem));
  const unplaced = [];
  let first = null;
  for (const { field, detail } of problem.errors) {
    const input = control(form, field);
    if (!input || input.getAttribute("aria-invalid") === "true") {
      unplaced.push(detail);
      continue;
    }
    markInvalid(input, detail);
    first = first || input;
  }
  const formError = $(".error", form);
  if (problem.errors.length === 0) formError.textContent = problem.detail;
  else formError.textContent = unplaced.join("; ");
  if (first) first.focus();
}

/// A random key for idempotency (crypto.randomUUID exists only in secure contexts).
export function randomKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/// One idempotency key per filled-in form: a double click, or a retry after a network error,
/// sends the same key and never applies twice; changing the form after an answer starts a new one.
export function keyPerForm(form) {
  const keyed = { key: randomKey(), answered: false };
  form.addEventListener("input", () => {
    if (keyed.answered) {
      keyed.key = randomKey();
      keyed.answered = false;
      const result = $(".result", form);
      if (result) result.textContent = "";
    }
  });
  return keyed;
}

/// Runs `send` for a submitted form: errors cleared first, the submit button off while it runs,
/// a refusal shown beside its fields.
export async function submitting(form, send) {
  clearErrors(form);
  const result = $(".result", form);
  if (result) result.textContent = "";
  const submit = $("button[type=submit]", form);
  if (submit) submit.disabled = true;
  try {
    await send();
  } catch (problem) {
    showProblem(form, problem);
  } finally {
    if (submit) submit.disabled = false;
  }
}

/// The value of a text control, trimmed.
export function value(selector) {
  return $(selector).value.trim();
}

/// A whole number typed in `selector`, or a refusal beside it naming `field`.
export function wholeNumber(selector, field, detail, { signed = false } = {}) {
  const typed = value(selector);
  const number = Number(typed);
  // A number past 2^53 would be sent rounded: the page refuses it rather than send another amount.
  if (!(signed ? /^[+-]?\d+$/ : /^\d+$/).test(typed) || !Number.isSafeInteger(number)) throw Problem.field(field, detail);
  return number;
}
