import Foundation
import WalletCore

/// The `holds` table and the hold operations: each one transaction of the chain, with its lot
/// breakdown, in one write.
enum HoldStorage {
    /// The hold's columns, then its hold transaction's actor (who placed it), as `hold(from:)` reads them.
    static let columns = "h.id, h.player_id, h.currency, h.amount, h.status, h.expires_at, h.hold_seq, h.resolved_seq, h.captured, t.actor"
    /// `holds h` with the transaction that placed each hold.
    static let source = "holds h JOIN transactions t ON t.seq = h.hold_seq"

    static func hold(from row: any SQLRow) throws -> Hold {
        guard let status = Hold.Status(rawValue: try row.text(4)) else { throw WalletError.corrupt("a hold has an unknown status") }
        return Hold(
            id: try row.text(0), playerID: try row.text(1), currency: try row.text(2), amount: try row.integer(3), status: status, expiresAt: try row.text(5),
            holdSeq: try row.integer(6), resolvedSeq: try row.integerOrNil(7), captured: try row.integerOrNil(8), placedBy: HoldParty(actor: try row.text(9)))
    }

    static func find(_ db: any SQLSession, id: String) throws -> Hold? {
        try db.first("SELECT \(columns) FROM \(source) WHERE h.id = ?", [.text(id)], hold(from:))
    }

    static func find(_ db: any SQLSession, seq: Int64) throws -> Hold? {
        try db.first("SELECT \(columns) FROM \(source) WHERE h.hold_seq = ? OR h.resolved_seq = ?", [.integer(seq), .integer(seq)], hold(from:))
    }

    /// The player's open holds, then the most recent resolved ones.
    static func list(_ db: any SQLSession, playerID: PlayerID, recent: Int) throws -> [Hold] {
        try db.all("SELECT \(columns) FROM \(source) WHERE h.player_id = ? AND h.status = 'open' ORDER BY h.hold_seq DESC", [.text(playerID.text)], hold(from:))
            + db.all(
                "SELECT \(columns) FROM \(source) WHERE h.player_id = ? AND h.status <> 'open' ORDER BY h.hold_seq DESC LIMIT ?",
                [.text(playerID.text), .integer(Int64(recent))], hold(from:))
    }

    /// The wallet's open holds whose expiry has passed at `now`, soonest first. The player id is
    /// the wallet's as stored (`WalletSnapshot.playerID`).
    static func expired(_ db: any SQLSession, storedPlayerID playerID: String, currency: String, now: Date) throws -> [Hold] {
        try db.all(
            """
            SELECT \(columns) FROM \(source) WHERE h.player_id = ? AND h.currency = ? AND h.status = 'open' AND h.expires_at <= ?
            ORDER BY h.expires_at, h.id
            """, [.text(playerID), .text(currency), .text(Timestamp.format(now))], hold(from:))
    }

    /// Up to `limit` open holds across wallets past their expiry at `at`, soonest first.
    static func due(_ db: any SQLSession, at: String, limit: Int) throws -> [Hold] {
        try db.all(
            "SELECT \(columns) FROM \(source) WHERE h.status = 'open' AND h.expires_at <= ? ORDER BY h.expires_at, h.id LIMIT ?",
            [.text(at), .integer(Int64(limit))], hold(from:))
    }

    /// The hold with what it drew (`draws(holdSeq:)`), as Core's hold rules read it.
    static func held(_ db: any SQLSession, _ hold: Hold) throws -> HeldCredits {
        let drawn = try draws(db, holdSeq: hold.holdSeq)
        return HeldCredits(hold: hold, draws: drawn.draws, lots: drawn.lots)
    }

    /// Opens `hold`, and tells the batch (`BatchContext.withoutOpenHolds`).
    static func insert(_ db: any SQLSession, _ hold: Hold, context: inout BatchContext) throws {
        context.holdPlaced(playerID: hold.playerID, currency: hold.currency)
        try db.execute(
            "INSERT INTO holds (id, player_id, currency, amount, status, expires_at, hold_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(hold.id), .text(hold.playerID), .text(hold.currency), .integer(hold.amount), .text(hold.status.rawValue), .text(hold.expiresAt),
             .integer(hold.holdSeq)])
    }

    /// Records a hold's resolution (its status, resolving seq and capture), once: only an open
    /// hold changes.
    static func resolve(_ db: any SQLSession, _ hold: Hold) throws {
        try db.execute(
            "UPDATE holds SET status = ?, resolved_seq = ?, captured = ? WHERE id = ? AND status = 'open'",
            [.text(hold.status.rawValue), .integer(hold.resolvedSeq), .integer(hold.captured), .text(hold.id)])
    }

    /// What the hold transaction took from each lot, in burn order (the order it drew them), and
    /// those lots as they are now.
    static func draws(_ db: any SQLSession, holdSeq: Int64) throws -> (draws: [LotDraw], lots: [Lot]) {
        let rows = try db.all(
            "SELECT \(LotStorage.columns(alias: "l")), d.amount FROM lot_draws d JOIN lots l ON l.id = d.lot_id WHERE d.seq = ?",
            [.integer(holdSeq)]
        ) { row -> (Lot, Int64) in (try LotStorage.lot(from: row), try row.integer(7)) }
        let drawn = Dictionary(rows.map { ($0.0.id, $0.1) }, uniquingKeysWith: { first, _ in first })
        let lots = LotRules.burnSorted(rows.map(\.0))
        return (lots.map { LotDraw(lotID: $0.id, amount: drawn[$0.id] ?? 0) }, lots)
    }
}
