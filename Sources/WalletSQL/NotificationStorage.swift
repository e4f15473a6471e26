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
            let outcomeText = try row.text(2)
            guard let outcome = NotificationOutcome.Result(rawValue: outcomeText) else {
                throw WalletError.corrupt("notification \(notification.notificationUUID) has an unknown outcome '\(outcomeText.prefix(40))'")
            }
            return NotificationOutcome(
                notificationUUID: try row.text(0), notificationType: try row.text(1), outcome: outcome,
                ledgerSeq: try row.integerOrNil(3), spentShareMillipercent: try row.integerOrNil(4), replayed: true)
        }
        if let recorded { return recorded }
        var outcome = NotificationOutcome(
            notificationUUID: notification.notificationUUID, notificationType: notification.type, outcome: .recorded, ledgerSeq: nil,
            spentShareMillipercent: nil, replayed: false)
        let store = notification.store
        let transactionID = notification.storeTransactionID ?? ""
        var notification = notification
        var newVoids: [StoreVoid] = []
        let addsUp = if case .voids = notification.effect { true } else { false }
        if addsUp {
            guard let resolved = try voidRefund(db, notification) else {
                outcome.outcome = .alreadyApplied
                return try record(db, notification, outcome, now: now)
            }
            (notification, newVoids) = resolved
        }
        // The state it reports is kept as the transaction's latest, unless a later one is. Voids
        // are each applied once whatever their order, so an older one is never superseded.
        if let report = StoreTransactionState(reportedBy: notification) {
            let current = try StoreTransactionState.find(db, store: store, storeTransactionID: transactionID, context: &context)
            if !report.isSuperseded(by: current) {
                try report.save(db, store: store, storeTransactionID: transactionID, context: &context)
            } else if !addsUp {
                outcome.outcome = .superseded
                return try record(db, notification, outcome, now: now)
            }
        }
        do {
            switch notification.effect {
            case .none, .voids:
                // Voids were turned into their refund above.
                break
            case .refuse:
                outcome.outcome = .invalid
            case .refund(let share, let policy):
                let request = RefundRequest(store: store, storeTransactionID: transactionID, shareMillipercent: share, policy: policy, actor: notification.actor)
                let result = try LedgerWrites.refund(db, Checked(request), now: now, context: &context)
                outcome.outcome = result.replayed ? .alreadyApplied : .refunded
                outcome.ledgerSeq = result.transaction.seq
            case .refundReversal:
                let result = try LedgerWrites.reverseRefund(db, store: store, storeTransactionID: transactionID, actor: notification.actor, now: now, context: &context)
                outcome.outcome = result.replayed ? .alreadyApplied : .refundReversed
                outcome.ledgerSeq = result.transaction.seq
            case .consumptionRequest:
                if let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: transactionID) {
                    outcome.outcome = .consumptionRecorded
                    outcome.spentShareMillipercent = try spentShare(db, of: purchase, context: &context)
                } else {
                    outcome.outcome = .noPurchase
                }
            }
        } catch let error as WalletError {
            guard let refused = notification.outcome(refusedWith: error) else { throw error }
            outcome.outcome = refused
        }
        if !newVoids.isEmpty, outcome.outcome == .refunded || outcome.outcome == .alreadyApplied {
            try StoreVoidStorage.insert(
                db, newVoids, store: store, storeTransactionID: transactionID, refundSeq: outcome.outcome == .refunded ? outcome.ledgerSeq : nil, now: now)
        }
        let result = try record(db, notification, outcome, now: now)
        if let reply = notification.consumptionReply, notification.queuesReply(after: outcome.outcome) {
            try ConsumptionReplyStorage.queue(db, reply, for: notification, outcome: outcome, now: now)
        }
        return result
    }

    /// A notification of voids as the refund they make, and the voids new to the ledger that the
    /// write records with it; nil when none is new. Voids add up from what the ledger recorded and
    /// reads here, in the refund's own write: each once, however long ago the store last listed it,
    /// and never from a purchase read before the write.
    private static func voidRefund(_ db: any SQLSession, _ notification: StoreNotification) throws -> (StoreNotification, [StoreVoid])? {
        guard case .voids(let reported, let policy) = notification.effect, let transactionID = notification.storeTransactionID else { return nil }
        let store = notification.store
        let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: transactionID)
        let recorded = try StoreVoidStorage.recorded(db, store: store, storeTransactionID: transactionID)
        let decision = StoreVoids.decide(reported: reported, recorded: recorded, purchase: purchase.map { ($0.quantity ?? 1, $0.amount) })
        guard let share = decision.share else { return nil }
        var refund = notification
        refund.effect = .refund(shareMillipercent: share, policy: policy)
        return (refund, decision.new)
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
                .text(notification.storeTransactionID), .text(outcome.outcome.rawValue), .integer(outcome.ledgerSeq), .integer(outcome.spentShareMillipercent),
                .text(Timestamp.format(now)),
            ])
        return outcome
    }

    /// The share of a purchase no longer in the player's wallet, in thousandths of a percent:
    /// exact from its lot (what the purchase credited less what remains of its lot), or, for a
    /// purchase older than lots, estimated from the balance (what remains of it, at most the purchase).
    private static func spentShare(_ db: any SQLSession, of purchase: LedgerTransaction, context: inout BatchContext) throws -> Int64 {
        if let remaining = try db.first(
            "SELECT remaining FROM lots WHERE source_seq = ? AND category = 'paid'", [.integer(purchase.seq)], { row in try row.integer(0) })
        {
            return LedgerRules.spentShare(credited: purchase.amount, remaining: remaining)
        }
        let balance = try Account.find(db, context: &context, owner: AccountOwner.player(purchase.playerID).text, currency: purchase.currency)?.balance ?? 0
        return LedgerRules.spentShare(credited: purchase.amount, remaining: balance)
    }
}
