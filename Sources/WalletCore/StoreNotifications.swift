/// A store's notification about a transaction, already verified, and what the ledger should do.
public struct StoreNotification: Sendable, Equatable {
    public enum Effect: Sendable, Equatable {
        /// Take back the purchase's credits (the share in thousandths of a percent).
        case refund(shareMillipercent: Int64, policy: RefundPolicy)
        /// Take back what these voids and those recorded before add up to (`StoreVoids`), decided
        /// in the write from what it reads, and record the new ones with the refund.
        case voids([StoreVoid], policy: RefundPolicy)
        /// Re-credit what the purchase's refund took back.
        case refundReversal
        /// Record how much of the purchase the player already spent (Apple asks before deciding a refund).
        case consumptionRequest
        /// Record only.
        case none
        /// Record with outcome `invalid` and this reason: the store sent what it will never make
        /// valid (a share out of range), so answering an error would only make it retry forever.
        case refuse(reason: String)
    }

    /// The store's own id of the notification: each is applied once.
    public var notificationUUID: String
    public var store: String
    public var type: String
    public var subtype: String?
    public var storeTransactionID: String?
    public var effect: Effect
    /// When the store signed the report, milliseconds since 1970: refunds and reversals follow
    /// the latest report, whatever order they arrive in.
    public var reportedAt: Int64?
    public var actor: String
    /// For a consumption request the operator answers: the reply to queue in the same write
    /// (what the ledger knows of the purchase is added there).
    public var consumptionReply: ConsumptionReplyRequest?

    public init(
        notificationUUID: String, store: String, type: String, subtype: String?, storeTransactionID: String?, effect: Effect, reportedAt: Int64? = nil,
        actor: String, consumptionReply: ConsumptionReplyRequest? = nil
    ) {
        self.consumptionReply = consumptionReply
        self.reportedAt = reportedAt
        self.notificationUUID = notificationUUID
        self.store = store
        self.type = type
        self.subtype = subtype
        self.storeTransactionID = storeTransactionID
        self.effect = effect
        self.actor = actor
    }

    private var isRefusal: Bool {
        if case .refuse = effect { return true }
        return false
    }

    package func validate() throws(WalletError) {
        try Validate.visibleText(notificationUUID, field: "notification uuid", bytesMax: StoreNotificationRecord.uuidBytesMax)
        try Validate.store(store)
        try Validate.visibleText(type, field: "notification type", bytesMax: 64)
        if let subtype { try Validate.visibleText(subtype, field: "notification subtype", bytesMax: 64) }
        if let storeTransactionID { try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID) }
        if effect != .none, !isRefusal, storeTransactionID == nil { throw .invalidRequest("a \(type) notification needs a store transaction id") }
        if case .refund(let share, _) = effect { try Validate.refundShare(share) }
        if case .voids(let voids, _) = effect {
            guard (1...StoreVoid.perNotificationMax).contains(voids.count) else {
                throw .invalidRequest("a notification carries 1 to \(StoreVoid.perNotificationMax) voids")
            }
            for void in voids { try void.validate() }
        }
    }
}

extension StoreNotification {
    /// What a notification whose effect the ledger refused is recorded as, so that the store
    /// does not retry it forever: about a purchase the wallet never credited, or a refund already
    /// applied differently. Nil for an error the delivery must fail with.
    package func outcome(refusedWith error: WalletError) -> NotificationOutcome.Result? {
        switch error {
        case .notFound: effect == .refundReversal ? .noRefund : .noPurchase
        case .idempotencyKeyReused, .alreadyRefunded: .alreadyApplied
        default: nil
        }
    }

    /// Whether the operator's reply to a consumption request is queued, once recorded as `outcome`:
    /// also for a purchase the wallet never credited (Apple still asks).
    package func queuesReply(after outcome: NotificationOutcome.Result) -> Bool {
        consumptionReply != nil && effect == .consumptionRequest && (outcome == .consumptionRecorded || outcome == .noPurchase)
    }
}

/// What the wallet did about a notification. A notification delivered again answers the same.
public struct NotificationOutcome: Codable, Sendable, Equatable {
    public var notificationUUID: String
    public var notificationType: String
    public enum Result: String, Codable, Sendable, CaseIterable {
        case refunded
        case refundReversed = "refund_reversed"
        case consumptionRecorded = "consumption_recorded"
        /// The wallet never credited that transaction: it never will, if the report was a refund.
        case noPurchase = "no_purchase"
        /// Nothing to reverse.
        case noRefund = "no_refund"
        case alreadyApplied = "already_applied"
        /// An older report than one already applied.
        case superseded
        /// What the store can never make valid.
        case invalid
        /// Recorded only.
        case recorded
    }

    public var outcome: Result
    /// The ledger transaction the notification caused, if any.
    public var ledgerSeq: Int64?
    /// For a consumption request: the share of the purchase already spent, in thousandths of a percent.
    public var spentShareMillipercent: Int64?
    public var replayed: Bool

    package enum CodingKeys: String, CodingKey {
        case outcome, replayed
        case notificationUUID = "notification_uuid"
        case notificationType = "notification_type"
        case ledgerSeq = "ledger_seq"
        case spentShareMillipercent = "spent_share_millipercent"
    }

    package init(notificationUUID: String, notificationType: String, outcome: Result, ledgerSeq: Int64?, spentShareMillipercent: Int64?, replayed: Bool) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.outcome = outcome
        self.ledgerSeq = ledgerSeq
        self.spentShareMillipercent = spentShareMillipercent
        self.replayed = replayed
    }
}

/// The latest state a store reported for one of its transactions (see `store_transaction_states`):
/// refunds and reversals follow the latest report by the store's signing time, whatever order
/// they arrive in, and a purchase reported refunded is never credited.
package struct StoreTransactionState: Sendable, Equatable {
    package enum State: String, Sendable {
        case refunded
        case refundReversed = "refund_reversed"
    }

    package var state: State
    package var shareMillipercent: Int64
    /// The report's signing time, milliseconds since 1970.
    package var reportedAt: Int64

    package init(state: State, shareMillipercent: Int64, reportedAt: Int64) {
        self.state = state
        self.shareMillipercent = shareMillipercent
        self.reportedAt = reportedAt
    }

    /// The state `notification` reports, nil when it reports none (not a refund or a reversal,
    /// or unsigned by time).
    package init?(reportedBy notification: StoreNotification) {
        guard let reportedAt = notification.reportedAt, notification.storeTransactionID != nil else { return nil }
        switch notification.effect {
        case .refund(let share, _): self.init(state: .refunded, shareMillipercent: share, reportedAt: reportedAt)
        case .refundReversal: self.init(state: .refundReversed, shareMillipercent: 0, reportedAt: reportedAt)
        // Voids are reported once the write has decided their share (`StoreVoids.decide`).
        case .none, .consumptionRequest, .refuse, .voids: return nil
        }
    }

    /// Whether this report is older than `current`, the one kept: then it changes nothing.
    package func isSuperseded(by current: StoreTransactionState?) -> Bool {
        current.map { $0.reportedAt > reportedAt } ?? false
    }
}
