import Foundation
import Logging
import Testing
@testable import WalletApple
@testable import WalletCore
@testable import WalletGoogle
import WalletTestSupport

/// The store rules of entitlements, through Apple's and Google's paths on both stores: a
/// non-consumable granted once, passes folded by purchase date whatever the order of redemption,
/// refunds and reversals recomputing the end, restores granting nothing twice, and Google
/// acknowledging (never consuming) what a player keeps.
@Suite("Entitlements through the stores", .throttled)
struct EntitlementStoreTests {
    static let authority = AppleTests.authority
    static let dayMillis: Int64 = 86_400_000
    /// 2025-01-01T00:00:00Z: the first pass's purchase date.
    static let startMillis: Int64 = 1_735_689_600_000

    // MARK: Set-up

    static func addCatalog(_ store: some LedgerWriting) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        _ = try await store.setProduct(
            ProductUpdate(productID: "com.example.game.premium", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("premium")))
        _ = try await store.setProduct(
            ProductUpdate(
                productID: "com.example.game.pass30", credits: 0, type: .nonRenewing, entitlement: try EntitlementName("vip"), duration: try PassDuration("P30D")))
        _ = try await store.setProduct(
            ProductUpdate(
                productID: "com.example.game.month", credits: 0, type: .nonRenewing, entitlement: try EntitlementName("monthly"), duration: try PassDuration("P1M")))
    }

    static func apple(_ backend: TestBackend, api: AppStoreServerAPI? = nil) async throws -> (ApplePurchases, TestLedger) {
        let ledger = try await TestLedger(backend)
        try await addCatalog(ledger.store)
        return (ApplePurchases(configuration: try authority.configuration(), ledger: ledger.store, api: api), ledger)
    }

    /// A non-consumable's transaction: `original` is the purchase it restores (itself by default).
    static func premium(_ id: String, original: String? = nil, changes: [String: Any] = [:]) throws -> String {
        try authority.transaction(
            id, product: "com.example.game.premium", changes: ["type": "Non-Consumable", "originalTransactionId": original ?? id].merging(changes) { $1 })
    }

    /// A non-renewing pass bought at `purchasedAt` (milliseconds).
    static func pass(_ id: String, at purchasedAt: Int64, product: String = "com.example.game.pass30", changes: [String: Any] = [:]) throws -> String {
        try authority.transaction(id, product: product, changes: ["type": "Non-Renewing Subscription", "purchaseDate": purchasedAt].merging(changes) { $1 })
    }

    static func day(_ days: Int64) -> Int64 { startMillis + days * dayMillis }

    static func text(_ millis: Int64) -> String { Timestamp.format(milliseconds: millis) }

    static func entitlement(_ ledger: TestLedger, _ player: PlayerID, _ name: String) async throws -> Entitlement {
        try await ledger.store.entitlement(playerID: player, name: try EntitlementName(name))
    }

    // MARK: Apple

    @Test("a non-consumable is granted once: a re-delivery, a new transaction id of the same purchase, and a restore grant nothing new", arguments: TestBackend.all)
    func nonConsumableOnce(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let first = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.premium("N1"), actor: "player:p1")
        #expect(!first.replayed && first.transaction.amount == 0 && first.transaction.storeTransactionID == "N1")
        #expect(first.entitlement?.name == "premium" && first.entitlement?.forever == true && first.entitlement?.active == true)
        #expect(try await purchases.redeem(playerID: "p1", signedTransaction: try Self.premium("N1"), actor: "player:p1").replayed)
        let restored = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.premium("N2", original: "N1"), actor: "player:p1")
        #expect(restored.replayed && restored.transaction.seq == first.transaction.seq)
        let restore = try await purchases.restore(playerID: "p1", receipt: nil, signedTransactions: [try Self.premium("N3", original: "N1")], actor: "player:p1")
        #expect(restore.granted.isEmpty && restore.refused.isEmpty)
        #expect(restore.alreadyGranted.map(\.storeTransactionID) == ["N1"] && restore.alreadyGranted.first?.entitlement?.forever == true)
        #expect(try await ledger.transactionCount() == 2, "one purchase and one entitlement transaction")
        // Another player is refused the purchase however it is presented.
        #expect(await walletError { _ = try await purchases.redeem(playerID: "p2", signedTransaction: try Self.premium("N4", original: "N1"), actor: "t") }?.code
            == "idempotency_key_reused")
        let theirs = try await purchases.restore(playerID: "p2", receipt: nil, signedTransactions: [try Self.premium("N1")], actor: "t")
        #expect(theirs.granted.isEmpty && theirs.refused.map(\.code) == ["already_credited_elsewhere"] && theirs.refused.first?.productID == "com.example.game.premium")
        #expect(try await Self.entitlement(ledger, "p2", "premium").active == false)
        #expect(try await ledger.transactionCount() == 2)
        try await ledger.expectIntact()
    }

    @Test("three passes bought at D, D+10d and D+40d end at the same time redeemed in every order", arguments: TestBackend.all)
    func passOrder(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let dates = [Self.day(0), Self.day(10), Self.day(40)]
        let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
        for (number, order) in orders.enumerated() {
            let player = try PlayerID("p\(number)")
            var last: MutationResult?
            for index in order {
                last = try await purchases.redeem(playerID: player, signedTransaction: try Self.pass("P\(number)-\(index)", at: dates[index]), actor: "t")
            }
            // 30 days from D, then 30 more from D+30d (the second began before the first ended), then 30 from D+60d.
            #expect(last?.entitlement?.expiresAt == Self.text(Self.day(90)), "order \(order)")
            let stored = try await Self.entitlement(ledger, player, "vip")
            #expect(stored.expiresAt == Self.text(Self.day(90)) && !stored.forever, "order \(order)")
        }
        try await ledger.expectIntact()
    }

    @Test("a one-month pass bought on January 31 ends on the last day of February", arguments: TestBackend.all, [("2026-01-31T12:00:00Z", "2026-02-28T12:00:00.000Z"), ("2024-01-31T12:00:00Z", "2024-02-29T12:00:00.000Z")])
    func monthEnd(_ backend: TestBackend, _ dates: (String, String)) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let bought = try #require(ISO8601DateFormatter().date(from: dates.0))
        let result = try await purchases.redeem(
            playerID: "p1", signedTransaction: try Self.pass("M1", at: AppleTestAuthority.milliseconds(bought), product: "com.example.game.month"), actor: "t")
        #expect(result.entitlement?.expiresAt == dates.1)
        #expect(try await Self.entitlement(ledger, "p1", "monthly").expiresAt == dates.1)
        try await ledger.expectIntact()
    }

    @Test("REFUND of the middle pass recomputes the end; REFUND_REVERSED restores it", arguments: TestBackend.all)
    func refundMiddle(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        for (id, days) in [("R0", Int64(0)), ("R1", 10), ("R2", 40)] {
            _ = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.pass(id, at: Self.day(days)), actor: "t")
        }
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(90)))
        let now = AppleTestAuthority.milliseconds(Date())
        let revoked = try Self.pass("R1", at: Self.day(10), changes: ["revocationDate": now, "revocationReason": 0])
        let refund = try await purchases.handleNotification(signedPayload: try Self.authority.notification("REFUND", signedTransaction: revoked, signedDate: now))
        #expect(refund.outcome.rawValue == "refunded")
        // D..D+30d, then the third from its own start, D+40d, to D+70d.
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(70)))
        try await ledger.expectIntact()
        let reversal = try await purchases.handleNotification(
            signedPayload: try Self.authority.notification("REFUND_REVERSED", signedTransaction: try Self.pass("R1", at: Self.day(10)), signedDate: now + 1_000))
        #expect(reversal.outcome.rawValue != "refused" && reversal.outcome.rawValue != "recorded", "\(reversal.outcome.rawValue)")
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(90)))
        try await ledger.expectIntact()
    }

    @Test("refunds and reversals delivered in any order end in Apple's last report", arguments: TestBackend.all)
    func deliveryOrder(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let now = AppleTestAuthority.milliseconds(Date())
        // Each player's reports, in the order Apple signed them, and the order they are delivered in.
        let cases: [(player: PlayerID, reports: [String], delivered: [Int], active: Bool)] = [
            ("a", ["REFUND", "REFUND_REVERSED"], [0, 1], true),
            ("b", ["REFUND", "REFUND_REVERSED"], [1, 0], true),
            ("c", ["REFUND", "REFUND_REVERSED", "REFUND"], [2, 1, 0], false),
            ("d", ["REFUND", "REFUND_REVERSED", "REFUND"], [1, 0, 2], false),
        ]
        for (player, reports, delivered, active) in cases {
            let id = "O-\(player.text)"
            _ = try await purchases.redeem(playerID: player, signedTransaction: try Self.pass(id, at: Self.day(0)), actor: "t")
            for index in delivered {
                let signedDate = now + Int64(index) * 1_000
                let changes: [String: Any] = reports[index] == "REFUND" ? ["revocationDate": signedDate, "revocationReason": 0] : [:]
                _ = try await purchases.handleNotification(
                    signedPayload: try Self.authority.notification(reports[index], signedTransaction: try Self.pass(id, at: Self.day(0), changes: changes), signedDate: signedDate))
            }
            let state = try await Self.entitlement(ledger, player, "vip")
            #expect(state.expiresAt == (active ? Self.text(Self.day(30)) : nil), "\(player.text): \(delivered)")
        }
        try await ledger.expectIntact()
    }

    @Test("REFUND of a non-consumable names whichever of its transactions Apple signed: the purchase is taken back", arguments: TestBackend.all)
    func refundRestoredNonConsumable(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.premium("N1"), actor: "t")
        let now = AppleTestAuthority.milliseconds(Date())
        let revoked = try Self.premium("N2", original: "N1", changes: ["revocationDate": now, "revocationReason": 0])
        let outcome = try await purchases.handleNotification(signedPayload: try Self.authority.notification("REFUND", signedTransaction: revoked, signedDate: now))
        #expect(outcome.outcome.rawValue == "refunded")
        let state = try await Self.entitlement(ledger, "p1", "premium")
        #expect(!state.active && !state.forever)
        try await ledger.expectIntact()
    }

    @Test("an auto-renewable subscription is refused with its own message; a store type other than the catalog's is refused", arguments: TestBackend.all)
    func typeRefusals(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let renewing = try Self.authority.transaction("A1", product: "com.example.game.pass30", changes: ["type": "Auto-Renewable Subscription"])
        let refused = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: renewing, actor: "t") }
        #expect(refused?.code == "purchase_invalid" && refused?.detail.contains("auto-renewable subscriptions are not kept") == true, "\(refused?.detail ?? "")")
        for (id, product, type, listed) in [
            ("X1", "com.example.game.premium", "Consumable", "non_consumable"), ("X2", "com.example.game.pass30", "Non-Consumable", "non_renewing"),
            ("X3", "com.example.game.consume5credits", "Non-Renewing Subscription", "consumable"),
        ] {
            let jws = try Self.authority.transaction(id, product: product, changes: ["type": type])
            let error = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: jws, actor: "t") }
            #expect(error?.code == "purchase_invalid" && error?.detail.contains("the catalog lists it as \(listed)") == true, "\(error?.detail ?? "")")
        }
        #expect(try await ledger.transactionCount() == 0)
        try await ledger.expectIntact()
    }

    @Test("restoring StoreKit 2 transactions twice grants each purchase once; the second restore grants nothing", arguments: TestBackend.all)
    func restoreTwice(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let signed = [try Self.premium("S1"), try Self.pass("S2", at: Self.day(0)), try Self.authority.transaction("S3"), try Self.pass("S4", at: Self.day(5))]
        let first = try await purchases.restore(playerID: "p1", receipt: nil, signedTransactions: signed, actor: "player:p1")
        #expect(Set(first.granted.map(\.storeTransactionID)) == ["S1", "S2", "S3", "S4"] && first.alreadyGranted.isEmpty && first.refused.isEmpty)
        // Every entry of an entitlement carries the state the restore left it in.
        #expect(first.granted.filter { $0.entitlement?.name == "vip" }.allSatisfy { $0.entitlement?.expiresAt == Self.text(Self.day(60)) })
        #expect(first.granted.first { $0.storeTransactionID == "S1" }?.entitlement?.forever == true)
        #expect(first.granted.first { $0.storeTransactionID == "S3" }?.entitlement == nil)
        let count = try await ledger.transactionCount()
        #expect(count == 7, "four purchases, three entitlement changes")
        let second = try await purchases.restore(playerID: "p1", receipt: nil, signedTransactions: signed, actor: "player:p1")
        #expect(second.granted.isEmpty && second.refused.isEmpty && Set(second.alreadyGranted.map(\.storeTransactionID)) == ["S1", "S2", "S3", "S4"])
        #expect(try await ledger.transactionCount() == count)
        #expect(try await ledger.balance("p1") == 5)
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(60)))
        // Neither both kinds of proof nor none, nor more transactions than one device holds.
        for (receipt, transactions) in [(String?.some("x"), [String]?.some(signed)), (nil, nil), (nil, []), (nil, Array(repeating: signed[0], count: 101))] {
            let error = await walletError { _ = try await purchases.restore(playerID: "p1", receipt: receipt, signedTransactions: transactions, actor: "t") }
            #expect(error?.code == "invalid_request")
        }
        try await ledger.expectIntact()
    }

    @Test("a restore refuses a purchase whose appAccountToken belongs to another player, and grants the rest", arguments: TestBackend.all)
    func restoreBinding(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.apple(backend)
        let token = UUID().uuidString.lowercased()
        _ = try await purchases.redeem(playerID: "owner", signedTransaction: try Self.authority.transaction("B0", changes: ["appAccountToken": token]), actor: "t")
        let result = try await purchases.restore(
            playerID: "p1", receipt: nil, signedTransactions: [try Self.premium("B1", changes: ["appAccountToken": token]), try Self.pass("B2", at: Self.day(0))],
            actor: "player:p1")
        #expect(result.granted.map(\.storeTransactionID) == ["B2"])
        #expect(result.refused.map(\.storeTransactionID) == ["B1"] && result.refused.first?.code == "purchase_invalid", "\(result.refused)")
        #expect(try await Self.entitlement(ledger, "p1", "premium").active == false)
        #expect(try await Self.entitlement(ledger, "owner", "premium").active == false)
        try await ledger.expectIntact()
    }

    @Test("a receipt restores the customer's non-consumables and passes, and the consumables it names; twice grants nothing more", arguments: TestBackend.all)
    func restoreReceipt(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.apple(backend, api: AppStoreServerAPI(configuration: try apple.apiConfiguration()))
        apple.setPageSize(2)
        apple.addCustomer([
            try Self.premium("8001"), try Self.pass("8002", at: Self.day(0)), try Self.authority.transaction("8003"), try Self.authority.transaction("8004"),
            try Self.pass("8005", at: Self.day(1), changes: ["revocationDate": Self.day(2)]),
        ])
        let receipt = try TestReceipt.with(transactionIDs: ["8003"], signedBy: Self.authority)
        let first = try await purchases.restore(playerID: "p1", receipt: receipt, signedTransactions: nil, actor: "player:p1")
        #expect(first.environment == "Production")
        #expect(Set(first.granted.map(\.storeTransactionID)) == ["8001", "8002", "8003"], "8004 is a consumable the receipt does not name")
        #expect(first.refused.map(\.storeTransactionID) == ["8005"] && first.refused.first?.detail.contains("revoked") == true, "\(first.refused)")
        #expect(apple.seen.contains { $0.query["productType"] == "NON_CONSUMABLE" || $0.query["productType"] == "NON_RENEWABLE" })
        let second = try await purchases.restore(playerID: "p1", receipt: receipt, signedTransactions: nil, actor: "player:p1")
        #expect(second.granted.isEmpty && Set(second.alreadyGranted.map(\.storeTransactionID)) == ["8001", "8002", "8003"])
        #expect(try await ledger.balance("p1") == 5)
        #expect(try await Self.entitlement(ledger, "p1", "premium").forever)
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(30)))
        try await ledger.expectIntact()
    }

    // MARK: Google

    static func google(_ backend: TestBackend) async throws -> (GooglePurchases, InMemoryGooglePlay, TestLedger) {
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await ledger.store.setProduct(
            ProductUpdate(productID: "com.example.premium", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("premium")))
        _ = try await ledger.store.setProduct(
            ProductUpdate(productID: "com.example.pass30", credits: 0, type: .nonRenewing, entitlement: try EntitlementName("vip"), duration: try PassDuration("P30D")))
        let google = InMemoryGooglePlay()
        return (GooglePurchases(configuration: try GoogleConfiguration(packageName: GooglePlayTests.package), api: google, ledger: ledger.store), google, ledger)
    }

    @Test("Google: a non-consumable is acknowledged and never consumed; a pass and a consumable are consumed; the purchase time starts the pass", arguments: TestBackend.all)
    func googleFinishes(backend: TestBackend) async throws {
        let (purchases, google, ledger) = try await Self.google(backend)
        google.add("tok-n", product: "com.example.premium", GoogleProductPurchase(purchaseTimeMillis: String(Self.day(0))))
        google.add("tok-p", product: "com.example.pass30", GoogleProductPurchase(purchaseTimeMillis: String(Self.day(3))))
        google.add("tok-c", product: "com.example.consume5credits", GoogleProductPurchase(purchaseTimeMillis: String(Self.day(4))))
        _ = try await purchases.redeem(playerID: "p1", productID: "com.example.premium", purchaseToken: "tok-n", actor: "t")
        let pass = try await purchases.redeem(playerID: "p1", productID: "com.example.pass30", purchaseToken: "tok-p", actor: "t")
        #expect(pass.entitlement?.expiresAt == Self.text(Self.day(33)), "the pass runs from Google's purchase time")
        _ = try await purchases.redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-c", actor: "t")
        let queued = try await ledger.store.purchaseFinishes(store: "google", status: .pending, limit: 10)
        #expect(Dictionary(uniqueKeysWithValues: queued.map { ($0.storeTransactionID, $0.action) }) == ["tok-n": .acknowledge, "tok-p": .consume, "tok-c": .consume])

        let finisher = GooglePurchaseFinisher(outbox: ledger.store, api: google, logger: TestLogs.quiet("test"))
        #expect(try await finisher.consumeDue() == GooglePurchaseFinisher.Pass(consumed: 2, acknowledged: 1))
        let held = google.state.withLock { $0.purchases.mapValues(\.purchase) }
        #expect(held["tok-n"]?.acknowledgementState == 1 && held["tok-n"]?.consumptionState == 0, "kept, so never consumed")
        #expect(held["tok-p"]?.consumptionState == 1 && held["tok-c"]?.consumptionState == 1)
        #expect(google.state.withLock { ($0.acknowledgements, $0.consumes) } == (1, 2))
        #expect(try await ledger.store.purchaseFinishes(store: "google", status: .done, limit: 10).count == 3)
        #expect(try await finisher.consumeDue() == GooglePurchaseFinisher.Pass(), "each is finished once")
        #expect(try await Self.entitlement(ledger, "p1", "premium").forever)
        try await ledger.expectIntact()
    }

    @Test("Google: a purchase time out of range is refused, crediting nothing", arguments: TestBackend.all)
    func googlePurchaseTime(backend: TestBackend) async throws {
        let (purchases, google, ledger) = try await Self.google(backend)
        for (token, time) in [("tok-x", "soon"), ("tok-y", "999999999999999999")] {
            google.add(token, product: "com.example.pass30", GoogleProductPurchase(purchaseTimeMillis: time))
            let error = await walletError { _ = try await purchases.redeem(playerID: "p1", productID: "com.example.pass30", purchaseToken: token, actor: "t") }
            #expect(error?.code == "purchase_invalid")
        }
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("Google: a void of a pass removes its period, and the end is recomputed", arguments: TestBackend.all)
    func googleVoidedPass(backend: TestBackend) async throws {
        let (purchases, google, ledger) = try await Self.google(backend)
        google.add("tok-a", product: "com.example.pass30", GoogleProductPurchase(purchaseTimeMillis: String(Self.day(0))))
        google.add("tok-b", product: "com.example.pass30", GoogleProductPurchase(purchaseTimeMillis: String(Self.day(10))))
        for token in ["tok-a", "tok-b"] {
            _ = try await purchases.redeem(playerID: "p1", productID: "com.example.pass30", purchaseToken: token, actor: "t")
        }
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(60)))
        google.void("tok-a", at: GooglePlayTests.nowMillis - 1_000)
        let applied = try await purchases.handleNotification(try GooglePlayTests.push("m1", GooglePlayTests.voided("tok-a")))
        #expect(applied.outcome.rawValue == "refunded")
        // Only the second pass is left: from its own purchase, D+10d, 30 days.
        #expect(try await Self.entitlement(ledger, "p1", "vip").expiresAt == Self.text(Self.day(40)))
        try await ledger.expectIntact()
    }

    // MARK: Verify

    // SQLite only: the tamper edits the file through a raw connection.
    @Test("an entitlement row edited behind the ledger's back fails verify at its last entry")
    func tamperedEntitlement() async throws {
        let (purchases, ledger) = try await Self.apple(.sqlite)
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.pass("T1", at: Self.day(0)), actor: "t")
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.pass("T2", at: Self.day(1)), actor: "t")
        try await ledger.expectIntact()
        try await ledger.rawConnection().write { db in
            try db.execute(sql: "UPDATE entitlements SET expires_at = '2099-01-01T00:00:00.000Z' WHERE player_id = 'p1' AND name = 'vip'")
        }
        let report = try await ledger.store.verify()
        #expect(!report.ok && report.firstBadSeq == 4, "\(report.problem ?? "")")
        #expect(report.problem?.contains("entitlement vip") == true, "\(report.problem ?? "")")
    }
}
