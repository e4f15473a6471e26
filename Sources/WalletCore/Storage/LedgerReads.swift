import GRDB

/// Reads of the ledger, usable inside a write transaction or on a read snapshot.
enum LedgerReads {
    /// The last transaction's `seq` and `hash`; `(0, genesis)` for an empty ledger.
    static func head(_ db: Database) throws -> (seq: Int64, hash: String) {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, hash FROM transactions ORDER BY seq DESC LIMIT 1"))
        guard let row else { return (0, HashChain.genesis) }
        return (row[0], row[1])
    }

    static func product(_ db: Database, id: String) throws -> Product? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM products WHERE product_id = ?"), arguments: [id])
            .map(product(from:))
    }

    static func products(_ db: Database) throws -> [Product] {
        try Row.fetchAll(db, sql: "SELECT * FROM products ORDER BY product_id").map(product(from:))
    }

    private static func product(from row: Row) -> Product {
        Product(
            productID: row["product_id"], currency: row["currency"], credits: row["credits"],
            store: row["store"], active: row["active"], updatedAt: row["updated_at"])
    }

    /// The purchase that credited a store transaction, if any.
    static func purchase(_ db: Database, store: String, storeTransactionID: String) throws -> LedgerTransaction? {
        let seq = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT seq FROM transactions WHERE kind = 'purchase' AND store = ? AND store_transaction_id = ?"),
            arguments: [store, storeTransactionID])
        return try seq.map { try transaction(db, seq: $0) }
    }

    /// The transaction at `seq` with its postings.
    static func transaction(_ db: Database, seq: Int64) throws -> LedgerTransaction {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(transactionColumnList) FROM transactions WHERE seq = ?"), arguments: [seq]) else {
            throw WalletError.notFound("no transaction at seq \(seq)")
        }
        return try transaction(from: row, postings: postings(db, seq: seq))
    }

    static func postings(_ db: Database, seq: Int64) throws -> [Posting] {
        let statement = try db.cachedStatement(
            sql: """
                SELECT a.owner, a.currency, p.amount, p.balance_after FROM postings p JOIN accounts a ON a.id = p.account_id
                WHERE p.seq = ? ORDER BY a.owner, a.currency
                """)
        return try Row.fetchAll(statement, arguments: [seq]).map { row in
            Posting(account: row[0], currency: row[1], amount: row[2], balanceAfter: row[3])
        }
    }

    /// The `transactions` columns every read selects, in the order `transaction(from:postings:)`
    /// decodes them by index (looking columns up by name costs more than the rest of the decoding).
    static let transactionColumnNames = [
        "seq", "id", "kind", "player_id", "currency", "amount", "actor", "created_at", "idempotency_key", "store",
        "store_transaction_id", "product_id", "quantity", "reason_code", "note", "ticket", "refund_of_seq", "uncollected",
        "metadata", "prev_hash", "hash",
    ]
    /// `transactionColumnNames` as a select list, optionally qualified by a table alias.
    static func transactionColumns(alias: String? = nil) -> String {
        transactionColumnNames.map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }
    static let transactionColumnList = transactionColumns()

    /// Builds a transaction from a row that starts with `transactionColumns`, and its postings.
    static func transaction(from row: Row, postings: [Posting]) throws -> LedgerTransaction {
        let kindText: String = row[2]
        guard let kind = TransactionKind(rawValue: kindText) else {
            throw WalletError.storage("unknown transaction kind '\(kindText)' at seq \(row[0] as Int64)")
        }
        let metadataText: String? = row[18]
        return LedgerTransaction(
            seq: row[0], id: row[1], kind: kind, playerID: row[3], currency: row[4], amount: row[5], actor: row[6], createdAt: row[7],
            idempotencyKey: row[8], store: row[9], storeTransactionID: row[10], productID: row[11], quantity: row[12],
            reasonCode: row[13], note: row[14], ticket: row[15], refundOfSeq: row[16], uncollected: row[17],
            metadata: metadataText.map(Metadata.init(canonicalText:)), prevHash: row[19], hash: row[20], postings: postings)
    }

    static func balances(_ db: Database, playerID: String) throws -> WalletBalances {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT currency, balance FROM accounts WHERE owner = ?"),
            arguments: [LedgerRules.playerOwner(playerID)])
        var balances = [defaultCurrency: Int64(0)]
        for row in rows { balances[row[0]] = row[1] }
        return WalletBalances(playerID: playerID, balances: balances)
    }

    /// `from` and `to` are in the ledger's timestamp format (see `Timestamp.parse`).
    static func history(_ db: Database, _ query: HistoryQuery, from: String?, to: String?) throws -> HistoryPage {
        // One row more than the page tells whether another page follows.
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT \(transactionColumnList) FROM transactions WHERE player_id = ?1 AND (?2 IS NULL OR seq < ?2) AND (?3 IS NULL OR kind = ?3)
                        AND (?5 IS NULL OR created_at >= ?5) AND (?6 IS NULL OR created_at < ?6)
                    ORDER BY seq DESC LIMIT ?4
                    """),
            arguments: [query.playerID, query.after, query.kind?.rawValue, query.limit + 1, from, to])
        let page = try rows.prefix(query.limit).map { row in
            try transaction(from: row, postings: postings(db, seq: row[0]))
        }
        return HistoryPage(transactions: page, next: rows.count > query.limit ? page.last?.seq : nil)
    }
}
