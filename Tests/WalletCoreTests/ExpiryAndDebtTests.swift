import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Where lots, holds, expiry and refunds meet (issue 22): every credit takes one path (a debt
/// repaid first, then a lot, and a lot past its expiry books what comes back to it at once), a
/// debit settles its wallet first (expired holds released, expired lots booked), the sweep always
/// makes progress, and holds are resolved by the kind of caller that placed them. On both stores,
/// with a controlled clock; each test failed on the code before these rules.
@Suite("Expiry, holds and debt together", .throttled)
struct ExpiryAndDebtTests {
    static func hold(_ ledger: TestLedger, _ player: PlayerID, _ amount: Int64, key: String, seconds: Int64 = 600, actor: String = "game") async throws -> HoldResult {
        try await ledger.store.createHold(HoldRequest(playerID: player, amount: amount, expiresInSeconds: seconds, idempotencyKey: key, actor: actor))
    }

    static func resolve(_ ledger: TestLedger, _ id: String, _ action: HoldResolution.Action, key: String, actor: String = "game") async throws -> HoldResult {
        try await ledger.store.resolveHold(HoldResolution(holdID: id, action: action, idempotencyKey: key, actor: actor))
    }

    static func bonus(_ ledger: TestLedger, _ player: PlayerID, _ amount: Int64, key: String, expiresAt: String? = nil) async throws -> MutationResult {
        try await ledger.store.bonus(BonusRequest(playerID: player, amount: amount, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: key, actor: "game"))
    }

    @Test("a hold released after its bonus lot expired gives nothing spendable back: the returned credits are booked as expired in the same write", arguments: TestBackend.all)
    func returnIntoExpiredLot(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        _ = try await Self.bonus(ledger, "p", 10, key: "b", expiresAt: "2026-11-22T12:01:00Z")
        let held = try await Self.hold(ledger, "p", 3, key: "h", seconds: 60)
        clock.set("2026-11-22T12:01:00Z")
        // The sweep's order before the fix: the lot first (7 expire), then the hold (3 came back into the lot).
        #expect(try await ledger.store.expireLots(limit: 10) == 1)
        #expect(try await ledger.store.expireHolds(limit: 10) == 1)
        #expect(try await ledger.store.expireLots(limit: 10) == 0, "nothing is left to book, and nothing is reported that was not booked")
        #expect(try await ledger.balance("p") == 0)
        #expect(try await LotTests.lots(ledger, "p") == ["bonus 10 0"])
        let spend = await walletError { _ = try await ledger.spend("p", 1, key: "s") }
        #expect(spend == .insufficientFunds(balance: 0, currency: "credits"), "expired credits are never spent")
        let history = try await ledger.store.history(HistoryQuery(playerID: "p", limit: 2))
        #expect(history.transactions.map(\.kind) == [.release, .expiry])
        let release = history.transactions[0]
        #expect(release.amount == 0 && release.postings.contains { $0.account == "@expired" && $0.amount == 3 }, "the 3 that came back expired with their lot")
        #expect(release.metadata?.canonicalText.contains(#""expired":3"#) == true)
        let released = try await ledger.store.holds(playerID: "p")
        #expect(released.map(\.status) == [.expired] && released.first?.id == held.hold.id)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a release after its bonus expired, before any sweep: the part drawn from the bonus expires in the release itself", arguments: TestBackend.all)
    func releaseBeforeSweep(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p", "T1")
        _ = try await Self.bonus(ledger, "p", 4, key: "b", expiresAt: "2026-11-22T12:00:30Z")
        let held = try await Self.hold(ledger, "p", 6, key: "h", seconds: 600)
        #expect(try await LotTests.draws(ledger, seq: held.transaction.seq) == ["paid 2", "bonus 4"])
        clock.set("2026-11-22T12:05:00Z")
        #expect(try await ledger.balance("p") == 3, "5 + 4 − 6 held; the bonus expired with nothing left in it")
        let released = try await Self.resolve(ledger, held.hold.id, .release, key: "r")
        #expect(released.hold.status == .released && released.balance == 5, "the 4 that came back to the expired bonus expire with it")
        #expect(released.transaction.amount == 2)
        #expect(try await LotTests.lots(ledger, "p") == ["paid 5 5", "bonus 4 0"])
        #expect(try await ledger.balance("p") == 5)
        #expect(try await ledger.spend("p", 5, key: "s").balance == 0)
        #expect(try await ledger.store.expireLots(limit: 10) == 0)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("the sweep always makes progress: 210 lots expiring with their holds are all booked in a few bounded batches", arguments: TestBackend.all)
    func sweepProgress(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let count = ExpirySweep.batchMax + 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for player in 0..<count {
                group.addTask {
                    let player = try PlayerID("p\(player)")
                    _ = try await Self.bonus(ledger, player, 5, key: "b", expiresAt: "2026-11-22T12:01:00Z")
                    _ = try await Self.hold(ledger, player, 2, key: "h", seconds: 60)
                }
            }
            try await group.waitForAll()
        }
        clock.set("2026-11-22T12:01:00Z")
        // Lots first, as the sweep used to run: every hold then gives back into an expired lot.
        var calls = 0
        var booked = 0
        while calls < 10 {
            calls += 1
            let batch = try await ledger.store.expireLots(limit: ExpirySweep.batchMax)
            booked += batch
            if batch < ExpirySweep.batchMax { break }
        }
        #expect(booked == count && calls == 2)
        #expect(try await ExpirySweep.all { limit throws(WalletError) in try await ledger.store.expireHolds(limit: limit) } == count)
        #expect(try await ExpirySweep.all { limit throws(WalletError) in try await ledger.store.expireLots(limit: limit) } == 0, "the holds' credits were booked with their release")
        #expect(try await ledger.balance("p0") == 0)
        #expect(try await ledger.balance(PlayerID("p\(count - 1)")) == 0)
        try await ledger.expectIntact()
    }

    @Test("a lot whose first expiry key is taken (an older version's release put credits back after it) is booked under a fresh key, never stuck", arguments: TestBackend.all)
    func stuckLotBookedAgain(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let bonus = try await Self.bonus(ledger, "p", 5, key: "b", expiresAt: "2026-11-22T12:01:00Z")
        // The state an older version left: the key `lot:<id>` used, the lot still holding credits.
        var canonical = CanonicalBytes()
        canonical.append("expiry")
        canonical.append(Int64(1))
        let hash = canonical.sha256Hex()
        try await ledger.store.engine.transaction { db in
            try db.execute(
                "INSERT INTO idempotency_keys (scope, key, request_hash, seq) VALUES ('expiry', 'lot:1', ?, ?)", [.text(hash), .integer(bonus.transaction.seq)])
        }
        clock.set("2026-11-22T12:02:00Z")
        #expect(try await ledger.store.expireLots(limit: 10) == 1)
        #expect(try await ledger.store.expireLots(limit: 10) == 0, "booked once: the sweep moves on")
        let history = try await ledger.store.history(HistoryQuery(playerID: "p", limit: 1))
        #expect(history.transactions.first?.kind == .expiry && history.transactions.first?.idempotencyKey == "lot:1:after:\(bonus.transaction.seq)")
        #expect(try await ledger.balance("p") == 0)
        try await ledger.expectIntact()
    }

    @Test("a refund under debt while the credits are held: the release repays the debt before anything goes back to lots", arguments: TestBackend.all)
    func refundWhileHeldThenRelease(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p", "T1")
        _ = try await Self.bonus(ledger, "p", 3, key: "b")
        let held = try await Self.hold(ledger, "p", 8, key: "h")
        let refund = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", actor: "support"))
        #expect(refund.balance == -5 && refund.transaction.amount == -5, "the held credits are not in the wallet: all 5 become debt")
        let released = try await Self.resolve(ledger, held.hold.id, .release, key: "r")
        #expect(released.balance == 3)
        // The debt took the first 5 of the 8 in burn order (the bonus's 3, then 2 of the purchase).
        #expect(try await LotTests.lots(ledger, "p") == ["paid 5 3", "bonus 3 0"])
        #expect(try await ledger.spend("p", 3, key: "s").balance == 0)
        let more = await walletError { _ = try await ledger.spend("p", 1, key: "s2") }
        #expect(more == .insufficientFunds(balance: 0, currency: "credits"))
        try await ledger.expectIntact()
    }

    @Test("credits a hold gives back to a lot that expired meanwhile repay no debt: they expire, and the debt stays", arguments: TestBackend.all)
    func expiredReturnsRepayNothing(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p", "T1")
        _ = try await Self.bonus(ledger, "p", 10, key: "b", expiresAt: "2026-11-22T12:05:00Z")
        let held = try await Self.hold(ledger, "p", 10, key: "h", seconds: 3_600)
        #expect(try await LotTests.draws(ledger, seq: held.transaction.seq) == ["bonus 10"])
        _ = try await ledger.spend("p", 5, key: "s")
        _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", actor: "support"))
        #expect(try await ledger.balance("p") == -5)
        clock.set("2026-11-22T12:10:00Z")
        #expect(try await ledger.balance("p") == -5, "the held bonus has expired: nothing of it can repay the debt")
        let released = try await Self.resolve(ledger, held.hold.id, .release, key: "r")
        #expect(released.balance == -5 && released.transaction.postings.contains { $0.account == "@expired" && $0.amount == 10 })
        #expect(try await LotTests.lots(ledger, "p") == ["paid 5 0", "bonus 10 0"])
        try await ledger.expectIntact()
    }

    @Test("a debit the settled balance cannot cover is refused before anything is written: the expired hold stays open, the lot unbooked", arguments: TestBackend.all)
    func refusedDebitWritesNothing(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p", "T1")
        _ = try await Self.bonus(ledger, "p", 3, key: "b", expiresAt: "2026-11-22T12:00:30Z")
        _ = try await Self.hold(ledger, "p", 4, key: "h", seconds: 60)
        clock.set("2026-11-22T12:01:00Z")
        let before = try await ledger.transactionCount()
        let refused = await walletError { _ = try await ledger.spend("p", 6, key: "s") }
        #expect(refused == .insufficientFunds(balance: 5, currency: "credits"))
        #expect(try await ledger.transactionCount() == before, "nothing was booked")
        #expect(try await ledger.store.holds(playerID: "p").first?.status == .open)
        #expect(try await ledger.spend("p", 5, key: "s2").balance == 0, "what the refusal named can be spent")
        try await ledger.expectIntact()
    }

    @Test("a debit books many expired lots of its wallet as one expiry transaction", arguments: TestBackend.all)
    func manyExpiredLotsOneTransaction(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p", "T1")
        for index in 0..<30 { _ = try await Self.bonus(ledger, "p", 2, key: "b\(index)", expiresAt: "2026-11-22T12:0\(index % 5 + 1):00Z") }
        clock.set("2026-11-22T13:00:00Z")
        #expect(try await ledger.spend("p", 5, key: "s").balance == 0)
        let history = try await ledger.store.history(HistoryQuery(playerID: "p", limit: 2))
        #expect(history.transactions.map(\.kind) == [.spend, .expiry])
        #expect(history.transactions[1].amount == -60)
        #expect(try await LotTests.draws(ledger, seq: history.transactions[1].seq).count == 30)
        try await ledger.expectIntact()
    }

    @Test("a refund under debt while held, then a partial capture: the rest repays the debt; the wallet stays in debt for what is left", arguments: TestBackend.all)
    func refundWhileHeldThenCapture(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p", "T1", quantity: 2)
        let held = try await Self.hold(ledger, "p", 10, key: "h")
        _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", actor: "support"))
        #expect(try await ledger.balance("p") == -10)
        let captured = try await Self.resolve(ledger, held.hold.id, .capture(amount: 4), key: "c")
        #expect(captured.balance == -4, "6 came back and repaid 6 of the debt")
        #expect(try await LotTests.lots(ledger, "p") == ["paid 10 0"])
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p", amount: 5, reasonCode: "goodwill", note: "make good", idempotencyKey: "a", actor: "support"))
        #expect(try await ledger.balance("p") == 1)
        #expect(try await LotTests.lots(ledger, "p") == ["paid 10 0", "adjustment 1 1"], "a credit repays the rest of the debt first")
        try await ledger.expectIntact()
    }

    @Test("an expired hold's credits are spendable at once: a debit releases its wallet's expired holds first, before any sweep", arguments: TestBackend.all)
    func expiredHoldSpendable(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p", "T1")
        try await ledger.grant("q", "T2")
        let held = try await Self.hold(ledger, "p", 5, key: "h", seconds: 60)
        let other = try await Self.hold(ledger, "q", 5, key: "h", seconds: 60)
        clock.set("2026-11-22T12:01:00Z")
        let balances = try await ledger.store.balances(playerID: "p")
        #expect(balances.balances["credits"] == 5 && balances.held.isEmpty)
        #expect(try await ledger.spend("p", 5, key: "s").balance == 0)
        let holds = try await ledger.store.holds(playerID: "p")
        #expect(holds.first?.id == held.hold.id && holds.first?.status == .expired)
        #expect(try await ledger.store.holds(playerID: "q").first?.status == .open, "another wallet's expired hold waits for the sweep")
        let late = await walletError { _ = try await Self.resolve(ledger, held.hold.id, .capture(amount: nil), key: "c") }
        #expect(late?.code == "hold_expired")
        #expect(try await ledger.store.expireHolds(limit: 10) == 1 && other.hold.status == .open)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a hold is resolved by the kind of caller that placed it; a player's replay finds its hold however many came after", arguments: TestBackend.all)
    func holdOwnership(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p", "T1", quantity: 20)
        let gameHold = try await Self.hold(ledger, "p", 5, key: "g", actor: "key_service")
        for action in [HoldResolution.Action.release, .capture(amount: 1)] {
            let refused = await walletError { _ = try await Self.resolve(ledger, gameHold.hold.id, action, key: "x", actor: "player:p") }
            #expect(refused?.code == "forbidden")
        }
        let other = await walletError { _ = try await Self.resolve(ledger, gameHold.hold.id, .release, key: "x", actor: "player:q") }
        #expect(other?.code == "not_found", "another player's hold is unknown to them")
        #expect(try await Self.resolve(ledger, gameHold.hold.id, .capture(amount: 5), key: "c", actor: "key_service").hold.captured == 5)

        let own = try await Self.hold(ledger, "p", 2, key: "o", actor: "player:p")
        let released = try await Self.resolve(ledger, own.hold.id, .release, key: "r", actor: "player:p")
        #expect(released.hold.status == .released && released.hold.placedBy == .player("p"))
        let serviceOnPlayers = try await Self.hold(ledger, "p", 1, key: "o2", actor: "player:p")
        #expect(try await Self.resolve(ledger, serviceOnPlayers.hold.id, .capture(amount: nil), key: "c", actor: "key_service").hold.status == .captured)
        // 55 more holds resolved: the player's replay of the first release still answers it.
        for index in 0..<55 {
            let next = try await Self.hold(ledger, "p", 1, key: "n\(index)", actor: "player:p")
            _ = try await Self.resolve(ledger, next.hold.id, .release, key: "r", actor: "player:p")
        }
        let replay = try await Self.resolve(ledger, own.hold.id, .release, key: "r", actor: "player:p")
        #expect(replay.replayed && replay.transaction.seq == released.transaction.seq)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a hold keeps the game's metadata as a spend does: the same limits, nothing wrapped around it", arguments: TestBackend.all)
    func holdMetadata(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p", "T1")
        // As deep as a spend accepts: the metadata object and 62 nested arrays.
        var deep = JSONValue.integer(1)
        for _ in 0..<(Limits.metadataDepthMax - 1) { deep = .array([deep]) }
        let metadata = try Metadata(.object(["deep": deep]))
        let held = try await ledger.store.createHold(HoldRequest(playerID: "p", amount: 1, expiresInSeconds: 60, metadata: metadata, idempotencyKey: "h", actor: "game"))
        #expect(held.transaction.metadata == metadata)
        let big = try Metadata(.object(["note": .string(String(repeating: "x", count: Limits.metadataBytesMax - 11))]))
        #expect(big.canonicalText.utf8.count == Limits.metadataBytesMax)
        let bigHold = try await ledger.store.createHold(HoldRequest(playerID: "p", amount: 1, expiresInSeconds: 60, metadata: big, idempotencyKey: "h2", actor: "game"))
        #expect(bigHold.transaction.metadata == big)
        let released = try await Self.resolve(ledger, held.hold.id, .release, key: "r")
        #expect(released.transaction.metadata?.canonicalText == #"{"hold_id":"\#(held.hold.id)","hold_seq":\#(held.transaction.seq),"status":"released"}"#)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a bonus's campaign is staff-only, like its note; the player sees the expiry", arguments: TestBackend.all)
    func campaignHidden(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let bonus = try await ledger.store.bonus(
            BonusRequest(playerID: "p", amount: 2, expiresAt: "2099-01-01T00:00:00Z", reasonCode: "event", campaign: "whales-q4", idempotencyKey: "b", actor: "game"))
        let player = try WalletJSON.text(bonus, for: .player)
        let staff = try WalletJSON.text(bonus, for: .staff)
        #expect(!player.contains("whales-q4") && player.contains("2099-01-01T00:00:00.000Z"))
        #expect(staff.contains("whales-q4"))
        let onlyCampaign = try await ledger.store.bonus(BonusRequest(playerID: "p", amount: 2, reasonCode: "event", campaign: "c", idempotencyKey: "b2", actor: "game"))
        #expect(!(try WalletJSON.text(onlyCampaign, for: .player)).contains("metadata"))
    }
}

/// A wallet of very many lots (issue 22, finding 6): a debit drawing from 50,000 lots binds no
/// statement past the engines' parameter limits, and a wallet at its open-lot limit refuses the
/// credit that would make another lot, with a clear error, writing nothing.
@Suite("Wallets of many lots", .throttled)
struct ManyLotsTests {
    /// Turns a wallet's one adjustment lot of `count` credits into `count` lots of 1, as many
    /// bonuses would have left it (the lots are not part of the hash chain; verify checks them).
    static func splitIntoLots(_ ledger: TestLedger, player: String, count: Int) async throws {
        try await ledger.store.engine.transaction { db in
            guard let (accountID, lotID, seq, created) = try db.first(
                "SELECT l.account_id, l.id, l.source_seq, l.created_at FROM lots l JOIN accounts a ON a.id = l.account_id WHERE a.owner = ?", [.text("player:\(player)")],
                { row in (try row.integer(0), try row.integer(1), try row.integer(2), try row.text(3)) })
            else { throw WalletError.notFound("no lot") }
            try db.execute("UPDATE lots SET amount = 1, remaining = 1 WHERE id = ?", [.integer(lotID)])
            var made = 1
            while made < count {
                let rows = min(1_000, count - made)
                try db.execute(
                    "INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq) VALUES "
                        + Array(repeating: "(?, 'adjustment', 1, 1, ?, NULL, ?)", count: rows).joined(separator: ", "),
                    (0..<rows).flatMap { _ in [SQLValue.integer(accountID), .text(created), .integer(seq)] })
                made += rows
            }
        }
    }

    @Test("a spend from 50,000 lots works, its breakdown complete, and the ledger verifies", arguments: TestBackend.all)
    func spendFromManyLots(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let count = 50_000
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p", amount: Int64(count), reasonCode: "goodwill", note: "many lots", idempotencyKey: "a", actor: "support"))
        try await Self.splitIntoLots(ledger, player: "p", count: count)
        #expect(try await ledger.store.verify().ok)
        let spent = try await ledger.spend("p", Int64(count), key: "all")
        #expect(spent.balance == 0)
        let draws = try await ledger.store.read { db in
            try db.first("SELECT count(*), CAST(sum(amount) AS BIGINT) FROM lot_draws WHERE seq = ?", [.integer(spent.transaction.seq)]) { row in
                (try row.integer(0), try row.integer(1))
            }
        }
        #expect(draws?.0 == Int64(count) && draws?.1 == Int64(count))
        // The next write of the instance goes through.
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p", amount: 1, reasonCode: "goodwill", note: "after", idempotencyKey: "b", actor: "support"))
        try await ledger.expectIntact()
    }

    @Test("at its open-lot limit a wallet refuses a credit that would make another lot, and accepts one that only repays a debt", arguments: TestBackend.all)
    func openLotLimit(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        for index in 0..<3 {
            _ = try await ledger.store.bonus(BonusRequest(playerID: "p", amount: 1, reasonCode: "event", idempotencyKey: "b\(index)", actor: "game"))
        }
        let outcome = try await ledger.store.engine.transaction { db -> [String] in
            guard let account = try db.first("SELECT id, balance FROM accounts WHERE owner = 'player:p'", [], { row in
                Account(id: try row.integer(0), owner: "player:p", currency: "credits", balance: try row.integer(1))
            }) else { return ["no account"] }
            var outcome: [String] = []
            for (balance, lotsMax) in [(Int64(3), Int64(3)), (3, 4), (-10, 3)] {
                do {
                    // What a bonus of 5 loads (`isFull`, read only when the balance allows it) and decides.
                    let read = Account(id: account.id, owner: account.owner, currency: account.currency, balance: balance)
                    let wallet = WalletSnapshot(playerID: "p", currency: "credits", balance: balance, lots: [], now: Date())
                    try LotRules.requireRoom(walletFull: try LotStorage.isFull(db, account: read, lotsMax: lotsMax), credit: 5, wallet: wallet, lotsMax: lotsMax)
                    outcome.append("ok")
                } catch let error as WalletError {
                    outcome.append(error.code)
                }
            }
            return outcome
        }
        #expect(outcome == ["too_many_lots", "ok", "ok"])
        #expect(Limits.openLotsPerWalletMax >= 100_000, "the issue sets the floor of the cap")
    }
}
