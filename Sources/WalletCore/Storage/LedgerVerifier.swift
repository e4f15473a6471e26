import GRDB

/// Recomputes the ledger from its rows on one read snapshot, streaming, without trusting any
/// stored derived value: `ChainChecker`'s rules on every transaction from genesis, then every
/// materialised balance against its postings. It reports the first inconsistent `seq` and
/// never repairs anything.
enum LedgerVerifier {
    /// How many transactions pass between two progress reports.
    static let progressInterval: Int64 = 50_000

    static func verify(_ db: Database, progress: (@Sendable (Int64) -> Void)? = nil) throws -> VerifyReport {
        var checker = ChainChecker(after: 0, hash: HashChain.genesis, unknownAccounts: .startAtZero)
        func failure(_ failure: ChainChecker.Failure) -> VerifyReport {
            VerifyReport(ok: false, transactions: checker.checkedCount, headHash: checker.headHash, firstBadSeq: failure.seq, problem: failure.problem)
        }
        do {
            try TransactionStream.forEach(db) { transaction in
                try checker.check(transaction)
                if checker.checkedCount % progressInterval == 0 { progress?(checker.checkedCount) }
            }
        } catch let error as ChainChecker.Failure {
            return failure(error)
        }
        if let mismatch = try firstBalanceMismatch(db, checker) { return failure(mismatch) }
        return VerifyReport(ok: true, transactions: checker.checkedCount, headHash: checker.headHash, firstBadSeq: nil, problem: nil)
    }

    /// A materialised balance that differs from its postings, reported at the last seq that
    /// posted to the account: the balance stopped following the ledger after it. When several
    /// accounts disagree (rows cut off the end of the ledger), the latest such seq is where the
    /// chain and the balances part.
    private static func firstBalanceMismatch(_ db: Database, _ checker: ChainChecker) throws -> ChainChecker.Failure? {
        var mismatch: ChainChecker.Failure?
        let accounts = try Row.fetchCursor(db, sql: "SELECT owner, currency, balance FROM accounts ORDER BY id")
        while let account = try accounts.next() {
            let key = ChainChecker.AccountKey(account: account["owner"], currency: account["currency"])
            let stored: Int64 = account["balance"]
            let recomputed = checker.balances[key] ?? (0, 0)
            if stored != recomputed.balance, recomputed.lastSeq >= (mismatch?.seq ?? 0) {
                mismatch = ChainChecker.Failure(
                    seq: max(recomputed.lastSeq, 1),
                    problem: "the balance of \(key.account) (\(key.currency)) is \(stored) but its postings up to seq \(recomputed.lastSeq) sum to \(recomputed.balance)")
            }
        }
        return mismatch
    }
}

/// Streams transactions with their postings in `seq` order from one read, in constant memory.
enum TransactionStream {
    /// The columns read, in the order `transaction(from:postings:)` decodes them by index:
    /// looking columns up by name costs more than the rest of the decoding.
    private static let columns = """
        t.seq, t.id, t.kind, t.player_id, t.currency, t.amount, t.actor, t.created_at, t.idempotency_key, t.store,
        t.store_transaction_id, t.product_id, t.quantity, t.reason_code, t.note, t.ticket, t.refund_of_seq, t.uncollected,
        t.metadata, t.prev_hash, t.hash, a.owner, a.currency, p.amount, p.balance_after
        """

    static func forEach(_ db: Database, seqs: ClosedRange<Int64>? = nil, body: (LedgerTransaction) throws -> Void) throws {
        // Postings in the order the hash covers them; transactions without postings still appear.
        let range = seqs ?? 1...Int64.max
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT \(columns)
                FROM transactions t LEFT JOIN postings p ON p.seq = t.seq LEFT JOIN accounts a ON a.id = p.account_id
                WHERE t.seq BETWEEN ? AND ?
                ORDER BY t.seq, a.owner, a.currency
                """,
            arguments: [range.lowerBound, range.upperBound])
        var pending: LedgerTransaction?
        while let row = try rows.next() {
            let seq: Int64 = row[0]
            if let current = pending, current.seq != seq {
                try body(current)
                pending = nil
            }
            if pending == nil { pending = try transaction(from: row) }
            if let account: String = row[21] {
                pending!.postings.append(Posting(account: account, currency: row[22], amount: row[23], balanceAfter: row[24]))
            }
        }
        if let current = pending { try body(current) }
    }

    private static func transaction(from row: Row) throws -> LedgerTransaction {
        let kindText: String = row[2]
        guard let kind = TransactionKind(rawValue: kindText) else {
            throw WalletError.storage("unknown transaction kind '\(kindText)' at seq \(row[0] as Int64)")
        }
        let metadataText: String? = row[18]
        return LedgerTransaction(
            seq: row[0], id: row[1], kind: kind, playerID: row[3], currency: row[4], amount: row[5], actor: row[6], createdAt: row[7],
            idempotencyKey: row[8], store: row[9], storeTransactionID: row[10], productID: row[11], quantity: row[12],
            reasonCode: row[13], note: row[14], ticket: row[15], refundOfSeq: row[16], uncollected: row[17],
            metadata: metadataText.map(Metadata.init(canonicalText:)), prevHash: row[19], hash: row[20], postings: [])
    }
}
