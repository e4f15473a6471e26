import Foundation
import WalletCore

/// Every webhook endpoint with the events waiting for it: what the sender's gauges record and
/// what `GET /v1/outboxes` answers, read one way for both.
enum WebhookBacklogs {
    static func read(_ store: any WebhookStore & EventFeed) async throws(WalletError) -> [(endpoint: WebhookEndpoint, backlog: EventBacklog)] {
        var backlogs: [(endpoint: WebhookEndpoint, backlog: EventBacklog)] = []
        for endpoint in try await store.webhooks() {
            backlogs.append((endpoint, try await store.backlog(after: endpoint.cursorSeq, types: endpoint.types)))
        }
        return backlogs
    }

    /// Each endpoint as a queue: its waiting events, and the failed attempts at the first of them.
    static func queues(_ store: any WebhookStore & EventFeed, at now: Date) async throws(WalletError) -> [OutboxQueue] {
        try await read(store).map { endpoint, backlog in
            OutboxQueue(
                name: .webhook, webhookID: endpoint.id, webhookStatus: endpoint.status, pending: backlog.count, failed: endpoint.attempts,
                oldestPendingAgeSeconds: OutboxQueue.age(of: backlog.oldestCreatedAt, at: now))
        }
    }
}
