import Testing
@testable import WalletCore
import WalletTestSupport

@Suite("Adjustments by support", .throttled)
struct AdjustTests {
    func adjust(_ ledger: TestLedger, _ amount: Int64, key: String = "a1", allowNegative: Bool = false) async throws -> MutationResult {
        try await ledger.store.adjust(
            AdjustRequest(playerID: "p1", amount: amount, reasonCode: "goodwill", note: "sorry about the outage", ticket: "SUP-1", idempotencyKey: key, allowNegative: allowNegative, actor: "alice"))
    }

    @Test("an adjustment records who, why and which ticket", arguments: TestBackend.all)
    func credit(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let result = try await adjust(ledger, 10)
        #expect(result.balance == 10)
        let transaction = result.transaction
        #expect(transaction.kind == .adjustment && transaction.actor == "alice")
        #expect(transaction.reasonCode == "goodwill" && transaction.note == "sorry about the outage" && transaction.ticket == "SUP-1")
        #expect(transaction.postings.first?.account == "@adjustments")
        #expect(try await adjust(ledger, 10).replayed)
        #expect(await walletError { _ = try await adjust(ledger, 11) }?.code == "idempotency_key_reused")
    }

    @Test("a debit cannot go below zero unless allowed", arguments: TestBackend.all)
    func debit(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(await walletError { _ = try await adjust(ledger, -6) } == .insufficientFunds(balance: 5, currency: "credits"))
        #expect(try await adjust(ledger, -5, key: "a2").balance == 0)
        #expect(try await adjust(ledger, -3, key: "a3", allowNegative: true).balance == -3)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("required fields and limits are enforced", arguments: TestBackend.all, [
        AdjustRequest(playerID: "p1", amount: 0, reasonCode: "goodwill", note: "n", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: Int64.min, reasonCode: "goodwill", note: "n", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: Int64.max, reasonCode: "goodwill", note: "n", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "", note: "n", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "Good will", note: "n", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: "", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: "  \n ", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: String(repeating: "n", count: Limits.noteBytesMax + 1), idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: "n", ticket: "", idempotencyKey: "k", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: "n", idempotencyKey: "", actor: "alice"),
        AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: "n", idempotencyKey: "k", actor: ""),
        AdjustRequest(playerID: "p1", amount: 1, currency: "Credits", reasonCode: "goodwill", note: "n", idempotencyKey: "k", actor: "alice"),
    ])
    func invalid(_ backend: TestBackend, _ request: AdjustRequest) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { _ = try await ledger.store.adjust(request) }?.code == "invalid_request")
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("notes may hold commas, quotes and newlines", arguments: TestBackend.all)
    func hostileNote(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let note = "line one, \"quoted\"\nline two =cmd"
        let result = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: note, idempotencyKey: "k", actor: "alice"))
        #expect(result.transaction.note == note)
        #expect(try await ledger.store.verify().ok)
    }
}

@Suite("Refunds claw back a purchase", .throttled)
struct RefundTests {
    func refund(_ ledger: TestLedger, _ transactionID: String = "T1", percentage: Int64 = 100, policy: RefundPolicy = .debt) async throws -> MutationResult {
        try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: transactionID, percentage: percentage, policy: policy, actor: "store"))
    }

    @Test("a full refund takes back the whole purchase", arguments: TestBackend.all)
    func full(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let purchase = try await ledger.grant("p1", "T1", quantity: 2)
        let result = try await refund(ledger)
        #expect(result.balance == 0)
        #expect(result.transaction.kind == .refund && result.transaction.amount == -10)
        #expect(result.transaction.refundOfSeq == purchase.transaction.seq)
        #expect(result.transaction.postings.first?.account == "@refunds")
    }

    // SQLite only: the stored kind is edited in the file through a raw connection, its checks off.
    @Test("a stored correction of an unknown kind stops the refund as a corrupt ledger instead of being guessed at")
    func unreadableCorrection() async throws {
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        let first = try await refund(ledger, percentage: 50)
        try await ledger.rawConnection().write { db in
            try db.execute(sql: """
                DROP TRIGGER transactions_append_only_update;
                PRAGMA ignore_check_constraints = ON;
                UPDATE transactions SET kind = 'bogus' WHERE seq = \(first.transaction.seq);
                """)
        }
        let error = await walletError { _ = try await self.refund(ledger) }
        #expect(error?.code == "ledger_corrupt", "\(error?.detail ?? "")")
        #expect(try await ledger.balance("p1") == 5, "nothing more was taken")
    }

    @Test("a partial refund takes its share, rounded down", arguments: TestBackend.all)
    func partial(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(try await refund(ledger, percentage: 50).transaction.amount == -2)
        #expect(try await ledger.balance("p1") == 3)
    }

    @Test("a repeated refund is a replay; a smaller share after a full refund has nothing left to take", arguments: TestBackend.all)
    func repeated(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        let first = try await refund(ledger)
        let again = try await refund(ledger)
        #expect(again.replayed && again.transaction == first.transaction)
        #expect(await walletError { _ = try await refund(ledger, percentage: 50) }?.code == "already_refunded")
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.transactionCount() == 2)
    }

    @Test("debt policy: the balance goes negative and spending is refused until repaid", arguments: TestBackend.all)
    func debt(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 4, key: "k1")
        let result = try await refund(ledger)
        #expect(result.balance == -4)
        #expect(result.transaction.uncollected == 0)
        #expect(await walletError { try await ledger.spend("p1", 1, key: "k2") } == .insufficientFunds(balance: -4, currency: "credits"))
        try await ledger.grant("p1", "T2")
        #expect(await walletError { try await ledger.spend("p1", 2, key: "k2") }?.code == "insufficient_funds")
        #expect(try await ledger.spend("p1", 1, key: "k2").balance == 0)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("floor policy: the refund stops at zero and records the rest as uncollected", arguments: TestBackend.all)
    func floor(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 4, key: "k1")
        let result = try await refund(ledger, policy: .floor)
        #expect(result.balance == 0)
        #expect(result.transaction.amount == -1 && result.transaction.uncollected == 4)
        try await ledger.grant("p1", "T2")
        try await ledger.spend("p1", 5, key: "k2")
        let nothingLeft = try await refund(ledger, "T2", policy: .floor)
        #expect(nothingLeft.balance == 0 && nothingLeft.transaction.amount == 0 && nothingLeft.transaction.uncollected == 5)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("refunds of unknown purchases and bad shares are refused", arguments: TestBackend.all)
    func invalid(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(await walletError { _ = try await refund(ledger, "T404") }?.code == "not_found")
        #expect(await walletError { _ = try await ledger.store.refund(RefundRequest(store: "google", storeTransactionID: "T1", actor: "s")) }?.code == "not_found")
        for percentage: Int64 in [0, -1, 101, Int64.max] {
            #expect(await walletError { _ = try await refund(ledger, percentage: percentage) }?.code == "invalid_request")
        }
        for share: Int64 in [0, Limits.refundShareMax + 1] {
            #expect(await walletError { _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", shareMillipercent: share, actor: "s")) }?.code == "invalid_request")
        }
        #expect(try await ledger.balance("p1") == 5)
        // A refund of a non-purchase does not exist: spends carry no store transaction id.
        try await ledger.spend("p1", 1, key: "T2")
        #expect(await walletError { _ = try await refund(ledger, "T2") }?.code == "not_found")
    }
}

@Suite("Idempotency scopes per caller class", .throttled)
struct KeyScopeTests {
    @Test("a player's spend cannot occupy the key of a support adjustment, nor the reverse", arguments: TestBackend.all)
    func spendAndAdjustmentScopes(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "t1", quantity: 4)
        try await ledger.spend("p1", 1, key: "SUP-1240-1")
        let adjustment = try await ledger.store.adjust(
            AdjustRequest(playerID: "p1", amount: 7, reasonCode: "goodwill", note: "sorry", ticket: "SUP-1240", idempotencyKey: "SUP-1240-1", actor: "support"))
        #expect(!adjustment.replayed && adjustment.balance == 26)
        let spendAgain = try await ledger.spend("p1", 1, key: "SUP-1240-1")
        #expect(spendAgain.replayed)
        #expect(try await ledger.balance("p1") == 26)
        #expect(try await ledger.store.verify().ok)
    }
}
