import WalletCore
import Foundation

extension SQLLedgerStore {
    package func recordNotification(_ notification: StoreNotification) async throws(WalletError) -> NotificationOutcome {
        try notification.validate()
        return try await write { db, now, context in try Self.apply(db, notification, now: now, context: &context) }
    }

    private static func apply(_ db: any SQLSession, _ notification: StoreNotification, now: Date, context: inout BatchContext) throws -> NotificationOutcome {
        let recorded = try db.first(
            "SELECT notification_uuid, notification_type, outcome, ledger_seq, spent_share_thousandths FROM store_notifications WHERE notification_uuid = ?",
            [.text(notification.notificationUUID)]
        ) { row in
            NotificationOutcome(
                notificationUUID: try row.text(0), notificationType: try row.text(1), outcome: try row.text(2),
                ledgerSeq: try row.integerOrNil(3), spentShareMillipercent: try row.integerOrNil(4), replayed: true)
        }
        if let recorded { return recorded }
        var outcome = NotificationOutcome(
            notificationUUID: notification.notificationUUID, notificationType: notification.type, outcome: "recorded", ledgerSeq: nil,
            spentShareMillipercent: nil, replayed: false)
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
                let request = RefundRequest(store: store, storeTransactionID: transactionID, shareMillipercent: share, policy: policy, actor: notification.actor)
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
                outcome.spentShareMillipercent = try spentShare(db, of: purchase, context: context)
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
        let result = try record(db, notification, outcome, now: now)
        if let reply = notification.consumptionReply, notification.effect == .consumptionRequest, ["consumption_recorded", "no_purchase"].contains(outcome.outcome) {
            try ConsumptionReplyStorage.queue(db, reply, for: notification, outcome: outcome, now: now)
        }
        return result
    }

    /// Keeps the refund state this notification reports as the transaction's latest, unless a
    /// later report (by the store's signing time) is kept already: then it returns true and
    /// changes nothing.
    private static func recordReportUnlessSuperseded(_ db: any SQLSession, _ notification: StoreNotification) throws -> Bool {
        let state: StoreTransactionState.State
        var share: Int64 = 0
        switch notification.effect {
        case .refund(let shareMillipercent, _):
            state = .refunded
            share = shareMillipercent
        case .refundReversal:
            state = .refundReversed
        case .none, .consumptionRequest, .refuse:
            return false
        }
        guard let reportedAt = notification.reportedAt, let transactionID = notification.storeTransactionID else { return false }
        if let current = try StoreTransactionState.find(db, store: notification.store, storeTransactionID: transactionID), current.reportedAt > reportedAt {
            return true
        }
        try StoreTransactionState(state: state, shareMillipercent: share, reportedAt: reportedAt).save(db, store: notification.store, storeTransactionID: transactionID)
        return false
    }

    private static func record(_ db: any SQLSession, _ notification: StoreNotification, _ outcome: NotificationOutcome, now: Date) throws -> NotificationOutcome {
        let store = notification.store
        try db.execute(
            """
            INSERT INTO store_notifications (notification_uuid, store, notification_type, subtype, store_transaction_id, outcome,
                ledger_seq, spent_share_thousandths, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(notification.notificationUUID), .text(store), .text(notification.type), .text(notification.subtype),
                .text(notification.storeTransactionID), .text(outcome.outcome), .integer(outcome.ledgerSeq), .integer(outcome.spentShareMillipercent),
                .text(Timestamp.format(now)),
            ])
        return outcome
    }

    /// The share of a purchase no longer in the player's wallet, in thousandths of a percent:
    /// exact from its lot (what the purchase credited less what remains of its lot), or, for a
    /// purchase older than lots, estimated from the balance (what remains of it, at most the purchase).
    private static func spentShare(_ db: any SQLSession, of purchase: LedgerTransaction, context: BatchContext) throws -> Int64 {
        if let remaining = try db.first(
            "SELECT remaining FROM lots WHERE source_seq = ? AND category = 'paid'", [.integer(purchase.seq)], { row in try row.integer(0) })
        {
            return LedgerRules.spentShare(credited: purchase.amount, remaining: remaining)
        }
        let balance = try Account.find(db, context: context, owner: LedgerRules.playerOwner(purchase.playerID), currency: purchase.currency)?.balance ?? 0
        return LedgerRules.spentShare(credited: purchase.amount, remaining: balance)
    }
}
