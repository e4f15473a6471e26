import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Holds on both stores, with a controlled clock: reserve, capture (all or part), release,
/// expiry, exactly once; and racing on one wallet keeps every invariant.
@Suite("Holds", .throttled)
struct HoldTests {
    static func hold(_ ledger: TestLedger, _ player: PlayerID, _ amount: Int64, key: String, seconds: Int64 = 600) async throws -> HoldResult {
        try await ledger.store.createHold(HoldRequest(playerID: player, amount: amount, expiresInSeconds: seconds, reason: "match fee", idempotencyKey: key, actor: "game"))
    }

    static func resolve(_ ledger: TestLedger, _ id: String, _ action: HoldResolution.Action, key: String) async throws -> HoldResult {
        try await ledger.store.resolveHold(HoldResolution(holdID: id, action: action, idempotencyKey: key, actor: "game"))
    }

    @Test("a hold moves credits to @holds at once; a partial capture spends part and gives the rest back to the lots it came from, once", arguments: TestBackend.all)
    func captureOnce(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1")
        _ = try await ledger.store.bonus(BonusRequest(playerID: "p1", amount: 3, reasonCode: "event", idempotencyKey: "b1", actor: "game"))
        let held = try await Self.hold(ledger, "p1", 6, key: "h1")
        #expect(held.hold.status == .open && held.balance == 2 && held.hold.expiresAt == "2026-11-22T12:10:00.000Z")
        #expect(try await Self.hold(ledger, "p1", 6, key: "h1").replayed)
        let tooMuch = await walletError { _ = try await Self.hold(ledger, "p1", 3, key: "h2") }
        #expect(tooMuch == .insufficientFunds(balance: 2, currency: "credits"), "never below zero")

        let exceeding = await walletError { _ = try await Self.resolve(ledger, held.hold.id, .capture(amount: 7), key: "c0") }
        #expect(exceeding?.code == "capture_exceeds_hold")
        let captured = try await Self.resolve(ledger, held.hold.id, .capture(amount: 4), key: "c1")
        #expect(captured.hold.status == .captured && captured.hold.captured == 4 && captured.balance == 4 && captured.transaction.kind == .capture)
        #expect(try await LotTests.lots(ledger, "p1") == ["paid 5 4", "bonus 3 0"], "the bonus was held first and spent; 2 of the purchase came back")
        #expect(try await Self.resolve(ledger, held.hold.id, .capture(amount: 4), key: "c1").replayed)
        let again = await walletError { _ = try await Self.resolve(ledger, held.hold.id, .release, key: "r1") }
        #expect(again?.code == "hold_captured")
        let holds = try await ledger.store.holds(playerID: "p1")
        #expect(holds.map(\.status) == [.captured])
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a release gives everything back; an expired hold cannot be captured and the sweep releases it as expired", arguments: TestBackend.all)
    func releaseAndExpiry(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1", quantity: 2)
        let first = try await Self.hold(ledger, "p1", 4, key: "h1")
        let released = try await Self.resolve(ledger, first.hold.id, .release, key: "r1")
        #expect(released.hold.status == .released && released.balance == 10 && released.transaction.kind == .release)
        let late = await walletError { _ = try await Self.resolve(ledger, first.hold.id, .capture(amount: nil), key: "c1") }
        #expect(late?.code == "hold_released")

        let second = try await Self.hold(ledger, "p1", 7, key: "h2", seconds: 60)
        clock.set("2026-11-22T12:01:00Z")
        let expired = await walletError { _ = try await Self.resolve(ledger, second.hold.id, .capture(amount: nil), key: "c2") }
        #expect(expired?.code == "hold_expired")
        #expect(try await ledger.balance("p1") == 10, "an expired hold's credits are spendable at once, before the sweep books its release")
        #expect(try await ledger.store.balances(playerID: "p1").held.isEmpty, "an expired hold holds nothing")
        #expect(try await ledger.store.expireHolds(limit: 10) == 1)
        #expect(try await ledger.store.expireHolds(limit: 10) == 0)
        #expect(try await ledger.balance("p1") == 10)
        let after = try await ledger.store.holds(playerID: "p1")
        #expect(after.map(\.status) == [.expired, .released])
        #expect(try await LotTests.lots(ledger, "p1") == ["paid 10 10"])
        #expect(try await ledger.store.verify().ok)
        let unknown = await walletError { _ = try await Self.resolve(ledger, UUID().uuidString.lowercased(), .release, key: "x") }
        #expect(unknown?.code == "not_found")
    }

    @Test("the sweep releases every expired hold it can: one whose credits would take its wallet past the largest balance stays open, the others go", arguments: TestBackend.all)
    func sweepPastLargestBalance(backend: TestBackend) async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1")
        try await ledger.grant("p2", "T2")
        _ = try await Self.hold(ledger, "p1", 4, key: "h1", seconds: 60)
        _ = try await Self.hold(ledger, "p2", 4, key: "h2", seconds: 60)
        // A wallet refilled to 2 below the largest balance while 4 of its credits were held, as
        // only billions of grants could make it (so the ledger no longer verifies).
        try await ledger.store.write { db, _, _ in try db.execute("UPDATE accounts SET balance = 9223372036854775805 WHERE owner = 'player:p1'") }
        clock.set("2026-11-22T12:01:00Z")
        #expect(try await ledger.balance("p1") == .max, "a read shows the largest balance, never traps")
        #expect(try await ledger.store.expireHolds(limit: 10) == 1, "p2's hold released; p1's refused alone")
        #expect(try await ledger.store.holds(playerID: "p1").map(\.status) == [.open])
        #expect(try await ledger.store.holds(playerID: "p2").map(\.status) == [.expired])
        #expect(try await ledger.balance("p2") == 5)
        let spend = await walletError { try await ledger.spend("p1", 1, key: "s1") }
        #expect(spend == .invalidRequest("the balance of player:p1 would overflow"))
        #expect(try await ledger.store.expireHolds(limit: 10) == 0)
    }

    @Test("holds, captures, releases and spends racing on one wallet keep every invariant", arguments: TestBackend.all)
    func races(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", quantity: 20)
        _ = try await ledger.store.bonus(BonusRequest(playerID: "p1", amount: 30, reasonCode: "event", idempotencyKey: "b", actor: "game"))
        let store = ledger.store
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<40 {
                group.addTask {
                    do {
                        if index % 4 == 3 {
                            _ = try await store.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "s\(index)", actor: "t"))
                            return "spent"
                        }
                        let held = try await store.createHold(HoldRequest(playerID: "p1", amount: 5, expiresInSeconds: 600, idempotencyKey: "h\(index)", actor: "t"))
                        // Two resolutions race for each hold: exactly one wins.
                        async let capture = try? store.resolveHold(HoldResolution(holdID: held.hold.id, action: .capture(amount: 2), idempotencyKey: "c", actor: "t"))
                        async let release = try? store.resolveHold(HoldResolution(holdID: held.hold.id, action: .release, idempotencyKey: "r", actor: "t"))
                        let (captured, released) = await (capture, release)
                        return captured != nil && released != nil ? "both" : captured != nil ? "captured" : released != nil ? "released" : "neither"
                    } catch {
                        return "refused"
                    }
                }
            }
            var all: [String] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(!outcomes.contains("both") && !outcomes.contains("neither"), "\(outcomes)")
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
        #expect(try await ledger.balance("p1") >= 0)
        #expect(try await store.holds(playerID: "p1").allSatisfy { $0.status != .open })
    }
}
