import Foundation
import WalletCore

/// The `lots` and `lot_draws` tables: every credit of a player's wallet makes a lot, every debit
/// draws from the open ones by `LotRules` and records its breakdown, in the same write as the
/// transaction.
enum LotStorage {
    static let columnNames = ["id", "category", "amount", "remaining", "created_at", "expires_at", "source_seq"]

    /// The columns `lot(from:)` reads, in its order, of the table named `alias` if given.
    static func columns(alias: String? = nil) -> String {
        columnNames.map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    /// The lots of an account with something left, oldest first.
    static func open(_ db: any SQLSession, accountID: Int64) throws -> [Lot] {
        try db.all("SELECT \(columns()) FROM lots WHERE account_id = ? AND remaining > 0 ORDER BY id", [.integer(accountID)]) { row in try lot(from: row) }
    }

    /// A lot from a row whose first columns are `columns`, in their order.
    static func lot(from row: any SQLRow) throws -> Lot {
        guard let category = LotCategory(rawValue: try row.text(1)) else { throw WalletError.corrupt("a lot has an unknown category") }
        return Lot(
            id: try row.integer(0), category: category, amount: try row.integer(2), remaining: try row.integer(3), createdAt: try row.text(4),
            expiresAt: try row.textOrNil(5), sourceSeq: try row.integer(6))
    }

    /// Makes the lot of a credit of `amount` to an account whose balance was `balanceBefore`:
    /// a debt is repaid first, and only the rest becomes a lot (none when nothing is left).
    static func credit(
        _ db: any SQLSession, accountID: Int64, balanceBefore: Int64, amount: Int64, category: LotCategory, expiresAt: String? = nil,
        transaction: LedgerTransaction
    ) throws {
        let lotAmount = LotRules.lotAmount(ofCredit: amount, balance: balanceBefore)
        guard lotAmount > 0 else { return }
        try db.execute(
            "INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.integer(accountID), .text(category.rawValue), .integer(lotAmount), .integer(lotAmount), .text(transaction.createdAt), .text(expiresAt),
             .integer(transaction.seq)])
    }

    /// Records a transaction's breakdown and takes it from (or, negative, gives it back to) the lots.
    static func apply(_ db: any SQLSession, seq: Int64, draws: [LotDraw]) throws {
        guard !draws.isEmpty else { return }
        for draw in draws {
            try db.execute("UPDATE lots SET remaining = remaining - ? WHERE id = ?", [.integer(draw.amount), .integer(draw.lotID)])
        }
        // The breakdown in one statement: one round trip on PostgreSQL, whatever the number of lots.
        try db.execute(
            "INSERT INTO lot_draws (seq, lot_id, amount) VALUES " + Array(repeating: "(?, ?, ?)", count: draws.count).joined(separator: ", "),
            draws.flatMap { [SQLValue.integer(seq), .integer($0.lotID), .integer($0.amount)] })
    }
}
