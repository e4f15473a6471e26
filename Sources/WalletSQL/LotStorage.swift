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

    /// The burn order of `LotRules.burnSorted`, as the `lots_burn` index keeps it (in schema.sql
    /// and PostgresSchema, spelled exactly so, or the index is not used): the rank (expiring lots,
    /// then the other free ones, purchase lots last), the expiry, the date, the id. Core's sort
    /// stays the rule; this order only lets a debit read the lots it draws and stop.
    /// `LotReadTests` checks that both agree.
    static let burnRank = "CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END"
    static let burnOrder = "\(burnRank), expires_at, created_at, id"

    /// The first `limit` lots of an account with something left, in burn order.
    static func first(_ db: any SQLSession, accountID: Int64, limit: Int) throws -> [Lot] {
        try db.all(firstInBurnOrder, [.integer(accountID), .integer(Int64(limit))], lot(from:))
    }

    private static let firstInBurnOrder = "SELECT \(columns()) FROM lots WHERE account_id = ? AND remaining > 0 ORDER BY \(burnOrder) LIMIT ?"

    /// Lots a debit reads first: most debits draw from one or two lots.
    static let debitReadFirst = 4

    /// The lots of an account a debit of `debit` needs (`LotRules.decides`), in burn order: the
    /// first few, then eight times as many until they decide it, or all of them. A wallet's cost
    /// per debit is the lots it draws (and its expired ones, once), not the lots it keeps.
    /// `known`, when given, are the account's first lots as they are now
    /// (`BatchContext.firstLots`), read already.
    static func forDebit(_ db: any SQLSession, accountID: Int64, debit: Int64, balanceAtMost: Int64?, at: String, known: BatchContext.FirstLots? = nil) throws -> [Lot] {
        if let known, known.all || LotRules.decides(known.lots, debit: debit, balanceAtMost: balanceAtMost, at: at) { return known.lots }
        var limit = debitReadFirst
        var read = BatchContext.FirstLots(read: try first(db, accountID: accountID, limit: limit), limit: limit)
        while !read.all, !LotRules.decides(read.lots, debit: debit, balanceAtMost: balanceAtMost, at: at) {
            limit = limit > Int(Limits.openLotsPerWalletMax) ? Int.max : limit * 8
            read = BatchContext.FirstLots(read: try first(db, accountID: accountID, limit: limit), limit: limit)
        }
        return read.lots
    }

    /// Every lot of an account with something left, in burn order.
    static func open(_ db: any SQLSession, accountID: Int64) throws -> [Lot] {
        try db.all("SELECT \(columns()) FROM lots WHERE account_id = ? AND remaining > 0 ORDER BY \(burnOrder)", [.integer(accountID)], lot(from:))
    }

    /// The lots of an account past their expiry at `at` that still hold credits: the head of
    /// the burn order, read through `lots_burn`.
    static func expired(_ db: any SQLSession, accountID: Int64, at: String) throws -> [Lot] {
        try db.all(
            "SELECT \(columns()) FROM lots WHERE account_id = ? AND remaining > 0 AND \(burnRank) = 0 AND expires_at <= ? ORDER BY expires_at, created_at, id",
            [.integer(accountID), .text(at)], lot(from:))
    }

    /// A lot from a row whose first columns are `columns`, in their order.
    static func lot(from row: any SQLRow) throws -> Lot {
        let id = try row.integer(0)
        return Lot(
            id: id, category: try category(try row.text(1), lotID: id), amount: try row.integer(2), remaining: try row.integer(3),
            createdAt: try row.text(4), expiresAt: try row.textOrNil(5), sourceSeq: try row.integer(6))
    }

    /// The category of lot `lotID` as its row stores it: every reader of a lot's row decodes it
    /// here, so a category this build does not know is refused alike, as `corrupt`.
    static func category(_ text: String, lotID: Int64) throws -> LotCategory {
        guard let category = LotCategory(rawValue: text) else {
            throw WalletError.corrupt("lot \(lotID) has an unknown category '\(text.prefix(40))'")
        }
        return category
    }

    /// Whether the wallet of `account` keeps `lotsMax` open lots already, read only when its
    /// balance allows it (`LotRules.mayBeFull`): false for a wallet without an account.
    static func isFull(_ db: any SQLSession, account: Account?, lotsMax: Int64 = Limits.openLotsPerWalletMax) throws -> Bool {
        guard let account, LotRules.mayBeFull(balance: account.balance, lotsMax: lotsMax) else { return false }
        return try db.first(
            "SELECT 1 FROM lots WHERE account_id = ? AND remaining > 0 LIMIT 1 OFFSET ?",
            [.integer(account.id), .integer(lotsMax - 1)]) { _ in true } ?? false
    }

    /// Makes the lot a credit decided (`LedgerPlan.lot`), in the account of `accountID`.
    static func insert(_ db: any SQLSession, accountID: Int64, _ lot: NewLot, transaction: LedgerTransaction) throws {
        try db.execute(
            "INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.integer(accountID), .text(lot.category.rawValue), .integer(lot.amount), .integer(lot.amount), .text(transaction.createdAt), .text(lot.expiresAt),
             .integer(transaction.seq)])
    }

    /// Up to `limit` lots across wallets past their expiry at `at` that still hold credits,
    /// soonest expiry first, with their wallet's player (the id as stored, see
    /// `LedgerTransaction.playerID`) and currency.
    static func due(_ db: any SQLSession, at: String, limit: Int) throws -> [(lot: Lot, playerID: String, currency: String)] {
        try db.all(
            """
            SELECT \(columns(alias: "l")), a.owner, a.currency FROM lots l JOIN accounts a ON a.id = l.account_id
            WHERE l.remaining > 0 AND l.expires_at IS NOT NULL AND l.expires_at <= ? ORDER BY l.expires_at, l.id LIMIT ?
            """, [.text(at), .integer(Int64(limit))]
        ) { row in
            let owner = try row.text(7)
            guard let playerID = AccountOwner.playerID(ofOwner: owner) else { throw WalletError.corrupt("a lot belongs to \(owner.prefix(64)), not a player") }
            return (try lot(from: row), playerID, try row.text(8))
        }
    }

    /// The seq of the last transaction that drew from `lot` (its crediting one if none did).
    static func lastDrawSeq(_ db: any SQLSession, lot: Lot) throws -> Int64 {
        try db.integer("SELECT max(seq) FROM lot_draws WHERE lot_id = ?", [.integer(lot.id)]) ?? lot.sourceSeq
    }

    /// Records a transaction's breakdown and takes it from (or, negative, gives it back to) the
    /// lots, as rows a session may hold back and send with other transactions' (`RowWrite`).
    static func apply(_ db: any SQLSession, seq: Int64, draws: [LotDraw]) throws {
        guard !draws.isEmpty else { return }
        try db.write(.lotDrawn, draws.map { [.integer($0.lotID), .integer($0.amount)] })
        try db.write(.lotDraw, draws.map { [.integer(seq), .integer($0.lotID), .integer($0.amount)] })
    }
}
