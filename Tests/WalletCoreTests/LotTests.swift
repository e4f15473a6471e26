import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Lots kept by the ledger's writes, on both stores: credits make lots, debits draw in burn
/// order and record their breakdown, refunds take their purchase's lot first, debts are repaid
/// before a new lot is made, and verify holds the lots to the balances.
@Suite("Credit lots in the ledger")
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

    @Test("verify names a lot that disagrees with its draws, and a wallet whose lots do not add up to its balance")
    func verifyChecksLots() async throws {
        let ledger = try await TestLedger.withCatalog()
        try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 2, key: "s1")
        try await ledger.rawConnection().write { db in try db.execute(sql: "UPDATE lots SET remaining = 4") }
        var report = try await ledger.store.verify()
        #expect(!report.ok && report.firstBadSeq == 2 && report.problem?.contains("lot 1 keeps 4 of its 5, but its draws leave 3") == true, "\(report)")
        try await ledger.rawConnection().write { db in try db.execute(sql: "UPDATE lots SET amount = 6, remaining = 4") }
        report = try await ledger.store.verify()
        #expect(!report.ok && report.problem?.contains("hold 4 but its balance is 3") == true, "\(report)")
    }
}
