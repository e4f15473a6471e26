import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// The test that finds the next bug: seeded sequences of every ledger operation, with a clock
/// that jumps across expiries, run on both stores and held after every step to `verify` and to
/// an independent reference model (`SimulationModel`). A failure prints its seed and the
/// shortest sequence that still fails. Plain `swift test` runs a few seeds; see
/// `SimulationConfig.fromEnvironment` for long runs.
@Suite("Simulation", .throttled)
struct SimulationTests {
    @Test("seeded operation sequences keep every balance, lot and hold equal to the reference model, and verify passes", arguments: TestBackend.all)
    func seeds(backend: TestBackend) async throws {
        let config = SimulationConfig.fromEnvironment()
        if let stores = config.stores, !stores.contains(backend.rawValue) { return }
        for seed in config.seeds {
            if let report = try await SimulationRunner.check(seed: seed, backend: backend, config: config) {
                Issue.record(Comment(rawValue: report))
                // One shrunk failure per store is enough to act on, and shrinking is the slow part.
                if !config.keepGoing { return }
            }
        }
    }

    @Test("the same seed generates the same steps, and a generated run replays as a fixed sequence", arguments: TestBackend.all)
    func determinism(backend: TestBackend) async throws {
        var config = SimulationConfig.fromEnvironment([:])
        config.steps = 40
        let first = try await SimulationRunner.run(.generated(seed: 7), backend: backend, config: config)
        let second = try await SimulationRunner.run(.generated(seed: 7), backend: backend, config: config)
        #expect(first.steps.map(\.description) == second.steps.map(\.description))
        let other = try await SimulationRunner.run(.generated(seed: 8), backend: backend, config: config)
        #expect(first.steps.map(\.description) != other.steps.map(\.description))
    }

    @Test("the model refuses what the ledger refuses: a spend beyond the settled balance changes nothing")
    func modelRefusesOverdraft() {
        var model = SimulationModel(now: SimulationRunner.start)
        let wallet = SimulationModel.Wallet(player: "p1", currency: "credits")
        #expect(model.apply(.grant(player: "p1", store: "apple", transactionID: "T1", product: "com.example.consume5credits", quantity: 1), storeHoldID: nil).text == "ok balance=5")
        #expect(model.apply(.bonus(player: "p1", currency: "credits", amount: 3, expiresAt: SimulationRunner.start + 1_000, key: "b1"), storeHoldID: nil).text == "ok balance=8")
        #expect(model.apply(.advance(milliseconds: 1_000), storeHoldID: nil).text == "ok")
        #expect(model.shownBalance(wallet, settled: true).balance == 5, "the bonus expired at its expiry")
        #expect(model.apply(.spend(player: "p1", currency: "credits", amount: 6, key: "s1"), storeHoldID: nil).text == "error insufficient_funds balance=5")
        #expect(model.balance(wallet) == 8, "a refused spend books nothing, not even the expiry")
        #expect(model.apply(.spend(player: "p1", currency: "credits", amount: 5, key: "s1"), storeHoldID: nil).text == "ok balance=0")
        #expect(model.apply(.spend(player: "p1", currency: "credits", amount: 6, key: "s1"), storeHoldID: nil).text == "error idempotency_key_reused")
    }
}
