import Foundation
import GRDB
import Testing
@testable import WalletCore
@testable import WalletSQL
@testable import WalletSQLite
import WalletTestSupport

/// Entitlements: the rules as plain functions (periods, calendar arithmetic, the fold), then the
/// ledger on both stores through grants, refunds and support's changes.
@Suite("Entitlements", .throttled)
struct EntitlementTests {
    // MARK: - Rules

    @Test("ISO 8601 periods: years, months, weeks and days in order, at most ten years; anything else is refused with the field's words")
    func durations() throws {
        for (text, months, days) in [("P30D", 0, 30), ("P3M", 3, 0), ("P1Y", 12, 0), ("P1Y2M3W4D", 14, 25), ("P2W", 0, 14), ("P10Y", 120, 0), ("P3660D", 0, 3_660)] {
            let duration = try PassDuration(text)
            #expect(duration.months == Int64(months) && duration.days == Int64(days) && duration.text == text, "\(text)")
        }
        for text in ["", "P", "30D", "P0D", "PT1H", "P1DT1H", "P1D1Y", "P11Y", "P121M", "P3661D", "P10Y3660D", "P10Y61D", "P-1D", "p1d", " P1D", "P1.5D", "P1D ", "P99999999D", "P1Y1Y", "PD"] {
            #expect(throws: WalletError.self, "\(text)") { try PassDuration(text) }
        }
        let error = #expect(throws: WalletError.self) { try PassDuration("P1H") }
        #expect(error?.code == "invalid_request" && error?.detail.contains("P30D") == true)
    }

    @Test("months and years are UTC calendar arithmetic: the 31st becomes the month's last day, leap days kept or clamped, the time of day kept")
    func calendar() throws {
        let cases: [(String, String, String?)] = [
            ("P1M", "2027-01-31T10:15:00.250Z", "2027-02-28T10:15:00.250Z"),
            ("P1M", "2028-01-31T10:15:00.250Z", "2028-02-29T10:15:00.250Z"),
            ("P1Y", "2028-02-29T00:00:00.000Z", "2029-02-28T00:00:00.000Z"),
            ("P3M", "2026-11-30T23:59:59.999Z", "2027-02-28T23:59:59.999Z"),
            ("P6M", "2026-08-31T12:00:00.000Z", "2027-02-28T12:00:00.000Z"),
            ("P1M", "2026-12-15T00:00:00.000Z", "2027-01-15T00:00:00.000Z"),
            ("P30D", "2026-12-15T00:00:00.000Z", "2027-01-14T00:00:00.000Z"),
            ("P1M1D", "2027-01-31T00:00:00.000Z", "2027-03-01T00:00:00.000Z"),
            ("P1Y", "1969-12-31T23:00:00.000Z", "1970-12-31T23:00:00.000Z"),
            ("P1Y", "9999-06-01T00:00:00.000Z", nil),
        ]
        for (period, start, end) in cases {
            #expect(try PassDuration(period).end(from: start) == end, "\(period) from \(start)")
        }
    }

    private static func pass(_ seq: Int64, _ startsAt: String, _ period: String = "P30D", active: Bool = true) throws -> EntitlementItem {
        EntitlementItem(seq: seq, kind: .period(try PassDuration(period)), startsAt: startsAt, purchaseSeq: seq, active: active)
    }

    @Test("a pass's end is a fold in purchase-date order: remaining time kept, a late purchase starting at its own date, a refunded one not counted, a revocation ending what came before it")
    func fold() throws {
        let first = try Self.pass(1, "2027-01-01T00:00:00.000Z")
        let second = try Self.pass(2, "2027-01-11T00:00:00.000Z")
        let late = try Self.pass(3, "2027-05-01T00:00:00.000Z")
        #expect(try EntitlementRules.fold([]) == .none)
        // Bought ten days into the first: its 30 days start when the first ends.
        #expect(try EntitlementRules.fold([first, second]).expiresAt == "2027-03-02T00:00:00.000Z")
        // Bought after both ended: its own date.
        #expect(try EntitlementRules.fold([late, first, second]).expiresAt == "2027-05-31T00:00:00.000Z")
        var refunded = second
        refunded.active = false
        #expect(try EntitlementRules.fold([first, refunded]).expiresAt == "2027-01-31T00:00:00.000Z")
        // A revocation (seq 4) ends what was added before it, whatever its dates; an item added
        // after it counts, even one bought before it (a purchase redeemed late).
        let revoke = EntitlementItem(seq: 4, kind: .revoke, startsAt: "2027-01-20T00:00:00.000Z", purchaseSeq: nil, active: true)
        #expect(try EntitlementRules.fold([first, second, revoke]) == .none)
        let lateRedeemed = try Self.pass(5, "2027-01-15T00:00:00.000Z")
        #expect(try EntitlementRules.fold([first, second, revoke, lateRedeemed]).expiresAt == "2027-02-14T00:00:00.000Z")
        let forever = EntitlementItem(seq: 3, kind: .forever, startsAt: "2027-01-02T00:00:00.000Z", purchaseSeq: 3, active: true)
        let owned = try EntitlementRules.fold([forever, first])
        #expect(owned.forever && owned.isActive(at: "2999-01-01T00:00:00.000Z"))
        #expect(try EntitlementRules.fold([forever, revoke]) == .none)
        // Periods that start together are laid shortest first, whichever was redeemed first: a
        // month and 30 days from January 31 do not commute.
        let month = try Self.pass(1, "2026-01-31T10:00:00.000Z", "P1M")
        let thirty = try Self.pass(2, "2026-01-31T10:00:00.000Z", "P30D")
        var monthLater = month
        monthLater.seq = 3
        #expect(try EntitlementRules.fold([month, thirty]) == EntitlementRules.fold([thirty, monthLater]))
        #expect(try EntitlementRules.fold([month, thirty]).expiresAt == "2026-04-02T10:00:00.000Z")
        #expect(try EntitlementRules.fold([first]).isActive(at: "2027-01-30T23:59:59.999Z"))
        #expect(try !EntitlementRules.fold([first]).isActive(at: "2027-01-31T00:00:00.000Z"))
    }

    @Test("for any purchases, every order of redemption folds to the same end, never earlier than the last purchase's own period and never later than their periods laid end to end from the latest purchase (200 seeds)")
    func foldIsOrderIndependent() throws {
        var generator = SeededRandom(seed: 2_500)
        let base = try #require(Timestamp.milliseconds(rfc3339: Array("2027-01-01T00:00:00.000Z".utf8)))
        // A few starts, so that purchases often start at the same instant.
        let starts = (0..<6).map { _ in Timestamp.format(milliseconds: base + Int64.random(in: 0...(200 * 86_400_000), using: &generator)) }
        for seed in 0..<200 {
            let count = Int.random(in: 1...5, using: &generator)
            var items: [EntitlementItem] = []
            for index in 0..<count {
                let start = starts.randomElement(using: &generator) ?? starts[0]
                let period = ["P7D", "P30D", "P1M", "P3M", "P1Y"].randomElement(using: &generator) ?? "P30D"
                items.append(try Self.pass(Int64(index + 1), start, period, active: Bool.random(using: &generator) || index == 0))
            }
            let expected = try EntitlementRules.fold(items)
            for _ in 0..<6 {
                // Redeemed in another order: each item takes the seq of its place in that order.
                var redeemed = items.shuffled(using: &generator)
                for index in redeemed.indices { redeemed[index].seq = Int64(index + 1) }
                #expect(try EntitlementRules.fold(redeemed) == expected, "seed \(seed)")
            }
            let active = items.filter(\.active)
            let latest = try #require(active.max { $0.startsAt < $1.startsAt })
            let end = try #require(expected.expiresAt)
            #expect(end >= (latest.period?.end(from: latest.startsAt) ?? ""), "seed \(seed)")
            // Never more than every period laid end to end from the latest purchase (the fold
            // is monotone in each start, and no start is later than that).
            var laidEnd = latest.startsAt
            for item in active.sorted(by: { ($0.startsAt, $0.period?.months ?? 0, $0.period?.days ?? 0) < ($1.startsAt, $1.period?.months ?? 0, $1.period?.days ?? 0) }) {
                laidEnd = try #require(item.period?.end(from: laidEnd))
            }
            #expect(end <= laidEnd, "seed \(seed)")
        }
    }

    @Test("the catalog refuses what a type cannot be: a consumable with an entitlement or without credits, a non-consumable with a duration, a pass without one, a bad name")
    func catalogRules() throws {
        let vip = try EntitlementName("vip")
        let refused: [ProductUpdate] = [
            ProductUpdate(productID: "a", credits: 5, entitlement: vip),
            ProductUpdate(productID: "a", credits: 0),
            ProductUpdate(productID: "a", credits: 0, type: .nonConsumable),
            ProductUpdate(productID: "a", credits: 0, type: .nonConsumable, entitlement: vip, duration: try PassDuration("P30D")),
            ProductUpdate(productID: "a", credits: 0, type: .nonRenewing, entitlement: vip),
            ProductUpdate(productID: "a", credits: -1, type: .nonRenewing, entitlement: vip, duration: try PassDuration("P30D")),
        ]
        for update in refused { #expect(throws: WalletError.self, "\(update)") { try update.validate() } }
        try ProductUpdate(productID: "a", credits: 0, type: .nonConsumable, entitlement: vip).validate()
        try ProductUpdate(productID: "a", credits: 100, type: .nonRenewing, entitlement: vip, duration: try PassDuration("P3M")).validate()
        for name in ["", "VIP", "_vip", "vip pass", "v\u{0131}p", String(repeating: "a", count: 65), "vip\u{200B}"] {
            #expect(throws: WalletError.self, "\(name)") { try EntitlementName(name) }
        }
        #expect(try EntitlementName("comic_pack_1.v-2").text == "comic_pack_1.v-2")
    }

    // MARK: - On both stores

    static let noAds = "com.example.noads"
    static let starter = "com.example.starterpack"
    static let vipPass = "com.example.vip30"

    static func ledger(_ backend: TestBackend, clock: TestClock? = nil) async throws -> TestLedger {
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let store = ledger.store
        _ = try await store.setProduct(ProductUpdate(productID: noAds, credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        _ = try await store.setProduct(ProductUpdate(productID: starter, credits: 100, type: .nonConsumable, entitlement: try EntitlementName("starter")))
        _ = try await store.setProduct(
            ProductUpdate(productID: vipPass, credits: 0, type: .nonRenewing, entitlement: try EntitlementName("vip"), duration: try PassDuration("P30D")))
        return ledger
    }

    static func buy(
        _ ledger: TestLedger, _ player: PlayerID, _ transactionID: String, _ product: String, at purchasedAt: String? = nil, type: ProductType? = nil, quantity: Int64 = 1
    ) async throws -> MutationResult {
        try await ledger.store.grant(
            GrantRequest(
                playerID: player, store: "apple", storeTransactionID: transactionID, productID: product, quantity: quantity, actor: "test", productType: type,
                purchasedAt: purchasedAt))
    }

    @Test("a non-consumable grants its entitlement for ever and no credits; a re-delivery grants nothing more and answers today's state; the catalog lists the type", arguments: TestBackend.all)
    func nonConsumable(backend: TestBackend) async throws {
        let ledger = try await Self.ledger(backend)
        let store = ledger.store
        let first = try await Self.buy(ledger, "p1", "O1", Self.noAds, type: .nonConsumable)
        #expect(first.transaction.kind == .purchase && first.transaction.amount == 0 && first.balance == 0)
        #expect(first.entitlement == Entitlement(name: "no_ads", state: EntitlementState(forever: true, expiresAt: nil), at: "2000-01-01T00:00:00.000Z", items: nil))
        let again = try await Self.buy(ledger, "p1", "O1", Self.noAds, type: .nonConsumable)
        #expect(again.replayed && again.transaction.seq == first.transaction.seq && again.entitlement?.active == true)
        let listed = try await store.entitlements(playerID: "p1")
        #expect(listed.entitlements.map(\.name) == ["no_ads"])
        #expect(listed.entitlements.first?.items?.map(\.change) == [.purchase])
        #expect(listed.entitlements.first?.items?.first?.storeTransactionID == "O1")
        #expect(try await store.entitlement(playerID: "p1", name: EntitlementName("no_ads")).active)
        // Never owned: not active, no end; the other player has nothing.
        let none = try await store.entitlement(playerID: "p2", name: EntitlementName("no_ads"))
        #expect(!none.active && !none.forever && none.expiresAt == nil)
        #expect(try await store.entitlements(playerID: "p2").entitlements.isEmpty)
        // Another player redeeming the same purchase is refused; nothing changes.
        let stolen = await walletError { _ = try await Self.buy(ledger, "p2", "O1", Self.noAds, type: .nonConsumable) }
        #expect(stolen?.code == "idempotency_key_reused")
        #expect(try await store.entitlements(playerID: "p2").entitlements.isEmpty)
        let product = try await store.products().first { $0.productID == Self.noAds }
        #expect(product?.type == .nonConsumable && product?.entitlement == "no_ads" && product?.credits == 0)
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
    }

    @Test("a store that names another type than the catalog, sells a non-consumable or a pass by more than one, or dates it in the future, is refused and nothing is written; auto-renewables are refused in their own words", arguments: TestBackend.all)
    func refusedPurchases(backend: TestBackend) async throws {
        let ledger = try await Self.ledger(backend)
        let head = try await ledger.store.head()
        let mismatch = await walletError { _ = try await Self.buy(ledger, "p1", "T1", Self.noAds, type: .consumable) }
        #expect(mismatch?.code == "purchase_invalid" && mismatch?.detail.contains("non_consumable") == true)
        let consumable = await walletError { _ = try await Self.buy(ledger, "p1", "T2", "com.example.consume5credits", type: .nonRenewing) }
        #expect(consumable?.code == "purchase_invalid")
        let many = await walletError { _ = try await Self.buy(ledger, "p1", "T3", Self.vipPass, quantity: 2) }
        #expect(many?.code == "purchase_invalid" && many?.detail.contains("one at a time") == true)
        let future = await walletError { _ = try await Self.buy(ledger, "p1", "T4", Self.vipPass, at: "2999-01-01T00:00:00Z") }
        #expect(future?.code == "purchase_invalid" && future?.detail.contains("future") == true)
        #expect(try await ledger.store.head() == head)
        let renewable = #expect(throws: WalletError.self) { try ProductType(appleType: "Auto-Renewable Subscription") }
        #expect(renewable?.code == "purchase_invalid" && renewable?.detail.contains("auto-renewable") == true)
    }

    @Test("pass purchases give the same end in every order of redemption; a refund of the middle one ends the pass without its period, its reversal brings it back; time passing ends it", arguments: TestBackend.all)
    func passes(backend: TestBackend) async throws {
        // Dates as stores send them: any RFC 3339 form, kept in the ledger's.
        let dates = ["2027-01-01T00:00:00Z", "2027-01-11T01:00:00+01:00", "2027-02-20T00:00:00.000Z"]
        var ends: Set<String> = []
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let clock = TestClock("2027-03-01T00:00:00Z")
            let ledger = try await Self.ledger(backend, clock: clock)
            for index in order { _ = try await Self.buy(ledger, "p1", "V\(index)", Self.vipPass, at: dates[index]) }
            let vip = try await ledger.store.entitlement(playerID: "p1", name: EntitlementName("vip"))
            ends.insert(vip.expiresAt ?? "none")
            #expect(vip.active && !vip.forever)
            #expect(try await ledger.store.verify().ok)
        }
        // 01-01 + 30 days; 01-11 bought during it, so 30 more from 01-31; 02-20 during that, 30 more from 03-02.
        #expect(ends == ["2027-04-01T00:00:00.000Z"])

        let clock = TestClock("2027-03-01T00:00:00Z")
        let ledger = try await Self.ledger(backend, clock: clock)
        for (index, date) in dates.enumerated() { _ = try await Self.buy(ledger, "p1", "V\(index)", Self.vipPass, at: date) }
        let store = ledger.store
        let refund = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "V1", actor: "support"))
        #expect(refund.transaction.kind == .entitlement && refund.entitlement?.expiresAt == "2027-03-22T00:00:00.000Z")
        // The same refund again (a retry after a timeout) answers the first, changing nothing.
        let twice = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "V1", actor: "support"))
        #expect(twice.replayed && twice.transaction.seq == refund.transaction.seq)
        let reversed = try await store.recordNotification(
            StoreNotification(notificationUUID: "n1", store: "apple", type: "REFUND_REVERSED", subtype: nil, storeTransactionID: "V1", effect: .refundReversal, reportedAt: 5, actor: "apple"))
        #expect(reversed.outcome == .refundReversed)
        #expect(try await store.entitlement(playerID: "p1", name: EntitlementName("vip")).expiresAt == "2027-04-01T00:00:00.000Z")
        let nothing = try await store.recordNotification(
            StoreNotification(notificationUUID: "n2", store: "apple", type: "REFUND_REVERSED", subtype: nil, storeTransactionID: "V1", effect: .refundReversal, reportedAt: 6, actor: "apple"))
        #expect(nothing.outcome == .noRefund)
        // Time passes: the pass ends at its end, to the millisecond.
        clock.set("2027-03-31T23:59:59Z")
        #expect(try await store.entitlement(playerID: "p1", name: EntitlementName("vip")).active)
        clock.set("2027-04-01T00:00:00Z")
        let ended = try await store.entitlement(playerID: "p1", name: EntitlementName("vip"))
        #expect(!ended.active && ended.expiresAt == "2027-04-01T00:00:00.000Z")
        // Bought again after it ended: 30 days from the new purchase.
        clock.set("2027-04-05T00:00:10Z")
        let renewed = try await Self.buy(ledger, "p1", "V9", Self.vipPass, at: "2027-04-05T00:00:00.000Z")
        #expect(renewed.entitlement?.expiresAt == "2027-05-05T00:00:00.000Z" && renewed.entitlement?.active == true)
        let history = try await store.history(HistoryQuery(playerID: "p1", kind: .entitlement))
        #expect(history.transactions.count == 6)
        #expect(history.transactions.allSatisfy { $0.amount == 0 && $0.postings.allSatisfy { $0.amount == 0 } })
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
    }

    @Test("a starter pack credits and grants: a refund takes back both, a second partial step only credits; the ledger verifies", arguments: TestBackend.all)
    func starterPack(backend: TestBackend) async throws {
        let ledger = try await Self.ledger(backend)
        let store = ledger.store
        let bought = try await Self.buy(ledger, "p1", "S1", Self.starter)
        #expect(bought.balance == 100 && bought.entitlement?.forever == true)
        let half = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "S1", shareMillipercent: 50_000, actor: "support"))
        #expect(half.transaction.kind == .refund && half.balance == 50)
        #expect(try await store.entitlement(playerID: "p1", name: EntitlementName("starter")).active == false)
        let rest = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "S1", actor: "support"))
        #expect(rest.balance == 0)
        #expect(try await store.verify().ok)
    }

    @Test("support grants for ever or for a period, extends by days and revokes, each once under its key; the player's view hides the reason code; another request under the key is refused", arguments: TestBackend.all)
    func supportChanges(backend: TestBackend) async throws {
        let clock = TestClock("2027-01-01T00:00:00Z")
        let ledger = try await Self.ledger(backend, clock: clock)
        let store = ledger.store
        let vip = try EntitlementName("vip")
        func change(_ action: EntitlementChangeRequest.Action, key: String, note: String = "outage") -> EntitlementChangeRequest {
            EntitlementChangeRequest(playerID: "p1", entitlement: vip, action: action, reasonCode: "goodwill", note: note, ticket: "T-1", idempotencyKey: key, actor: "key:support")
        }
        _ = try await Self.buy(ledger, "p1", "V1", Self.vipPass, at: "2026-12-20T00:00:00.000Z")
        let extended = try await store.changeEntitlement(change(.extend(days: 3), key: "e1"))
        #expect(extended.entitlement.expiresAt == "2027-01-22T00:00:00.000Z" && !extended.replayed)
        let replay = try await store.changeEntitlement(change(.extend(days: 3), key: "e1"))
        #expect(replay.replayed && replay.transaction.seq == extended.transaction.seq && replay.entitlement.expiresAt == "2027-01-22T00:00:00.000Z")
        let reused = await walletError { _ = try await store.changeEntitlement(change(.extend(days: 4), key: "e1")) }
        #expect(reused?.code == "idempotency_key_reused")
        clock.set("2027-01-05T00:00:00Z")
        let revoked = try await store.changeEntitlement(change(.revoke, key: "r1", note: "chargeback fraud"))
        #expect(!revoked.entitlement.active && revoked.entitlement.expiresAt == nil)
        // A pass bought before the revocation but redeemed after it counts: the player paid for it.
        let late = try await Self.buy(ledger, "p1", "V2", Self.vipPass, at: "2027-01-04T00:00:00.000Z")
        #expect(late.entitlement?.expiresAt == "2027-02-03T00:00:00.000Z" && late.entitlement?.active == true)
        clock.set("2027-01-06T00:00:00Z")
        let granted = try await store.changeEntitlement(change(.grant(try PassDuration("P7D")), key: "g1"))
        #expect(granted.entitlement.active && granted.entitlement.expiresAt == "2027-02-10T00:00:00.000Z")
        let forever = try await store.changeEntitlement(change(.grant(nil), key: "g2"))
        #expect(forever.entitlement.forever && forever.entitlement.active)
        let bad = await walletError { _ = try await store.changeEntitlement(change(.extend(days: 0), key: "e2")) }
        #expect(bad?.code == "invalid_request")
        // What support wrote: staff see the reason code, note and ticket; the player sees the change.
        let staff = try WalletJSON.text(revoked.transaction, for: .staff)
        let player = try WalletJSON.text(revoked.transaction, for: .player)
        #expect(staff.contains("goodwill") && staff.contains("chargeback fraud") && staff.contains("T-1"))
        #expect(!player.contains("goodwill") && !player.contains("chargeback") && !player.contains("T-1") && player.contains("\"change\":\"revoke\""))
        let items = try await store.entitlements(playerID: "p1").entitlements.first?.items?.map(\.change)
        #expect(items == [.purchase, .extend, .revoke, .purchase, .grant, .grant])
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
    }

    @Test("verify refolds entitlements: a stored state or item that differs from its entries is reported at its seq, and so is a state no entry made", arguments: TestBackend.all)
    func verifyCatchesTampering(backend: TestBackend) async throws {
        let ledger = try await Self.ledger(backend, clock: TestClock("2027-01-02T00:00:00Z"))
        let store = ledger.store
        let bought = try await Self.buy(ledger, "p1", "V1", Self.vipPass, at: "2027-01-01T00:00:00.000Z")
        _ = try await Self.buy(ledger, "p1", "O1", Self.noAds)
        #expect(try await store.verify().ok)
        // The table says the pass lasts a year longer.
        _ = try await store.write { db, _, _ in try db.execute("UPDATE entitlements SET expires_at = '2028-01-31T00:00:00.000Z' WHERE name = 'vip'") }
        let report = try await store.verify()
        #expect(!report.ok && report.firstBadSeq == bought.transaction.seq + 1, "\(report)")
        #expect(report.problem?.contains("vip") == true)
        _ = try await store.write { db, _, _ in try db.execute("UPDATE entitlements SET expires_at = '2027-01-31T00:00:00.000Z' WHERE name = 'vip'") }
        #expect(try await store.verify().ok)
        // An item made longer, or a refunded purchase made to count again, in the items table.
        for tampering in ["UPDATE entitlement_items SET period = 'P10Y' WHERE name = 'vip'", "UPDATE entitlement_items SET kind = 'forever', period = NULL WHERE name = 'vip'"] {
            let original = try await store.read { db in
                try db.first("SELECT kind, period FROM entitlement_items WHERE name = 'vip'") { row in (try row.text(0), try row.textOrNil(1)) }
            }
            _ = try await store.write { db, _, _ in try db.execute(tampering) }
            let tampered = try await store.verify()
            #expect(!tampered.ok && tampered.firstBadSeq == bought.transaction.seq + 1 && tampered.problem?.contains("item") == true, "\(tampered)")
            _ = try await store.write { db, _, _ in
                try db.execute("UPDATE entitlement_items SET kind = ?, period = ? WHERE name = 'vip'", [.text(original?.0 ?? ""), .text(original?.1)])
            }
            #expect(try await store.verify().ok)
        }
        // An item the entries made, gone from the table.
        _ = try await store.write { db, _, _ in
            try db.execute("CREATE TABLE kept_items AS SELECT * FROM entitlement_items WHERE name = 'no_ads'")
            try db.execute("DELETE FROM entitlement_items WHERE name = 'no_ads'")
        }
        let missing = try await store.verify()
        #expect(!missing.ok && missing.problem?.contains("is not stored") == true, "\(missing)")
        _ = try await store.write { db, _, _ in
            try db.execute("INSERT INTO entitlement_items SELECT * FROM kept_items")
            try db.execute("DROP TABLE kept_items")
        }
        #expect(try await store.verify().ok)
        // A stored state nobody's entries made.
        _ = try await store.write { db, _, _ in
            try db.execute("INSERT INTO entitlements (player_id, name, forever, expires_at, updated_seq) VALUES ('p9', 'vip', 1, NULL, 1)")
        }
        let invented = try await store.verify()
        #expect(!invented.ok && invented.problem?.contains("no ledger entry") == true, "\(invented)")
    }

    @Test("an entry whose recorded state disagrees with its items fails the chain's fold even with a valid hash")
    func checkerRefolds() throws {
        var checker = EntitlementChecker()
        func entry(_ seq: Int64, _ entry: EntitlementEntry) throws -> LedgerTransaction {
            var transaction = LedgerTransaction(draftOf: .entitlement, playerID: "p1", currency: defaultCurrency, amount: 0, actor: "t")
            transaction.seq = seq
            transaction.metadata = try entry.metadata()
            transaction.postings = [Posting(account: "@entitlements", currency: "credits", amount: 0, balanceAfter: 0), Posting(account: "player:p1", currency: "credits", amount: 0, balanceAfter: 0)]
            return transaction
        }
        let start = "2027-01-01T00:00:00.000Z"
        #expect(checker.check(try entry(1, EntitlementEntry(name: "vip", change: .purchase, startsAt: start, period: "P30D", purchaseSeq: 9, state: EntitlementState(forever: false, expiresAt: "2027-01-31T00:00:00.000Z")))) == nil)
        // A second purchase claiming a year instead of 30 days more.
        let problem = checker.check(try entry(2, EntitlementEntry(name: "vip", change: .purchase, startsAt: start, period: "P30D", purchaseSeq: 10, state: EntitlementState(forever: false, expiresAt: "2028-01-31T00:00:00.000Z"))))
        #expect(problem?.contains("fold") == true)
        // A refund of an item that does not exist.
        #expect(checker.check(try entry(3, EntitlementEntry(name: "vip", change: .refund, itemSeq: 77, state: .none))) != nil)
        // An entitlement entry that moves credits.
        var moving = try entry(4, EntitlementEntry(name: "vip", change: .grant, startsAt: start, state: EntitlementState(forever: true, expiresAt: nil)))
        moving.amount = 5
        #expect(checker.check(moving) != nil)
    }

    // SQLite only: the SQLite file's upgrade; PostgresStoreTests.migrationFrom5 upgrades PostgreSQL's.
    @Test("a version 7 database is upgraded: its catalog kept as consumables, entitlement tables added, and an entitlement product sold afterwards; the ledger verifies")
    func upgradeFrom7() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try SchemaTests.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        let products = try await ledger.store.products()
        try await ledger.rawConnection().write { db in try SchemaTests.makeVersion7(db) }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try SchemaTests.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        let kept = try await upgraded.products()
        #expect(kept.map(\.productID) == products.map(\.productID) && kept.allSatisfy { $0.type == .consumable })
        _ = try await upgraded.setProduct(ProductUpdate(productID: Self.noAds, credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        let bought = try await upgraded.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "O1", productID: Self.noAds, actor: "t"))
        #expect(bought.entitlement?.forever == true)
        #expect(try await upgraded.verify().ok)
    }
}
