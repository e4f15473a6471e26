// What the page holds for the signed-in tab: who signed in, the player shown and their history.
// Signing out reloads the page, so nothing of it outlives the key.

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
