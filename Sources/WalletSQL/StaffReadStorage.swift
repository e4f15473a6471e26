import Foundation
import WalletCore

/// Staff's reads (`StaffReading`), each one read snapshot.
extension SQLLedgerStore {
    package func transactionDetail(seq: Int64) async throws(WalletError) -> TransactionDetail {
        guard seq >= 1 else { throw .invalidRequest("seq must be 1 or more", field: "seq") }
        return try await read { db in
            let transaction = try LedgerReads.transaction(db, seq: seq)
            let draws = try db.all(
                """
                SELECT d.lot_id, l.category, l.source_seq, l.expires_at, d.amount FROM lot_draws d JOIN lots l ON l.id = d.lot_id
                WHERE d.seq = ? ORDER BY d.lot_id
                """, [.integer(seq)]
            ) { row in
                let lotID = try row.integer(0)
                return TransactionLotDraw(
                    lotID: lotID, category: try LotStorage.category(try row.text(1), lotID: lotID), sourceSeq: try row.integer(2),
                    expiresAt: try row.textOrNil(3), amount: try row.integer(4))
            }
            let corrections = transaction.kind == .purchase ? try LedgerReads.correctionSeqs(db, of: seq) : []
            return TransactionDetail(transaction: transaction, lotDraws: draws, corrections: corrections)
        }
    }

    package func purchaseLookup(store: String, storeTransactionID: String) async throws(WalletError) -> PurchaseLookup? {
        try Validate.store(store)
        try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID)
        return try await read { db in
            guard let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: storeTransactionID) else { return nil }
            let record = try StorePurchaseStorage.purchase(db, store: store, storeTransactionID: storeTransactionID)
            return PurchaseLookup(purchase: purchase, storePurchase: record, corrections: try LedgerReads.corrections(db, of: purchase.seq))
        }
    }

    package func outstandingDebt() async throws(WalletError) -> [String: OutstandingDebt] {
        try await read { db in
            var debt: [String: OutstandingDebt] = [:]
            // Players' accounts only: system accounts (`@store:apple`, ...) are negative by design.
            try db.forEach(
                """
                SELECT currency, count(*), CAST(sum(balance) AS BIGINT) FROM accounts
                WHERE balance < 0 AND substr(owner, 1, \(AccountOwner.playerPrefix.count)) = ? GROUP BY currency
                """, [.text(AccountOwner.playerPrefix)]
            ) { row in
                let sum = try row.integer(2)
                // A sum of exactly Int64.min has no positive counterpart: shown as the largest amount.
                debt[try row.text(0)] = OutstandingDebt(amount: sum == .min ? .max : -sum, wallets: try row.integer(1))
            }
            return debt
        }
    }

    package func storeOutboxes(at now: Date) async throws(WalletError) -> [OutboxQueue] {
        try await read { db in
            let replies = try db.first(
                """
                SELECT CAST(sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS BIGINT),
                    CAST(sum(CASE WHEN status IN ('failed', 'expired') THEN 1 ELSE 0 END) AS BIGINT),
                    min(CASE WHEN status = 'pending' THEN created_at END)
                FROM consumption_replies
                """, []
            ) { row in
                OutboxQueue(
                    name: .appleConsumptionReplies, pending: try row.integerOrNil(0) ?? 0, failed: try row.integerOrNil(1) ?? 0,
                    oldestPendingAgeSeconds: OutboxQueue.age(of: try row.textOrNil(2), at: now))
            }
            var queues = [replies ?? OutboxQueue(name: .appleConsumptionReplies, pending: 0, failed: 0, oldestPendingAgeSeconds: nil)]
            for (name, action) in [(OutboxQueue.Name.googleConsumes, PurchaseFinish.Action.consume), (.googleAcknowledges, .acknowledge)] {
                let queue = try db.first(
                    """
                    SELECT CAST(sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS BIGINT),
                        CAST(sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS BIGINT),
                        min(CASE WHEN status = 'pending' THEN created_at END)
                    FROM purchase_finishes WHERE store = 'google' AND action = ?
                    """, [.text(action.rawValue)]
                ) { row in
                    OutboxQueue(
                        name: name, pending: try row.integerOrNil(0) ?? 0, failed: try row.integerOrNil(1) ?? 0,
                        oldestPendingAgeSeconds: OutboxQueue.age(of: try row.textOrNil(2), at: now))
                }
                queues.append(queue ?? OutboxQueue(name: name, pending: 0, failed: 0, oldestPendingAgeSeconds: nil))
            }
            return queues
        }
    }
}

extension SQLLedgerStore {
    /// Notifications name no player: each is found through the purchase its store transaction
    /// credited (the unique purchase index), so one about a purchase never credited is in no page.
    package func notifications(_ query: NotificationQuery) async throws(WalletError) -> NotificationPage {
        let cursor = try query.validated()
        return try await read { db in
            // One row more than the page tells whether another page follows.
            let rows = try db.all(
                """
                SELECT n.notification_uuid, n.store, n.notification_type, n.subtype, n.store_transaction_id, n.received_at, n.outcome,
                    n.ledger_seq, n.spent_share_thousandths
                FROM store_notifications n JOIN transactions t
                    ON t.kind = 'purchase' AND t.store = n.store AND t.store_transaction_id = n.store_transaction_id
                WHERE t.player_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR n.received_at < ?2
                    OR (n.received_at = ?2 AND n.notification_uuid < CAST(?3 AS TEXT)))
                ORDER BY n.received_at DESC, n.notification_uuid DESC LIMIT ?4
                """,
                [.text(query.playerID.text), .text(cursor?.receivedAt), .text(cursor?.notificationUUID), .integer(Int64(query.limit) + 1)]
            ) { row in
                let outcomeText = try row.text(6)
                guard let outcome = NotificationOutcome.Result(rawValue: outcomeText) else {
                    throw WalletError.corrupt("notification \(try row.text(0)) has an unknown outcome '\(outcomeText.prefix(40))'")
                }
                return StoreNotificationRecord(
                    notificationUUID: try row.text(0), store: try row.text(1), type: try row.text(2), subtype: try row.textOrNil(3),
                    storeTransactionID: try row.textOrNil(4), receivedAt: try row.text(5), outcome: outcome, ledgerSeq: try row.integerOrNil(7),
                    spentShareMillipercent: try row.integerOrNil(8))
            }
            let page = Array(rows.prefix(query.limit))
            let next = rows.count > query.limit ? page.last.map { $0.receivedAt + $0.notificationUUID } : nil
            return NotificationPage(notifications: page, next: next)
        }
    }
}
