// What the page holds for the signed-in tab: who signed in, the player shown and their history.
// Signing out reloads the page, so nothing of it outlives the key.

import { $ } from "./dom.js";
import { api, walletPath } from "./api.js";

export const page = {
  me: null,
  player: null,
  history: [],
  historyCursor: null,
  statement: null,
  /// Draws the player's page again after a change (set by players.js).
  refreshPlayer: async () => {},
};

/// Whether the signed-in key's role is one of `roles`.
export function roleIn(...roles) {
  return page.me !== null && roles.includes(page.me.role);
}

/// Reads `path` of the player shown and fills the table `#name` (with `#name-none` and
/// `#name-error` beside it) with a row per element of the answer's `member`. An answer for a
/// player no longer shown (another was opened meanwhile) is dropped. Returns the answer, or null
/// when dropped or refused (the refusal is then said in `#name-error`, through `refusal`).
export async function fillPlayerTable(name, path, member, toRow, refusal = (problem) => problem.detail) {
  const error = $("#" + name + "-error");
  error.textContent = "";
  try {
    const player = page.player;
    const { data } = await api("GET", walletPath(player, path));
    if (player !== page.player) return null;
    const items = data[member];
    $("#" + name + " tbody").replaceChildren(...items.map(toRow));
    $("#" + name).hidden = items.length === 0;
    $("#" + name + "-none").hidden = items.length !== 0;
    return data;
  } catch (problem) {
    $("#" + name).hidden = true;
    $("#" + name + "-none").hidden = true;
    error.textContent = refusal(problem);
    return null;
  }
}
