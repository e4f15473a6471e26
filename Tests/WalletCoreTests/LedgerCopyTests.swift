import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

@Suite("Ledger copy", .throttled)
struct LedgerCopyTests {
    @Test("a ledger longer than a copy page is copied whole, page by page, to either store and ends at the same head", arguments: TestBackend.all, TestBackend.all)
    func pages(source sourceBackend: TestBackend, target backend: TestBackend) async throws {
        let source = try await TestLedger.withCatalog(sourceBackend)
        let count = Int(SQLLedgerStore.copyPageSize) + 150
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { try await source.grant(PlayerID("p\(index % 40)"), "T\(index)") }
            }
            try await group.waitForAll()
        }
        _ = try await source.spend("p1", 3, key: "after")
        let target = try await TestStores.open(backend).store
        let report = try await source.store.copy(to: target, progress: nil)
        let head = try await source.store.head()
        #expect(report.transactions == Int64(count + 1) && report.headHash == head.hash)
        #expect(report.rows["postings"] == Int64(2 * (count + 1)) && report.rows["idempotency_keys"] == Int64(count + 1))
        #expect(try await target.head() == head)
        #expect(try await target.verify().ok)
        #expect(try await target.balances(playerID: "p1") == source.store.balances(playerID: "p1"))
        // The same purchase again is a replay on the copy: its keys came along.
        #expect(try await target.grant(GrantRequest(playerID: "p0", store: "apple", storeTransactionID: "T0", productID: "com.example.consume5credits", quantity: 1, actor: "t")).replayed)
    }

    @Test("a ledger with every kind of transaction, entitlements among them, is copied to either store: the copy verifies (entitlements refolded), ends at the same head and answers the same entitlements", arguments: TestBackend.all, TestBackend.all)
    func everyKind(source sourceBackend: TestBackend, target backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let source = try await TestLedger.withCatalog(sourceBackend, clock: clock)
        try await SchemaTests.bookEveryKind(source, clock: clock)
        let target = try await TestStores.open(backend).store
        let report = try await source.store.copy(to: target, progress: nil)
        #expect(report.rows["entitlements"] == 1 && report.rows["entitlement_items"] == 1)
        #expect(try await target.head() == source.store.head())
        let verified = try await target.verify()
        #expect(verified.ok, "\(verified)")
        #expect(try await target.entitlements(playerID: "p2") == source.store.entitlements(playerID: "p2"))
        #expect(try await target.products() == source.store.products())
    }

    @Test("a purchase's recorded voids and a held lease come along: on the copy, a void seen before moves nothing and a new one adds up", arguments: TestBackend.all, TestBackend.all)
    func voidsAndLeases(source sourceBackend: TestBackend, target backend: TestBackend) async throws {
        let source = try await TestLedger.withCatalog(sourceBackend)
        try await source.grant("p1", "tok", quantity: 3, store: "google")
        func void(_ id: String, _ voidID: String) -> StoreNotification {
            StoreNotification(
                notificationUUID: id, store: "google", type: "VOIDED_PURCHASE", subtype: "PARTIAL", storeTransactionID: "tok",
                effect: .voids([StoreVoid(voidID: voidID, units: 1)], policy: .debt), reportedAt: 1, actor: "t")
        }
        _ = try await source.store.recordNotification(void("n1", "1:GPA.1"))
        _ = try await source.store.takeLease("google.catch-up", holder: "run-1", for: .seconds(600))
        let target = try await TestStores.open(backend).store
        let report = try await source.store.copy(to: target, progress: nil)
        #expect(report.rows["store_voids"] == 1 && report.rows["work_leases"] == 1)
        #expect(try await target.recordNotification(void("n2", "1:GPA.1")).outcome == .alreadyApplied)
        #expect(try await target.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await target.recordNotification(void("n3", "2:GPA.1")).outcome == .refunded)
        #expect(try await target.balances(playerID: "p1").balances["credits"] == 5)
        #expect(try await target.takeLease("google.catch-up", holder: "run-2", for: .seconds(60)).holder == "run-1")
        #expect(try await target.verify().ok)
    }

    @Test("webhook endpoints come along with their secrets and cursors: delivery on the copy resumes where it stopped", arguments: TestBackend.all, TestBackend.all)
    func webhookEndpoints(source sourceBackend: TestBackend, target backend: TestBackend) async throws {
        let source = try await TestLedger.withCatalog(sourceBackend)
        try await source.grant("p1", "t1")
        let created = try await source.store.createWebhook(WebhookEndpointRequest(url: "https://game.example.com/e", types: [.spendCreated]), allowedHosts: [])
        try await source.grant("p1", "t2")
        let target = try await TestStores.open(backend).store
        let report = try await source.store.copy(to: target, progress: nil)
        #expect(report.rows["webhook_endpoints"] == 1)
        #expect(try await target.webhooks() == source.store.webhooks())
        let claim = try #require(try await target.claimWebhook(id: created.endpoint.id, holder: "sender", lease: .seconds(30)))
        #expect(claim.secrets == [created.secret] && claim.endpoint.cursorSeq == 1 && claim.endpoint.types == [.spendCreated])
        #expect(try await target.verify().ok)
    }
}
