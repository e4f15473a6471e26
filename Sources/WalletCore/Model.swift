/// What a ledger transaction records.
public enum TransactionKind: String, Codable, Sendable, CaseIterable {
    case purchase
    case spend
    case adjustment
    case refund
    case refundReversal = "refund_reversal"
    /// Credits given away (bonus lots, which may expire).
    case bonus
    /// An expired lot's remainder moved to `@expired` (breakage).
    case expiry
    /// Credits reserved in `@holds`.
    case hold
    /// A hold's captured part moved to `@spend` (the rest given back to its lots).
    case capture
    /// A hold given back whole (released, or expired).
    case release
    /// An entitlement changed (purchased, refunded, granted, revoked, extended): it moves no
    /// credits (its two postings are zero), and its metadata records the change and the state
    /// it leaves, which `verify` recomputes.
    case entitlement
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

    package enum CodingKeys: String, CodingKey {
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
    /// Text, not a `PlayerID`: what is read back from storage (transactions, holds, balances,
    /// statements, exports) keeps the id as stored. A ledger written before the player id syntax
    /// was checked may hold ids that break it, and reading must never fail on them; requests
    /// take a `PlayerID`, so nothing new breaks it.
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

    package enum CodingKeys: String, CodingKey {
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

    /// Members of a bonus's metadata that only staff see.
    static let staffMetadataMembers: Set<String> = ["campaign"]

    /// What `audience` sees of the metadata. A bonus's campaign is the studio's own word for it,
    /// like support's note; so is the reason code support gave for an entitlement change.
    /// Both encodings of a transaction (`encode(to:)` and `JSONWriter`) ask here.
    package func metadata(for audience: Audience) -> Metadata? {
        let hidden: Set<String> = kind == .bonus ? Self.staffMetadataMembers : kind == .entitlement ? EntitlementEntry.staffMembers : []
        return audience == .staff || hidden.isEmpty ? metadata : metadata?.removing(hidden)
    }

    /// Whether `audience` sees the key and the note: a spend's key and reason (kept as its note)
    /// are the game's own; an adjustment's key, note and ticket are support's.
    package func showsKeyAndNote(to audience: Audience) -> Bool { audience == .staff || kind == .spend }

    /// The postings `audience` sees: all of them for staff, a player's own only for a player.
    package func postings(for audience: Audience) -> [Posting] {
        guard audience == .player else { return postings }
        let own = AccountOwner.player(playerID).text
        return postings.filter { Identifier.same($0.account, own) }
    }

    /// The whole record for staff; for a player, only what is theirs to see (`Audience`).
    public func encode(to encoder: any Encoder) throws {
        let staff = Audience.of(encoder) == .staff
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(playerID, forKey: .playerID)
        try container.encode(currency, forKey: .currency)
        try container.encode(amount, forKey: .amount)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(store, forKey: .store)
        try container.encodeIfPresent(storeTransactionID, forKey: .storeTransactionID)
        try container.encodeIfPresent(productID, forKey: .productID)
        try container.encodeIfPresent(quantity, forKey: .quantity)
        try container.encodeIfPresent(refundOfSeq, forKey: .refundOfSeq)
        try container.encode(uncollected, forKey: .uncollected)
        let audience: Audience = staff ? .staff : .player
        try container.encodeIfPresent(metadata(for: audience), forKey: .metadata)
        if showsKeyAndNote(to: audience) {
            try container.encodeIfPresent(idempotencyKey, forKey: .idempotencyKey)
            try container.encodeIfPresent(note, forKey: .note)
        }
        if staff {
            try container.encode(actor, forKey: .actor)
            try container.encodeIfPresent(reasonCode, forKey: .reasonCode)
            try container.encodeIfPresent(ticket, forKey: .ticket)
            try container.encode(prevHash, forKey: .prevHash)
            try container.encode(hash, forKey: .hash)
        }
        try container.encode(postings(for: audience), forKey: .postings)
    }

    package init(seq: Int64, id: String, kind: TransactionKind, playerID: String, currency: String, amount: Int64, actor: String, createdAt: String, idempotencyKey: String?, store: String?, storeTransactionID: String?, productID: String?, quantity: Int64?, reasonCode: String?, note: String?, ticket: String?, refundOfSeq: Int64?, uncollected: Int64, metadata: Metadata?, prevHash: String, hash: String, postings: [Posting]) {
        self.seq = seq
        self.id = id
        self.kind = kind
        self.playerID = playerID
        self.currency = currency
        self.amount = amount
        self.actor = actor
        self.createdAt = createdAt
        self.idempotencyKey = idempotencyKey
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.productID = productID
        self.quantity = quantity
        self.reasonCode = reasonCode
        self.note = note
        self.ticket = ticket
        self.refundOfSeq = refundOfSeq
        self.uncollected = uncollected
        self.metadata = metadata
        self.prevHash = prevHash
        self.hash = hash
        self.postings = postings
    }
}

/// Who an answer is for. Staff (API keys of every role, and operators at the CLI) see whole
/// records. A player sees the transactions of their own wallet as they concern them: kind,
/// amount, time, their own postings, and a spend's own key, reason and metadata; never who
/// at the studio acted (`actor`), support's `note`, `ticket` and `reason_code`, the hash
/// chain, or the system accounts' side of the postings.
public enum Audience: Sendable, Equatable {
    case staff
    case player

    package static let key = CodingUserInfoKey(rawValue: "wallet.audience")

    /// The audience an encoder was set up for; an encoder that does not say gets the player's
    /// view, so that a forgotten setting hides too much rather than too little.
    package static func of(_ encoder: any Encoder) -> Audience {
        guard let key, let audience = encoder.userInfo[key] as? Audience else { return .player }
        return audience
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
    /// For a store purchase of a non-consumable or a pass: the entitlement it grants, as it
    /// stands now (a replay answers today's state, not the original's).
    public var entitlement: Entitlement?

    package enum CodingKeys: String, CodingKey {
        case transaction, balance, replayed, entitlement
    }

    package init(transaction: LedgerTransaction, balance: Int64, replayed: Bool, entitlement: Entitlement? = nil) {
        self.transaction = transaction
        self.balance = balance
        self.replayed = replayed
        self.entitlement = entitlement
    }
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
    public var type: ProductType
    /// What a non-consumable or a pass grants besides its credits (none for a consumable).
    public var entitlement: String?
    /// A pass's length, ISO 8601 (`non_renewing` only).
    public var duration: String?

    package enum CodingKeys: String, CodingKey {
        case currency, credits, store, active, type, entitlement, duration
        case productID = "product_id"
        case updatedAt = "updated_at"
    }

    package init(
        productID: String, currency: String, credits: Int64, store: String?, active: Bool, updatedAt: String, type: ProductType = .consumable,
        entitlement: String? = nil, duration: String? = nil
    ) {
        self.productID = productID
        self.currency = currency
        self.credits = credits
        self.store = store
        self.active = active
        self.updatedAt = updatedAt
        self.type = type
        self.entitlement = entitlement
        self.duration = duration
    }
}

/// A player's balances by currency. The default currency is always present.
public struct WalletBalances: Codable, Sendable, Equatable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    public var balances: [String: Int64]
    /// Per currency, what bonus lots will take away in the next 7 days if not spent, so a game
    /// can warn the player (currencies with nothing expiring are left out).
    public var expiringWithin7Days: [String: Int64]
    /// Per currency, what open holds reserve (already out of `balances`; currencies with
    /// nothing held left out). `balances` is what can be spent, read in the same snapshot.
    public var held: [String: Int64]

    /// How far ahead `expiringWithin7Days` looks.
    public static let expiringWindow: Double = 7 * 86_400

    package enum CodingKeys: String, CodingKey {
        case balances
        case playerID = "player_id"
        case expiringWithin7Days = "expiring_within_7_days"
        case held
    }

    package init(playerID: PlayerID, balances: [String: Int64], expiringWithin7Days: [String: Int64] = [:], held: [String: Int64] = [:]) {
        self.playerID = playerID.text
        self.balances = balances
        self.expiringWithin7Days = expiringWithin7Days
        self.held = held
    }
}

/// One page of a player's history, newest first. Pass `next` as `after` for the next page.
public struct HistoryPage: Codable, Sendable, Equatable {
    public var transactions: [LedgerTransaction]
    /// The `seq` to continue from, or nil on the last page.
    public var next: Int64?

    package init(transactions: [LedgerTransaction], next: Int64?) {
        self.transactions = transactions
        self.next = next
    }
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

    package enum CodingKeys: String, CodingKey {
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

    package init(ok: Bool, transactions: Int64, headHash: String, firstBadSeq: Int64?, problem: String?) {
        self.ok = ok
        self.transactions = transactions
        self.headHash = headHash
        self.firstBadSeq = firstBadSeq
        self.problem = problem
    }
}

extension LedgerTransaction {
    /// A transaction not yet placed in the chain: `append` fills seq, id, time, postings and hashes.
    package init(draftOf kind: TransactionKind, playerID: String, currency: String, amount: Int64, actor: String) {
        self.init(
            seq: 0, id: "", kind: kind, playerID: playerID, currency: currency, amount: amount, actor: actor,
            createdAt: "", idempotencyKey: nil, store: nil, storeTransactionID: nil, productID: nil, quantity: nil,
            reasonCode: nil, note: nil, ticket: nil, refundOfSeq: nil, uncollected: 0, metadata: nil,
            prevHash: "", hash: "", postings: [])
    }
}
