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

    /// Refuses a free credit (a bonus, a support credit) of `amount` to an account whose balance
    /// is `balanceBefore` when it would make a lot and the wallet already keeps
    /// `Limits.openLotsPerWalletMax` open ones: checked before anything of the credit is written.
    /// Store purchases and refund reversals are never refused for it: the store was paid, and
    /// only real purchases make such lots. Every open lot holds at least one credit, so a
    /// balance under the limit proves there is room without reading anything.
    static func requireRoom(
        _ db: any SQLSession, account: Account, balanceBefore: Int64, amount: Int64, lotsMax: Int64 = Limits.openLotsPerWalletMax
    ) throws {
        guard balanceBefore >= lotsMax, LotRules.lotAmount(ofCredit: amount, balance: balanceBefore) > 0 else { return }
        let full = try db.first(
            "SELECT 1 FROM lots WHERE account_id = ? AND remaining > 0 ORDER BY id LIMIT 1 OFFSET ?",
            [.integer(account.id), .integer(lotsMax - 1)]) { _ in true } ?? false
        if full {
            throw WalletError.tooManyLots(
                "the wallet of \(account.owner.dropFirst(LedgerRules.playerOwner("").count).prefix(64)) keeps \(lotsMax) open lots of \(account.currency), the most one wallet may; spend or let some expire first; nothing was credited")
        }
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

    /// Lots one statement takes from at most: 3 parameters each, far under SQLite's 32,766 and
    /// PostgreSQL's 65,535 parameters a statement, so a debit from every one of a wallet's lots
    /// (`Limits.openLotsPerWalletMax`) is a few hundred statements, never one too large. Chunks
    /// are powers of two, so an engine prepares at most ten texts of each statement.
    static let drawRowsPerStatementMax = 512

    /// Records a transaction's breakdown and takes it from (or, negative, gives it back to) the
    /// lots: per chunk of lots, one UPDATE and one INSERT (a round trip each on PostgreSQL).
    static func apply(_ db: any SQLSession, seq: Int64, draws: [LotDraw]) throws {
        var start = draws.startIndex
        while start < draws.endIndex {
            var size = drawRowsPerStatementMax
            while size > draws.endIndex - start { size /= 2 }
            let chunk = draws[start..<start + size]
            if chunk.count == 1, let draw = chunk.first {
                try db.execute(updateOneLot, [.integer(draw.amount), .integer(draw.lotID)])
                try db.execute(insertOneDraw, [.integer(seq), .integer(draw.lotID), .integer(draw.amount)])
            } else {
                try db.execute(
                    "UPDATE lots SET remaining = remaining - CASE id " + Array(repeating: "WHEN ? THEN CAST(? AS BIGINT) ", count: chunk.count).joined()
                        + "END WHERE id IN (" + Array(repeating: "?", count: chunk.count).joined(separator: ", ") + ")",
                    chunk.flatMap { [SQLValue.integer($0.lotID), .integer($0.amount)] } + chunk.map { .integer($0.lotID) })
                try db.execute(
                    "INSERT INTO lot_draws (seq, lot_id, amount) VALUES " + Array(repeating: "(?, ?, ?)", count: chunk.count).joined(separator: ", "),
                    chunk.flatMap { [SQLValue.integer(seq), .integer($0.lotID), .integer($0.amount)] })
            }
            start = chunk.endIndex
        }
    }

    private static let updateOneLot = "UPDATE lots SET remaining = remaining - ? WHERE id = ?"
    private static let insertOneDraw = "INSERT INTO lot_draws (seq, lot_id, amount) VALUES (?, ?, ?)"
}
