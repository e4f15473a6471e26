import Foundation
import WalletCore

/// Reads of the ledger, usable inside a write transaction or on a read snapshot, on any store.
enum LedgerReads {
    /// The last transaction's `seq` and `hash`; `(0, genesis)` for an empty ledger.
    static func head(_ db: any SQLSession) throws -> (seq: Int64, hash: String) {
        try db.first("SELECT seq, hash FROM transactions ORDER BY seq DESC LIMIT 1") { row in (try row.integer(0), try row.text(1)) }
            ?? (0, HashChain.genesis)
    }

    private static let productColumns = "product_id, currency, credits, store, active, updated_at, type, entitlement, duration"

    static func product(_ db: any SQLSession, id: String) throws -> Product? {
        try db.first("SELECT \(productColumns) FROM products WHERE product_id = ?", [.text(id)], product(from:))
    }

    static func products(_ db: any SQLSession) throws -> [Product] {
        try db.all("SELECT \(productColumns) FROM products ORDER BY product_id", [], product(from:))
    }

    private static func product(from row: any SQLRow) throws -> Product {
        let typeText = try row.text(6)
        guard let type = ProductType(rawValue: typeText) else { throw WalletError.corrupt("a product has an unknown type '\(typeText.prefix(40))'") }
        return Product(
            productID: try row.text(0), currency: try row.text(1), credits: try row.integer(2),
            store: try row.textOrNil(3), active: try row.integer(4) != 0, updatedAt: try row.text(5), type: type, entitlement: try row.textOrNil(7),
            duration: try row.textOrNil(8))
    }

    /// The purchase that credited a store transaction, if any.
    static func purchase(_ db: any SQLSession, store: String, storeTransactionID: String) throws -> LedgerTransaction? {
        let seq = try db.first(
            "SELECT seq FROM transactions WHERE kind = 'purchase' AND store = ? AND store_transaction_id = ?", [.text(store), .text(storeTransactionID)]
        ) { row in try row.integer(0) }
        return try seq.map { try transaction(db, seq: $0) }
    }

    /// The transaction at `seq` with its postings.
    static func transaction(_ db: any SQLSession, seq: Int64) throws -> LedgerTransaction {
        guard let transaction = try db.first("SELECT \(transactionColumnList) FROM transactions WHERE seq = ?", [.integer(seq)], { row in
            try transaction(from: row, postings: [])
        }) else {
            throw WalletError.notFound("no transaction at seq \(seq)")
        }
        return try transaction.with(postings: postings(db, seq: seq))
    }

    static func postings(_ db: any SQLSession, seq: Int64) throws -> [Posting] {
        try db.all(
            """
            SELECT a.owner, a.currency, p.amount, p.balance_after FROM postings p JOIN accounts a ON a.id = p.account_id
            WHERE p.seq = ? ORDER BY a.owner, a.currency
            """, [.integer(seq)]
        ) { row in
            Posting(account: try row.text(0), currency: try row.text(1), amount: try row.integer(2), balanceAfter: try row.integer(3))
        }
    }

    /// The `transactions` columns every read selects, in `TransactionField` order, so that
    /// `transaction(from:postings:)` reads them by index (looking columns up by name costs
    /// more than the rest of the decoding).
    static let transactionColumnNames = TransactionField.allCases.map(\.column)
    /// `transactionColumnNames` as a select list, optionally qualified by a table alias.
    static func transactionColumns(alias: String? = nil) -> String {
        transactionColumnNames.map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }
    static let transactionColumnList = transactionColumns()

    /// The statement that appends a transaction row, its values in `TransactionField` order.
    static let insertTransaction =
        "INSERT INTO transactions (\(transactionColumnList)) VALUES (\(transactionColumnNames.map { _ in "?" }.joined(separator: ", ")))"

    /// The values of `insertTransaction` for `transaction`.
    static func values(of transaction: LedgerTransaction) -> [SQLValue] {
        TransactionField.allCases.map { field in
            switch field.value(of: transaction) {
            case .text(let text), .json(let text): .text(text)
            case .integer(let integer): .integer(integer)
            }
        }
    }

    /// Builds a transaction from a row that starts with `transactionColumns`, and its postings.
    static func transaction(from row: any SQLRow, postings: [Posting]) throws -> LedgerTransaction {
        try LedgerTransaction(reading: StoredTransactionRow(row: row), postings: postings)
    }

    /// The balances a debit would find now (`LotRules.settledBalance`): credits of lots past
    /// their expiry are not counted, credits of holds past theirs are, before any of it is booked.
    static func balances(_ db: any SQLSession, playerID: PlayerID, now: Date) throws -> WalletBalances {
        let at = Timestamp.format(now)
        let owner = AccountOwner.player(playerID.text).text
        var balances = [defaultCurrency: Int64(0)]
        let accounts = try db.all("SELECT id, currency, balance FROM accounts WHERE owner = ?", [.text(owner)]) { row in
            (id: try row.integer(0), currency: try row.text(1), balance: try row.integer(2))
        }
        var held: [String: Int64] = [:]
        var expiredHolds: [String: [Hold]] = [:]
        try db.forEach(
            "SELECT \(HoldStorage.columns) FROM \(HoldStorage.source) WHERE h.player_id = ? AND h.status = 'open'", [.text(playerID.text)]
        ) { row in
            let hold = try HoldStorage.hold(from: row)
            if hold.isExpired(at: at) { expiredHolds[hold.currency, default: []].append(hold) } else { held[hold.currency, default: 0] += hold.amount }
        }
        for account in accounts {
            let expiredLots = try db.all(
                "SELECT \(LotStorage.columns()) FROM lots WHERE account_id = ? AND remaining > 0 AND expires_at IS NOT NULL AND expires_at <= ?",
                [.integer(account.id), .text(at)], LotStorage.lot(from:))
            let holds = try (expiredHolds[account.currency] ?? []).sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }.map { hold in
                (hold: hold, drawn: try HoldStorage.draws(db, holdSeq: hold.holdSeq))
            }
            balances[account.currency] = LotRules.settledBalance(
                account.balance, lots: expiredLots + holds.flatMap(\.drawn.lots), expiredHolds: holds.map { ($0.hold.amount, $0.drawn.draws) }, at: at)
        }
        var expiring: [String: Int64] = [:]
        try db.forEach(
            """
            SELECT a.currency, CAST(sum(l.remaining) AS BIGINT) FROM lots l JOIN accounts a ON a.id = l.account_id
            WHERE a.owner = ? AND l.remaining > 0 AND l.expires_at > ? AND l.expires_at <= ? GROUP BY a.currency
            """, [.text(owner), .text(at), .text(Timestamp.format(now.addingTimeInterval(WalletBalances.expiringWindow)))]
        ) { row in expiring[try row.text(0)] = try row.integer(1) }
        return WalletBalances(playerID: playerID, balances: balances, expiringWithin7Days: expiring, held: held)
    }

    static func lots(_ db: any SQLSession, playerID: PlayerID, now: Date) throws -> [WalletLot] {
        var byCurrency: [String: [Lot]] = [:]
        let accounts = try db.all("SELECT id, currency FROM accounts WHERE owner = ? ORDER BY currency", [.text(AccountOwner.player(playerID.text).text)]) { row in
            (id: try row.integer(0), currency: try row.text(1))
        }
        for account in accounts { byCurrency[account.currency] = try LotStorage.open(db, accountID: account.id) }
        let at = Timestamp.format(now)
        return byCurrency.keys.sorted().flatMap { currency -> [WalletLot] in
            let lots = byCurrency[currency] ?? []
            let spendable = LotRules.burnOrder(lots, at: at)
            let expired = lots.filter { $0.isExpired(at: at) }
            return (spendable + expired).map { WalletLot($0, currency: currency, now: at) }
        }
    }

    /// `from` and `to` are in the ledger's timestamp format (see `Timestamp.parse`).
    static func history(_ db: any SQLSession, _ query: HistoryQuery, from: String?, to: String?) throws -> HistoryPage {
        // One row more than the page tells whether another page follows.
        let rows = try db.all(
            """
            SELECT \(transactionColumnList) FROM transactions WHERE player_id = ?1
                AND (CAST(?2 AS BIGINT) IS NULL OR seq < ?2) AND (CAST(?3 AS TEXT) IS NULL OR kind = ?3)
                AND (CAST(?5 AS TEXT) IS NULL OR created_at >= ?5) AND (CAST(?6 AS TEXT) IS NULL OR created_at < ?6)
            ORDER BY seq DESC LIMIT ?4
            """,
            [.text(query.playerID.text), .integer(query.after), .text(query.kind?.rawValue), .integer(Int64(query.limit) + 1), .text(from), .text(to)]
        ) { row in try transaction(from: row, postings: []) }
        let page = try rows.prefix(query.limit).map { transaction in try transaction.with(postings: postings(db, seq: transaction.seq)) }
        return HistoryPage(transactions: page, next: rows.count > query.limit ? page.last?.seq : nil)
    }
}

extension LedgerTransaction {
    func with(postings: [Posting]) -> LedgerTransaction {
        var transaction = self
        transaction.postings = postings
        return transaction
    }
}

/// A `transactions` row read by `TransactionField` index. A value this build cannot read is a
/// corrupt ledger, never a guess.
private struct StoredTransactionRow: TransactionFieldSource {
    let row: any SQLRow

    func optionalText(_ field: TransactionField) throws -> String? { try row.textOrNil(field.rawValue) }
    func optionalInteger(_ field: TransactionField) throws -> Int64? { try row.integerOrNil(field.rawValue) }
    func metadataText() throws -> String? { try row.textOrNil(TransactionField.metadata.rawValue) }

    func invalid(_ field: TransactionField, _ why: String) -> WalletError {
        let seq = (try? row.integerOrNil(TransactionField.seq.rawValue)).flatMap { $0 }
        return .corrupt("transaction \(seq.map(String.init) ?? "?") has an unreadable \(field.column): \(why)")
    }
}
