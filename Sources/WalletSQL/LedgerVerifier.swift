import WalletCore

/// Recomputes the ledger from its rows on one read snapshot, streaming, without trusting any
/// stored derived value: `ChainChecker`'s rules on every transaction from genesis, then every
/// materialised balance against its postings. It reports the first inconsistent `seq` and
/// never repairs anything.
enum LedgerVerifier {
    /// How many transactions pass between two progress reports.
    static let progressInterval: Int64 = 50_000

    static func verify(_ db: any SQLSession, progress: (@Sendable (Int64) -> Void)? = nil) throws -> VerifyReport {
        var checker = ChainChecker(after: 0, hash: HashChain.genesis, unknownAccounts: .startAtZero)
        var entitlements = EntitlementChecker()
        func failure(_ failure: ChainChecker.Failure) -> VerifyReport {
            VerifyReport(ok: false, transactions: checker.checkedCount, headHash: checker.headHash, firstBadSeq: failure.seq, problem: failure.problem)
        }
        do {
            try TransactionStream.forEach(db) { transaction in
                try checker.check(transaction)
                if let problem = entitlements.check(transaction) { throw ChainChecker.Failure(seq: transaction.seq, problem: problem) }
                if checker.checkedCount % progressInterval == 0 { progress?(checker.checkedCount) }
            }
        } catch let error as ChainChecker.Failure {
            return failure(error)
        }
        if let mismatch = try firstBalanceMismatch(db, checker) { return failure(mismatch) }
        if let mismatch = try firstLotMismatch(db) { return failure(mismatch) }
        if let mismatch = try firstEntitlementMismatch(db, entitlements) { return failure(mismatch) }
        return VerifyReport(ok: true, transactions: checker.checkedCount, headHash: checker.headHash, firstBadSeq: nil, problem: nil)
    }

    /// An entitlement whose stored state is not what its ledger entries fold to, or that the
    /// ledger never changed, or one the ledger changed that is not stored.
    private static func firstEntitlementMismatch(_ db: any SQLSession, _ checker: EntitlementChecker) throws -> ChainChecker.Failure? {
        var unseen = checker.states
        var mismatch: ChainChecker.Failure?
        try EntitlementStorage.forEachState(db) { playerID, name, state, seq in
            guard mismatch == nil else { return }
            let key = EntitlementChecker.Key(player: Identifier(playerID), name: name)
            guard let folded = unseen.removeValue(forKey: key) else {
                mismatch = ChainChecker.Failure(seq: seq, problem: "entitlement \(name) of \(playerID.prefix(64)) is stored but no ledger entry made it")
                return
            }
            if folded.state != state || folded.lastSeq != seq {
                mismatch = ChainChecker.Failure(
                    seq: max(seq, folded.lastSeq), problem: "entitlement \(name) of \(playerID.prefix(64)) is stored otherwise than its ledger entries leave it")
            }
        }
        if let mismatch { return mismatch }
        if let missing = unseen.min(by: { $0.value.lastSeq < $1.value.lastSeq }) {
            return ChainChecker.Failure(seq: missing.value.lastSeq, problem: "entitlement \(missing.key.name) of \(missing.key.player.text.prefix(64)) is not stored")
        }
        // The items the states fold from, each as its entries left it (added, refunded, restored).
        var expected: [Int64: (key: EntitlementChecker.Key, item: EntitlementItem)] = [:]
        for (key, items) in checker.items {
            for item in items { expected[item.seq] = (key, item) }
        }
        let stored = try db.all("SELECT \(EntitlementStorage.itemColumns), player_id, name FROM entitlement_items ORDER BY seq", []) { row in
            (item: try EntitlementStorage.item(from: row), key: EntitlementChecker.Key(player: Identifier(try row.text(6)), name: try row.text(7)))
        }
        for row in stored {
            guard let made = expected.removeValue(forKey: row.item.seq) else {
                return ChainChecker.Failure(seq: row.item.seq, problem: "an entitlement item is stored at seq \(row.item.seq) but no ledger entry added it")
            }
            if made.key != row.key || made.item != row.item {
                return ChainChecker.Failure(seq: row.item.seq, problem: "the entitlement item added at seq \(row.item.seq) is stored otherwise than its ledger entries leave it")
            }
        }
        if let missing = expected.keys.min() {
            return ChainChecker.Failure(seq: missing, problem: "the entitlement item added at seq \(missing) is not stored")
        }
        return nil
    }

    /// Lots that disagree with their draws, or a wallet whose open lots do not add up to its
    /// balance (zero when it is in debt), reported at the lot's last transaction.
    private static func firstLotMismatch(_ db: any SQLSession) throws -> ChainChecker.Failure? {
        let lot = try db.first(
            """
            SELECT l.id, l.amount, l.remaining, CAST(coalesce(sum(d.amount), 0) AS BIGINT), CAST(coalesce(max(d.seq), l.source_seq) AS BIGINT)
            FROM lots l LEFT JOIN lot_draws d ON d.lot_id = l.id
            GROUP BY l.id, l.amount, l.remaining, l.source_seq HAVING l.amount - coalesce(sum(d.amount), 0) <> l.remaining
            ORDER BY 5 LIMIT 1
            """
        ) { row in
            ChainChecker.Failure(
                seq: try row.integer(4),
                problem: "lot \(try row.integer(0)) keeps \(try row.integer(2)) of its \(try row.integer(1)), but its draws leave \(try row.integer(1) - row.integer(3))")
        }
        if let lot { return lot }
        // Every credit in `@holds` belongs to an open hold.
        let holds = try db.first(
            """
            SELECT c.code, coalesce((SELECT a.balance FROM accounts a WHERE a.owner = '@holds' AND a.currency = c.code), 0),
                CAST(coalesce((SELECT sum(h.amount) FROM holds h WHERE h.status = 'open' AND h.currency = c.code), 0) AS BIGINT),
                CAST(coalesce((SELECT max(h.hold_seq) FROM holds h WHERE h.currency = c.code), 1) AS BIGINT)
            FROM currencies c
            WHERE coalesce((SELECT a.balance FROM accounts a WHERE a.owner = '@holds' AND a.currency = c.code), 0)
                <> coalesce((SELECT sum(h.amount) FROM holds h WHERE h.status = 'open' AND h.currency = c.code), 0)
            ORDER BY 1 LIMIT 1
            """
        ) { row in
            ChainChecker.Failure(
                seq: try row.integer(3), problem: "@holds (\(try row.text(0))) holds \(try row.integer(1)) but the open holds add up to \(try row.integer(2))")
        }
        if let holds { return holds }
        return try db.first(
            """
            SELECT a.owner, a.currency, a.balance, CAST(coalesce(sum(l.remaining), 0) AS BIGINT),
                CAST(coalesce((SELECT max(p.seq) FROM postings p WHERE p.account_id = a.id), 1) AS BIGINT)
            FROM accounts a LEFT JOIN lots l ON l.account_id = a.id
            WHERE substr(a.owner, 1, \(AccountOwner.playerPrefix.count)) = '\(AccountOwner.playerPrefix)'
            GROUP BY a.id, a.owner, a.currency, a.balance
            HAVING coalesce(sum(l.remaining), 0) <> CASE WHEN a.balance > 0 THEN a.balance ELSE 0 END
            ORDER BY 5 LIMIT 1
            """
        ) { row in
            ChainChecker.Failure(
                seq: try row.integer(4),
                problem: "the lots of \(try row.text(0)) (\(try row.text(1))) hold \(try row.integer(3)) but its balance is \(try row.integer(2))")
        }
    }

    /// A materialised balance that differs from its postings, reported at the last seq that
    /// posted to the account: the balance stopped following the ledger after it. When several
    /// accounts disagree (rows cut off the end of the ledger), the latest such seq is where the
    /// chain and the balances part.
    private static func firstBalanceMismatch(_ db: any SQLSession, _ checker: ChainChecker) throws -> ChainChecker.Failure? {
        var mismatch: ChainChecker.Failure?
        try db.forEach("SELECT owner, currency, balance FROM accounts ORDER BY id", []) { account in
            let key = ChainChecker.AccountKey(account: try account.text(0), currency: try account.text(1))
            let stored = try account.integer(2)
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
    /// The transaction's columns (decoded by `LedgerReads.transaction(from:postings:)`), then
    /// one posting's, at `postingColumn` onwards.
    private static let columns = LedgerReads.transactionColumns(alias: "t") + ", a.owner, a.currency, p.amount, p.balance_after"
    private static let postingColumn = LedgerReads.transactionColumnNames.count

    /// How many transactions one query reads when the whole ledger streams: a PostgreSQL
    /// session holds a query's rows until it ends, so memory stays bounded by the page.
    static let pageSize: Int64 = 5_000

    /// Every transaction in `seqs` (the whole ledger if nil), in seq order, with its postings.
    static func forEach(_ db: any SQLSession, seqs: ClosedRange<Int64>? = nil, body: (LedgerTransaction) throws -> Void) throws {
        if let seqs { return try forEach(db, range: seqs, body: body) }
        // Pages by the seqs that exist, not by arithmetic on them: a stored seq near the top of
        // Int64, or a huge gap, costs one page, not an overflow or a walk through empty ranges.
        var after = Int64.min
        while let end = try db.integer(
            "SELECT max(seq) FROM (SELECT seq FROM transactions WHERE seq > ? ORDER BY seq LIMIT ?) page", [.integer(after), .integer(pageSize)])
        {
            try forEach(db, range: after + 1...end, body: body)
            after = end
        }
    }

    private static func forEach(_ db: any SQLSession, range: ClosedRange<Int64>, body: (LedgerTransaction) throws -> Void) throws {
        // Postings in the order the hash covers them; transactions without postings still appear.
        var pending: LedgerTransaction?
        try db.forEach(
            """
            SELECT \(columns)
            FROM transactions t LEFT JOIN postings p ON p.seq = t.seq LEFT JOIN accounts a ON a.id = p.account_id
            WHERE t.seq BETWEEN ? AND ?
            ORDER BY t.seq, a.owner, a.currency
            """, [.integer(range.lowerBound), .integer(range.upperBound)]
        ) { row in
            let seq = try row.integer(0)
            if let current = pending, current.seq != seq {
                try body(current)
                pending = nil
            }
            var transaction = try pending ?? LedgerReads.transaction(from: row, postings: [])
            let column = postingColumn
            if let account = try row.textOrNil(column) {
                transaction.postings.append(
                    Posting(account: account, currency: try row.text(column + 1), amount: try row.integer(column + 2), balanceAfter: try row.integer(column + 3)))
            }
            pending = transaction
        }
        if let current = pending { try body(current) }
    }
}
