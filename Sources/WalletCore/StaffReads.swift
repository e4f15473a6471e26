import Foundation

/// What staff read beside a wallet's own pages: one transaction whole, a store purchase by its
/// store transaction id, a player's store notifications, the background queues, and period totals.
/// Answers for API keys and operators only (`Audience.staff`).

/// One ledger transaction with what other records say of it.
public struct TransactionDetail: Encodable, Sendable, Equatable {
    public var transaction: LedgerTransaction
    /// What the transaction took from (positive) or gave back to (negative) each lot, by lot id.
    public var lotDraws: [TransactionLotDraw]
    /// For a purchase: the seqs of its refunds and refund reversals, oldest first. A correction
    /// names its purchase in the transaction's own `refund_of_seq`, so it is not repeated here.
    public var corrections: [Int64]

    package init(transaction: LedgerTransaction, lotDraws: [TransactionLotDraw], corrections: [Int64]) {
        self.transaction = transaction
        self.lotDraws = lotDraws
        self.corrections = corrections
    }

    package enum CodingKeys: String, CodingKey {
        case transaction, corrections
        case lotDraws = "lot_draws"
    }
}

/// One lot a transaction drew from or gave back to, with what the lot is.
public struct TransactionLotDraw: Codable, Sendable, Equatable {
    public var lotID: Int64
    public var category: LotCategory
    /// The transaction that credited the lot.
    public var sourceSeq: Int64
    public var expiresAt: String?
    /// Taken from the lot (positive) or given back to it (negative: a release, a capture's rest).
    public var amount: Int64

    package init(lotID: Int64, category: LotCategory, sourceSeq: Int64, expiresAt: String?, amount: Int64) {
        self.lotID = lotID
        self.category = category
        self.sourceSeq = sourceSeq
        self.expiresAt = expiresAt
        self.amount = amount
    }

    package enum CodingKeys: String, CodingKey {
        case category, amount
        case lotID = "lot_id"
        case sourceSeq = "source_seq"
        case expiresAt = "expires_at"
    }
}

/// A store purchase found by its store transaction id: the credit, the player it went to, what
/// the store reported beside it (when it did), and its refunds and reversals.
public struct PurchaseLookup: Encodable, Sendable, Equatable {
    public var playerID: String
    public var purchase: LedgerTransaction
    /// The order id, type and region the store reported, and its finishing; nil when the store
    /// reported none (a purchase credited before the wallet kept them, or from another store).
    public var storePurchase: StorePurchase?
    /// The purchase's refunds and refund reversals, oldest first.
    public var corrections: [LedgerTransaction]

    package init(purchase: LedgerTransaction, storePurchase: StorePurchase?, corrections: [LedgerTransaction]) {
        playerID = purchase.playerID
        self.purchase = purchase
        self.storePurchase = storePurchase
        self.corrections = corrections
    }

    package enum CodingKeys: String, CodingKey {
        case purchase, corrections
        case playerID = "player_id"
        case storePurchase = "store_purchase"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(playerID, forKey: .playerID)
        try container.encode(purchase, forKey: .purchase)
        try container.encodeIfPresent(storePurchase, forKey: .storePurchase)
        try container.encode(corrections, forKey: .corrections)
    }
}

/// Per kind and currency over a period, with the period's breakage and today's debt: the
/// auditors' figures beside the daily volume they are summed from.
public struct VolumeReport: Encodable, Sendable, Equatable {
    public var days: [DailyVolume]
    /// Every kind and currency that occurred in the period, summed over its days, in kind then
    /// currency order.
    public var totals: [VolumeTotal]
    /// Per currency, the credits that expired in the period (the `expiry` total).
    public var breakage: [String: Int64]
    /// Per currency, now (not in the period): what wallets below zero owe, and how many they are.
    public var debt: [String: OutstandingDebt]

    /// The report of `days`, with `debt` as read now.
    public init(days: [DailyVolume], debt: [String: OutstandingDebt]) {
        self.days = days
        var sums: [VolumeTotal.Key: (count: Int64, amount: Int64)] = [:]
        for day in days {
            let key = VolumeTotal.Key(kind: day.kind, currency: day.currency)
            let sum = sums[key] ?? (0, 0)
            // A year of one kind's daily sums cannot reach Int64.max (each day is bounded by the
            // ledger's own sums), but a total is never allowed to wrap.
            sums[key] = (sum.count.addingClamped(day.count), sum.amount.addingClamped(day.amount))
        }
        totals = sums.map { VolumeTotal(kind: $0.key.kind, currency: $0.key.currency, count: $0.value.count, amount: $0.value.amount) }
            .sorted { ($0.kind.rawValue, $0.currency) < ($1.kind.rawValue, $1.currency) }
        breakage = Dictionary(uniqueKeysWithValues: totals.filter { $0.kind == .expiry }.map { ($0.currency, $0.amount) })
        self.debt = debt
    }
}

extension Int64 {
    fileprivate func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

/// One kind and currency's transactions over a period: how many, and the sum of their amounts'
/// magnitudes (as `DailyVolume`).
public struct VolumeTotal: Codable, Sendable, Equatable {
    public var kind: TransactionKind
    public var currency: String
    public var count: Int64
    public var amount: Int64

    struct Key: Hashable {
        var kind: TransactionKind
        var currency: String
    }
}

/// What wallets below zero owe in one currency: refunds of spent credits under the `debt` policy,
/// and support's adjustments allowed below zero.
public struct OutstandingDebt: Codable, Sendable, Equatable {
    /// The sum of the negative balances, as a positive number.
    public var amount: Int64
    public var wallets: Int64

    package init(amount: Int64, wallets: Int64) {
        self.amount = amount
        self.wallets = wallets
    }
}

/// One background queue's state: what waits, what was given up on, and how long the oldest
/// waiting item has waited.
public struct OutboxQueue: Encodable, Sendable, Equatable {
    public enum Name: String, Codable, Sendable, CaseIterable {
        /// App Store consumption information, answering CONSUMPTION_REQUEST notifications.
        case appleConsumptionReplies = "apple_consumption_replies"
        /// Google Play purchases to consume (consumables and passes).
        case googleConsumes = "google_consumes"
        /// Google Play purchases to acknowledge (non-consumables).
        case googleAcknowledges = "google_acknowledges"
        /// One webhook endpoint's undelivered events.
        case webhook
    }

    public var name: Name
    /// For a webhook endpoint: its id and status.
    public var webhookID: String?
    public var webhookStatus: WebhookEndpoint.Status?
    /// Items waiting to be sent (a webhook's events counted up to `EventBacklog.countMax`).
    public var pending: Int64
    /// Items given up on: store replies the store refused or whose deadline passed; for a
    /// webhook endpoint, the failed attempts since its last delivery.
    public var failed: Int64
    /// How long the oldest pending item has waited, in whole seconds; nil when none waits.
    public var oldestPendingAgeSeconds: Int64?

    public init(name: Name, webhookID: String? = nil, webhookStatus: WebhookEndpoint.Status? = nil, pending: Int64, failed: Int64, oldestPendingAgeSeconds: Int64?) {
        self.name = name
        self.webhookID = webhookID
        self.webhookStatus = webhookStatus
        self.pending = pending
        self.failed = failed
        self.oldestPendingAgeSeconds = oldestPendingAgeSeconds
    }

    package enum CodingKeys: String, CodingKey {
        case name, pending, failed
        case webhookID = "webhook_id"
        case webhookStatus = "webhook_status"
        case oldestPendingAgeSeconds = "oldest_pending_age_seconds"
    }

    public func encode(to encoder: any Encoder) throws {
        // `oldest_pending_age_seconds` is always present (null when nothing waits), as documented.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(webhookID, forKey: .webhookID)
        try container.encodeIfPresent(webhookStatus, forKey: .webhookStatus)
        try container.encode(pending, forKey: .pending)
        try container.encode(failed, forKey: .failed)
        try container.encode(oldestPendingAgeSeconds, forKey: .oldestPendingAgeSeconds)
    }

    /// The age in whole seconds of an item created at `createdAt` (ledger format), at `now`; never
    /// negative (another instance's clock may run ahead).
    public static func age(of createdAt: String?, at now: Date) -> Int64? {
        guard let createdAt, let date = try? Timestamp.date(createdAt, field: "created_at") else { return nil }
        return Int64(max(0, now.timeIntervalSince(date)).rounded(.down))
    }
}

/// The staff's reads of the stores' queues and of what wallets owe.
public protocol StaffReading: Sendable {
    /// The transaction at `seq` with its lot draws and corrections; `notFound` for a seq the
    /// ledger does not hold.
    func transactionDetail(seq: Int64) async throws(WalletError) -> TransactionDetail
    /// The purchase that credited a store transaction, with its player and corrections; nil when
    /// the wallet never credited it.
    func purchaseLookup(store: String, storeTransactionID: String) async throws(WalletError) -> PurchaseLookup?
    /// Per currency, the wallets below zero now and the sum they owe.
    func outstandingDebt() async throws(WalletError) -> [String: OutstandingDebt]
    /// The stores' outbox queues (consumption replies, purchases to finish) at `now`; webhook
    /// endpoints are read through `WebhookStore` and `EventFeed`.
    func storeOutboxes(at now: Date) async throws(WalletError) -> [OutboxQueue]
    /// The store notifications about the player's credited purchases, newest first. A
    /// notification about a purchase the wallet never credited names no player, and is in no page.
    func notifications(_ query: NotificationQuery) async throws(WalletError) -> NotificationPage
}

extension Timestamp {
    /// The length of a timestamp in the ledger's format, `2026-11-01T00:00:00.000Z`.
    package static let ledgerLength = 24
}

/// A page of the store notifications about a player's purchases, newest first.
public struct NotificationQuery: Sendable, Equatable {
    public var playerID: PlayerID
    public var limit: Int
    /// The previous page's `next`: continue with older notifications.
    public var before: String?

    public init(playerID: PlayerID, limit: Int = Limits.pageSizeDefault, before: String? = nil) {
        self.playerID = playerID
        self.limit = limit
        self.before = before
    }

    /// The cursor's parts once the query is valid: the last notification's receipt time (the
    /// ledger's 24-character format) and its UUID, which together order notifications.
    package func validated() throws(WalletError) -> (receivedAt: String, notificationUUID: String)? {
        try Validate.pageSize(limit)
        guard let before else { return nil }
        let refusal = WalletError.invalidRequest("before must be the previous page's next, as answered", field: "before")
        // Split by bytes, not characters, and hold the UUID part to the rule every recorded
        // notification UUID passed: a space or a NUL byte (which PostgreSQL refuses in text) can
        // then never reach the query, and only a cursor this route could have answered is read.
        let bytes = Array(before.utf8)
        guard bytes.count > Timestamp.ledgerLength, bytes.count <= Timestamp.ledgerLength + StoreNotificationRecord.uuidBytesMax,
            let receivedAt = String(validating: bytes[..<Timestamp.ledgerLength], as: UTF8.self),
            (try? Timestamp.parse(receivedAt, field: "before")) == receivedAt,
            let notificationUUID = String(validating: bytes[Timestamp.ledgerLength...], as: UTF8.self),
            (try? Validate.visibleText(notificationUUID, field: "before", bytesMax: StoreNotificationRecord.uuidBytesMax)) != nil
        else { throw refusal }
        return (receivedAt, notificationUUID)
    }
}

/// A store notification as the wallet recorded it, with what it did about it.
public struct StoreNotificationRecord: Encodable, Sendable, Equatable {
    /// The longest notification UUID a store notification may carry (`StoreNotification.validate`).
    public static let uuidBytesMax = 64

    public var notificationUUID: String
    public var store: String
    public var type: String
    public var subtype: String?
    public var storeTransactionID: String?
    public var receivedAt: String
    public var outcome: NotificationOutcome.Result
    /// The ledger transaction it caused, if any.
    public var ledgerSeq: Int64?
    /// For a consumption request: the share of the purchase already spent, in thousandths of a percent.
    public var spentShareMillipercent: Int64?

    package init(
        notificationUUID: String, store: String, type: String, subtype: String?, storeTransactionID: String?, receivedAt: String,
        outcome: NotificationOutcome.Result, ledgerSeq: Int64?, spentShareMillipercent: Int64?
    ) {
        self.notificationUUID = notificationUUID
        self.store = store
        self.type = type
        self.subtype = subtype
        self.storeTransactionID = storeTransactionID
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.ledgerSeq = ledgerSeq
        self.spentShareMillipercent = spentShareMillipercent
    }

    package enum CodingKeys: String, CodingKey {
        case store, type, subtype, outcome
        case notificationUUID = "notification_uuid"
        case storeTransactionID = "store_transaction_id"
        case receivedAt = "received_at"
        case ledgerSeq = "ledger_seq"
        case spentShareMillipercent = "spent_share_millipercent"
    }
}

/// One page of a player's store notifications, newest first; pass `next` as `before` for the next.
public struct NotificationPage: Encodable, Sendable, Equatable {
    public var notifications: [StoreNotificationRecord]
    public var next: String?

    package init(notifications: [StoreNotificationRecord], next: String?) {
        self.notifications = notifications
        self.next = next
    }
}
