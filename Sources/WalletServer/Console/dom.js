// Building the page: every value the API answers reaches the page as text (`textContent`, or an
// attribute set one by one), never as markup, so a hostile id, note or name shows as typed.

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

/// An element with its properties (`className`, `textContent`, ...) and children.
export function element(tag, properties = {}, ...children) {
  const node = Object.assign(document.createElement(tag), properties);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

export function text(value) {
  return value === null || value === undefined ? "" : String(value);
}

export function cell(value, className) {
  const td = element("td", { textContent: text(value) });
  if (className) td.className = className;
  return td;
}

export function row(...cells) {
  return element("tr", {}, ...cells.map((value) => value instanceof Node ? value : cell(value)));
}

export function button(label, accessibleName, onClick) {
  const node = element("button", { type: "button", textContent: label });
  if (accessibleName) node.setAttribute("aria-label", accessibleName);
  node.addEventListener("click", onClick);
  return node;
}

export function signed(amount) {
  return (amount > 0 ? "+" : "") + amount;
}

/// A description list of the pairs whose value is present.
export function facts(pairs) {
  const list = element("dl", { className: "facts" });
  for (const [name, value, className] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    list.append(element("dt", { textContent: name }), element("dd", { textContent: text(value), className: className || "" }));
  }
  return list;
}
