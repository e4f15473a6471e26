import GRDB

/// Recomputes the ledger from its rows on one read snapshot, streaming, without trusting any
/// stored derived value: the hash chain from genesis, `seq` without gaps, every transaction's
/// postings summing to zero per currency, each posting's balance after, the player-side amount,
/// and finally every materialised balance. It reports the first inconsistent `seq` and never
/// repairs anything.
enum LedgerVerifier {
    static func verify(_ db: Database) throws -> VerifyReport {
        var state = State()
        // Postings ordered as the hash covers them; transactions without postings still appear.
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT t.*, a.id AS account_id, a.owner AS posting_account, a.currency AS posting_currency,
                    p.amount AS posting_amount, p.balance_after AS posting_balance_after
                FROM transactions t LEFT JOIN postings p ON p.seq = t.seq LEFT JOIN accounts a ON a.id = p.account_id
                ORDER BY t.seq, a.owner, a.currency
                """)
        var pending: (row: Row, postings: [Posting], accountIDs: [Int64])?
        while let row = try rows.next() {
            let seq: Int64 = row["seq"]
            if let current = pending, current.row["seq"] as Int64 != seq {
                if let report = try state.check(current.row, current.postings, current.accountIDs) { return report }
                pending = nil
            }
            if pending == nil { pending = (row.copy(), [], []) }
            if let accountID: Int64 = row["account_id"] {
                pending!.postings.append(
                    Posting(account: row["posting_account"], currency: row["posting_currency"], amount: row["posting_amount"],
                            balanceAfter: row["posting_balance_after"]))
                pending!.accountIDs.append(accountID)
            }
        }
        if let current = pending, let report = try state.check(current.row, current.postings, current.accountIDs) { return report }
        return try state.checkBalances(db)
    }

    private struct State {
        var expectedSeq: Int64 = 1
        var previousHash = HashChain.genesis
        /// Balances recomputed from postings, and the last seq that touched each account.
        var balances: [Int64: (balance: Int64, lastSeq: Int64)] = [:]

        func failure(_ seq: Int64, _ problem: String) -> VerifyReport {
            VerifyReport(ok: false, transactions: expectedSeq - 1, headHash: previousHash, firstBadSeq: seq, problem: problem)
        }

        /// Checks one transaction and advances; returns a failed report at the first problem.
        mutating func check(_ row: Row, _ postings: [Posting], _ accountIDs: [Int64]) throws -> VerifyReport? {
            let seq: Int64 = row["seq"]
            guard seq == expectedSeq else {
                return failure(expectedSeq, "transaction seq \(expectedSeq) is missing (the next one stored is \(seq))")
            }
            let transaction = try LedgerReads.transaction(from: row, postings: postings)
            guard transaction.prevHash == previousHash else {
                return failure(seq, "prev_hash does not match the hash of the transaction before it")
            }
            guard HashChain.hash(of: transaction, previous: previousHash) == transaction.hash else {
                return failure(seq, "the stored hash does not match the transaction's contents")
            }
            guard postings.count >= 2 else { return failure(seq, "a transaction needs at least two postings") }
            var sums: [String: Int64] = [:]
            for posting in postings {
                let (sum, overflow) = sums[posting.currency, default: 0].addingReportingOverflow(posting.amount)
                guard !overflow else { return failure(seq, "posting amounts overflow") }
                sums[posting.currency] = sum
            }
            guard sums.values.allSatisfy({ $0 == 0 }) else { return failure(seq, "postings do not sum to zero per currency") }
            let playerOwner = Account.playerOwner(transaction.playerID)
            guard postings.contains(where: { $0.account == playerOwner && $0.currency == transaction.currency && $0.amount == transaction.amount })
            else { return failure(seq, "the transaction's amount does not match the player's posting") }
            for (posting, accountID) in zip(postings, accountIDs) {
                let before = balances[accountID]?.balance ?? 0
                let (after, overflow) = before.addingReportingOverflow(posting.amount)
                guard !overflow, after == posting.balanceAfter else {
                    return failure(seq, "the balance after of \(posting.account) (\(posting.currency)) does not follow from its postings")
                }
                balances[accountID] = (after, seq)
            }
            previousHash = transaction.hash
            expectedSeq += 1
            return nil
        }

        /// Compares every materialised balance with the one recomputed from postings. A mismatch
        /// is reported at the last seq that posted to the account: the balance stopped following
        /// the ledger after it. When several accounts disagree (rows cut off the end of the
        /// ledger), the latest such seq is where the chain and the balances part.
        func checkBalances(_ db: Database) throws -> VerifyReport {
            var firstBad: (seq: Int64, problem: String)?
            let accounts = try Row.fetchCursor(db, sql: "SELECT id, owner, currency, balance FROM accounts ORDER BY id")
            while let account = try accounts.next() {
                let id: Int64 = account["id"]
                let stored: Int64 = account["balance"]
                let recomputed = balances[id] ?? (0, 0)
                if stored != recomputed.balance, recomputed.lastSeq >= (firstBad?.seq ?? 0) {
                    let owner: String = account["owner"]
                    let currency: String = account["currency"]
                    firstBad = (
                        max(recomputed.lastSeq, 1),
                        "the balance of \(owner) (\(currency)) is \(stored) but its postings up to seq \(recomputed.lastSeq) sum to \(recomputed.balance)"
                    )
                }
            }
            if let firstBad { return failure(firstBad.seq, firstBad.problem) }
            return VerifyReport(ok: true, transactions: expectedSeq - 1, headHash: previousHash, firstBadSeq: nil, problem: nil)
        }
    }
}
