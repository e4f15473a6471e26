import Foundation
import WalletCore

/// The `webhook_endpoints` table, and the feed of events read from `transactions`.
enum WebhookStorage {
    static let columns = [
        "id", "url", "types", "description", "status", "cursor_seq", "created_at", "updated_at", "delivered", "attempts", "failing_since",
        "next_attempt_at", "last_error", "last_delivered_at", "secret_rotated_at", "previous_secret_expires_at", "secret", "previous_secret",
        "claim_holder", "claim_until",
    ]
    static let columnList = columns.joined(separator: ", ")
    static let integerColumns: Set<String> = ["cursor_seq", "delivered", "attempts"]

    /// An endpoint, its secrets (current, previous or nil) and its claim.
    struct Row {
        var endpoint: WebhookEndpoint
        var secret: String
        var previousSecret: String?
        var claimHolder: String?
        var claimUntil: String?
    }

    static func row(from row: any SQLRow) throws -> Row {
        let id = try row.text(0)
        let statusText = try row.text(4)
        guard let status = WebhookEndpoint.Status(rawValue: statusText) else { throw WalletError.corrupt("webhook endpoint \(id) has an unknown status") }
        let types: Set<EventType>?
        do {
            types = try EventType.parseList(try row.text(2))
        } catch {
            throw WalletError.corrupt("webhook endpoint \(id) names an event type this build does not know")
        }
        let endpoint = WebhookEndpoint(
            id: id, url: try row.text(1), types: types, description: try row.textOrNil(3), status: status, cursorSeq: try row.integer(5),
            createdAt: try row.text(6), updatedAt: try row.text(7), delivered: try row.integer(8), attempts: try row.integer(9),
            failingSince: try row.textOrNil(10), nextAttemptAt: try row.text(11), lastError: try row.textOrNil(12), lastDeliveredAt: try row.textOrNil(13),
            secretRotatedAt: try row.textOrNil(14), previousSecretExpiresAt: try row.textOrNil(15))
        return Row(endpoint: endpoint, secret: try row.text(16), previousSecret: try row.textOrNil(17), claimHolder: try row.textOrNil(18), claimUntil: try row.textOrNil(19))
    }

    static func find(_ db: any SQLSession, id: String) throws -> Row {
        guard let found = try db.first("SELECT \(columnList) FROM webhook_endpoints WHERE id = ?", [.text(id)], row(from:)) else {
            throw WalletError.notFound("no webhook endpoint \(id)")
        }
        return found
    }

    /// `AND kind IN (...)` and its values for `kinds` (nothing for nil: every kind).
    static func kindFilter(_ kinds: Set<TransactionKind>?) -> (sql: String, values: [SQLValue]) {
        guard let kinds else { return ("", []) }
        return ("AND kind IN (\(kinds.map { _ in "?" }.joined(separator: ", ")))", kinds.sorted { $0.rawValue < $1.rawValue }.map { SQLValue.text($0.rawValue) })
    }

    /// The seqs of the transactions that may be events of `kinds` (nil: all) in `after+1...through`,
    /// at most `limit` of them.
    static func seqs(_ db: any SQLSession, after: Int64, through: Int64, kinds: Set<TransactionKind>?, limit: Int) throws -> [Int64] {
        let (kindFilter, kindValues) = self.kindFilter(kinds)
        return try db.all(
            "SELECT seq FROM transactions WHERE seq > ? AND seq <= ? \(kindFilter) ORDER BY seq LIMIT ?",
            [.integer(after), .integer(through)] + kindValues + [.integer(Int64(limit))]
        ) { row in try row.integer(0) }
    }

    /// A page of the feed on one snapshot (`EventPage`).
    static func events(_ db: any SQLSession, _ query: EventQuery) throws -> EventPage {
        let head = try LedgerReads.head(db).seq
        guard query.after < head else { return EventPage(events: [], next: query.after) }
        // Without a type filter, every transaction is an event: the page is the next `limit` seqs.
        // With one, at most `scanMax` transactions are looked through for the kinds asked.
        let window = query.kinds == nil ? Int64(query.limit) : EventQuery.scanMax
        let through = query.after + min(window, head - query.after)
        // A release is two types (released or expired): kinds may match more than the types do,
        // so candidates are read until the page is full or the window ends.
        var events: [LedgerEvent] = []
        var after = query.after
        while events.count < query.limit {
            let candidates = try seqs(db, after: after, through: through, kinds: query.kinds, limit: query.limit - events.count)
            guard let first = candidates.first, let last = candidates.last else { break }
            // Dense candidates are read as one range; sparse ones (a rare type) one by one, so a
            // page never reads thousands of transactions it does not answer.
            var transactions: [LedgerTransaction] = []
            if last - first < Int64(candidates.count) * 4 {
                let wanted = Set(candidates)
                try TransactionStream.forEach(db, seqs: first...last) { transaction in
                    if wanted.contains(transaction.seq) { transactions.append(transaction) }
                }
            } else {
                for seq in candidates { transactions.append(try LedgerReads.transaction(db, seq: seq)) }
            }
            for transaction in transactions {
                let event = LedgerEvent(transaction)
                if query.includes(event) { events.append(event) }
            }
            after = last
        }
        // A full page continues after its last event; otherwise the window was looked through.
        let next = events.count == query.limit ? events[events.count - 1].seq : through
        return EventPage(events: events, next: next)
    }
}

extension SQLLedgerStore {
    package func events(_ query: EventQuery) async throws(WalletError) -> EventPage {
        try query.validate()
        return try await read { db in try WebhookStorage.events(db, query) }
    }

    package func backlog(after: Int64, types: Set<EventType>?) async throws(WalletError) -> EventBacklog {
        guard after >= 0 else { throw .invalidRequest("after must be a seq, 0 or more") }
        let kinds = EventQuery(after: after, types: types).kinds
        return try await read { db in
            let (kindFilter, kindValues) = WebhookStorage.kindFilter(kinds)
            let count = try db.integer(
                "SELECT count(*) FROM (SELECT seq FROM transactions WHERE seq > ? \(kindFilter) ORDER BY seq LIMIT ?) waiting",
                [.integer(after)] + kindValues + [.integer(EventBacklog.countMax)]) ?? 0
            let oldest = try db.first(
                "SELECT created_at FROM transactions WHERE seq > ? \(kindFilter) ORDER BY seq LIMIT 1", [.integer(after)] + kindValues
            ) { row in try row.text(0) }
            return EventBacklog(count: count, oldestCreatedAt: oldest)
        }
    }

    package func createWebhook(_ request: WebhookEndpointRequest, allowedHosts: Set<String>) async throws(WalletError) -> CreatedWebhook {
        try request.validate(allowedHosts: allowedHosts)
        let secret = WebhookSignature.makeSecret()
        let id = WebhookEndpoint.makeID()
        return try await write { db, now, _ in
            let count = try db.integer("SELECT count(*) FROM webhook_endpoints") ?? 0
            guard count < WebhookEndpoint.countMax else {
                throw WalletError.invalidRequest("a ledger keeps at most \(WebhookEndpoint.countMax) webhook endpoints (disabled ones count: remove one first)")
            }
            let at = Timestamp.format(now)
            // From now on: the events committed before the endpoint existed are the feed's, or a replay's.
            let head = try LedgerReads.head(db).seq
            try db.execute(
                """
                INSERT INTO webhook_endpoints (id, url, types, description, status, cursor_seq, created_at, updated_at, delivered, attempts,
                    next_attempt_at, secret) VALUES (?, ?, ?, ?, 'active', ?, ?, ?, 0, 0, ?, ?)
                """,
                [.text(id), .text(request.url), .text(WebhookEndpoint.typeNames(request.types).joined(separator: ",")), .text(request.description), .integer(head), .text(at),
                 .text(at), .text(at), .text(secret)])
            return CreatedWebhook(endpoint: try WebhookStorage.find(db, id: id).endpoint, secret: secret)
        }
    }

    package func webhooks() async throws(WalletError) -> [WebhookEndpoint] {
        try await read { db in
            try db.all("SELECT \(WebhookStorage.columnList) FROM webhook_endpoints ORDER BY created_at, id", [], WebhookStorage.row(from:)).map(\.endpoint)
        }
    }

    package func webhook(id: String) async throws(WalletError) -> WebhookEndpoint {
        try WebhookEndpoint.validate(id: id)
        return try await read { db in try WebhookStorage.find(db, id: id).endpoint }
    }

    package func setWebhook(id: String, enabled: Bool) async throws(WalletError) -> WebhookEndpoint {
        try WebhookEndpoint.validate(id: id)
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id).endpoint
            let at = Timestamp.format(now)
            if enabled {
                // Enabled again (or already): resumes at its cursor with a fresh count of attempts.
                // Its claim is dropped, so a sender still busy with it stops at its next step.
                guard current.status != .active else { return current }
                try db.execute(
                    """
                    UPDATE webhook_endpoints SET status = 'active', attempts = 0, failing_since = NULL, next_attempt_at = ?, updated_at = ?,
                        claim_holder = NULL, claim_until = NULL WHERE id = ?
                    """, [.text(at), .text(at), .text(id)])
            } else {
                guard current.status != .disabled else { return current }
                try db.execute(
                    "UPDATE webhook_endpoints SET status = 'disabled', updated_at = ?, claim_holder = NULL, claim_until = NULL WHERE id = ?",
                    [.text(at), .text(id)])
            }
            return try WebhookStorage.find(db, id: id).endpoint
        }
    }

    package func rotateWebhookSecret(id: String) async throws(WalletError) -> CreatedWebhook {
        try WebhookEndpoint.validate(id: id)
        let secret = WebhookSignature.makeSecret()
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id)
            let at = Timestamp.format(now)
            try db.execute(
                """
                UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_secret_expires_at = ?, secret_rotated_at = ?, updated_at = ?
                WHERE id = ?
                """,
                [.text(secret), .text(current.secret), .text(Timestamp.format(now.addingTimeInterval(WebhookSignature.previousSecretLifetime))),
                 .text(at), .text(at), .text(id)])
            return CreatedWebhook(endpoint: try WebhookStorage.find(db, id: id).endpoint, secret: secret)
        }
    }

    package func replayWebhook(id: String, fromSeq: Int64) async throws(WalletError) -> WebhookEndpoint {
        try WebhookEndpoint.validate(id: id)
        guard fromSeq >= 1 else { throw .invalidRequest("from_seq is a seq, 1 or more") }
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id).endpoint
            let cursor = try current.replayCursor(fromSeq: fromSeq)
            let at = Timestamp.format(now)
            try db.execute(
                """
                UPDATE webhook_endpoints SET cursor_seq = ?, status = ?, attempts = 0, failing_since = NULL, next_attempt_at = ?, updated_at = ?,
                    claim_holder = NULL, claim_until = NULL WHERE id = ?
                """, [.integer(cursor), .text(current.statusAfterReplay.rawValue), .text(at), .text(at), .text(id)])
            return try WebhookStorage.find(db, id: id).endpoint
        }
    }

    package func deleteWebhook(id: String) async throws(WalletError) -> WebhookEndpoint {
        try WebhookEndpoint.validate(id: id)
        return try await write { db, _, _ in
            let current = try WebhookStorage.find(db, id: id).endpoint
            try current.requireRemovable()
            try db.execute("DELETE FROM webhook_endpoints WHERE id = ?", [.text(id)])
            return current
        }
    }

    package func claimWebhook(id: String, holder: String, lease: Duration) async throws(WalletError) -> WebhookClaim? {
        try WebhookEndpoint.validate(id: id)
        try WorkLease.validate(name: "webhook", holder: holder)
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id)
            let at = Timestamp.format(now)
            guard current.endpoint.mayBeClaimed(by: holder, claimedBy: current.claimHolder, until: current.claimUntil, at: at) else { return nil }
            try db.execute(
                "UPDATE webhook_endpoints SET claim_holder = ?, claim_until = ? WHERE id = ?",
                [.text(holder), .text(Timestamp.format(now.addingTimeInterval(Double(lease.components.seconds)))), .text(id)])
            var secrets = [current.secret]
            if let previous = current.previousSecret, let until = current.endpoint.previousSecretExpiresAt, until > at { secrets.append(previous) }
            return WebhookClaim(endpoint: current.endpoint, secrets: secrets, holder: holder)
        }
    }

    package func advanceWebhook(id: String, holder: String, from: Int64, to: Int64, delivered: Int64, lease: Duration) async throws(WalletError) -> Bool {
        try WebhookEndpoint.validate(id: id)
        guard from >= 0, to >= from, delivered >= 0 else { throw .invalidRequest("a cursor only moves forward") }
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id)
            guard current.claimHolder == holder, current.endpoint.cursorSeq == from else { return false }
            let at = Timestamp.format(now)
            // The time is chosen here, not by a comparison in SQL: PostgreSQL types a parameter
            // compared with a literal 0 as a 4-byte integer and refuses the 8 bytes bound to it.
            let deliveredAt: String? = delivered > 0 ? at : nil
            try db.execute(
                """
                UPDATE webhook_endpoints SET cursor_seq = ?, delivered = delivered + ?, attempts = 0, failing_since = NULL, last_error = NULL,
                    last_delivered_at = COALESCE(?, last_delivered_at), claim_until = ? WHERE id = ?
                """,
                [.integer(to), .integer(delivered), .text(deliveredAt), .text(Timestamp.format(now.addingTimeInterval(Double(lease.components.seconds)))),
                 .text(id)])
            return true
        }
    }

    package func failWebhook(id: String, holder: String, cursor: Int64, error: String, random: Double) async throws(WalletError) -> WebhookEndpoint? {
        try WebhookEndpoint.validate(id: id)
        return try await write { db, now, _ in
            let current = try WebhookStorage.find(db, id: id)
            guard current.claimHolder == holder, current.endpoint.cursorSeq == cursor else { return nil }
            let attempts = current.endpoint.attempts + 1
            let since = current.endpoint.failingSince.flatMap { try? Timestamp.date($0, field: "failing_since") } ?? now
            let (status, next) = WebhookRetry.afterFailure(attempts: attempts, failingSince: since, now: now, random: random)
            try db.execute(
                """
                UPDATE webhook_endpoints SET status = ?, attempts = ?, failing_since = ?, next_attempt_at = ?, last_error = ?, updated_at = ?,
                    claim_holder = NULL, claim_until = NULL WHERE id = ?
                """,
                [.text(status.rawValue), .integer(attempts), .text(Timestamp.format(since)), .text(Timestamp.format(next)),
                 .text(String(error.prefix(WebhookEndpoint.errorCharactersMax))), .text(Timestamp.format(now)), .text(id)])
            return try WebhookStorage.find(db, id: id).endpoint
        }
    }

    package func releaseWebhook(id: String, holder: String) async throws(WalletError) {
        try WebhookEndpoint.validate(id: id)
        try await write { db, _, _ in
            try db.execute("UPDATE webhook_endpoints SET claim_holder = NULL, claim_until = NULL WHERE id = ? AND claim_holder = ?", [.text(id), .text(holder)])
        }
    }
}
