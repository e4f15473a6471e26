import Foundation
import Logging
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletGoogle
@testable import WalletSQL
import WalletTestSupport

@Suite("Google Play purchases", .throttled)
struct GooglePlayTests {
    static let package = "com.example.game"

    static func purchases(_ ledger: TestLedger, _ google: InMemoryGooglePlay, allowTests: Bool = false) throws -> GooglePurchases {
        var configuration = try GoogleConfiguration(packageName: package)
        configuration.allowTestPurchases = allowTests
        return GooglePurchases(configuration: configuration, api: google, ledger: ledger.store)
    }

    static func push(_ id: String, _ notification: String, package: String = Self.package, eventTime: Int64 = 1) throws -> GooglePushMessage {
        let data = Data((#"{"version":"1.0","packageName":"\#(package)","eventTimeMillis":"\#(eventTime)","# + notification + "}").utf8).base64EncodedString()
        return try GooglePushMessage(envelope: Array(#"{"message":{"data":"\#(data)","messageId":"\#(id)"},"subscription":"projects/p/subscriptions/s"}"#.utf8))
    }

    static func voided(_ token: String) -> String {
        #""voidedPurchaseNotification":{"purchaseToken":"\#(token)","orderId":"GPA.\#(token)","productType":2,"refundType":1}"#
    }

    static var nowMillis: Int64 { Int64(Date().timeIntervalSince1970 * 1_000) }

    @Test("a purchase credits credits × quantity once, with its order id, type and region, and its consumption queued; replays ask Google nothing", arguments: TestBackend.all)
    func creditOnce(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-1", GoogleProductPurchase(orderId: "GPA.1111-2222-3333-44444", quantity: 3, regionCode: "FR"))
        let purchases = try Self.purchases(ledger, google)

        let first = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-1", actor: "t")
        #expect(!first.replayed && first.transaction.amount == 15 && first.balance == 15 && first.transaction.quantity == 3)
        let again = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-1", actor: "t")
        #expect(again.replayed && again.transaction.seq == first.transaction.seq)
        #expect(google.state.withLock(\.gets) == 1, "a replay is answered from the ledger")
        #expect(try await ledger.balance("p1") == 15)

        // The same token can never credit a second player, nor as another product.
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p2", productID: "com.example.consume5credits", purchaseToken: "tok-1", actor: "t") }?.code == "idempotency_key_reused")
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: "com.example.gems10", purchaseToken: "tok-1", actor: "t") }?.code == "idempotency_key_reused")
        #expect(try await ledger.balance("p2") == 0)

        let record = try #require(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-1"))
        #expect(record.orderID == "GPA.1111-2222-3333-44444" && record.purchaseType == .paid && record.region == "FR" && record.seq == first.transaction.seq)
        #expect(record.finish?.status == .pending && record.finish?.productID == "com.example.consume5credits")
        #expect(try await ledger.store.storePurchases(store: "google", orderID: "GPA.1111-2222-3333-44444").map(\.storeTransactionID) == ["tok-1"])
        #expect(try await ledger.store.storePurchases(store: "google", orderID: "GPA.0000").isEmpty)
        try await ledger.expectIntact()
    }

    @Test("two players racing one token: one is credited, the other refused, the ledger holds one purchase", arguments: TestBackend.all)
    func race(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-race")
        let purchases = try Self.purchases(ledger, google)
        let outcomes = await withTaskGroup(of: String.self) { group in
            for player: PlayerID in ["p1", "p2", "p3", "p4"] {
                group.addTask {
                    do {
                        _ = try await purchases.redeem(playerID: player, productID: "com.example.consume5credits", purchaseToken: "tok-race", actor: "t")
                        return "ok"
                    } catch let error as WalletError {
                        return error.code
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == "ok" }.count == 1 && outcomes.filter { $0 == "idempotency_key_reused" }.count == 3)
        var total: Int64 = 0
        for player: PlayerID in ["p1", "p2", "p3", "p4"] { total += try await ledger.balance(player) }
        #expect(total == 5)
        try await ledger.expectIntact()
    }

    @Test("pending is 409 purchase_pending with nothing recorded, then credits once purchased; canceled, unknown and test purchases are refused", arguments: TestBackend.all)
    func states(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-pending", GoogleProductPurchase(purchaseState: 2))
        google.add("tok-canceled", GoogleProductPurchase(purchaseState: 1))
        google.add("tok-test", GoogleProductPurchase(purchaseType: 0))
        google.add("tok-promo", GoogleProductPurchase(purchaseType: 1))
        let purchases = try Self.purchases(ledger, google)
        let product = "com.example.consume5credits"

        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-pending", actor: "t") }?.code == "purchase_pending")
        #expect(try await ledger.transactionCount() == 0)
        #expect(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-pending") == nil)
        google.update("tok-pending") { $0.purchaseState = 0 }
        #expect(try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-pending", actor: "t").balance == 5)

        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-canceled", actor: "t") }?.code == "purchase_invalid")
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-nobody", actor: "t") }?.code == "purchase_invalid")
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: "com.example.gems10", purchaseToken: "tok-promo", actor: "t") }?.code == "purchase_invalid",
                "the token is for another product")
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-test", actor: "t") }?.code == "purchase_invalid")
        #expect(try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: "tok-promo", actor: "t").balance == 10)
        let testers = try Self.purchases(ledger, google, allowTests: true)
        #expect(try await testers.redeem(playerID: "p1", productID: product, purchaseToken: "tok-test", actor: "t").balance == 15)
        #expect(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-test")?.purchaseType == .test)
        #expect(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-promo")?.purchaseType == .promo)

        // Malformed input never reaches Google.
        let before = google.state.withLock(\.gets)
        for token in ["", "a/b", "..", String(repeating: "t", count: 256), "tok\u{0}", "tök"] {
            #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: product, purchaseToken: token, actor: "t") }?.code == "invalid_request")
        }
        #expect(google.state.withLock(\.gets) == before)
        try await ledger.expectIntact()
    }

    @Test("the account id binds to the first player credited with it; a purchase carrying it never credits another", arguments: TestBackend.all)
    func binding(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-a", GoogleProductPurchase(obfuscatedExternalAccountId: "hash-of-alice"))
        google.add("tok-b", GoogleProductPurchase(obfuscatedExternalAccountId: "hash-of-alice"))
        google.add("tok-c", GoogleProductPurchase(obfuscatedExternalAccountId: "hash-of-alice"))
        let purchases = try Self.purchases(ledger, google)
        _ = try await purchases.redeem(playerID: "alice", productID: "com.example.consume5credits", purchaseToken: "tok-a", actor: "t")
        let stolen = await walletError { _ = try await purchases.redeem(playerID: "mallory", productID: "com.example.consume5credits", purchaseToken: "tok-b", actor: "t") }
        #expect(stolen?.code == "purchase_invalid")
        #expect(try await ledger.balance("mallory") == 0)
        #expect(try await purchases.redeem(playerID: "alice", productID: "com.example.consume5credits", purchaseToken: "tok-c", actor: "t").balance == 10)
        let token = try #require(AccountToken.text(ofStoreAccountID: "hash-of-alice"))
        #expect(try await ledger.store.accountTokenOwner(store: "google", token: token) == "alice")
        #expect(AccountToken.text(ofStoreAccountID: "0F8FAD5B-D9CB-469F-A165-70867728950E") == "0f8fad5b-d9cb-469f-a165-70867728950e")
        try await ledger.expectIntact()
    }

    @Test("every credited purchase is consumed from the outbox: retried with backoff after a failure and a restart, done when already consumed, failed when Google lost it", arguments: TestBackend.all)
    func consumed(backend: TestBackend) async throws {
        let clock = TestClock(Date())
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let google = InMemoryGooglePlay()
        for token in ["tok-1", "tok-2", "tok-3"] { google.add(token) }
        let purchases = try Self.purchases(ledger, google)
        for token in ["tok-1", "tok-2", "tok-3"] {
            _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: token, actor: "t")
        }
        google.update("tok-2") { $0.consumptionState = 1 }
        google.state.withLock { $0.consumeFailures = [.storeUnavailable("Google answered 500")] }
        let finisher = GooglePurchaseFinisher(outbox: ledger.store, api: google, clock: { clock.now }, logger: TestLogs.quiet("test"))
        let pass = try await finisher.consumeDue()
        #expect(pass == GooglePurchaseFinisher.Pass(consumed: 2, retrying: 1, failed: 0))
        let retrying = try #require(try await ledger.store.purchaseFinishes(store: "google", status: .pending, limit: 10).first)
        #expect(retrying.attempts == 1 && retrying.lastError == "Google answered 500")
        #expect(try await finisher.consumeDue() == GooglePurchaseFinisher.Pass(), "not due before its backoff")

        // A new process (a restart) takes it up once due; Google has lost this one meanwhile.
        clock.advance(60)
        google.state.withLock { $0.purchases[retrying.storeTransactionID] = nil }
        let restarted = GooglePurchaseFinisher(outbox: ledger.store, api: google, clock: { clock.now }, logger: TestLogs.quiet("test"))
        #expect(try await restarted.consumeDue() == GooglePurchaseFinisher.Pass(consumed: 0, retrying: 0, failed: 1))
        #expect(try await ledger.store.purchaseFinishes(store: "google", status: .done, limit: 10).count == 2)
        #expect(try await ledger.store.purchaseFinishes(store: "google", status: .failed, limit: 10).first?.finishedAt != nil)
        #expect(google.state.withLock { $0.purchases.values.filter { $0.purchase.consumptionState == 1 }.count } == 2)
    }

    @Test("a full void takes the purchase back through the refund rules, once, however often and in whatever order it arrives", arguments: TestBackend.all)
    func fullVoid(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-v")
        let purchases = try Self.purchases(ledger, google)
        _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-v", actor: "t")
        try await ledger.spend("p1", 3, key: "s1")

        // Google notifies before it lists the void: 503, so that Pub/Sub delivers again.
        #expect(await walletError { _ = try await purchases.handleNotification(try Self.push("m1", Self.voided("tok-v"))) }?.code == "store_unavailable")
        google.void("tok-v", at: Self.nowMillis - 1_000)
        let applied = try await purchases.handleNotification(try Self.push("m1", Self.voided("tok-v")))
        #expect(applied.outcome == .refunded && !applied.replayed)
        #expect(try await ledger.balance("p1") == -3, "debt policy: the spent part stays owed")
        #expect(try await purchases.handleNotification(try Self.push("m1", Self.voided("tok-v"))).replayed)
        let other = try await purchases.handleNotification(try Self.push("m2", Self.voided("tok-v")))
        #expect(other.outcome == .alreadyApplied)
        let caught = try await purchases.catchUp(since: nil)
        #expect(caught.purchases == 1 && caught.refused.isEmpty)
        #expect(try await ledger.balance("p1") == -3)
        #expect(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-v")?.corrections.count == 1)
        try await ledger.expectIntact()
    }

    @Test("partial voids of one purchase add up, at most its quantity, applied live or by catch-up in any order", arguments: TestBackend.all)
    func partialVoids(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-q", GoogleProductPurchase(quantity: 3))
        let purchases = try Self.purchases(ledger, google)
        _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-q", actor: "t")
        let partial = #""voidedPurchaseNotification":{"purchaseToken":"tok-q","productType":2,"refundType":2}"#

        google.void("tok-q", at: Self.nowMillis - 3_600_000, quantity: 1)
        _ = try await purchases.handleNotification(try Self.push("m1", partial))
        #expect(try await ledger.balance("p1") == 10)
        // The second void's notification, before Google lists it: 503 (Pub/Sub delivers it again),
        // not the first void's state recorded as if it were this one.
        #expect(await walletError { _ = try await purchases.handleNotification(try Self.push("m2", partial, eventTime: Self.nowMillis)) }?.code == "store_unavailable")
        google.void("tok-q", at: Self.nowMillis - 4_000, quantity: 1)
        // The catch-up sees both voids first; the live notification of the second arrives after.
        let caught = try await purchases.catchUp(since: nil)
        #expect(caught.applied == 1)
        #expect(try await ledger.balance("p1") == 5)
        let late = try await purchases.handleNotification(try Self.push("m2", partial))
        #expect(late.outcome == .alreadyApplied)
        #expect(try await ledger.balance("p1") == 5)
        // More units voided than were bought take the whole purchase, never more.
        google.void("tok-q", at: Self.nowMillis - 3_000, quantity: 5)
        _ = try await purchases.handleNotification(try Self.push("m3", partial))
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await purchases.catchUp(since: nil).applied == 0)
        try await ledger.expectIntact()

        #expect(try await Self.recordedVoids(ledger, "tok-q") == 3, "each void recorded once")
    }

    @Test("Core adds voids up: each once by its id, the units of all at most the quantity, a full one the whole, exact credits where the share can say them")
    func voidShares() {
        #expect(StoreVoids.share(recordedUnits: 0, newUnits: 0, quantity: 3, full: false, amount: 15) == 0)
        #expect(StoreVoids.share(recordedUnits: 0, newUnits: 1, quantity: 3, full: false, amount: 15) == 33_334)
        #expect(StoreVoids.share(recordedUnits: 1, newUnits: 1, quantity: 3, full: false, amount: 15) == 66_667)
        #expect(StoreVoids.share(recordedUnits: 2, newUnits: 5, quantity: 3, full: false, amount: 15) == 100_000)
        #expect(StoreVoids.share(recordedUnits: 0, newUnits: 1, quantity: 3, full: true, amount: 15) == 100_000)
        #expect(StoreVoids.share(recordedUnits: .max, newUnits: .max, quantity: Limits.quantityMax, full: false, amount: .max) == 100_000)
        // 50,000 credits a unit, 3 bought, 1 voided: 33,334 would take 50,001; 33,333 takes 49,999.
        #expect(StoreVoids.share(recordedUnits: 0, newUnits: 1, quantity: 3, full: false, amount: 150_000) == 33_333)
        for (credits, quantity) in [(Int64(5), Int64(3)), (7, 6), (1_000, 7), (99, 9)] {
            let share = StoreVoids.share(recordedUnits: 0, newUnits: 1, quantity: quantity, full: false, amount: credits * quantity)
            #expect(credits * quantity * share / 100_000 == credits, "\(credits) × \(quantity)")
        }

        let one = StoreVoid(voidID: "1000:GPA.1", units: 1)
        let two = StoreVoid(voidID: "2000:GPA.1", units: 1)
        let purchase = (quantity: Int64(3), amount: Int64(15))
        #expect(StoreVoids.decide(reported: [one], recorded: [], purchase: purchase) == .init(new: [one], share: 33_334))
        #expect(StoreVoids.decide(reported: [one, one], recorded: [], purchase: purchase) == .init(new: [one], share: 33_334), "listed twice, counted once")
        #expect(StoreVoids.decide(reported: [one], recorded: [one], purchase: purchase) == .init(new: [], share: nil), "seen before: nothing moves")
        #expect(StoreVoids.decide(reported: [two], recorded: [one], purchase: purchase) == .init(new: [two], share: 66_667), "the first no longer listed")
        let full = StoreVoid(voidID: "3000:GPA.1", units: nil)
        #expect(StoreVoids.decide(reported: [full], recorded: [one], purchase: purchase) == .init(new: [full], share: 100_000))
        #expect(StoreVoids.decide(reported: [one], recorded: [], purchase: nil) == .init(new: [], share: 100_000), "never credited: the whole, recorded nowhere")
        // Google's entries: named by voided time and order id; units only for a partial refund.
        let partial = GooglePurchases.storeVoid(GoogleVoidedPurchase(purchaseToken: "t", orderId: "GPA.9", voidedTimeMillis: "1700", refundType: 2, voidedQuantity: 2))
        #expect(partial == StoreVoid(voidID: "1700:GPA.9", units: 2))
        #expect(GooglePurchases.storeVoid(GoogleVoidedPurchase(purchaseToken: "t", refundType: 2)).units == nil, "a partial void that names no units takes the whole")
        let odd = GooglePurchases.storeVoid(GoogleVoidedPurchase(purchaseToken: "t", orderId: "GPA 9 \u{1}", voidedTimeMillis: "1700", refundType: 1))
        #expect(odd.voidID.hasPrefix("sha256:") && (try? odd.validate()) != nil)
    }

    /// The voids the ledger recorded for a Google purchase token.
    static func recordedVoids(_ ledger: TestLedger, _ token: String) async throws -> Int64 {
        try await ledger.store.read { db in
            try db.integer("SELECT count(*) FROM store_voids WHERE store = 'google' AND store_transaction_id = ?", [.text(token)]) ?? 0
        }
    }

    @Test("partial voids more than Google's 30 days apart add up: the second takes its own unit, though Google no longer lists the first", arguments: TestBackend.all)
    func partialVoidsMonthsApart(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-q", GoogleProductPurchase(quantity: 3))
        let purchases = try Self.purchases(ledger, google)
        _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-q", actor: "t")
        let partial = #""voidedPurchaseNotification":{"purchaseToken":"tok-q","productType":2,"refundType":2}"#

        // The first void, 40 days ago, applied when it was notified then.
        let fortyDaysAgo = Date().addingTimeInterval(-40 * 86_400)
        google.void("tok-q", at: Int64(fortyDaysAgo.timeIntervalSince1970 * 1_000), quantity: 1)
        _ = try await purchases.handleNotification(try Self.push("m1", partial), now: fortyDaysAgo.addingTimeInterval(60))
        #expect(try await ledger.balance("p1") == 10)
        // Today's void: Google lists it alone now.
        google.void("tok-q", at: Self.nowMillis - 5_000, quantity: 1)
        let second = try await purchases.handleNotification(try Self.push("m2", partial))
        #expect(second.outcome == .refunded)
        #expect(try await ledger.balance("p1") == 5, "two units voided in all")
        #expect(try await purchases.catchUp(since: nil).applied == 0)
        #expect(try await purchases.handleNotification(try Self.push("m3", partial)).outcome == .alreadyApplied)
        #expect(try await ledger.balance("p1") == 5)
        #expect(try await Self.recordedVoids(ledger, "tok-q") == 2)
        #expect(try await ledger.store.storePurchase(store: "google", storeTransactionID: "tok-q")?.corrections.count == 2)
        try await ledger.expectIntact()
    }

    @Test("a partial void whose write lands just after the purchase's first credit takes its units, not the whole purchase", arguments: TestBackend.all)
    func voidRacingFirstRedeem(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-r", GoogleProductPurchase(quantity: 3))
        let redeemer = try Self.purchases(ledger, google)
        // The redeem commits after the void's handler asked Google and before its write.
        let interposed = InterposedLedger(store: ledger.store) {
            _ = try await redeemer.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-r", actor: "t")
        }
        let purchases = GooglePurchases(configuration: try GoogleConfiguration(packageName: Self.package), api: google, ledger: interposed)
        google.void("tok-r", at: Self.nowMillis - 1_000, quantity: 1)
        let partial = #""voidedPurchaseNotification":{"purchaseToken":"tok-r","productType":2,"refundType":2}"#
        let outcome = try await purchases.handleNotification(try Self.push("m1", partial))
        #expect(outcome.outcome == .refunded)
        #expect(try await ledger.balance("p1") == 10, "one unit of three taken back")
        #expect(try await purchases.catchUp(since: nil).applied == 0)
        #expect(try await ledger.balance("p1") == 10)
        try await ledger.expectIntact()
    }

    @Test("two catch-ups at once, from two instances of one ledger: one reads Google's list and applies it, the other skips and says so", arguments: TestBackend.all)
    func catchUpOneAtATime(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        for token in ["tok-1", "tok-2", "tok-3"] {
            google.add(token)
            _ = try await Self.purchases(ledger, google).redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: token, actor: "t")
            google.void(token, at: Self.nowMillis - 1_000)
        }
        let gated = GatedGooglePlay(google)
        let first = GooglePurchases(configuration: try GoogleConfiguration(packageName: Self.package), api: gated, ledger: ledger.store)
        // Another instance: its own connections to the same database.
        let other = try await SQLLedgerStore.open(database: ledger.path, durability: .full, writeMode: .default, poolSize: 2, clock: { Date() })
        let second = GooglePurchases(configuration: try GoogleConfiguration(packageName: Self.package), api: gated, ledger: other)

        async let running = first.catchUp(since: nil)
        await gated.waitUntilListing()
        let skipped = try await second.catchUp(since: nil)
        gated.open()
        let report = try await running
        #expect(skipped.skipped != nil && skipped.purchases == 0 && skipped.applied == 0)
        #expect(report.skipped == nil && report.purchases == 3 && report.applied == 3)
        #expect(gated.listCalls.withLock { $0 } == 2, "one run's pages (two a page), not two runs'")
        #expect(try await ledger.balance("p1") == 0)
        // Given back at the end: the next run, on either instance, reads the list again.
        #expect(try await second.catchUp(since: nil).skipped == nil)
        #expect(gated.listCalls.withLock { $0 } == 4)
        try await ledger.expectIntact()
    }

    @Test("a purchase voided before it was redeemed never credits", arguments: TestBackend.all)
    func voidedFirst(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-early")
        google.void("tok-early", at: Self.nowMillis - 1_000)
        let purchases = try Self.purchases(ledger, google)
        #expect(try await purchases.handleNotification(try Self.push("m1", Self.voided("tok-early"))).outcome == .noPurchase)
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-early", actor: "t") }?.code == "purchase_invalid")
        #expect(try await ledger.balance("p1") == 0)
        try await ledger.expectIntact()
    }

    @Test("a pending purchase completed later is credited by the push to the player whose derived account id it carries; under first use, never by a push", arguments: TestBackend.all)
    func pendingCompletedByPush(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        let namespace = UUID(uuid: (0x0F, 0x6C, 0x2D, 0x52, 0x6D, 0x1A, 0x4C, 0x0E, 0x9A, 0x57, 0x3A, 0x8C, 0x4F, 0x1C, 0x2B, 0x7E))
        let account = AccountToken.derived(namespace: namespace, playerID: "p7").uuidString.lowercased()
        google.add("tok-first", GoogleProductPurchase(obfuscatedExternalAccountId: account))
        google.add("tok-later", GoogleProductPurchase(purchaseState: 2, obfuscatedExternalAccountId: account))
        google.add("tok-stranger", GoogleProductPurchase(obfuscatedExternalAccountId: "not-derived"))
        var configuration = try GoogleConfiguration(packageName: Self.package)
        configuration.accountTokenBinding = .derived(namespace: namespace)
        let purchases = GooglePurchases(configuration: configuration, api: google, ledger: ledger.store)
        _ = try await purchases.redeem(playerID: "p7", productID: "com.example.consume5credits", purchaseToken: "tok-first", actor: "t")
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p7", productID: "com.example.consume5credits", purchaseToken: "tok-later", actor: "t") }?.code == "purchase_pending")
        google.update("tok-later") { $0.purchaseState = 0 }
        let purchased = #""oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-later","sku":"com.example.consume5credits"}"#
        _ = try await purchases.handleNotification(try Self.push("m1", purchased))
        #expect(try await ledger.balance("p7") == 10)
        _ = try await purchases.handleNotification(try Self.push("m2", purchased))
        #expect(try await ledger.balance("p7") == 10, "credited once")
        // An account id bound to nobody credits nobody: the app redeems it.
        let stranger = #""oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-stranger","sku":"com.example.consume5credits"}"#
        #expect(try await purchases.handleNotification(try Self.push("m3", stranger)).outcome == .recorded)
        #expect(try await ledger.store.purchase(store: "google", storeTransactionID: "tok-stranger") == nil)

        // First use: mallory bound alice's (guessable) id with a cheap purchase of her own; alice's
        // pending purchase, completed, must not credit mallory through the push.
        google.add("tok-m", GoogleProductPurchase(obfuscatedExternalAccountId: "sha-of-alice"))
        google.add("tok-alice", GoogleProductPurchase(obfuscatedExternalAccountId: "sha-of-alice"))
        let firstUse = try Self.purchases(ledger, google)
        _ = try await firstUse.redeem(playerID: "mallory", productID: "com.example.consume5credits", purchaseToken: "tok-m", actor: "t")
        let alices = #""oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-alice","sku":"com.example.consume5credits"}"#
        #expect(try await firstUse.handleNotification(try Self.push("m4", alices)).outcome == .recorded)
        #expect(try await ledger.balance("mallory") == 5)
        #expect(try await ledger.store.purchase(store: "google", storeTransactionID: "tok-alice") == nil)
        try await ledger.expectIntact()
    }

    @Test("pushes: tests and another package's are recorded; a malformed envelope is refused, malformed data recorded invalid, before anything is done", arguments: TestBackend.all)
    func pushes(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        let purchases = try Self.purchases(ledger, google)
        #expect(try await purchases.handleNotification(try Self.push("m1", #""testNotification":{"version":"1.0"}"#)).outcome == .recorded)
        #expect(try await purchases.handleNotification(try Self.push("m2", Self.voided("tok-x"), package: "com.other.game")).outcome == .invalid)
        #expect(google.state.withLock(\.gets) == 0)

        func refused(_ envelope: String) -> String? {
            do {
                _ = try GooglePushMessage(envelope: Array(envelope.utf8))
                return nil
            } catch {
                return error.code
            }
        }
        let data = Data(#"{"packageName":"com.example.game","testNotification":{}}"#.utf8).base64EncodedString()
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"1"}}"#) == nil)
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"1","messageId":"2"}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"%%%","messageId":"1"}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"1"},"subscription":{}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"1","publishTime":7}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"1","attributes":[]}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"\#(data)","message_id":"1","publish_time":"2026-11-24T00:00:00Z","attributes":{}},"subscription":"s"}"#) == nil)
        #expect(refused(#"{"message":{"data":"\#(data)"}}"#) == "invalid_request")
        #expect(refused(#"{"message":{"data":"\#(data)","messageId":"\#(String(repeating: "9", count: 65))"}}"#) == "invalid_request")
        #expect(refused(String(repeating: "[", count: 10_000)) == "invalid_request")
        // Data that is not a notification the wallet reads, in a sound envelope: recorded invalid once,
        // so that Pub/Sub does not deliver it for days.
        let dup = Data(#"{"packageName":"com.example.game","packageName":"com.example.game"}"#.utf8).base64EncodedString()
        let badToken = Data(#"{"packageName":"com.example.game","voidedPurchaseNotification":{"purchaseToken":"a/../b","productType":2}}"#.utf8).base64EncodedString()
        for (id, data) in [("m5", dup), ("m6", badToken)] {
            let message = try GooglePushMessage(envelope: Array(#"{"message":{"data":"\#(data)","messageId":"\#(id)"}}"#.utf8))
            #expect(try await purchases.handleNotification(message).outcome == .invalid)
            #expect(try await purchases.handleNotification(message).replayed)
        }
        #expect(google.state.withLock(\.gets) == 0)
        try await ledger.expectIntact()
    }

    @Test("support finds an order: the purchase, its credit and refunds, its consumption, and Google's voids", arguments: TestBackend.all)
    func lookUp(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let google = InMemoryGooglePlay()
        google.add("tok-o", GoogleProductPurchase(orderId: "GPA.tok-o"))
        let purchases = try Self.purchases(ledger, google)
        let credit = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-o", actor: "t")
        google.void("tok-o", at: Self.nowMillis - 1_000)
        _ = try await purchases.handleNotification(try Self.push("m1", Self.voided("tok-o")))
        let found = try await purchases.lookUp(orderID: "GPA.tok-o")
        #expect(found.purchases.count == 1 && found.purchases.first?.credit?.seq == credit.transaction.seq)
        #expect(found.purchases.first?.purchase.corrections.count == 1 && found.voids.count == 1 && found.voidsError == nil)
        #expect(try await purchases.lookUp(orderID: "GPA.none").purchases.isEmpty)
        #expect(await walletError { _ = try await purchases.lookUp(orderID: "GPA 1") }?.code == "invalid_request")
    }
}

/// The test ledger, with `before` run once just before the first notification is written: what
/// another request commits between a void handler's reading and its write.
final class InterposedLedger: LedgerWriting & LedgerReading & PurchaseFinishOutbox & WorkLeases {
    let store: SQLLedgerStore
    let before: @Sendable () async throws -> Void
    private let ran = Mutex(false)

    init(store: SQLLedgerStore, before: @escaping @Sendable () async throws -> Void) {
        self.store = store
        self.before = before
    }

    func recordNotification(_ notification: StoreNotification) async throws(WalletError) -> NotificationOutcome {
        if !ran.withLock({ ran in defer { ran = true }; return ran }) {
            do { try await before() } catch { throw .storage("the interposed request failed: \(error)") }
        }
        return try await store.recordNotification(notification)
    }

    func setProduct(_ update: ProductUpdate) async throws(WalletError) -> Product { try await store.setProduct(update) }
    func grant(_ request: GrantRequest) async throws(WalletError) -> MutationResult { try await store.grant(request) }
    func grantEach(_ requests: [GrantRequest]) async throws(WalletError) -> [Result<MutationResult, WalletError>] { try await store.grantEach(requests) }
    func bonus(_ request: BonusRequest) async throws(WalletError) -> MutationResult { try await store.bonus(request) }
    func expireLots(limit: Int) async throws(WalletError) -> Int { try await store.expireLots(limit: limit) }
    func createHold(_ request: HoldRequest) async throws(WalletError) -> HoldResult { try await store.createHold(request) }
    func resolveHold(_ request: HoldResolution) async throws(WalletError) -> HoldResult { try await store.resolveHold(request) }
    func expireHolds(limit: Int) async throws(WalletError) -> Int { try await store.expireHolds(limit: limit) }
    func spend(_ request: SpendRequest) async throws(WalletError) -> MutationResult { try await store.spend(request) }
    func adjust(_ request: AdjustRequest) async throws(WalletError) -> MutationResult { try await store.adjust(request) }
    func refund(_ request: RefundRequest) async throws(WalletError) -> MutationResult { try await store.refund(request) }
    func products() async throws(WalletError) -> [Product] { try await store.products() }
    func balances(playerID: PlayerID) async throws(WalletError) -> WalletBalances { try await store.balances(playerID: playerID) }
    func lots(_ query: LotQuery) async throws(WalletError) -> LotPage { try await store.lots(query) }
    func holds(playerID: PlayerID) async throws(WalletError) -> [Hold] { try await store.holds(playerID: playerID) }
    func history(_ query: HistoryQuery) async throws(WalletError) -> HistoryPage { try await store.history(query) }
    func purchase(store: String, storeTransactionID: String) async throws(WalletError) -> LedgerTransaction? {
        try await self.store.purchase(store: store, storeTransactionID: storeTransactionID)
    }
    func statement(_ query: StatementQuery) async throws(WalletError) -> Statement { try await store.statement(query) }
    func changeEntitlement(_ request: EntitlementChangeRequest) async throws(WalletError) -> EntitlementChangeResult { try await store.changeEntitlement(request) }
    func entitlements(playerID: PlayerID) async throws(WalletError) -> EntitlementList { try await store.entitlements(playerID: playerID) }
    func entitlement(playerID: PlayerID, name: EntitlementName) async throws(WalletError) -> Entitlement { try await store.entitlement(playerID: playerID, name: name) }
    func claimPurchaseFinishes(at now: Date, limit: Int, lease: Duration) async throws(WalletError) -> [PurchaseFinish] {
        try await store.claimPurchaseFinishes(at: now, limit: limit, lease: lease)
    }
    func recordPurchaseFinish(_ claimed: PurchaseFinish, _ attempt: PurchaseFinish.Attempt, at now: Date) async throws(WalletError) -> PurchaseFinish {
        try await store.recordPurchaseFinish(claimed, attempt, at: now)
    }
    func purchaseFinishes(store: String, status: PurchaseFinish.Status?, limit: Int) async throws(WalletError) -> [PurchaseFinish] {
        try await self.store.purchaseFinishes(store: store, status: status, limit: limit)
    }
    func storePurchases(store: String, orderID: String) async throws(WalletError) -> [StorePurchase] { try await self.store.storePurchases(store: store, orderID: orderID) }
    func storePurchase(store: String, storeTransactionID: String) async throws(WalletError) -> StorePurchase? {
        try await self.store.storePurchase(store: store, storeTransactionID: storeTransactionID)
    }
    func accountTokenOwner(store: String, token: String) async throws(WalletError) -> String? { try await self.store.accountTokenOwner(store: store, token: token) }
    func takeLease(_ name: String, holder: String, for duration: Duration) async throws(WalletError) -> WorkLease {
        try await store.takeLease(name, holder: holder, for: duration)
    }
    func releaseLease(_ name: String, holder: String) async throws(WalletError) { try await store.releaseLease(name, holder: holder) }
}

/// `InMemoryGooglePlay` whose first voided-purchases call waits until the test opens it, so that
/// a second catch-up starts while the first one is reading Google's list; counts those calls.
final class GatedGooglePlay: GooglePlayPurchasesAPI {
    let inner: InMemoryGooglePlay
    let listCalls = Mutex(0)
    private let listing: AsyncStream<Void>
    private let listingContinuation: AsyncStream<Void>.Continuation
    private let opened: AsyncStream<Void>
    private let openedContinuation: AsyncStream<Void>.Continuation

    init(_ inner: InMemoryGooglePlay) {
        self.inner = inner
        (listing, listingContinuation) = AsyncStream.makeStream(of: Void.self)
        (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// Returns once the first call is waiting.
    func waitUntilListing() async {
        for await _ in listing { return }
    }

    func open() {
        openedContinuation.yield()
        openedContinuation.finish()
    }

    func productPurchase(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleProductPurchase {
        try await inner.productPurchase(productID: productID, purchaseToken: purchaseToken)
    }

    func consume(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleConsumeOutcome {
        try await inner.consume(productID: productID, purchaseToken: purchaseToken)
    }

    func acknowledge(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleAcknowledgeOutcome {
        try await inner.acknowledge(productID: productID, purchaseToken: purchaseToken)
    }

    func voidedPurchases(start: Date, end: Date, pageToken: String?) async throws(WalletError) -> GoogleVoidedPurchasePage {
        let first = listCalls.withLock { calls in
            calls += 1
            return calls == 1
        }
        if first {
            listingContinuation.yield()
            for await _ in opened { break }
        }
        return try await inner.voidedPurchases(start: start, end: end, pageToken: pageToken)
    }
}
