import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletSQL
@testable import WalletServer
import WalletTestSupport

/// A clock both the store and the sender read, moved by the test: retries and expiries come
/// due without waiting for them.
final class MovingClock: Sendable {
    private let time = Mutex(Date())
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A ledger, a receiver and a sender on the ledger's clock. The answer timeout is generous (a
/// machine busy with the whole suite answers slowly); a test of hangs passes a shorter one.
struct DeliveryRig {
    let clock = MovingClock()
    let store: SQLLedgerStore
    let receiver: WebhookReceiver
    let sender: WebhookSender

    init(_ backend: TestBackend, allowedHosts: Set<String> = ["127.0.0.1"], timeout: Duration = .seconds(10)) async throws {
        let clock = self.clock
        store = try await TestStores.open(backend, clock: { clock.now }).store
        try await TestStores.addCatalog(store)
        receiver = try await WebhookReceiver()
        sender = WebhookSender(
            store: store, settings: WebhookDeliverySettings(allowedHosts: allowedHosts, timeout: timeout, lease: .seconds(30), random: { 0 }, clock: { clock.now }),
            logger: TestServer.quietLogger)
    }

    /// Passes of the sender, the clock moved past any retry between them, until `done` or 40 passes.
    func deliverUntil(_ done: () -> Bool) async throws {
        for _ in 0..<40 where !done() {
            _ = try await sender.deliverDue()
            clock.advance(3_600)
        }
    }

    /// Every transaction of the ledger, as event ids in seq order.
    func ledgerEventIDs(types: Set<EventType>? = nil) async throws -> [String] {
        var ids: [String] = []
        var after: Int64 = 0
        while true {
            let page = try await store.events(EventQuery(after: after, limit: 500, types: types))
            ids += page.events.map(\.id)
            if page.next == after { return ids }
            after = page.next
        }
    }

    @discardableResult
    func spend(_ player: PlayerID, _ amount: Int64, key: String) async throws -> MutationResult {
        try await store.spend(SpendRequest(playerID: player, amount: amount, idempotencyKey: key, actor: "test"))
    }

    func credit(_ player: PlayerID, _ transactionID: String) async throws {
        _ = try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: transactionID, productID: "com.example.consume5credits", actor: "test"))
    }
}

/// The ledger's store, except that moving a webhook cursor fails, as a database that stopped
/// answering would.
struct CursorFailingStore: EventFeed & WebhookStore & LedgerAuditing {
    let inner: SQLLedgerStore

    func verify(progress: (@Sendable (Int64) -> Void)?) async throws(WalletError) -> VerifyReport { try await inner.verify(progress: progress) }
    func volume(_ query: VolumeQuery) async throws(WalletError) -> [DailyVolume] { try await inner.volume(query) }
    func head() async throws(WalletError) -> LedgerHead { try await inner.head() }
    func export(_ query: ExportQuery, format: ExportFormat) async throws(WalletError) -> ExportStream { try await inner.export(query, format: format) }

    func events(_ query: EventQuery) async throws(WalletError) -> EventPage { try await inner.events(query) }
    func backlog(after: Int64, types: Set<EventType>?) async throws(WalletError) -> EventBacklog { try await inner.backlog(after: after, types: types) }
    func createWebhook(_ request: WebhookEndpointRequest, allowedHosts: Set<String>) async throws(WalletError) -> CreatedWebhook {
        try await inner.createWebhook(request, allowedHosts: allowedHosts)
    }
    func webhooks() async throws(WalletError) -> [WebhookEndpoint] { try await inner.webhooks() }
    func webhook(id: String) async throws(WalletError) -> WebhookEndpoint { try await inner.webhook(id: id) }
    func setWebhook(id: String, enabled: Bool) async throws(WalletError) -> WebhookEndpoint { try await inner.setWebhook(id: id, enabled: enabled) }
    func rotateWebhookSecret(id: String) async throws(WalletError) -> CreatedWebhook { try await inner.rotateWebhookSecret(id: id) }
    func replayWebhook(id: String, fromSeq: Int64) async throws(WalletError) -> WebhookEndpoint { try await inner.replayWebhook(id: id, fromSeq: fromSeq) }
    func deleteWebhook(id: String) async throws(WalletError) -> WebhookEndpoint { try await inner.deleteWebhook(id: id) }
    func claimWebhook(id: String, holder: String, lease: Duration) async throws(WalletError) -> WebhookClaim? {
        try await inner.claimWebhook(id: id, holder: holder, lease: lease)
    }
    func advanceWebhook(id: String, holder: String, from: Int64, to: Int64, delivered: Int64, lease: Duration) async throws(WalletError) -> Bool {
        throw .storage("the database did not answer")
    }
    func failWebhook(id: String, holder: String, cursor: Int64, error: String, random: Double) async throws(WalletError) -> WebhookEndpoint? {
        try await inner.failWebhook(id: id, holder: holder, cursor: cursor, error: error, random: random)
    }
    func releaseWebhook(id: String, holder: String) async throws(WalletError) { try await inner.releaseWebhook(id: id, holder: holder) }
}

@Suite("Webhook delivery", .throttled)
struct WebhookDeliveryTests {
    // SQLite only: the failure is a stand-in store's, the same whatever the database behind it.
    @Test("a database failure after a delivery leaves the endpoint alone for the lease, not re-sent at every pass; another sender takes it up once the claim lapses", arguments: [TestBackend.sqlite])
    func databaseFailureMidDelivery(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        try await rig.credit("p1", "t1")
        let failing = WebhookSender(
            store: CursorFailingStore(inner: rig.store),
            settings: WebhookDeliverySettings(allowedHosts: ["127.0.0.1"], lease: .seconds(30), random: { 0 }, clock: { rig.clock.now }),
            logger: TestServer.quietLogger)
        _ = try await failing.deliverDue()
        _ = try await failing.deliverDue()
        #expect(rig.receiver.deliveries.count == 1, "sent once, then left alone while the database fails")
        #expect(try await rig.store.webhook(id: created.endpoint.id).cursorSeq == 0)
        // Another instance, once the claim lapsed: the event again (the receiver drops it by id), then on.
        rig.clock.advance(31)
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.map(\.seq) == [1, 1])
        #expect(try await rig.store.webhook(id: created.endpoint.id).cursorSeq == 1)
        await rig.receiver.kill()
    }

    @Test("every event arrives at least once, first arrivals in seq order, signed, through 500s, a hang and a receiver killed and back", arguments: TestBackend.all)
    func atLeastOnceInOrder(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend, timeout: .seconds(5))
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        rig.receiver.trust([created.secret])
        for index in 0..<6 { try await rig.credit(try PlayerID("p\(index % 2)"), "t\(index)") }
        rig.receiver.script([.status(500), .status(503), .hang(.seconds(8)), .status(200), .status(404)])
        // The first pass meets a 500 and stops there: nothing after it is sent out of order.
        let first = try await rig.sender.deliverDue()
        #expect(first[created.endpoint.id]?.failure?.contains("500") == true)
        #expect(rig.receiver.deliveries.count == 1)
        let failed = try await rig.store.webhook(id: created.endpoint.id)
        #expect(failed.attempts == 1 && failed.cursorSeq == 0 && failed.lastError?.contains("500") == true)
        try await rig.deliverUntil { rig.receiver.deliveries.count >= 4 }
        // Killed: connections refused; the events wait in the ledger.
        await rig.receiver.kill()
        for index in 6..<12 { try await rig.spend(try PlayerID("p\(index % 2)"), 1, key: "s\(index)") }
        let refused = try await rig.sender.deliverDue()
        #expect(refused[created.endpoint.id]?.failure?.contains("could not be reached") == true, "\(refused)")
        try await rig.receiver.restart()
        try await rig.deliverUntil { Set(rig.receiver.deliveries.map(\.eventID)).count == 12 }

        let ledger = try await rig.ledgerEventIDs()
        #expect(ledger.count == 12)
        #expect(rig.receiver.firstArrivals == ledger)
        #expect(Set(rig.receiver.deliveries.map(\.eventID)) == Set(ledger))
        // Duplicates come only from attempts that failed (the hang arrived, then came again).
        #expect(rig.receiver.deliveries.count > 12)
        for delivery in rig.receiver.deliveries {
            #expect(delivery.verifiedWith == [created.secret], "event \(delivery.eventID) not signed with the endpoint's secret")
            #expect(delivery.path == "/wallet-events")
        }
        let spend = try #require(rig.receiver.deliveries.first { $0.eventType == "spend.created" })
        let body = try #require(try JSONSerialization.jsonObject(with: spend.body) as? [String: Any])
        #expect(body["type"] as? String == "spend.created" && body["amount"] as? Int == -1 && body["id"] as? String == spend.eventID)
        #expect((body["transaction"] as? [String: Any])?["kind"] as? String == "spend")
        let done = try await rig.store.webhook(id: created.endpoint.id)
        #expect(done.cursorSeq == 12 && done.delivered >= 12 && done.attempts == 0 && done.lastError == nil && done.status == .active)
        // What operators watch: deliveries and failures per endpoint, endpoints by status, and the queue.
        let metrics = String(buffer: WalletMetrics.exposition())
        let id = created.endpoint.id
        for line in [
            #"wallet_webhook_events_delivered_total{endpoint="\#(id)"}"#, #"wallet_webhook_attempts_failed_total{endpoint="\#(id)"}"#,
            #"wallet_webhook_events_queued{endpoint="\#(id)"} 0"#, #"wallet_webhook_oldest_undelivered_seconds{endpoint="\#(id)"} 0"#,
            #"wallet_webhook_endpoints{status="active"}"#,
        ] {
            #expect(metrics.contains(line), "\(line)")
        }
        #expect(try await rig.store.verify().ok)
        await rig.receiver.kill()
    }

    @Test("an endpoint gets only its types; the cursor passes the rest; one failing endpoint does not hold another back", arguments: TestBackend.all)
    func typesAndIsolation(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let other = try await WebhookReceiver()
        let refunds = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: [.refundApplied]), allowedHosts: ["127.0.0.1"])
        let everything = try await rig.store.createWebhook(WebhookEndpointRequest(url: other.url, types: nil), allowedHosts: ["127.0.0.1"])
        for index in 0..<4 { try await rig.credit("p1", "t\(index)") }
        _ = try await rig.store.refund(RefundRequest(store: "apple", storeTransactionID: "t2", actor: "test"))
        try await rig.spend("p1", 1, key: "after")
        other.script(Array(repeating: .status(500), count: 100))
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.map(\.eventType) == ["refund.applied"])
        #expect(other.deliveries.count == 1, "the failing endpoint is tried once, and waits for its retry")
        #expect(try await rig.store.webhook(id: refunds.endpoint.id).cursorSeq == 6)
        #expect(try await rig.store.webhook(id: everything.endpoint.id).attempts == 1)
        let refund = try #require(try JSONSerialization.jsonObject(with: rig.receiver.deliveries[0].body) as? [String: Any])
        let outcome = try #require(refund["refund"] as? [String: Any])
        #expect(outcome["taken"] as? Int == 5 && outcome["debt"] as? Int == 0 && outcome["uncollected"] as? Int == 0 && outcome["purchase_seq"] as? Int == 3)
        await other.kill()
        await rig.receiver.kill()
    }

    @Test("three days of failures mark the endpoint failing; it is skipped until enabled, then resumes where it stopped", arguments: TestBackend.all)
    func failingThenEnabled(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        try await rig.credit("p1", "t1")
        rig.receiver.script(Array(repeating: .status(500), count: 200))
        for _ in 0..<100 {
            _ = try await rig.sender.deliverDue()
            if try await rig.store.webhook(id: created.endpoint.id).status == .failing { break }
            rig.clock.advance(3_600)
        }
        let failing = try await rig.store.webhook(id: created.endpoint.id)
        #expect(failing.status == .failing && failing.cursorSeq == 0)
        let attempts = rig.receiver.deliveries.count
        #expect(attempts >= 70)
        rig.clock.advance(86_400)
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.count == attempts)
        rig.receiver.answerNormally()
        let enabled = try await rig.store.setWebhook(id: created.endpoint.id, enabled: true)
        #expect(enabled.status == .active && enabled.attempts == 0)
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.count == attempts + 1 && rig.receiver.deliveries.last?.seq == 1)
        #expect(try await rig.store.webhook(id: created.endpoint.id).cursorSeq == 1)
        await rig.receiver.kill()
    }

    @Test("a receiver that sends a head and then stalls is an attempt that failed within the timeout, not an endpoint held", arguments: TestBackend.all)
    func stalledAnswer(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend, timeout: .seconds(5))
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        try await rig.credit("p1", "t1")
        rig.receiver.script([.stallAfterHead(.seconds(120))])
        let outcome = try await rig.sender.deliverDue()
        #expect(outcome[created.endpoint.id]?.failure?.contains("no answer within") == true, "\(outcome)")
        let endpoint = try await rig.store.webhook(id: created.endpoint.id)
        #expect(endpoint.attempts == 1 && endpoint.cursorSeq == 0)
        rig.clock.advance(3_600)
        // Tried again later and accepted (a machine busy with the whole suite may need more than one try).
        for _ in 0..<10 where try await rig.store.webhook(id: created.endpoint.id).cursorSeq == 0 {
            _ = try await rig.sender.deliverDue()
            rig.clock.advance(3_600)
        }
        #expect(try await rig.store.webhook(id: created.endpoint.id).cursorSeq == 1)
        await rig.receiver.kill()
    }

    @Test("a rotation: each delivery verifies with the old secret and with the new one for a day, then with the new one only", arguments: TestBackend.all)
    func rotation(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        let rotated = try await rig.store.rotateWebhookSecret(id: created.endpoint.id)
        rig.receiver.trust([created.secret, rotated.secret])
        try await rig.credit("p1", "t1")
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.last?.verifiedWith == [created.secret, rotated.secret])
        rig.clock.advance(86_401)
        try await rig.credit("p1", "t2")
        _ = try await rig.sender.deliverDue()
        #expect(rig.receiver.deliveries.count == 2 && rig.receiver.deliveries.last?.verifiedWith == [rotated.secret])
        await rig.receiver.kill()
    }

    @Test("SSRF: a redirect is not followed, a name resolving to loopback is refused after DNS, file:// never registers", arguments: TestBackend.all)
    func ssrf(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let inside = try await WebhookReceiver()
        let redirecting = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        rig.receiver.script([.redirect(inside.url)])
        try await rig.credit("p1", "t1")
        let outcomes = try await rig.sender.deliverDue()
        #expect(outcomes[redirecting.endpoint.id]?.failure?.contains("redirects are not followed") == true)
        #expect(inside.deliveries.isEmpty)
        _ = try await rig.store.setWebhook(id: redirecting.endpoint.id, enabled: false)

        // A name that resolved to a public address when it was registered may resolve to a
        // private one by the time of delivery (DNS rebinding): checked after DNS, at each claim.
        let named = try await rig.store.createWebhook(WebhookEndpointRequest(url: "https://hooks.example.com:\(inside.port)/x", types: nil), allowedHosts: [])
        try await rig.credit("p1", "t2")
        let rebinding = WebhookSender(
            store: rig.store,
            settings: WebhookDeliverySettings(
                allowedHosts: [], random: { 0 }, clock: { rig.clock.now },
                resolve: { _ in [NetworkAddress(literal: "93.184.216.34")!, NetworkAddress(literal: "127.0.0.1")!] }),
            logger: TestServer.quietLogger)
        let refused = try await rebinding.deliverDue()
        let failure = try #require(refused[named.endpoint.id]?.failure)
        #expect(failure.contains("resolves to 127.0.0.1") && failure.contains("loopback"), "\(failure)")
        #expect(try await rig.store.webhook(id: named.endpoint.id).attempts == 1)
        #expect(inside.deliveries.isEmpty)
        #expect(try await WebhookTarget.resolve("localhost").contains { !$0.isPublic })
        // A name that does not resolve (`.invalid` never does) is a failed attempt, not a crash.
        await #expect(throws: WalletError.self) { _ = try await WebhookTarget.resolve("no-such-host.invalid") }
        _ = try await rig.store.setWebhook(id: named.endpoint.id, enabled: true)
        rig.clock.advance(3_600)
        let unresolvable = WebhookSender(
            store: rig.store,
            settings: WebhookDeliverySettings(
                allowedHosts: [], random: { 0 }, clock: { rig.clock.now }, resolve: { host throws(WalletError) in throw .invalidRequest("\(host) does not resolve") }),
            logger: TestServer.quietLogger)
        #expect(try await unresolvable.deliverDue()[named.endpoint.id]?.failure == "hooks.example.com does not resolve")
        #expect(try await rig.store.webhook(id: named.endpoint.id).attempts == 2)
        for url in ["file:///etc/passwd", "http://127.0.0.1:\(inside.port)/", "https://127.0.0.1:\(inside.port)/", "gopher://127.0.0.1/"] {
            await #expect(throws: WalletError.self, "\(url)") {
                _ = try await rig.store.createWebhook(WebhookEndpointRequest(url: url, types: nil), allowedHosts: [])
            }
        }
        await inside.kill()
        await rig.receiver.kill()
    }

    @Test("two senders on one database: one claim at a time, every event once in order", arguments: TestBackend.all)
    func twoSenders(_ backend: TestBackend) async throws {
        let rig = try await DeliveryRig(backend)
        let created = try await rig.store.createWebhook(WebhookEndpointRequest(url: rig.receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        for index in 0..<20 { try await rig.credit("p1", "t\(index)") }
        let second = WebhookSender(
            store: rig.store, settings: WebhookDeliverySettings(allowedHosts: ["127.0.0.1"], timeout: .seconds(5), random: { 0 }, clock: { rig.clock.now }),
            logger: TestServer.quietLogger)
        async let one = rig.sender.deliverDue()
        async let two = second.deliverDue()
        let outcomes = try await [one, two]
        #expect(outcomes.compactMap { $0[created.endpoint.id] }.allSatisfy { $0.failure == nil })
        // Whichever claimed it sent all twenty; the other found it held.
        #expect(rig.receiver.deliveries.map(\.eventID) == (try await rig.ledgerEventIDs()))
        await rig.receiver.kill()
    }
}
