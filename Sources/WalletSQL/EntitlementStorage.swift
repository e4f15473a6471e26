import Foundation
import WalletCore

/// The `entitlements` and `entitlement_items` tables: what each player owns, and the items it
/// folds from, written in the same write as the `entitlement` transaction that changes them.
/// Player ids are taken as stored (a refund reaches the wallet of its purchase).
enum EntitlementStorage {
    static let itemColumns = "seq, kind, starts_at, period, purchase_seq, active"

    static func item(from row: any SQLRow, offset: Int = 0) throws -> EntitlementItem {
        let kindText = try row.text(offset + 1)
        let kind: EntitlementItem.Kind
        switch kindText {
        case "forever": kind = .forever
        case "revoke": kind = .revoke
        case "period":
            guard let period = try row.textOrNil(offset + 3), let duration = try? PassDuration(period) else {
                throw WalletError.corrupt("an entitlement item has no readable period")
            }
            kind = .period(duration)
        default: throw WalletError.corrupt("an entitlement item has an unknown kind '\(kindText.prefix(40))'")
        }
        return EntitlementItem(
            seq: try row.integer(offset), kind: kind, startsAt: try row.text(offset + 2), purchaseSeq: try row.integerOrNil(offset + 4),
            active: try row.integer(offset + 5) != 0)
    }

    /// The items of one player's entitlement, in seq order.
    static func items(_ db: any SQLSession, storedPlayerID playerID: String, name: String) throws -> [EntitlementItem] {
        try db.all(
            "SELECT \(itemColumns) FROM entitlement_items WHERE player_id = ? AND name = ? ORDER BY seq", [.text(playerID), .text(name)]
        ) { row in try item(from: row) }
    }

    /// The item a store purchase added, with its player (as stored) and entitlement.
    static func item(_ db: any SQLSession, purchaseSeq: Int64) throws -> (item: EntitlementItem, playerID: String, name: String)? {
        try db.first("SELECT \(itemColumns), player_id, name FROM entitlement_items WHERE purchase_seq = ?", [.integer(purchaseSeq)]) { row in
            (try item(from: row), try row.text(6), try row.text(7))
        }
    }

    /// Writes what a change decided: the entitlement's new state, then the item it adds (at
    /// `seq`, its transaction's) or the item it toggles.
    static func apply(_ db: any SQLSession, _ plan: EntitlementPlan, playerID: String, seq: Int64) throws {
        try db.execute(
            """
            INSERT INTO entitlements (player_id, name, forever, expires_at, updated_seq) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (player_id, name) DO UPDATE SET forever = excluded.forever, expires_at = excluded.expires_at, updated_seq = excluded.updated_seq
            """, [.text(playerID), .text(plan.name), .integer(plan.state.forever ? 1 : 0), .text(plan.state.expiresAt), .integer(seq)])
        if let added = plan.added {
            try db.execute(
                "INSERT INTO entitlement_items (seq, player_id, name, kind, starts_at, period, purchase_seq, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .integer(seq), .text(playerID), .text(plan.name), .text(added.kindName), .text(added.startsAt), .text(added.period?.text),
                    .integer(added.purchaseSeq), .integer(added.active ? 1 : 0),
                ])
        }
        if let toggled = plan.toggled {
            try db.execute("UPDATE entitlement_items SET active = ? WHERE seq = ?", [.integer(toggled.active ? 1 : 0), .integer(toggled.seq)])
        }
    }

    /// One entitlement's state: one read of the primary key. Nil when the player never had it.
    static func state(_ db: any SQLSession, storedPlayerID playerID: String, name: String) throws -> EntitlementState? {
        try db.first("SELECT forever, expires_at FROM entitlements WHERE player_id = ? AND name = ?", [.text(playerID), .text(name)]) { row in
            EntitlementState(forever: try row.integer(0) != 0, expiresAt: try row.textOrNil(1))
        }
    }

    /// Every entitlement of the player, by name, with the items behind each.
    static func list(_ db: any SQLSession, playerID: PlayerID, at: String) throws -> [Entitlement] {
        let states = try db.all("SELECT name, forever, expires_at FROM entitlements WHERE player_id = ? ORDER BY name", [.text(playerID.text)]) { row in
            (name: try row.text(0), state: EntitlementState(forever: try row.integer(1) != 0, expiresAt: try row.textOrNil(2)))
        }
        let sources = try db.all(
            """
            SELECT i.name, i.seq, i.kind, i.starts_at, i.period, i.purchase_seq, i.active, t.metadata, p.store, p.store_transaction_id, p.product_id
            FROM entitlement_items i JOIN transactions t ON t.seq = i.seq LEFT JOIN transactions p ON p.seq = i.purchase_seq
            WHERE i.player_id = ? ORDER BY i.name, i.seq
            """, [.text(playerID.text)]
        ) { row in
            let change = try changeKind(metadata: row.textOrNil(7), purchase: row.integerOrNil(5) != nil)
            return (
                name: try row.text(0),
                source: Entitlement.Source(
                    seq: try row.integer(1), change: change, startsAt: try row.text(3), period: try row.textOrNil(4), active: try row.integer(6) != 0,
                    store: try row.textOrNil(8), storeTransactionID: try row.textOrNil(9), productID: try row.textOrNil(10))
            )
        }
        let byName = Dictionary(grouping: sources, by: \.name)
        return states.map { Entitlement(name: $0.name, state: $0.state, at: at, items: byName[$0.name]?.map(\.source) ?? []) }
    }

    /// The change an item's transaction recorded.
    private static func changeKind(metadata: String?, purchase: Bool) throws -> EntitlementChangeKind {
        if purchase { return .purchase }
        guard let metadata, case .object(let members)? = try? JSONValue.parse(metadata), case .string(let text)? = members["change"],
            let change = EntitlementChangeKind(rawValue: text)
        else { throw WalletError.corrupt("an entitlement item's transaction does not say what changed") }
        return change
    }

    /// Every stored state, for `verify` to compare with what the ledger folds to.
    static func forEachState(_ db: any SQLSession, _ body: (_ playerID: String, _ name: String, _ state: EntitlementState, _ seq: Int64) throws -> Void) throws {
        for row in try db.all("SELECT player_id, name, forever, expires_at, updated_seq FROM entitlements ORDER BY player_id, name", [], { row in
            (try row.text(0), try row.text(1), EntitlementState(forever: try row.integer(2) != 0, expiresAt: try row.textOrNil(3)), try row.integer(4))
        }) {
            try body(row.0, row.1, row.2, row.3)
        }
    }
}
