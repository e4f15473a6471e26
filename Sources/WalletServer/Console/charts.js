// Charts in plain SVG, each with a label for assistive technology and its numbers in a table
// beside it. Text reaches SVG as text nodes, like everywhere else.

import { element } from "./dom.js";

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
export function drawBalance(box, transactions, player, currency) {
  const account = "player:" + player;
  const points = transactions.slice().reverse().flatMap((transaction) => {
    const posting = (transaction.postings || []).find((p) => p.account === account && transaction.currency === currency);
    return posting ? [{ at: String(transaction.created_at), seq: transaction.seq, balance: posting.balance_after }] : [];
  });
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

/// The kinds present in `rows`, in the ledger's order of kinds (`order`, from the API's own
/// document); a kind it does not list yet comes last rather than not at all.
export function kindsIn(rows, order) {
  const present = [...new Set(rows.map((row) => String(row.kind)))];
  const rank = (kind) => (order.includes(kind) ? order.indexOf(kind) : order.length);
  return present.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/// Each kind's colour: its place in the ledger's order of kinds, so it keeps its colour from one
/// period to the next (the style sheet has twelve).
function colourClass(kind, order, shown) {
  const place = order.includes(kind) ? order.indexOf(kind) : order.length + shown.indexOf(kind);
  return "series-" + (place % 12);
}

/// Stacked bars: transactions per day, by kind, for every kind the answer has; every UTC day of
/// the period drawn (quiet ones empty).
export function drawVolume(box, days, from, to, order) {
  const byDay = new Map();
  const last = new Date(to).getTime();
  for (let day = Date.parse(from.slice(0, 10) + "T00:00:00Z"); day < last && byDay.size <= 366; day += 86_400_000) {
    byDay.set(new Date(day).toISOString().slice(0, 10), {});
  }
  for (const entry of days) {
    const counts = byDay.get(entry.day) || {};
    counts[entry.kind] = (counts[entry.kind] || 0) + entry.count;
    byDay.set(entry.day, counts);
  }
  if (days.length === 0) {
    box.replaceChildren(element("p", { textContent: "No transactions in this period." }));
    return;
  }
  const kinds = kindsIn(days, order);
  const entries = Array.from(byDay.entries());
  const width = 640, height = 220, left = 40, right = 8, top = 10, bottom = 28;
  const totals = entries.map(([, counts]) => Object.values(counts).reduce((a, b) => a + b, 0));
  const high = Math.max(1, ...totals);
  const slot = (width - left - right) / entries.length;
  const chart = chartFrame(width, height, `Transactions per day by kind (${kinds.join(", ")}), ${entries.length} days from ${entries[0][0]} to ${entries[entries.length - 1][0]}; most in a day: ${high}`);
  chart.append(svg("line", { class: "axis", x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
  chart.append(svg("text", { x: left - 6, y: top + 8, "text-anchor": "end" }, high));
  entries.forEach(([day, counts], index) => {
    let base = height - bottom;
    for (const kind of kinds) {
      const count = counts[kind] || 0;
      if (!count) continue;
      const barHeight = count * (height - top - bottom) / high;
      base -= barHeight;
      const bar = svg("rect", { class: colourClass(kind, order, kinds), "data-kind": kind, x: left + index * slot + slot * 0.1, y: base, width: Math.max(1, slot * 0.8), height: barHeight });
      bar.append(svg("title", {}, `${day}: ${count} ${kind}`));
      chart.append(bar);
    }
  });
  chart.append(svg("text", { x: left, y: height - 8 }, entries[0][0]));
  chart.append(svg("text", { x: width - right, y: height - 8, "text-anchor": "end" }, entries[entries.length - 1][0]));
  const legend = element("ul", { className: "legend" });
  for (const kind of kinds) {
    const swatch = svg("svg", { viewBox: "0 0 10 10", "aria-hidden": "true" });
    swatch.append(svg("rect", { class: colourClass(kind, order, kinds), width: 10, height: 10 }));
    const item = element("li");
    item.dataset.kind = kind;
    item.append(swatch, kind);
    legend.append(item);
  }
  box.replaceChildren(chart, legend);
}
