import Foundation
import WalletCore

/// The `consumption_replies` outbox: queued in the write that records a consumption request,
/// claimed and finished by the sender (`wallet serve`), listed by `wallet apple outbox`.
enum ConsumptionReplyStorage {
    static let columns = [
        "notification_uuid", "store", "store_transaction_id", "environment", "delivered", "spent_share_millipercent", "sample_content_provided",
        "refund_preference", "created_at", "deadline", "status", "attempts", "next_attempt_at", "last_error", "finished_at",
    ]
    static let integerColumns: Set<String> = ["delivered", "spent_share_millipercent", "sample_content_provided", "attempts"]
    static let columnList = columns.joined(separator: ", ")

    /// Queues the reply to a consumption request, in the notification's own write. A deadline
    /// already past (a notification caught up late) is queued expired, so it shows.
    static func queue(_ db: any SQLSession, _ reply: ConsumptionReplyRequest, for notification: StoreNotification, outcome: NotificationOutcome, now: Date) throws {
        let delivered = outcome.outcome == .consumptionRecorded
        let expired = reply.deadline <= now
        let values: [SQLValue] = [
            .text(notification.notificationUUID), .text(notification.store), .text(notification.storeTransactionID ?? ""), .text(reply.environment),
            .integer(delivered ? 1 : 0), .integer(delivered ? outcome.spentShareMillipercent : nil), .integer(reply.sampleContentProvided ? 1 : 0),
            .text(reply.refundPreference), .text(Timestamp.format(now)), .text(Timestamp.format(reply.deadline)), .text(expired ? "expired" : "pending"),
            .integer(0), .text(Timestamp.format(now)), .text(expired ? "the store's deadline had passed when the request was recorded" : nil),
            .text(expired ? Timestamp.format(now) : nil),
        ]
        try db.execute("INSERT INTO consumption_replies (\(columnList)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))", values)
    }

    static func reply(from row: any SQLRow) throws -> ConsumptionReply {
        guard let status = ConsumptionReply.Status(rawValue: try row.text(10)) else { throw WalletError.corrupt("a consumption reply has an unknown status") }
        return ConsumptionReply(
            notificationUUID: try row.text(0), store: try row.text(1), storeTransactionID: try row.text(2), environment: try row.text(3),
            delivered: try row.integer(4) == 1, spentShareMillipercent: try row.integerOrNil(5), sampleContentProvided: try row.integer(6) == 1,
            refundPreference: try row.textOrNil(7), createdAt: try row.text(8), deadline: try row.text(9), status: status, attempts: try row.integer(11),
            nextAttemptAt: try row.text(12), lastError: try row.textOrNil(13), finishedAt: try row.textOrNil(14))
    }

    static func find(_ db: any SQLSession, notificationUUID: String) throws -> ConsumptionReply? {
        try db.first("SELECT \(columnList) FROM consumption_replies WHERE notification_uuid = ?", [.text(notificationUUID)], reply(from:))
    }
}

extension SQLLedgerStore {
    /// The most replies one claim takes.
    static let claimLimitMax = 500
    /// The longest error text kept.
    static let replyErrorCharactersMax = 300

    package func claimConsumptionReplies(at now: Date, limit: Int, lease: Duration) async throws(WalletError) -> [ConsumptionReply] {
        guard (1...Self.claimLimitMax).contains(limit) else { throw .invalidRequest("a claim takes 1 to \(Self.claimLimitMax) replies") }
        let leaseEnd = Timestamp.format(now.addingTimeInterval(Double(lease.components.seconds)))
        return try await write { db, _, _ in
            var claimed: [ConsumptionReply] = []
            try db.forEach(
                """
                SELECT \(ConsumptionReplyStorage.columnList) FROM consumption_replies
                WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, notification_uuid LIMIT ?
                """, [.text(Timestamp.format(now)), .integer(Int64(limit))]
            ) { row in claimed.append(try ConsumptionReplyStorage.reply(from: row)) }
            for index in claimed.indices {
                try db.execute(
                    "UPDATE consumption_replies SET next_attempt_at = ?, attempts = attempts + 1 WHERE notification_uuid = ?",
                    [.text(leaseEnd), .text(claimed[index].notificationUUID)])
                claimed[index].attempts += 1
                claimed[index].nextAttemptAt = leaseEnd
            }
            return claimed
        }
    }

    package func finishConsumptionReply(_ claimed: ConsumptionReply, _ attempt: ConsumptionReply.Attempt, at now: Date) async throws(WalletError) -> ConsumptionReply {
        let notificationUUID = claimed.notificationUUID
        try Validate.visibleText(notificationUUID, field: "notification uuid", bytesMax: 64)
        let finished = Timestamp.format(now)
        return try await write { db, _, _ in
            guard let current = try ConsumptionReplyStorage.find(db, notificationUUID: notificationUUID) else {
                throw WalletError.notFound("no consumption reply for notification \(notificationUUID)")
            }
            // Finished, or claimed again, by another sender meanwhile: its outcome stays.
            guard current.status == .pending, current.attempts == claimed.attempts else { return current }
            let (status, next, error): (ConsumptionReply.Status, String, String?) = switch attempt {
            case .sent: (.sent, current.nextAttemptAt, nil)
            case .refused(let error): (.failed, current.nextAttemptAt, error)
            case .failed(let error, let retryAt):
                Timestamp.format(retryAt) >= current.deadline ? (.expired, current.nextAttemptAt, error) : (.pending, Timestamp.format(retryAt), error)
            }
            try db.execute(
                "UPDATE consumption_replies SET status = ?, next_attempt_at = ?, last_error = ?, finished_at = ? WHERE notification_uuid = ?",
                [.text(status.rawValue), .text(next), .text(error.map { String($0.prefix(Self.replyErrorCharactersMax)) }),
                 .text(status == .pending ? nil : finished), .text(notificationUUID)])
            return try ConsumptionReplyStorage.find(db, notificationUUID: notificationUUID) ?? current
        }
    }

    package func consumptionReplies(status: ConsumptionReply.Status?, limit: Int) async throws(WalletError) -> [ConsumptionReply] {
        guard (1...Limits.pageSizeMax).contains(limit) else { throw .invalidRequest("limit must be 1 to \(Limits.pageSizeMax)") }
        return try await read { db in
            var replies: [ConsumptionReply] = []
            let filter = status == nil ? "" : "WHERE status = ?"
            try db.forEach(
                "SELECT \(ConsumptionReplyStorage.columnList) FROM consumption_replies \(filter) ORDER BY created_at DESC, notification_uuid DESC LIMIT ?",
                (status.map { [SQLValue.text($0.rawValue)] } ?? []) + [.integer(Int64(limit))]
            ) { row in replies.append(try ConsumptionReplyStorage.reply(from: row)) }
            return replies
        }
    }
}
