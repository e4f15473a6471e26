/// What a ledger transaction records.
public enum TransactionKind: String, Codable, Sendable, CaseIterable {
    case purchase
    case spend
    case adjustment
    case refund
    case refundReversal = "refund_reversal"
}

/// One leg of a ledger transaction: `amount` moved into `account` (negative: out of it).
public struct Posting: Codable, Sendable, Equatable {
    /// The account owner: `player:<id>` or a system account such as `@spend`.
    public var account: String
    public var currency: String
    public var amount: Int64
    /// The account's balance once this posting applied.
    public var balanceAfter: Int64

    public init(account: String, currency: String, amount: Int64, balanceAfter: Int64) {
        self.account = account
        self.currency = currency
        self.amount = amount
        self.balanceAfter = balanceAfter
    }

    enum CodingKeys: String, CodingKey {
        case account, currency, amount
        case balanceAfter = "balance_after"
    }
}

/// One business event of the ledger, as stored: append-only, hash-chained, its postings
/// summing to zero per currency.
public struct LedgerTransaction: Codable, Sendable, Equatable {
    /// Global, gap-free position in the ledger, from 1.
    public var seq: Int64
    public var id: String
    public var kind: TransactionKind
    public var playerID: String
    public var currency: String
    /// What the transaction moved into the player's wallet (negative: out of it).
    public var amount: Int64
    /// Who asked for it: an API key id, `player:<id>`, or an operator name.
    public var actor: String
    /// RFC 3339 UTC with milliseconds.
    public var createdAt: String
    public var idempotencyKey: String?
    public var store: String?
    public var storeTransactionID: String?
    public var productID: String?
    public var quantity: Int64?
    public var reasonCode: String?
    public var note: String?
    public var ticket: String?
    /// The purchase a refund (or refund reversal) corrects.
    public var refundOfSeq: Int64?
    /// What a `floor` refund could not take back because the balance reached zero.
    public var uncollected: Int64
    /// Caller metadata: a JSON object, kept in canonical text.
    public var metadata: Metadata?
    public var prevHash: String
    public var hash: String
    /// Ordered by account, then currency: the order the hash covers.
    public var postings: [Posting]

    enum CodingKeys: String, CodingKey {
        case seq, id, kind, currency, amount, actor, store, quantity, note, ticket, uncollected, metadata, hash, postings
        case playerID = "player_id"
        case createdAt = "created_at"
        case idempotencyKey = "idempotency_key"
        case storeTransactionID = "store_transaction_id"
        case productID = "product_id"
        case reasonCode = "reason_code"
        case refundOfSeq = "refund_of_seq"
        case prevHash = "prev_hash"
    }
}

/// The answer to every ledger mutation, fresh or replayed.
public struct MutationResult: Codable, Sendable, Equatable {
    public var transaction: LedgerTransaction
    /// The player's balance in the transaction's currency right after it applied. A replay
    /// answers the same figure as the original, not today's balance.
    public var balance: Int64
    /// True when the idempotency key had already been used for this same request: nothing
    /// changed, and this is the original result.
    public var replayed: Bool
}

/// A catalog entry: one unit of `productID` credits `credits` of `currency`.
public struct Product: Codable, Sendable, Equatable {
    public var productID: String
    public var currency: String
    public var credits: Int64
    /// When set, only grants from this store may use the product.
    public var store: String?
    public var active: Bool
    public var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case currency, credits, store, active
        case productID = "product_id"
        case updatedAt = "updated_at"
    }
}

/// A player's balances by currency. The default currency is always present.
public struct WalletBalances: Codable, Sendable, Equatable {
    public var playerID: String
    public var balances: [String: Int64]

    enum CodingKeys: String, CodingKey {
        case balances
        case playerID = "player_id"
    }
}

/// One page of a player's history, newest first. Pass `next` as `after` for the next page.
public struct HistoryPage: Codable, Sendable, Equatable {
    public var transactions: [LedgerTransaction]
    /// The `seq` to continue from, or nil on the last page.
    public var next: Int64?
}

/// The outcome of recomputing the whole ledger: the hash chain, every transaction's sum per
/// currency, and every balance from its postings.
public struct VerifyReport: Codable, Sendable, Equatable {
    public var ok: Bool
    public var transactions: Int64
    /// The hash of the last transaction, or the genesis value for an empty ledger.
    public var headHash: String
    /// The first `seq` at which the ledger stops being consistent, if any.
    public var firstBadSeq: Int64?
    /// What is wrong there, for a person.
    public var problem: String?

    enum CodingKeys: String, CodingKey {
        case ok, transactions, problem
        case headHash = "head_hash"
        case firstBadSeq = "first_bad_seq"
    }

    public func encode(to encoder: any Encoder) throws {
        // `first_bad_seq` is always present (null when ok), as the API documents it.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ok, forKey: .ok)
        try container.encode(transactions, forKey: .transactions)
        try container.encode(headHash, forKey: .headHash)
        try container.encode(firstBadSeq, forKey: .firstBadSeq)
        try container.encodeIfPresent(problem, forKey: .problem)
    }
}
