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

    /// The seqs of the refunds and refund reversals of the purchase at `seq`, oldest first.
    static func correctionSeqs(_ db: any SQLSession, of seq: Int64) throws -> [Int64] {
        try db.all("SELECT seq FROM transactions WHERE refund_of_seq = ? ORDER BY seq", [.integer(seq)]) { row in try row.integer(0) }
    }

    /// The refunds and refund reversals of the purchase at `seq`, oldest first, with their postings.
    static func corrections(_ db: any SQLSession, of seq: Int64) throws -> [LedgerTransaction] {
        try db.all("SELECT \(transactionColumnList) FROM transactions WHERE refund_of_seq = ? ORDER BY seq", [.integer(seq)]) { row in
            try transaction(from: row, postings: [])
        }.map { correction in correction.with(postings: try postings(db, seq: correction.seq)) }
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
        try db.all("SELECT \(postingColumns) \(postingsJoined) WHERE p.seq = ? ORDER BY a.owner, a.currency", [.integer(seq)], posting(from:))
    }

    /// The transactions at `seqs` (a few dozen; one named twice is read once), with their
    /// postings, by seq: two statements, where reading them one by one takes two each. A seq
    /// without a transaction is not in the answer.
    static func transactions(_ db: any SQLSession, seqs: [Int64]) throws -> [Int64: LedgerTransaction] {
        guard !seqs.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: seqs.count).joined(separator: ", ")
        let values = seqs.map { SQLValue.integer($0) }
        var postings: [Int64: [Posting]] = [:]
        try db.forEach("SELECT \(postingColumns), p.seq \(postingsJoined) WHERE p.seq IN (\(marks)) ORDER BY p.seq, a.owner, a.currency", values) { row in
            postings[try row.integer(4), default: []].append(try posting(from: row))
        }
        var found: [Int64: LedgerTransaction] = [:]
        try db.forEach("SELECT \(transactionColumnList) FROM transactions WHERE seq IN (\(marks))", values) { row in
            let transaction = try transaction(from: row, postings: [])
            found[transaction.seq] = transaction.with(postings: postings[transaction.seq] ?? [])
        }
        return found
    }

    /// The columns `posting(from:)` reads, in its order, of `postingsJoined`.
    private static let postingColumns = "a.owner, a.currency, p.amount, p.balance_after"
    private static let postingsJoined = "FROM postings p JOIN accounts a ON a.id = p.account_id"

    private static func posting(from row: any SQLRow) throws -> Posting {
        Posting(account: try row.text(0), currency: try row.text(1), amount: try row.integer(2), balanceAfter: try row.integer(3))
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

    /// A transaction's row as `RowWrite.transaction` writes it, in `TransactionField` order.
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
            let expiredLots = try LotStorage.expired(db, accountID: account.id, at: at)
            let holds = try (expiredHolds[account.currency] ?? []).sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }.map { hold in
                (hold: hold, drawn: try HoldStorage.draws(db, holdSeq: hold.holdSeq))
            }
            balances[account.currency] = LotRules.settledBalance(
                account.balance, lots: expiredLots + holds.flatMap(\.drawn.lots), expiredHolds: holds.map { ($0.hold.amount, $0.drawn.draws) }, at: at)
        }
        var expiring: [String: Int64] = [:]
        let soon = Timestamp.format(now.addingTimeInterval(WalletBalances.expiringWindow))
        for account in accounts {
            // The lots expiring soon are a range of `lots_burn` (rank 0, by expiry): no other lot is read.
            let sum = try db.integer(
                """
                SELECT CAST(coalesce(sum(remaining), 0) AS BIGINT) FROM lots
                WHERE account_id = ? AND remaining > 0 AND \(LotStorage.burnRank) = 0 AND expires_at > ? AND expires_at <= ?
                """, [.integer(account.id), .text(at), .text(soon)]) ?? 0
            if sum > 0 { expiring[account.currency] = sum }
        }
        return WalletBalances(playerID: playerID, balances: balances, expiringWithin7Days: expiring, held: held)
    }

    /// A page of the player's open lots (`LotQuery`): per currency, the spendable ones in burn
    /// order, then the expired ones whose expiry is not booked yet, by id. Each part is a range
    /// of `lots_burn` (the expired ones are sorted, as few as the sweep leaves), read from the
    /// lot `after` names on, so a page reads its own lots and one more, whatever the wallet keeps.
    static func lots(_ db: any SQLSession, _ query: LotQuery, now: Date) throws -> LotPage {
        let at = Timestamp.format(now)
        var accounts = try db.all(
            "SELECT id, currency FROM accounts WHERE owner = ? ORDER BY currency", [.text(AccountOwner.player(query.playerID.text).text)]
        ) { row in (id: try row.integer(0), currency: try row.text(1)) }
        var start: (part: LotListPart, lot: Lot)?
        if let after = query.after {
            guard let (lot, accountID) = try db.first(
                "SELECT \(LotStorage.columns()), account_id FROM lots WHERE id = ?", [.integer(after)], { row in (try LotStorage.lot(from: row), try row.integer(7)) }),
                let index = accounts.firstIndex(where: { $0.id == accountID })
            else { throw WalletError.invalidRequest("after names no lot of \(query.playerID.text.prefix(64)); use the next of the previous page") }
            accounts.removeFirst(index)
            start = (LotListPart(of: lot, at: at), lot)
        }
        var page: [WalletLot] = []
        // One row more than the page tells whether another page follows.
        let wanted = query.limit + 1
        for account in accounts where page.count < wanted {
            for part in LotListPart.allCases where page.count < wanted {
                let from = start.flatMap { $0.part == part ? $0.lot : nil }
                if let start, part < start.part { continue }
                let lots = try part.read(db, accountID: account.id, after: from, at: at, limit: wanted - page.count)
                page += lots.map { WalletLot($0, currency: account.currency, now: at) }
            }
            start = nil
        }
        let next = page.count > query.limit ? page[query.limit - 1].id : nil
        return LotPage(lots: Array(page.prefix(query.limit)), next: next)
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

/// The parts of a currency's lot list, in the order they are answered, each a range of `lots_burn`.
enum LotListPart: Int, CaseIterable, Comparable {
    case expiring, free, paid, expired

    /// The part `lot` belongs to at `at`.
    init(of lot: Lot, at: String) {
        if lot.isExpired(at: at) { self = .expired } else if lot.expiresAt != nil { self = .expiring } else { self = lot.category == .paid ? .paid : .free }
    }

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Up to `limit` open lots of this part of the account, after `after` (a lot of this part) if given.
    /// Each condition is one range of `lots_burn` for SQLite's planner: `expires_at IS NULL` lets
    /// the free and paid parts come in index order, and after a lot of the expiring part (which
    /// had not expired) the row value alone bounds the range. The expired part is sorted by id,
    /// as the list always showed it: only the lots the sweep has not booked yet.
    func read(_ db: any SQLSession, accountID: Int64, after: Lot?, at: String, limit: Int) throws -> [Lot] {
        let (condition, order, keys): (String, String, [SQLValue]) =
            switch self {
            case .expiring: after == nil ? ("= 0 AND expires_at > ?", "expires_at, created_at, id", [.text(at)]) : ("= 0", "expires_at, created_at, id", [])
            case .free: ("= 1 AND expires_at IS NULL", "created_at, id", [])
            case .paid: ("= 2 AND expires_at IS NULL", "created_at, id", [])
            case .expired: ("= 0 AND expires_at <= ?", "id", [.text(at)])
            }
        var values: [SQLValue] = [.integer(accountID)] + keys
        var sql = "SELECT \(LotStorage.columns()) FROM lots WHERE account_id = ? AND remaining > 0 AND \(LotStorage.burnRank) \(condition)"
        if let after {
            switch self {
            case .expiring:
                sql += " AND (expires_at, created_at, id) > (?, ?, ?)"
                values += [.text(after.expiresAt), .text(after.createdAt), .integer(after.id)]
            case .free, .paid:
                sql += " AND (created_at, id) > (?, ?)"
                values += [.text(after.createdAt), .integer(after.id)]
            case .expired:
                sql += " AND id > ?"
                values += [.integer(after.id)]
            }
        }
        return try db.all(sql + " ORDER BY \(order) LIMIT ?", values + [.integer(Int64(limit))], LotStorage.lot(from:))
    }
}
