import Foundation

/// What the operator answers when a store asks how much of a purchase was consumed (the App
/// Store's `CONSUMPTION_REQUEST`, before it decides a refund). Queued in the same write that
/// records the notification, with what the ledger knows of the purchase, and sent later.
public struct ConsumptionReplyRequest: Sendable, Equatable {
    /// The store environment the purchase belongs to (`Production` or `Sandbox`).
    public var environment: String
    /// Whether the game gives a free sample or trial of the content (configuration).
    public var sampleContentProvided: Bool
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`; nil states none (configuration).
    public var refundPreference: String?
    /// The store takes no answer after this (the App Store: 12 hours after it asked).
    public var deadline: Date

    public static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public init(environment: String, sampleContentProvided: Bool, refundPreference: String?, deadline: Date) {
        self.environment = environment
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
        self.deadline = deadline
    }
}

/// A consumption reply in the outbox: what will be (or was) sent, and how sending went.
public struct ConsumptionReply: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable, CaseIterable {
        /// Waiting for its next attempt.
        case pending
        /// The store accepted it.
        case sent
        /// The deadline passed before the store accepted it.
        case expired
        /// The store refused it as malformed: sending again cannot help.
        case failed
    }

    public var notificationUUID: String
    public var store: String
    public var storeTransactionID: String
    public var environment: String
    /// Whether the ledger credited the purchase.
    public var delivered: Bool
    /// The share of the purchase already spent, in thousandths of a percent (nil when not delivered).
    public var spentShareMillipercent: Int64?
    public var sampleContentProvided: Bool
    public var refundPreference: String?
    public var createdAt: String
    public var deadline: String
    public var status: Status
    public var attempts: Int64
    public var nextAttemptAt: String
    public var lastError: String?
    public var finishedAt: String?

    package init(
        notificationUUID: String, store: String, storeTransactionID: String, environment: String, delivered: Bool, spentShareMillipercent: Int64?,
        sampleContentProvided: Bool, refundPreference: String?, createdAt: String, deadline: String, status: Status, attempts: Int64,
        nextAttemptAt: String, lastError: String?, finishedAt: String?
    ) {
        self.notificationUUID = notificationUUID
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.environment = environment
        self.delivered = delivered
        self.spentShareMillipercent = spentShareMillipercent
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
        self.createdAt = createdAt
        self.deadline = deadline
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.finishedAt = finishedAt
    }

    /// How one attempt to send ended.
    public enum Attempt: Sendable, Equatable {
        case sent
        /// Try again at `retryAt`, unless that is past the deadline (then it expires).
        case failed(error: String, retryAt: Date)
        /// The store will never take it.
        case refused(error: String)
    }

    enum CodingKeys: String, CodingKey {
        case store, environment, delivered, status, attempts, deadline
        case notificationUUID = "notification_uuid"
        case storeTransactionID = "store_transaction_id"
        case spentShareMillipercent = "spent_share_millipercent"
        case sampleContentProvided = "sample_content_provided"
        case refundPreference = "refund_preference"
        case createdAt = "created_at"
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case finishedAt = "finished_at"
    }
}

/// The replies a ledger owes the stores, queued by `recordNotification`.
public protocol ConsumptionReplyOutbox: Sendable {
    /// Takes up to `limit` pending replies whose attempt is due at `now`, and holds them for
    /// `lease` (their next attempt moves past it), so that other instances do not send them too.
    func claimConsumptionReplies(at now: Date, limit: Int, lease: Duration) async throws(WalletError) -> [ConsumptionReply]
    /// Records how the attempt on a claimed reply ended: sent, to try again, refused, or expired
    /// once the next attempt would be past the deadline. A claim that lapsed and was taken by
    /// another sender (its attempt count moved on) changes nothing: the current state is returned.
    func finishConsumptionReply(_ claimed: ConsumptionReply, _ attempt: ConsumptionReply.Attempt, at now: Date) async throws(WalletError) -> ConsumptionReply
    /// The outbox, newest first, optionally one status only.
    func consumptionReplies(status: ConsumptionReply.Status?, limit: Int) async throws(WalletError) -> [ConsumptionReply]
}
