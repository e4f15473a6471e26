import GRDB
import Testing
@testable import WalletCore
import WalletTestSupport

@Suite("Concurrency: one effect per key", .throttled)
struct ConcurrencyTests {
    @Test("many tasks spending with one key debit once", arguments: TestBackend.all)
    func oneKey(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", quantity: 10)
        let results = try await withThrowingTaskGroup(of: MutationResult.self) { group in
            for _ in 0..<32 { group.addTask { try await ledger.spend("p1", 3, key: "same") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { !$0.replayed }.count == 1)
        #expect(Set(results.map(\.transaction.id)).count == 1)
        #expect(results.allSatisfy { $0.balance == 47 })
        #expect(try await ledger.balance("p1") == 47)
    }

    @Test("many tasks with distinct keys all apply, and never overdraw", arguments: TestBackend.all)
    func distinctKeys(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", quantity: 6)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<40 { group.addTask { (try? await ledger.spend("p1", 1, key: "k\(index)")) != nil } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 30)
        #expect(try await ledger.balance("p1") == 0)
        let report = try await ledger.store.verify()
        #expect(report.ok && report.transactions == 31)
    }
}

@Suite("History", .throttled)
struct HistoryTests {
    @Test("pages go newest first and the cursor reaches every transaction once", arguments: TestBackend.all)
    func pagination(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", quantity: 10)
        try await ledger.grant("p2", "T2")
        for index in 0..<6 { try await ledger.spend("p1", 1, key: "k\(index)") }
        var seen: [Int64] = []
        var after: Int64? = nil
        repeat {
            let page = try await ledger.store.history(HistoryQuery(playerID: "p1", limit: 3, after: after))
            #expect(page.transactions.count <= 3)
            seen += page.transactions.map(\.seq)
            after = page.next
        } while after != nil
        #expect(seen == [8, 7, 6, 5, 4, 3, 1])
        let spends = try await ledger.store.history(HistoryQuery(playerID: "p1", kind: .purchase))
        #expect(spends.transactions.map(\.seq) == [1] && spends.next == nil)
        #expect(try await ledger.store.history(HistoryQuery(playerID: "nobody")).transactions.isEmpty)
    }

    @Test("history filters by time, [from, to)", arguments: TestBackend.all)
    func timeFilter(_ backend: TestBackend) async throws {
        let clock = TestClock("2026-10-01T10:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1", quantity: 4)
        clock.set("2026-10-02T10:00:00Z")
        try await ledger.spend("p1", 1, key: "k1")
        clock.set("2026-10-03T10:00:00Z")
        try await ledger.spend("p1", 1, key: "k2")
        let middle = try await ledger.store.history(HistoryQuery(playerID: "p1", from: "2026-10-02T00:00:00Z", to: "2026-10-03T00:00:00Z"))
        #expect(middle.transactions.map(\.seq) == [2])
        let since = try await ledger.store.history(HistoryQuery(playerID: "p1", from: "2026-10-02T10:00:00+00:00"))
        #expect(since.transactions.map(\.seq) == [3, 2])
        for query in [HistoryQuery(playerID: "p1", from: "tomorrow"), HistoryQuery(playerID: "p1", from: "2026-10-03T00:00:00Z", to: "2026-10-02T00:00:00Z")] {
            #expect(await walletError { _ = try await ledger.store.history(query) }?.code == "invalid_request")
        }
    }

    @Test("page limits are enforced", arguments: TestBackend.all)
    func limits(backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        for query in [
            HistoryQuery(playerID: "p1", limit: 0), HistoryQuery(playerID: "p1", limit: Limits.pageSizeMax + 1),
            HistoryQuery(playerID: "p1", after: 0),
        ] {
            #expect(await walletError { _ = try await ledger.store.history(query) }?.code == "invalid_request")
        }
        // A variable, not a literal: `PlayerID("")` would be the tests' literal conversion.
        let empty = ""
        let emptyPlayer = await walletError { _ = try await ledger.store.history(HistoryQuery(playerID: PlayerID(empty))) }
        #expect(emptyPlayer?.code == "invalid_request")
        #expect(try await ledger.store.history(HistoryQuery(playerID: "p1", limit: Limits.pageSizeMax)).transactions.isEmpty)
    }
}

@Suite("Verify: recomputes the ledger and names the first bad seq", .throttled)
struct VerifyTests {
    /// Six transactions of every kind, then a tamper through a raw connection with the
    /// append-only triggers dropped, as someone with file access could.
    // SQLite only: the tamper edits the file through a raw connection, its triggers dropped.
    func tampered(_ sql: String) async throws -> VerifyReport {
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 4)
        try await ledger.spend("p1", 3, key: "k1")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 2, reasonCode: "goodwill", note: "n", idempotencyKey: "a1", actor: "alice"))
        try await ledger.grant("p2", "T2", product: "com.example.gems10")
        _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", shareMillipercent: 50_000, actor: "s"))
        try await ledger.spend("p1", 1, key: "k2")
        let before = try await ledger.store.verify()
        #expect(before.ok && before.transactions == 6 && before.firstBadSeq == nil)
        try await ledger.rawConnection().write { db in
            for trigger in ["transactions_append_only_update", "transactions_append_only_delete", "postings_append_only_update", "postings_append_only_delete", "transactions_gap_free"] {
                try db.execute(sql: "DROP TRIGGER \(trigger)")
            }
            try db.execute(sql: sql)
        }
        return try await ledger.store.verify()
    }

    @Test("an untouched ledger verifies, with the head hash of its last transaction")
    func untouched() async throws {
        let report = try await tampered("SELECT 1")
        #expect(report.ok && report.problem == nil && report.headHash.count == 64)
    }

    @Test("an empty ledger verifies at genesis", arguments: TestBackend.all)
    func empty(_ backend: TestBackend) async throws {
        let report = try await TestLedger(backend).store.verify()
        #expect(report == VerifyReport(ok: true, transactions: 0, headHash: HashChain.genesis, firstBadSeq: nil, problem: nil))
    }

    @Test("a stored seq at the top of Int64 is reported as a break in the chain, never trapped on or walked to")
    func hugeSeq() async throws {
        let report = try await tampered(
            "UPDATE postings SET seq = 9223372036854775807 WHERE seq = 6; UPDATE transactions SET seq = 9223372036854775807 WHERE seq = 6")
        #expect(!report.ok && report.transactions == 5, "\(report)")
    }

    @Test("tampering is caught at its seq", arguments: [
        ("UPDATE postings SET amount = amount * 2 WHERE seq = 2", Int64(2)),
        ("UPDATE transactions SET note = 'edited' WHERE seq = 3", 3),
        ("UPDATE transactions SET amount = 30 WHERE seq = 1", 1),
        ("UPDATE postings SET balance_after = 99 WHERE seq = 4", 4),
        ("DELETE FROM postings WHERE seq = 5 AND account_id = (SELECT id FROM accounts WHERE owner = '@refunds')", 5),
        ("UPDATE accounts SET balance = 1000 WHERE owner = 'player:p1'", 6),
        ("UPDATE accounts SET balance = 1000 WHERE owner = 'player:p2'", 4),
        ("DELETE FROM postings WHERE seq = 3; DELETE FROM transactions WHERE seq = 3", 3),
        // The last transaction cut off: the chain is intact up to 5, the balances are not.
        ("DELETE FROM postings WHERE seq = 6; DELETE FROM transactions WHERE seq = 6", 5),
        ("""
        UPDATE transactions SET seq = 100 WHERE seq = 5; UPDATE postings SET seq = 100 WHERE seq = 5;
        UPDATE transactions SET seq = 5 WHERE seq = 6; UPDATE postings SET seq = 5 WHERE seq = 6;
        UPDATE transactions SET seq = 6 WHERE seq = 100; UPDATE postings SET seq = 6 WHERE seq = 100
        """, 5),
        ("UPDATE transactions SET hash = (SELECT hash FROM transactions WHERE seq = 2), prev_hash = prev_hash WHERE seq = 99", 0),
    ])
    func tamper(_ sql: String, _ badSeq: Int64) async throws {
        let report = try await tampered(sql)
        if badSeq == 0 {
            #expect(report.ok)
        } else {
            #expect(!report.ok)
            #expect(report.firstBadSeq == badSeq, "\(report.problem ?? "")")
            #expect(report.problem != nil)
        }
    }
}

@Suite("Any sequence of operations keeps the ledger consistent", .throttled)
struct SequenceTests {
    @Test("400 random grants, spends, adjustments, refunds and replays, then verify", arguments: TestBackend.all, [UInt64(1), 2, 3])
    func randomSequence(_ backend: TestBackend, seed: UInt64) async throws {
        var random = SeededRandom(seed: seed)
        let ledger = try await TestLedger.withCatalog(backend)
        let players: [PlayerID] = ["p1", "p2", "p3"]
        var purchases: [String] = []
        var expected: [String: Int64] = [:]
        for step in 0..<400 {
            let player = players.randomElement(using: &random)!
            let currency = Bool.random(using: &random) ? "credits" : "gems"
            let result: MutationResult?
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                let transactionID = Bool.random(using: &random) && !purchases.isEmpty ? purchases.randomElement(using: &random)! : "T\(step)"
                let product = currency == "credits" ? "com.example.consume5credits" : "com.example.gems10"
                result = try? await ledger.grant(player, transactionID, product: product, quantity: Int64.random(in: 1...3, using: &random))
                if let result, !result.replayed { purchases.append(transactionID) }
            case 3..<7:
                result = try? await ledger.spend(player, Int64.random(in: 1...12, using: &random), key: "k\(Int.random(in: 0..<300, using: &random))", currency: currency)
            case 7..<9:
                result = try? await ledger.store.adjust(AdjustRequest(
                    playerID: player, amount: Int64.random(in: -8...8, using: &random) | 1, currency: currency, reasonCode: "test", note: "step \(step)",
                    idempotencyKey: "a\(step)", allowNegative: Bool.random(using: &random), actor: "t"))
            default:
                guard let transactionID = purchases.randomElement(using: &random) else { continue }
                result = try? await ledger.store.refund(RefundRequest(
                    store: "apple", storeTransactionID: transactionID, shareMillipercent: Int64.random(in: 1...100_000, using: &random),
                    policy: Bool.random(using: &random) ? .debt : .floor, actor: "t"))
            }
            if let result, !result.replayed {
                let account = "\(result.transaction.playerID)/\(result.transaction.currency)"
                expected[account, default: 0] += result.transaction.amount
                #expect(result.balance == expected[account], "step \(step): the reported balance follows the transactions")
            }
        }
        let report = try await ledger.store.verify()
        #expect(report.ok, "seed \(seed): \(report.problem ?? "")")
        for player in players {
            let balances = try await ledger.store.balances(playerID: player).balances
            for currency in ["credits", "gems"] {
                #expect((balances[currency] ?? 0) == (expected["\(player)/\(currency)"] ?? 0), "\(player) \(currency)")
            }
        }
    }
}
