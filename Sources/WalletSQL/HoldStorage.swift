import Foundation
import WalletCore

/// The `holds` table and the hold operations: each one transaction of the chain, with its lot
/// breakdown, in one write.
enum HoldStorage {
    static let columns = "id, player_id, currency, amount, status, expires_at, hold_seq, resolved_seq, captured"

    static func hold(from row: any SQLRow) throws -> Hold {
        guard let status = Hold.Status(rawValue: try row.text(4)) else { throw WalletError.corrupt("a hold has an unknown status") }
        return Hold(
            id: try row.text(0), playerID: try row.text(1), currency: try row.text(2), amount: try row.integer(3), status: status, expiresAt: try row.text(5),
            holdSeq: try row.integer(6), resolvedSeq: try row.integerOrNil(7), captured: try row.integerOrNil(8))
    }

    static func find(_ db: any SQLSession, id: String) throws -> Hold? {
        try db.first("SELECT \(columns) FROM holds WHERE id = ?", [.text(id)], hold(from:))
    }

    static func find(_ db: any SQLSession, seq: Int64) throws -> Hold? {
        try db.first("SELECT \(columns) FROM holds WHERE hold_seq = ? OR resolved_seq = ?", [.integer(seq), .integer(seq)], hold(from:))
    }

    /// The player's open holds, then the most recent resolved ones.
    static func list(_ db: any SQLSession, playerID: String, recent: Int) throws -> [Hold] {
        try db.all("SELECT \(columns) FROM holds WHERE player_id = ? AND status = 'open' ORDER BY hold_seq DESC", [.text(playerID)], hold(from:))
            + db.all(
                "SELECT \(columns) FROM holds WHERE player_id = ? AND status <> 'open' ORDER BY hold_seq DESC LIMIT ?", [.text(playerID), .integer(Int64(recent))],
                hold(from:))
    }

    /// What the hold transaction took from each lot, in burn order (the order it drew them).
    static func draws(_ db: any SQLSession, holdSeq: Int64) throws -> [LotDraw] {
        let rows = try db.all(
            "SELECT \(LotStorage.columns(alias: "l")), d.amount FROM lot_draws d JOIN lots l ON l.id = d.lot_id WHERE d.seq = ?",
            [.integer(holdSeq)]
        ) { row -> (Lot, Int64) in (try LotStorage.lot(from: row), try row.integer(7)) }
        let drawn = Dictionary(uniqueKeysWithValues: rows.map { ($0.0.id, $0.1) })
        return LotRules.burnSorted(rows.map(\.0)).map { LotDraw(lotID: $0.id, amount: drawn[$0.id] ?? 0) }
    }
}
