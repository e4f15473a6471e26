import Foundation
import Logging
import Testing
@testable import WalletApple
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Consumption answers: queued in the write that records Apple's CONSUMPTION_REQUEST (only
/// when the operator answers), sent from the outbox until Apple accepts, refuses, or the
/// deadline passes, and picked up again after a restart.
@Suite("Consumption answers (outbox)", .throttled)
struct ConsumptionReplyTests {
    static let authority = AppleTests.authority
    static let policy = try! ConsumptionReplyPolicy(sampleContentProvided: true, refundPreference: "DECLINE")

    static func purchases(_ store: SQLLedgerStore, apple: AppStoreStandIn, policy: ConsumptionReplyPolicy? = Self.policy) throws -> ApplePurchases {
        var configuration = try authority.configuration()
        configuration.consumptionReplies = policy
        return ApplePurchases(configuration: configuration, ledger: store, api: AppStoreServerAPI(configuration: try apple.apiConfiguration()))
    }

    static func sender(_ store: SQLLedgerStore, apple: AppStoreStandIn, clock: TestClock) throws -> ConsumptionReplySender {
        ConsumptionReplySender(
            outbox: store, api: AppStoreServerAPI(configuration: try apple.apiConfiguration()), clock: { clock.now }, logger: TestLogs.quiet("test"))
    }

    @Test("the answer is queued with the notification, from the ledger: delivered and the share spent, or not delivered; once; only when the operator answers", arguments: TestBackend.all)
    func queued(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let ledger = try await TestLedger.withCatalog(backend)
        let purchases = try Self.purchases(ledger.store, apple: apple)
        let bought = try Self.authority.transaction("5101")
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: bought, actor: "t")
        try await ledger.spend("p1", 2, key: "k1")
        let signedAt = Date()
        let request = try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought, signedDate: AppleTestAuthority.milliseconds(signedAt))
        _ = try await purchases.handleNotification(signedPayload: request)
        _ = try await purchases.handleNotification(signedPayload: request)
        let neverCredited = try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: try Self.authority.transaction("5102"))
        _ = try await purchases.handleNotification(signedPayload: neverCredited)

        let replies = try await ledger.store.consumptionReplies(status: nil, limit: 10)
        #expect(replies.count == 2, "a replayed notification queues nothing more")
        let delivered = try #require(replies.first { $0.storeTransactionID == "5101" })
        #expect(delivered.status == .pending && delivered.delivered && delivered.spentShareMillipercent == 40_000 && delivered.attempts == 0)
        #expect(delivered.sampleContentProvided && delivered.refundPreference == "DECLINE" && delivered.environment == "Production")
        #expect(delivered.deadline == Timestamp.format(Date(timeIntervalSince1970: Double(AppleTestAuthority.milliseconds(signedAt)) / 1_000 + 12 * 3_600)))
        let undelivered = try #require(replies.first { $0.storeTransactionID == "5102" })
        #expect(!undelivered.delivered && undelivered.spentShareMillipercent == nil)

        // Without the operator's consent nothing is queued; a request caught up past its deadline is queued expired.
        let silent = try Self.purchases(ledger.store, apple: apple, policy: nil)
        _ = try await silent.handleNotification(signedPayload: try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought))
        let late = try Self.authority.notification(
            "CONSUMPTION_REQUEST", signedTransaction: bought, signedDate: AppleTestAuthority.milliseconds(Date().addingTimeInterval(-13 * 3_600)))
        _ = try await purchases.handleNotification(signedPayload: late)
        #expect(try await ledger.store.consumptionReplies(status: nil, limit: 10).count == 3)
        #expect(try await ledger.store.consumptionReplies(status: .expired, limit: 10).count == 1)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("sent as Apple's V2 body; a failure is retried later, after a restart too; a 400 fails it; the deadline expires it unsent", arguments: TestBackend.all)
    func sent(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        // The stores and the senders keep one clock, so a slow run cannot leave an answer queued
        // after the time its sender thinks it is.
        let clock = TestClock(Date())
        let opened = try await TestStores.open(backend, clock: { clock.now })
        try await TestStores.addCatalog(opened.store)
        let purchases = try Self.purchases(opened.store, apple: apple)
        let bought = try Self.authority.transaction("5201")
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: bought, actor: "t")
        _ = try await purchases.handleNotification(signedPayload: try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought))

        // Apple fails every attempt of this pass: the answer waits 30 seconds.
        apple.script(.failure(status: 500), .failure(status: 500), .failure(status: 500), .failure(status: 500))
        var pass = try await Self.sender(opened.store, apple: apple, clock: clock).sendDue()
        #expect(pass == ConsumptionReplySender.Pass(sent: 0, retrying: 1, expired: 0, failed: 0))
        var reply = try #require(try await opened.store.consumptionReplies(status: nil, limit: 1).first)
        #expect(reply.status == .pending && reply.attempts == 1 && reply.lastError?.contains("500") == true)
        #expect(try await Self.sender(opened.store, apple: apple, clock: clock).sendDue() == ConsumptionReplySender.Pass(), "not due yet")

        // A restart: another store on the same database, another sender, 31 seconds on.
        let reopened = try await SQLLedgerStore.open(database: opened.location, durability: .full, writeMode: .default, poolSize: 2, clock: { clock.now })
        clock.advance(31)
        pass = try await Self.sender(reopened, apple: apple, clock: clock).sendDue()
        #expect(pass.sent == 1)
        reply = try #require(try await reopened.consumptionReplies(status: nil, limit: 1).first)
        #expect(reply.status == .sent && reply.attempts == 2 && reply.finishedAt != nil)
        let put = try #require(apple.seen.last)
        #expect(put.method == "PUT" && put.path == "/inApps/v2/transactions/consumption/5201" && put.tokenProblem == nil)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(put.body.utf8)) as? [String: Any])
        #expect(body["customerConsented"] as? Bool == true && body["deliveryStatus"] as? String == "DELIVERED")
        #expect(body["consumptionPercentage"] as? Int == 0 && body["sampleContentProvided"] as? Bool == true && body["refundPreference"] as? String == "DECLINE")
        #expect(try await Self.sender(reopened, apple: apple, clock: clock).sendDue() == ConsumptionReplySender.Pass(), "sent once")

        // A malformed answer is never accepted: failed at once.
        _ = try await purchases.handleNotification(signedPayload: try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought))
        apple.script(.failure(status: 400, errorCode: 4_000_036))
        pass = try await Self.sender(reopened, apple: apple, clock: clock).sendDue()
        #expect(pass.failed == 1)

        // Apple down until the deadline: expired, and not sent once the deadline passed.
        _ = try await purchases.handleNotification(signedPayload: try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought))
        let asked = apple.seen.count
        // The deadline is 12 hours after Apple signed the request, by the real clock: the test's
        // clock moves an hour past that, since a machine busy with the whole suite may take
        // minutes to get here.
        clock.advance(13 * 3_600)
        pass = try await Self.sender(reopened, apple: apple, clock: clock).sendDue()
        #expect(pass.expired == 1 && apple.seen.count == asked)
        #expect(try await reopened.consumptionReplies(status: .expired, limit: 5).first?.lastError?.contains("deadline") == true)
    }

    @Test("a claim holds its answers: a second claim at the same time takes none of them", arguments: TestBackend.all)
    func claims(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let ledger = try await TestLedger.withCatalog(backend)
        let purchases = try Self.purchases(ledger.store, apple: apple)
        for index in 1...3 {
            let bought = try Self.authority.transaction("53\(index)")
            _ = try await purchases.redeem(playerID: "p1", signedTransaction: bought, actor: "t")
            _ = try await purchases.handleNotification(signedPayload: try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought))
        }
        let now = Date().addingTimeInterval(1)
        async let first = ledger.store.claimConsumptionReplies(at: now, limit: 2, lease: .seconds(60))
        async let second = ledger.store.claimConsumptionReplies(at: now, limit: 2, lease: .seconds(60))
        let firstClaims = try await first + second
        let claimed = firstClaims.map(\.notificationUUID)
        #expect(claimed.count == 3 && Set(claimed).count == 3)
        #expect(try await ledger.store.claimConsumptionReplies(at: now, limit: 5, lease: .seconds(60)).isEmpty)
        let reclaimed = try await ledger.store.claimConsumptionReplies(at: now.addingTimeInterval(61), limit: 5, lease: .seconds(60))
        #expect(reclaimed.count == 3, "a lapsed lease frees them")

        // The first sender, its lease lapsed, finishes late: the second sender's claim stands.
        let stale = try #require(firstClaims.first { $0.notificationUUID == reclaimed[0].notificationUUID })
        let ignored = try await ledger.store.finishConsumptionReply(stale, .refused(error: "late"), at: now.addingTimeInterval(62))
        #expect(ignored.status == .pending && ignored.attempts == 2 && ignored.lastError == nil)
        let finished = try await ledger.store.finishConsumptionReply(reclaimed[0], .sent, at: now.addingTimeInterval(62))
        #expect(finished.status == .sent)
    }
}
