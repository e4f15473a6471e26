import Foundation
import GRDB

extension SQLiteLedgerStore {
    public func recordNotification(_ notification: StoreNotification) async throws(WalletError) -> NotificationOutcome {
        try notification.validate()
        return try await write { db, now, context in try Self.apply(db, notification, now: now, context: &context) }
    }

    private static func apply(_ db: Database, _ notification: StoreNotification, now: Date, context: inout BatchContext) throws -> NotificationOutcome {
        if let row = try Row.fetchOne(db, sql: "SELECT * FROM store_notifications WHERE notification_uuid = ?", arguments: [notification.notificationUUID]) {
            return NotificationOutcome(
                notificationUUID: row["notification_uuid"], notificationType: row["notification_type"], outcome: row["outcome"],
                ledgerSeq: row["ledger_seq"], spentShareThousandths: row["spent_share_thousandths"], replayed: true)
        }
        var outcome = NotificationOutcome(
            notificationUUID: notification.notificationUUID, notificationType: notification.type, outcome: "recorded", ledgerSeq: nil,
            spentShareThousandths: nil, replayed: false)
        let store = notification.store
        let transactionID = notification.storeTransactionID ?? ""
        do {
            if try recordReportUnlessSuperseded(db, notification) {
                outcome.outcome = "superseded"
                return try record(db, notification, outcome, now: now)
            }
            switch notification.effect {
            case .none:
                break
            case .refuse:
                outcome.outcome = "invalid"
            case .refund(let share, let policy):
                let request = RefundRequest(store: store, storeTransactionID: transactionID, shareThousandths: share, policy: policy, actor: notification.actor)
                let result = try LedgerWrites.refund(db, Checked(request), now: now, context: &context)
                outcome.outcome = result.replayed ? "already_applied" : "refunded"
                outcome.ledgerSeq = result.transaction.seq
            case .refundReversal:
                let result = try LedgerWrites.reverseRefund(db, store: store, storeTransactionID: transactionID, actor: notification.actor, now: now, context: &context)
                outcome.outcome = result.replayed ? "already_applied" : "refund_reversed"
                outcome.ledgerSeq = result.transaction.seq
            case .consumptionRequest:
                guard let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: transactionID) else { throw WalletError.notFound("") }
                outcome.outcome = "consumption_recorded"
                outcome.spentShareThousandths = try spentShare(db, of: purchase, context: context)
            }
        } catch let error as WalletError {
            // A notification about a purchase the wallet never credited, or a refund already
            // applied differently, is recorded as such: the store must not retry it forever.
            switch error {
            case .notFound: outcome.outcome = notification.effect == .refundReversal ? "no_refund" : "no_purchase"
            case .idempotencyKeyReused, .alreadyRefunded: outcome.outcome = "already_applied"
            default: throw error
            }
        }
        return try record(db, notification, outcome, now: now)
    }

    /// Keeps the refund state this notification reports as the transaction's latest, unless a
    /// later report (by the store's signing time) is kept already: then it returns true and
    /// changes nothing.
    private static func recordReportUnlessSuperseded(_ db: Database, _ notification: StoreNotification) throws -> Bool {
        let state: StoreTransactionState.State
        var share: Int64 = 0
        switch notification.effect {
        case .refund(let shareThousandths, _):
            state = .refunded
            share = shareThousandths
        case .refundReversal:
            state = .refundReversed
        case .none, .consumptionRequest, .refuse:
            return false
        }
        guard let reportedAt = notification.reportedAt, let transactionID = notification.storeTransactionID else { return false }
        if let current = try StoreTransactionState.find(db, store: notification.store, storeTransactionID: transactionID), current.reportedAt > reportedAt {
            return true
        }
        try StoreTransactionState(state: state, shareThousandths: share, reportedAt: reportedAt).save(db, store: notification.store, storeTransactionID: transactionID)
        return false
    }

    private static func record(_ db: Database, _ notification: StoreNotification, _ outcome: NotificationOutcome, now: Date) throws -> NotificationOutcome {
        let store = notification.store
        try db.execute(
            sql: """
                INSERT INTO store_notifications (notification_uuid, store, notification_type, subtype, store_transaction_id, outcome,
                    ledger_seq, spent_share_thousandths, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                notification.notificationUUID, store, notification.type, notification.subtype, notification.storeTransactionID, outcome.outcome,
                outcome.ledgerSeq, outcome.spentShareThousandths, Timestamp.format(now),
            ])
        return outcome
    }

    /// The share of a purchase no longer in the player's wallet: what the purchase credited, less
    /// what remains of the balance (at most the purchase), in thousandths of a percent.
    private static func spentShare(_ db: Database, of purchase: LedgerTransaction, context: BatchContext) throws -> Int64 {
        let balance = try Account.find(db, context: context, owner: LedgerRules.playerOwner(purchase.playerID), currency: purchase.currency)?.balance ?? 0
        guard purchase.amount > 0 else { return 0 }
        let remaining = min(max(balance, 0), purchase.amount)
        return (purchase.amount - remaining) * Limits.refundShareMax / purchase.amount
    }
}
