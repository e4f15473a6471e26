import Foundation

/// The business event a ledger transaction is, as a game's backend hears of it: in the feed
/// (`GET /v1/events`) and in webhooks. Every transaction is exactly one event; the type follows
/// from the transaction alone (`LedgerEvent.type(of:)`), so the feed and the webhooks can never
/// disagree, and neither needs anything stored beside the ledger.
public enum EventType: String, Codable, Sendable, CaseIterable, Comparable {
    /// A store purchase credited (App Store or Google Play; an entitlement-only product credits 0).
    case purchaseCredited = "purchase.credited"
    case spendCreated = "spend.created"
    /// Support's credit or debit, with its reason.
    case adjustmentCreated = "adjustment.created"
    case bonusGranted = "bonus.granted"
    /// A lot's remainder expired (breakage).
    case lotExpired = "lot.expired"
    case holdCreated = "hold.created"
    case holdCaptured = "hold.captured"
    case holdReleased = "hold.released"
    /// A hold past its expiry given back by the wallet itself.
    case holdExpired = "hold.expired"
    /// A purchase refunded or voided (a store's refund, a Google void, support's refund):
    /// what was taken, the debt it left, and what it could not collect.
    case refundApplied = "refund.applied"
    case refundReversed = "refund.reversed"
    /// An entitlement purchased, refunded, granted, revoked or extended; the change and the
    /// state it leaves are in `entitlement`.
    case entitlementChanged = "entitlement.changed"

    /// The kind of transaction an event of this type is.
    public var kind: TransactionKind {
        switch self {
        case .purchaseCredited: .purchase
        case .spendCreated: .spend
        case .adjustmentCreated: .adjustment
        case .bonusGranted: .bonus
        case .lotExpired: .expiry
        case .holdCreated: .hold
        case .holdCaptured: .capture
        case .holdReleased, .holdExpired: .release
        case .refundApplied: .refund
        case .refundReversed: .refundReversal
        case .entitlementChanged: .entitlement
        }
    }

    public static func < (left: EventType, right: EventType) -> Bool { left.rawValue < right.rawValue }

    /// Event types from a comma-separated list (`types=` of the feed, `--types` of the CLI);
    /// `*` alone means every type. Unknown names are refused, never ignored: a consumer that
    /// misspells one would otherwise wait for events that never come.
    public static func parseList(_ text: String) throws(WalletError) -> Set<EventType>? {
        guard text.utf8.count <= 1_024 else { throw .invalidRequest("the list of event types is longer than 1024 characters") }
        return try parse(text.split(separator: ",", omittingEmptySubsequences: false).map { String($0.trimmingCharacters(in: .whitespaces)) })
    }

    /// Event types from their names; `["*"]` means every type (nil).
    public static func parse(_ names: [String]) throws(WalletError) -> Set<EventType>? {
        guard !names.isEmpty else { throw .invalidRequest("name at least one event type, or * for all") }
        guard names.count <= allCases.count + 1 else { throw .invalidRequest("at most \(allCases.count) event types are named") }
        if names == ["*"] { return nil }
        var types: Set<EventType> = []
        for name in names {
            guard let type = EventType(rawValue: name) else {
                throw .invalidRequest(
                    "unknown event type '\(name.prefix(64))'; the types are \(allCases.map(\.rawValue).sorted().joined(separator: ", ")), or * alone for all")
            }
            types.insert(type)
        }
        return types
    }
}

/// One ledger transaction as an event: what changed in whose wallet, and the transaction itself.
/// Its `id` is the transaction's id, the same in the feed, in every webhook delivery and in every
/// replay: a receiver drops an event it has seen by it.
public struct LedgerEvent: Encodable, Sendable, Equatable {
    public var id: String
    public var type: EventType
    public var seq: Int64
    public var createdAt: String
    public var playerID: String
    public var currency: String
    /// What the transaction moved into the wallet (negative: out of it).
    public var amount: Int64
    /// The wallet's balance in `currency` once the transaction applied.
    public var balance: Int64
    /// For `refund.applied`: what it took, the debt it left, what it could not collect.
    public var refund: RefundOutcome?
    /// For `entitlement.changed`: the entitlement, the change and the state it leaves.
    public var entitlement: EntitlementEvent?
    public var transaction: LedgerTransaction

    /// What a refund did to the wallet.
    public struct RefundOutcome: Codable, Sendable, Equatable {
        /// The purchase it corrects.
        public var purchaseSeq: Int64?
        /// Credits taken back from the wallet.
        public var taken: Int64
        /// What the wallet owes once the refund applied (its balance below zero), or 0.
        public var debt: Int64
        /// What a `floor` refund could not take because the balance reached zero.
        public var uncollected: Int64

        enum CodingKeys: String, CodingKey {
            case taken, debt, uncollected
            case purchaseSeq = "purchase_seq"
        }
    }

    /// An entitlement's change, from its transaction's metadata.
    public struct EntitlementEvent: Codable, Sendable, Equatable {
        public var name: String
        public var change: String
        public var forever: Bool
        /// When a pass ends (nil: for ever, or not held).
        public var expiresAt: String?

        enum CodingKeys: String, CodingKey {
            case name, change, forever
            case expiresAt = "expires_at"
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, type, seq, currency, amount, balance, refund, entitlement, transaction
        case createdAt = "created_at"
        case playerID = "player_id"
    }

    public init(_ transaction: LedgerTransaction) {
        let type = Self.type(of: transaction)
        let own = AccountOwner.player(transaction.playerID).text
        let balance = transaction.postings.first { $0.account == own && $0.currency == transaction.currency }?.balanceAfter ?? 0
        self.id = transaction.id
        self.type = type
        self.seq = transaction.seq
        self.createdAt = transaction.createdAt
        self.playerID = transaction.playerID
        self.currency = transaction.currency
        self.amount = transaction.amount
        self.balance = balance
        self.transaction = transaction
        if type == .refundApplied {
            // Negated with saturation: a stored row is read, never trapped on, whatever it holds.
            refund = RefundOutcome(
                purchaseSeq: transaction.refundOfSeq, taken: transaction.amount == .min ? .max : -transaction.amount,
                debt: LotRules.debt(ofBalance: balance), uncollected: transaction.uncollected)
        }
        if type == .entitlementChanged, let members = transaction.metadata?.members, case .string(let name)? = members["entitlement"],
            case .string(let change)? = members["change"]
        {
            let forever = if case .bool(true)? = members["forever"] { true } else { false }
            let expiresAt = if case .string(let at)? = members["expires_at"] { at } else { String?.none }
            entitlement = EntitlementEvent(name: name, change: change, forever: forever, expiresAt: expiresAt)
        }
    }

    /// The type of event a transaction is: its kind, and for a release whether the hold expired.
    public static func type(of transaction: LedgerTransaction) -> EventType {
        switch transaction.kind {
        case .purchase: return .purchaseCredited
        case .spend: return .spendCreated
        case .adjustment: return .adjustmentCreated
        case .bonus: return .bonusGranted
        case .expiry: return .lotExpired
        case .hold: return .holdCreated
        case .capture: return .holdCaptured
        case .release:
            if case .string("expired")? = transaction.metadata?.members?["status"] { return .holdExpired }
            return .holdReleased
        case .refund: return .refundApplied
        case .refundReversal: return .refundReversed
        case .entitlement: return .entitlementChanged
        }
    }
}

/// A page of the feed: events after a seq, in seq order.
public struct EventQuery: Sendable, Equatable {
    /// Events after this seq (exclusive); 0 from the start.
    public var after: Int64
    public var limit: Int
    /// Only these types; nil for every type.
    public var types: Set<EventType>?

    public static let limitDefault = 100
    public static let limitMax = 500
    /// The most transactions one page looks through for events of the asked types: a page of a
    /// rare type over a long ledger ends there, with `next` past what it looked through.
    public static let scanMax: Int64 = 10_000
    /// The longest a feed request waits for an event (`wait=`).
    public static let waitSecondsMax = 30

    public init(after: Int64 = 0, limit: Int = limitDefault, types: Set<EventType>? = nil) {
        self.after = after
        self.limit = limit
        self.types = types
    }

    /// Checks a long poll's wait, in seconds (`wait=`).
    public static func validate(waitSeconds: Int64) throws(WalletError) {
        guard (0...Int64(waitSecondsMax)).contains(waitSeconds) else { throw .invalidRequest("wait must be 0 to \(waitSecondsMax) seconds", field: "wait") }
    }

    package func validate() throws(WalletError) {
        guard after >= 0 else { throw .invalidRequest("after must be a seq, 0 or more", field: "after") }
        guard (1...Self.limitMax).contains(limit) else { throw .invalidRequest("limit must be between 1 and \(Self.limitMax)", field: "limit") }
        if let types, types.isEmpty { throw .invalidRequest("name at least one event type, or leave types out for all") }
    }

    /// The kinds of transaction the asked types are (nil: all).
    package var kinds: Set<TransactionKind>? { types.map { Set($0.map(\.kind)) } }

    /// Whether `event` is of an asked type.
    package func includes(_ event: LedgerEvent) -> Bool { types?.contains(event.type) ?? true }
}

/// Events in seq order, and where to continue: `next` is the seq the consumer passes as `after`
/// next time. It moves past transactions of types not asked for, so a consumer of a rare type
/// does not read the same stretch of ledger again; it equals `after` when nothing newer exists.
public struct EventPage: Encodable, Sendable, Equatable {
    public var events: [LedgerEvent]
    public var next: Int64

    public init(events: [LedgerEvent], next: Int64) {
        self.events = events
        self.next = next
    }
}

/// The events waiting after a cursor: how many (counted up to `countMax`) and the oldest's time.
public struct EventBacklog: Sendable, Equatable {
    public var count: Int64
    public var oldestCreatedAt: String?

    public static let countMax: Int64 = 10_000

    public init(count: Int64, oldestCreatedAt: String?) {
        self.count = count
        self.oldestCreatedAt = oldestCreatedAt
    }
}

/// The ledger's events, read.
public protocol EventFeed: Sendable {
    /// A page of events after `query.after`, as committed now.
    func events(_ query: EventQuery) async throws(WalletError) -> EventPage
    /// The events of `types` (nil: all) after `after`: what a webhook endpoint has still to get.
    /// Counted by kind of transaction, so a release counts for both `hold.released` and
    /// `hold.expired`.
    func backlog(after: Int64, types: Set<EventType>?) async throws(WalletError) -> EventBacklog
}
