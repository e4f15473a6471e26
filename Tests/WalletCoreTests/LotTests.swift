import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Lots kept by the ledger's writes, on both stores: credits make lots, debits draw in burn
/// order and record their breakdown, refunds take their purchase's lot first, debts are repaid
/// before a new lot is made, and verify holds the lots to the balances.
@Suite("Credit lots in the ledger", .throttled)
struct LotTests {
    /// `category amount remaining` of the player's lots, oldest first.
    static func lots(_ ledger: TestLedger, _ player: String, _ currency: String = "credits") async throws -> [String] {
        try await ledger.store.read { db in
            try db.all(
                """
                SELECT l.category, l.amount, l.remaining FROM lots l JOIN accounts a ON a.id = l.account_id
                WHERE a.owner = ? AND a.currency = ? ORDER BY l.id
                """, [.text("player:\(player)"), .text(currency)]
            ) { row in "\(try row.text(0)) \(try row.integer(1)) \(try row.integer(2))" }
        }
    }

    /// The breakdown of transaction `seq`: `lot category amount`, in the order drawn.
    static func draws(_ ledger: TestLedger, seq: Int64) async throws -> [String] {
        try await ledger.store.read { db in
            try db.all(
                "SELECT l.category, d.amount FROM lot_draws d JOIN lots l ON l.id = d.lot_id WHERE d.seq = ? ORDER BY l.id", [.integer(seq)]
            ) { row in "\(try row.text(0)) \(try row.integer(1))" }
        }
    }

    @Test("a purchase and a support credit are lots; a spend draws the free credits first and records which", arguments: TestBackend.all)
    func creditsAndSpends(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 3, reasonCode: "goodwill", note: "n", idempotencyKey: "a1", actor: "s"))
        let spend = try await ledger.spend("p1", 4, key: "s1")
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 4", "adjustment 3 0"])
        #expect(try await Self.draws(ledger, seq: spend.transaction.seq) == ["paid 1", "adjustment 3"])
        // A replay draws nothing more.
        _ = try await ledger.spend("p1", 4, key: "s1")
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 4", "adjustment 3 0"])
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a refund takes its purchase's lot first, then the other lots; what was spent of it follows the policy", arguments: TestBackend.all)
    func refundAfterPartialSpend(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.grant("p1", "T2")
        try await ledger.spend("p1", 3, key: "s1")
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 2", "paid 5 5"], "the oldest purchase is spent first")
        let refund = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 100, policy: .debt, actor: "s"))
        #expect(try await Self.draws(ledger, seq: refund.transaction.seq) == ["paid 2", "paid 3"])
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 0", "paid 5 2"] && refund.balance == 2)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a debt is repaid by the next credit before a lot is made", arguments: TestBackend.all)
    func debtFirst(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 5, key: "s1")
        let refund = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 100, policy: .debt, actor: "s"))
        #expect(refund.balance == -5)
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 0"])
        try await ledger.grant("p1", "T2", quantity: 2)
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 0", "paid 5 5"], "10 credited: 5 repaid the debt, 5 became a lot")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: -8, reasonCode: "chargeback", note: "n", idempotencyKey: "a1", allowNegative: true, actor: "s"))
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 0", "paid 5 0"], "a debit allowed below zero empties the lots and leaves the rest as debt")
        #expect(try await ledger.balance("p1") == -3)
        #expect(try await ledger.store.verify().ok)
    }

    // SQLite only: the lots are edited in the file through a raw connection.
    @Test("verify names a lot that disagrees with its draws, and a wallet whose lots do not add up to its balance")
    func verifyChecksLots() async throws {
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 2, key: "s1")
        try await ledger.rawConnection().write { db in try db.execute(sql: "UPDATE lots SET remaining = 4") }
        var report = try await ledger.store.verify()
        #expect(!report.ok && report.firstBadSeq == 2 && report.problem?.contains("lot 1 keeps 4 of its 5, but its draws leave 3") == true, "\(report)")
        try await ledger.rawConnection().write { db in try db.execute(sql: "UPDATE lots SET amount = 6, remaining = 4") }
        report = try await ledger.store.verify()
        #expect(!report.ok && report.problem?.contains("hold 4 but its balance is 3") == true, "\(report)")
    }

    @Test("bonuses are lots that may expire; an expired lot is never drawn, even before its expiry is booked, and a debit books it first", arguments: TestBackend.all)
    func bonusesExpire(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1")
        let daily = BonusRequest(playerID: "p1", amount: 3, expiresAt: "2026-11-23T00:00:00Z", reasonCode: "daily_login", campaign: "november", idempotencyKey: "b1", actor: "game")
        let bonus = try await ledger.store.bonus(daily)
        #expect(bonus.transaction.kind == .bonus && bonus.balance == 8 && bonus.transaction.reasonCode == "daily_login")
        #expect(bonus.transaction.metadata?.canonicalText == #"{"campaign":"november","expires_at":"2026-11-23T00:00:00.000Z"}"#)
        #expect(try await ledger.store.bonus(daily).replayed)
        var changed = daily
        changed.amount = 4
        let reused = await walletError { _ = try await ledger.store.bonus(changed) }
        #expect(reused?.code == "idempotency_key_reused")
        _ = try await ledger.store.bonus(BonusRequest(playerID: "p1", amount: 2, reasonCode: "compensation", idempotencyKey: "b2", actor: "support"))
        #expect(try await Self.lots(ledger, "p1") == ["paid 5 5", "bonus 3 3", "bonus 2 2"])

        // Before expiry: the expiring bonus goes first, then the other free credits, the purchase last.
        let spend = try await ledger.spend("p1", 4, key: "s1")
        #expect(try await Self.draws(ledger, seq: spend.transaction.seq) == ["bonus 3", "bonus 1"])

        // Another expiring bonus, then its expiry passes with nothing booked yet.
        _ = try await ledger.store.bonus(BonusRequest(playerID: "p1", amount: 10, expiresAt: "2026-11-22T18:00:00Z", reasonCode: "event", idempotencyKey: "b3", actor: "game"))
        clock.set("2026-11-22T18:00:00Z")
        #expect(try await ledger.balance("p1") == 6, "the balance answers what a spend can use: not the expired lot, although its expiry is not booked yet")
        let tooMuch = await walletError { _ = try await ledger.spend("p1", 7, key: "s2") }
        #expect(tooMuch == .insufficientFunds(balance: 6, currency: "credits"), "only 6 are spendable")
        let refused = try await ledger.store.history(HistoryQuery(playerID: "p1", limit: 1))
        #expect(refused.transactions.map(\.kind) == [.bonus], "a refused spend books nothing, not even the expiry")
        let spent = try await ledger.spend("p1", 6, key: "s3")
        #expect(spent.balance == 0)
        let history = try await ledger.store.history(HistoryQuery(playerID: "p1", limit: 3))
        #expect(history.transactions.map(\.kind) == [.spend, .expiry, .bonus])
        #expect(history.transactions[1].amount == -10 && history.transactions[1].postings.contains { $0.account == "@expired" && $0.amount == 10 })
        #expect(try await ledger.store.verify().ok)
    }

    @Test("the sweep books every expired lot once; a bonus cannot expire in the past; only bonus lots may expire", arguments: TestBackend.all)
    func sweep(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        for (player, expiry): (PlayerID, String) in [("p1", "2026-11-22T13:00:00Z"), ("p2", "2026-11-22T14:00:00Z"), ("p3", "2026-12-01T00:00:00Z")] {
            _ = try await ledger.store.bonus(BonusRequest(playerID: player, amount: 5, expiresAt: expiry, reasonCode: "event", idempotencyKey: "b", actor: "game"))
        }
        let past = await walletError {
            _ = try await ledger.store.bonus(BonusRequest(playerID: "p1", amount: 5, expiresAt: "2026-11-22T11:59:59Z", reasonCode: "event", idempotencyKey: "late", actor: "game"))
        }
        #expect(past?.code == "invalid_request" && past?.detail.contains("future") == true)
        clock.set("2026-11-22T15:00:00Z")
        #expect(try await ledger.store.expireLots(limit: 1) == 1)
        #expect(try await ledger.store.expireLots(limit: 100) == 1)
        #expect(try await ledger.store.expireLots(limit: 100) == 0)
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.balance("p2") == 0)
        #expect(try await ledger.balance("p3") == 5)
        #expect(try await ledger.store.verify().ok)
        // The schema itself refuses an expiring purchase lot.
        let refused = await walletError {
            _ = try await ledger.store.write { db, _, _ in
                try db.execute("INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq) VALUES (1, 'paid', 1, 1, '2026-11-22T12:00:00.000Z', '2026-12-01T00:00:00.000Z', 1)")
            }
        }
        #expect(refused != nil)
    }
}

