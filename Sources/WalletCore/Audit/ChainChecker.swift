/// The one implementation of the ledger's audit rules, used on the database (`wallet verify`)
/// and on export files (`wallet verify --export`). Fed transactions in `seq` order, it checks
/// each one and stops at the first that breaks a rule:
/// - `seq` follows the previous one without a gap, and `prev_hash` is the previous `hash`
///   (unless the transactions are a filtered subset, which cannot be followed as a chain);
/// - `hash` is the SHA-256 of `prev_hash` and the transaction's canonical bytes;
/// - at least two postings, summing to zero per currency, one of them the player's with the
///   transaction's amount;
/// - each posting's balance-after is the account's previous balance plus the amount.
package struct ChainChecker {
    /// How balances of accounts not seen before are treated.
    package enum UnknownAccounts {
        /// They start at zero: the check started at genesis.
        case startAtZero
        /// They are an error: a range must state every opening balance.
        case mustBeListed
        /// They are not followed: a filtered subset does not hold all their postings.
        case skip
    }

    package struct Failure: Error, Equatable {
        package var seq: Int64
        package var problem: String

        package init(seq: Int64, problem: String) {
            self.seq = seq
            self.problem = problem
        }
    }

    /// An account by the exact bytes of its owner and currency (see `Identifier`).
    package struct AccountKey: Hashable {
        package var account: String
        package var currency: String

        package static func == (left: AccountKey, right: AccountKey) -> Bool {
            Identifier.same(left.account, right.account) && Identifier.same(left.currency, right.currency)
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(Identifier(account))
            hasher.combine(Identifier(currency))
        }

        package init(account: String, currency: String) {
            self.account = account
            self.currency = currency
        }
    }

    private(set) var expectedSeq: Int64
    private(set) var previousHash: String
    package private(set) var checkedCount: Int64 = 0
    package let followsChain: Bool
    package let unknownAccounts: UnknownAccounts
    /// Balances recomputed from postings, and the last seq that posted to each account.
    package private(set) var balances: [AccountKey: (balance: Int64, lastSeq: Int64)] = [:]

    /// Starts after `seq` whose hash is `hash` (0 and the genesis value for a whole ledger).
    package init(after seq: Int64, hash: String, followsChain: Bool = true, unknownAccounts: UnknownAccounts, openingBalances: [AccountKey: Int64] = [:]) {
        expectedSeq = seq + 1
        previousHash = hash
        self.followsChain = followsChain
        self.unknownAccounts = unknownAccounts
        for (key, balance) in openingBalances { balances[key] = (balance, seq) }
    }

    /// The hash of the last transaction checked (or the starting hash).
    package var headHash: String { previousHash }

    package mutating func check(_ transaction: LedgerTransaction) throws(Failure) {
        let seq = transaction.seq
        if followsChain {
            guard seq == expectedSeq else {
                throw Failure(seq: expectedSeq, problem: "transaction seq \(expectedSeq) is missing (the next one is \(seq))")
            }
            guard transaction.prevHash == previousHash else {
                throw Failure(seq: seq, problem: "prev_hash does not match the hash of the transaction before it")
            }
        } else {
            guard seq >= expectedSeq else { throw Failure(seq: seq, problem: "transactions are out of seq order") }
        }
        guard HashChain.hash(of: transaction, previous: transaction.prevHash) == transaction.hash else {
            throw Failure(seq: seq, problem: "the stored hash does not match the transaction's contents")
        }
        try checkPostings(transaction)
        previousHash = transaction.hash
        expectedSeq = seq + 1
        checkedCount += 1
    }

    private mutating func checkPostings(_ transaction: LedgerTransaction) throws(Failure) {
        let seq = transaction.seq
        let postings = transaction.postings
        guard postings.count >= 2 else { throw Failure(seq: seq, problem: "a transaction needs at least two postings") }
        var sums: [Identifier: Int64] = [:]
        for posting in postings {
            let currency = Identifier(posting.currency)
            let (sum, overflow) = sums[currency, default: 0].addingReportingOverflow(posting.amount)
            guard !overflow else { throw Failure(seq: seq, problem: "posting amounts overflow") }
            sums[currency] = sum
        }
        guard sums.values.allSatisfy({ $0 == 0 }) else { throw Failure(seq: seq, problem: "postings do not sum to zero per currency") }
        let playerOwner = AccountOwner.player(transaction.playerID).text
        guard
            postings.contains(where: {
                Identifier.same($0.account, playerOwner) && Identifier.same($0.currency, transaction.currency) && $0.amount == transaction.amount
            })
        else {
            throw Failure(seq: seq, problem: "the transaction's amount does not match the player's posting")
        }
        for posting in postings {
            let key = AccountKey(account: posting.account, currency: posting.currency)
            let before: Int64
            if let known = balances[key] {
                before = known.balance
            } else {
                switch unknownAccounts {
                case .startAtZero: before = 0
                case .mustBeListed: throw Failure(seq: seq, problem: "the checkpoint gives no opening balance for \(posting.account) (\(posting.currency))")
                case .skip: continue
                }
            }
            let (after, overflow) = before.addingReportingOverflow(posting.amount)
            guard !overflow, after == posting.balanceAfter else {
                throw Failure(seq: seq, problem: "the balance after of \(posting.account) (\(posting.currency)) does not follow from its postings")
            }
            balances[key] = (after, seq)
        }
    }
}
