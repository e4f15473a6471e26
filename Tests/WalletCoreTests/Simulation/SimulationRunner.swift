import Foundation
import Synchronization
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// The simulation draws from `SeededRandom` (SplitMix64), so that a seed means the same
/// sequence on every machine and Swift version (the standard library's `random(in:)` promises no
/// such thing).
typealias SplitMix64 = SeededRandom

extension SeededRandom {
    /// A value in `range`, by modulo (the bias is irrelevant to a simulation).
    mutating func int(_ range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(range.upperBound - range.lowerBound) &+ 1
        return width == 0 ? Int64(bitPattern: next()) : range.lowerBound + Int64(next() % width)
    }

    mutating func index(_ count: Int) -> Int { Int(int(0...Int64(count - 1))) }

    mutating func chance(_ percent: Int64) -> Bool { int(1...100) <= percent }

    mutating func pick<T>(_ values: [T]) -> T { values[index(values.count)] }
}

/// The simulation's clock in whole milliseconds, set by the steps. `TestClock` moves a `Date`
/// by floating-point seconds, whose rounding drifts over thousands of jumps; this one cannot,
/// and a jump can land exactly on an expiry.
final class SimulationClock: Sendable {
    private let milliseconds: Mutex<Int64>

    init(milliseconds: Int64) { self.milliseconds = Mutex(milliseconds) }

    /// Half a millisecond past the instant, so that the ledger's rounding down finds it exactly.
    var now: Date { Date(timeIntervalSince1970: (Double(milliseconds.withLock { $0 }) + 0.5) / 1_000) }

    func advance(_ delta: Int64) { milliseconds.withLock { $0 += delta } }
}

/// Classes of operations, each of which can be left out (`WALLET_SIMULATION_SKIP`).
enum SimulationClass: String, CaseIterable, Sendable {
    case grant, bonus, expiry, spend, adjust, hold, holdexpiry, refund, notification, sweep, clock, replay, race
}

/// How many seeds, how long, which operations; read from the environment for long runs.
struct SimulationConfig: Sendable {
    var seeds: [UInt64]
    var steps: Int
    var skipped: Set<SimulationClass>
    /// Whether `balances(playerID:)` must answer the settled balance (the rule after issue 22).
    var settledReads: Bool
    var shrinkAttempts: Int
    /// Whether to go on with the next seed after a failure (to list several findings at once).
    var keepGoing = false
    /// The stores to run on (`WALLET_SIMULATION_STORES=sqlite`); nil: every store the tests have.
    var stores: Set<String>?

    static let seedsDefault = 4
    static let stepsDefault = 120

    /// `WALLET_SIMULATION_SEED` (one seed to replay), `WALLET_SIMULATION_SEEDS` (a count from 1,
    /// or a comma-separated list), `WALLET_SIMULATION_STEPS`, `WALLET_SIMULATION_SKIP` (class
    /// names, comma-separated), `WALLET_SIMULATION_SETTLED_READS` (`0` compares the booked
    /// balance and every open hold), `WALLET_SIMULATION_SHRINK` (attempts), `WALLET_SIMULATION_KEEP_GOING=1`
    /// and `WALLET_SIMULATION_STORES` (comma-separated).
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> SimulationConfig {
        var seeds = Array(1...UInt64(seedsDefault))
        if let list = environment["WALLET_SIMULATION_SEEDS"] {
            let values = list.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            seeds = values.count == 1 && !list.contains(",") ? Array(1...max(1, values[0])) : values
        }
        if let one = environment["WALLET_SIMULATION_SEED"].flatMap({ UInt64($0) }) { seeds = [one] }
        let skipped = Set((environment["WALLET_SIMULATION_SKIP"] ?? "").split(separator: ",").compactMap { SimulationClass(rawValue: $0.trimmingCharacters(in: .whitespaces)) })
        var config = SimulationConfig(
            seeds: seeds, steps: environment["WALLET_SIMULATION_STEPS"].flatMap { Int($0) } ?? stepsDefault, skipped: skipped,
            settledReads: environment["WALLET_SIMULATION_SETTLED_READS"] != "0", shrinkAttempts: environment["WALLET_SIMULATION_SHRINK"].flatMap { Int($0) } ?? 150)
        config.keepGoing = environment["WALLET_SIMULATION_KEEP_GOING"] == "1"
        config.stores = environment["WALLET_SIMULATION_STORES"].map { Set($0.split(separator: ",").map(String.init)) }
        return config
    }

    func allows(_ kind: SimulationClass) -> Bool { !skipped.contains(kind) }
}

/// One step of a simulation: fully determined, so that a sequence replays on a fresh store.
/// Holds are named by their creation order in the run (`hold #n`), as their ids are random.
indirect enum SimulationStep: Sendable, CustomStringConvertible {
    case grant(player: String, store: String, transactionID: String, product: String, quantity: Int64)
    case bonus(player: String, currency: String, amount: Int64, expiresAt: Int64?, key: String)
    case spend(player: String, currency: String, amount: Int64, key: String)
    case adjust(player: String, currency: String, amount: Int64, allowNegative: Bool, key: String)
    case hold(player: String, currency: String, amount: Int64, seconds: Int64, key: String)
    case capture(hold: Int, amount: Int64?, key: String)
    case release(hold: Int, key: String)
    case refund(store: String, transactionID: String, share: Int64, policy: RefundPolicy)
    case notify(uuid: String, store: String, transactionID: String, effect: SimulationModel.NotificationEffect, reportedAt: Int64)
    case expireLots(limit: Int)
    case expireHolds(limit: Int)
    case advance(milliseconds: Int64)
    case race(SimulationStep, SimulationStep)

    /// The operation's name alone.
    var operation: String { String(description.prefix { $0 != " " && $0 != "(" }) }

    var description: String {
        switch self {
        case .grant(let player, let store, let id, let product, let quantity): "grant \(player) \(store)/\(id) \(product) x\(quantity)"
        case .bonus(let player, let currency, let amount, let expiresAt, let key):
            "bonus \(player) \(amount) \(currency) expires=\(expiresAt.map(SimulationModel.format) ?? "never") key=\(key)"
        case .spend(let player, let currency, let amount, let key): "spend \(player) \(amount) \(currency) key=\(key)"
        case .adjust(let player, let currency, let amount, let allowNegative, let key):
            "adjust \(player) \(amount) \(currency)\(allowNegative ? " allow_negative" : "") key=\(key)"
        case .hold(let player, let currency, let amount, let seconds, let key): "hold \(player) \(amount) \(currency) for \(seconds)s key=\(key)"
        case .capture(let hold, let amount, let key): "capture hold #\(hold) \(amount.map(String.init) ?? "all") key=\(key)"
        case .release(let hold, let key): "release hold #\(hold) key=\(key)"
        case .refund(let store, let id, let share, let policy): "refund \(store)/\(id) share=\(share) \(policy.rawValue)"
        case .notify(let uuid, let store, let id, let effect, let reportedAt): "notification \(uuid) \(effect) \(store)/\(id) reported_at=\(reportedAt)"
        case .expireLots(let limit): "expireLots(limit: \(limit))"
        case .expireHolds(let limit): "expireHolds(limit: \(limit))"
        case .advance(let milliseconds): "clock +\(milliseconds) ms"
        case .race(let first, let second): "race { \(first) } with { \(second) }"
        }
    }
}

/// Chooses the next step from what the model holds, so that most steps can succeed and the
/// rest fail for a reason worth checking.
struct SimulationGenerator {
    static let players = ["p1", "p2", "P1"]
    static let currencies = ["credits", "gems"]
    static let transactionIDs = ["T1", "T2", "T3", "t1", "T01", "T1a", "G1"]
    static let weights: [(SimulationClass, Int64)] = [
        (.grant, 12), (.bonus, 10), (.spend, 12), (.adjust, 6), (.hold, 18), (.refund, 8), (.notification, 8), (.sweep, 6), (.clock, 10),
        (.replay, 6), (.race, 4),
    ]

    var random: SplitMix64
    let config: SimulationConfig
    var history: [SimulationStep] = []
    var counter = 0
    var reportClock: Int64 = 1_772_000_000_000
    var resolutionKeys: [Int: String] = [:]

    init(seed: UInt64, config: SimulationConfig) {
        random = SplitMix64(seed: seed)
        self.config = config
    }

    mutating func fresh(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)\(counter)"
    }

    mutating func next(_ model: SimulationModel) -> SimulationStep {
        let allowed = Self.weights.filter { config.allows($0.0) }
        for _ in 0..<20 {
            var roll = random.int(1...allowed.reduce(0) { $0 + $1.1 })
            guard let kind = allowed.first(where: { roll -= $0.1; return roll <= 0 })?.0 else { continue }
            if let step = make(kind, model) {
                if case .race = step {} else if [.grant, .bonus, .spend, .adjust, .hold, .refund].contains(kind) { history.append(step) }
                return step
            }
        }
        return .advance(milliseconds: 1)
    }

    private mutating func wallet() -> (String, String) {
        (random.pick(Self.players), random.chance(75) ? "credits" : "gems")
    }

    /// An amount around what the wallet can give: mostly within it, sometimes just beyond.
    private mutating func amount(near balance: Int64) -> Int64 {
        let top = max(1, balance)
        return random.chance(15) ? top + random.int(0...2) : random.int(1...top)
    }

    private mutating func make(_ kind: SimulationClass, _ model: SimulationModel) -> SimulationStep? {
        switch kind {
        case .grant:
            let product = random.pick(["com.example.consume5credits", "com.example.consume5credits", "com.example.gems10", "com.example.game.consume5credits", "com.example.unknown"])
            let id = random.chance(30) ? fresh("T") : random.pick(Self.transactionIDs)
            return .grant(player: random.pick(Self.players), store: random.chance(85) ? "apple" : "google", transactionID: id, product: product, quantity: random.int(1...3))
        case .bonus:
            let (player, currency) = wallet()
            var expiresAt: Int64?
            if config.allows(.expiry), random.chance(60) {
                let delta = random.pick([Int64(1_000), random.int(1...120) * 1_000, random.int(1...72) * 3_600_000, random.int(1...259_200_000), 0])
                expiresAt = model.now + delta
            }
            return .bonus(player: player, currency: currency, amount: random.int(1...20), expiresAt: expiresAt, key: fresh("b"))
        case .spend:
            let (player, currency) = wallet()
            let shown = model.shownBalance(.init(player: player, currency: currency), settled: true).balance
            return .spend(player: player, currency: currency, amount: amount(near: shown), key: fresh("s"))
        case .adjust:
            let (player, currency) = wallet()
            let amount = random.int(1...15) * (random.chance(50) ? -1 : 1)
            return .adjust(player: player, currency: currency, amount: amount, allowNegative: amount < 0 && random.chance(35), key: fresh("a"))
        case .hold:
            return makeHoldStep(model)
        case .refund:
            let (store, id) = purchase(model)
            return .refund(store: store, transactionID: id, share: share(), policy: random.chance(50) ? .debt : .floor)
        case .notification:
            let (store, id) = purchase(model)
            let effect: SimulationModel.NotificationEffect =
                random.chance(45) ? .refund(share: share(), policy: random.chance(70) ? .debt : .floor) : (random.chance(60) ? .reversal : .consumption)
            reportClock += random.int(1...60_000)
            let reportedAt = reportClock - (random.chance(30) ? random.int(0...120_000) : 0)
            let uuid = random.chance(40) ? "n\(random.int(1...12))" : fresh("n-")
            return .notify(uuid: uuid, store: store, transactionID: id, effect: effect, reportedAt: reportedAt)
        case .sweep:
            return random.chance(50) ? .expireLots(limit: Int(random.int(1...3))) : .expireHolds(limit: Int(random.int(1...3)))
        case .clock:
            return clockStep(model)
        case .replay:
            return replayStep()
        case .race:
            let kinds = [SimulationClass.spend, .hold, .adjust, .bonus, .grant, .refund, .sweep].filter { config.allows($0) }
            guard !kinds.isEmpty, let first = make(random.pick(kinds), model), let second = make(random.pick(kinds), model) else { return nil }
            return .race(first, second)
        case .expiry, .holdexpiry:
            return nil
        }
    }

    private mutating func makeHoldStep(_ model: SimulationModel) -> SimulationStep? {
        if model.holds.isEmpty || random.chance(40) {
            let (player, currency) = wallet()
            let shown = model.shownBalance(.init(player: player, currency: currency), settled: true).balance
            let seconds = config.allows(.holdexpiry) ? random.pick([Int64(1), 5, 60, 600, 3_600, 86_400, 604_800]) : 604_800
            return .hold(player: player, currency: currency, amount: amount(near: shown), seconds: seconds, key: fresh("h"))
        }
        let open = model.holds.indices.filter { model.holds[$0].status == .open }
        let hold = random.chance(5) ? model.holds.count + random.index(3) : (!open.isEmpty && random.chance(75) ? random.pick(open) : random.index(model.holds.count))
        let key = resolutionKeys[hold].flatMap { random.chance(25) ? $0 : nil } ?? fresh("r")
        resolutionKeys[hold] = key
        guard random.chance(60) else { return .release(hold: hold, key: key) }
        let held = hold < model.holds.count ? model.holds[hold].amount : 1
        let amount: Int64? = random.chance(40) ? nil : (random.chance(15) ? held + 1 : random.int(1...held))
        return .capture(hold: hold, amount: amount, key: key)
    }

    private mutating func purchase(_ model: SimulationModel) -> (String, String) {
        let known = model.purchases.keys.sorted()
        if !known.isEmpty, random.chance(85) {
            let parts = random.pick(known).split(separator: "/", maxSplits: 1)
            return (String(parts[0]), String(parts[1]))
        }
        return (random.chance(85) ? "apple" : "google", random.pick(Self.transactionIDs))
    }

    private mutating func share() -> Int64 {
        random.pick([Int64(100_000), 100_000, 50_000, 25_000, 33_333, 1, 99_999, random.int(1...100_000)])
    }

    /// Seconds to days, or exactly onto (or next to) a pending expiry.
    private mutating func clockStep(_ model: SimulationModel) -> SimulationStep? {
        let pending = (model.lots.filter { $0.remaining > 0 }.compactMap(\.expiresAt) + model.holds.filter { $0.status == .open }.map(\.expiresAt)).filter { $0 > model.now }
        var delta: Int64
        if !pending.isEmpty, random.chance(45) {
            delta = random.pick(pending) - model.now + random.pick([Int64(0), 0, -1, 1])
        } else {
            delta = random.pick([Int64(1), 1_000, random.int(1...120) * 1_000, random.int(1...48) * 3_600_000, random.int(1...4) * 86_400_000])
        }
        if !config.allows(.holdexpiry), let soonest = model.holds.filter({ $0.status == .open }).map(\.expiresAt).min() {
            delta = min(delta, soonest - model.now - 1)
        }
        return delta > 0 ? .advance(milliseconds: delta) : nil
    }

    /// An earlier request again under its key: as it was (a replay), or changed (a reused key).
    private mutating func replayStep() -> SimulationStep? {
        guard !history.isEmpty else { return nil }
        let step = random.pick(history)
        guard random.chance(35) else { return step }
        switch step {
        case .grant(let player, let store, let id, let product, let quantity):
            return .grant(player: player == "p1" ? "p2" : "p1", store: store, transactionID: id, product: product, quantity: quantity)
        case .bonus(let player, let currency, let amount, let expiresAt, let key): return .bonus(player: player, currency: currency, amount: amount + 1, expiresAt: expiresAt, key: key)
        case .spend(let player, let currency, let amount, let key): return .spend(player: player, currency: currency, amount: amount + 1, key: key)
        case .adjust(let player, let currency, let amount, let allowNegative, let key):
            return .adjust(player: player, currency: currency, amount: amount, allowNegative: !allowNegative, key: key)
        case .hold(let player, let currency, let amount, let seconds, let key): return .hold(player: player, currency: currency, amount: amount + 1, seconds: seconds, key: key)
        case .refund(let store, let id, let share, let policy): return .refund(store: store, transactionID: id, share: share, policy: policy == .debt ? .floor : .debt)
        default: return step
        }
    }
}

/// Why a run failed, at which step.
struct SimulationFailure: Error, CustomStringConvertible {
    var step: Int
    var message: String
    /// The failing step's operation and the kind of difference: shrinking keeps a smaller
    /// sequence only when it fails the same way, so that it does not drift to another bug.
    var signature: String
    var description: String { "step \(step + 1): \(message)" }
}

/// Runs steps against a fresh store and the model side by side, checking after every step.
enum SimulationRunner {
    static let start: Int64 = 1_772_323_200_000  // 2026-03-01T00:00:00.000Z

    enum Source {
        case generated(seed: UInt64)
        case fixed([SimulationStep])
    }

    /// The steps run (all of them, or up to the failing one) and the failure, if any.
    static func run(_ source: Source, backend: TestBackend, config: SimulationConfig) async throws -> (steps: [SimulationStep], failure: SimulationFailure?) {
        let clock = SimulationClock(milliseconds: start)
        let opened = try await TestStores.open(backend, durability: .normal, clock: { clock.now })
        defer { try? FileManager.default.removeItem(at: opened.directory) }
        try await TestStores.addCatalog(opened.store)
        var model = SimulationModel(now: start)
        var generator: SimulationGenerator?
        var fixed: [SimulationStep] = []
        switch source {
        case .generated(let seed): generator = SimulationGenerator(seed: seed, config: config)
        case .fixed(let steps): fixed = steps
        }
        var steps: [SimulationStep] = []
        let count = generator == nil ? fixed.count : config.steps
        for index in 0..<count {
            let step = generator?.next(model) ?? fixed[index]
            steps.append(step)
            if let message = try await execute(step, store: opened.store, clock: clock, model: &model, config: config) {
                return (steps, SimulationFailure(step: index, message: message, signature: "\(step.operation): \(message.prefix(16))"))
            }
        }
        return (steps, nil)
    }

    /// Performs one step on the store and the model; returns what differs, or nil.
    static func execute(_ step: SimulationStep, store: SQLLedgerStore, clock: SimulationClock, model: inout SimulationModel, config: SimulationConfig) async throws -> String? {
        if case .race(let first, let second) = step {
            async let firstOutcome = perform(first, store: store, clock: clock, model: model)
            async let secondOutcome = perform(second, store: store, clock: clock, model: model)
            let (a, b) = await (firstOutcome, secondOutcome)
            let actual = try await observe(store, config: config)
            var problems: [String] = []
            for (order, outcomes) in [([first, second], [a, b]), ([second, first], [b, a])] {
                var candidate = model
                let expected = zip(order, outcomes).map { step, outcome in candidate.apply(step, storeHoldID: outcome.holdID).text }
                if let problem = compare(outcomes.map(\.text), expected, actual: actual, model: candidate, config: config) {
                    problems.append(problem)
                } else {
                    model = candidate
                    return nil
                }
            }
            return "neither order of the race matches the model; in the order given: \(problems[0])"
        }
        let outcome = await perform(step, store: store, clock: clock, model: model)
        let expected = model.apply(step, storeHoldID: outcome.holdID).text
        return compare([outcome.text], [expected], actual: try await observe(store, config: config), model: model, config: config)
    }

    static func compare(_ outcomes: [String], _ expected: [String], actual: Observed, model: SimulationModel, config: SimulationConfig) -> String? {
        if outcomes != expected { return "the store answered \(outcomes), the model \(expected)" }
        if let problem = actual.verifyProblem { return "verify fails: \(problem)" }
        let wanted = lines(of: model, config: config)
        guard actual.lines != wanted else { return nil }
        let missing = wanted.filter { !actual.lines.contains($0) }
        let extra = actual.lines.filter { !wanted.contains($0) }
        return "the store's state differs from the model's: the store shows \(extra), the model \(missing)"
    }

    // MARK: The store's side

    struct Outcome {
        var text: String
        var holdID: String?
    }

    static func holdID(_ reference: Int, in model: SimulationModel) -> String {
        reference < model.holds.count ? model.holds[reference].id : "00000000-0000-4000-8000-\(String(repeating: "0", count: 11))\(reference % 10)"
    }

    static func perform(_ step: SimulationStep, store: SQLLedgerStore, clock: SimulationClock, model: SimulationModel) async -> Outcome {
        do {
            switch step {
            case .grant(let player, let storeName, let id, let product, let quantity):
                return Outcome(mutation: try await store.grant(GrantRequest(playerID: try PlayerID(player), store: storeName, storeTransactionID: id, productID: product, quantity: quantity, actor: "sim")))
            case .bonus(let player, let currency, let amount, let expiresAt, let key):
                return Outcome(mutation: try await store.bonus(BonusRequest(
                    playerID: try PlayerID(player), amount: amount, currency: currency, expiresAt: expiresAt.map(SimulationModel.format), reasonCode: "event", idempotencyKey: key, actor: "sim")))
            case .spend(let player, let currency, let amount, let key):
                return Outcome(mutation: try await store.spend(SpendRequest(playerID: try PlayerID(player), amount: amount, currency: currency, idempotencyKey: key, actor: "sim")))
            case .adjust(let player, let currency, let amount, let allowNegative, let key):
                return Outcome(mutation: try await store.adjust(AdjustRequest(
                    playerID: try PlayerID(player), amount: amount, currency: currency, reasonCode: "support", note: "simulation", idempotencyKey: key, allowNegative: allowNegative, actor: "sim")))
            case .hold(let player, let currency, let amount, let seconds, let key):
                return Outcome(hold: try await store.createHold(HoldRequest(playerID: try PlayerID(player), amount: amount, currency: currency, expiresInSeconds: seconds, idempotencyKey: key, actor: "sim")))
            case .capture(let hold, let amount, let key):
                return Outcome(hold: try await store.resolveHold(HoldResolution(holdID: holdID(hold, in: model), action: .capture(amount: amount), idempotencyKey: key, actor: "sim")))
            case .release(let hold, let key):
                return Outcome(hold: try await store.resolveHold(HoldResolution(holdID: holdID(hold, in: model), action: .release, idempotencyKey: key, actor: "sim")))
            case .refund(let storeName, let id, let share, let policy):
                return Outcome(mutation: try await store.refund(RefundRequest(store: storeName, storeTransactionID: id, shareMillipercent: share, policy: policy, actor: "sim")))
            case .notify(let uuid, let storeName, let id, let effect, let reportedAt):
                let (type, storeEffect): (String, StoreNotification.Effect) = switch effect {
                case .refund(let share, let policy): ("REFUND", .refund(shareMillipercent: share, policy: policy))
                case .reversal: ("REFUND_REVERSED", .refundReversal)
                case .consumption: ("CONSUMPTION_REQUEST", .consumptionRequest)
                }
                let outcome = try await store.recordNotification(StoreNotification(
                    notificationUUID: uuid, store: storeName, type: type, subtype: nil, storeTransactionID: id, effect: storeEffect, reportedAt: reportedAt, actor: "sim"))
                let share = outcome.outcome.rawValue == "consumption_recorded" ? " share=\(outcome.spentShareMillipercent.map(String.init) ?? "none")" : ""
                return Outcome(text: "notification \(outcome.outcome.rawValue)\(share)\(outcome.replayed ? " replayed" : "")")
            case .expireLots(let limit):
                return Outcome(text: "count \(try await store.expireLots(limit: limit))")
            case .expireHolds(let limit):
                return Outcome(text: "count \(try await store.expireHolds(limit: limit))")
            case .advance(let milliseconds):
                clock.advance(milliseconds)
                return Outcome(text: "ok")
            case .race:
                return Outcome(text: "error a race within a race")
            }
        } catch {
            if case .insufficientFunds(let balance, _) = error { return Outcome(text: "error insufficient_funds balance=\(balance)") }
            return Outcome(text: "error \(error.code)")
        }
    }

    /// What the store shows after a step: verify's verdict and every player's wallets.
    struct Observed {
        var verifyProblem: String?
        var lines: [String]
    }

    static func observe(_ store: SQLLedgerStore, config: SimulationConfig) async throws -> Observed {
        let report = try await store.verify()
        var lines: [String] = []
        for player in SimulationGenerator.players {
            let playerID = try PlayerID(player)
            let balances = try await store.balances(playerID: playerID)
            for currency in SimulationGenerator.currencies {
                lines.append("\(player) \(currency) balance=\(balances.balances[currency] ?? 0) held=\(balances.held[currency] ?? 0)")
            }
            lines += try await store.allLots(playerID: playerID).map { lot in
                "\(player) " + SimulationModel.lotLine(currency: lot.currency, category: lot.category, remaining: lot.remaining, expiresAt: lot.expiresAt)
            }.sorted()
            lines += try await store.holds(playerID: playerID).map { hold in
                "\(player) " + SimulationModel.holdLine(id: hold.id, currency: hold.currency, amount: hold.amount, status: hold.status, captured: hold.captured)
            }.sorted()
        }
        let problem = report.ok ? nil : "first bad seq \(report.firstBadSeq.map(String.init) ?? "?"): \(report.problem ?? "")"
        return Observed(verifyProblem: problem, lines: lines)
    }

    static func lines(of model: SimulationModel, config: SimulationConfig) -> [String] {
        var lines: [String] = []
        for player in SimulationGenerator.players {
            for currency in SimulationGenerator.currencies {
                let shown = model.shownBalance(.init(player: player, currency: currency), settled: config.settledReads)
                lines.append("\(player) \(currency) balance=\(shown.balance) held=\(shown.held)")
            }
            lines += model.shownLots(player).map { "\(player) \($0)" }
            lines += model.shownHolds(player).map { "\(player) \($0)" }
        }
        return lines
    }

    // MARK: Shrinking

    /// Delta debugging: drops chunks of steps (halves, then quarters, down to single steps) and
    /// keeps any smaller sequence that still fails on a fresh store, within `config.shrinkAttempts` runs.
    static func shrink(_ steps: [SimulationStep], failure: SimulationFailure, backend: TestBackend, config: SimulationConfig) async throws -> ([SimulationStep], SimulationFailure) {
        var (current, currentFailure) = (Array(steps.prefix(failure.step + 1)), failure)
        var chunk = max(1, current.count / 2)
        var attempts = 0
        while attempts < config.shrinkAttempts {
            var start = 0
            var removed = false
            while start < current.count, attempts < config.shrinkAttempts {
                var candidate = current
                candidate.removeSubrange(start..<min(current.count, start + chunk))
                attempts += 1
                let result = try await run(.fixed(candidate), backend: backend, config: config)
                if let failed = result.failure, failed.signature == failure.signature {
                    (current, currentFailure, removed) = (Array(candidate.prefix(failed.step + 1)), failed, true)
                } else {
                    start += chunk
                }
            }
            if !removed {
                if chunk == 1 { break }
                chunk = max(1, chunk / 2)
            }
        }
        return (current, currentFailure)
    }

    /// Runs a seed; on failure shrinks it and answers the report to print, or nil when it passed.
    static func check(seed: UInt64, backend: TestBackend, config: SimulationConfig) async throws -> String? {
        let result = try await run(.generated(seed: seed), backend: backend, config: config)
        guard let failure = result.failure else { return nil }
        let (shortest, shortFailure) = try await shrink(result.steps, failure: failure, backend: backend, config: config)
        let skip = config.skipped.isEmpty ? "" : " WALLET_SIMULATION_SKIP=\(config.skipped.map(\.rawValue).sorted().joined(separator: ","))"
        return """
            simulation seed \(seed) on \(backend) failed at \(failure) (replay: WALLET_SIMULATION_SEED=\(seed) WALLET_SIMULATION_STEPS=\(config.steps)\(skip))
            shortest sequence found (\(shortest.count) of \(result.steps.count) steps), failing at \(shortFailure):
            \(shortest.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
            """
    }
}

extension SimulationRunner.Outcome {
    init(text: String) {
        self.text = text
        holdID = nil
    }

    init(mutation: MutationResult) {
        self.init(text: "ok balance=\(mutation.balance)\(mutation.replayed ? " replayed" : "")")
    }

    init(hold: HoldResult) {
        text = "hold \(hold.hold.status.rawValue) balance=\(hold.balance)\(hold.replayed ? " replayed" : "")"
        holdID = hold.hold.id
    }
}

extension SimulationModel {
    /// Applies a step; a refused operation leaves the model as it was. `storeHoldID` is the id
    /// the store gave a hold this step created.
    mutating func apply(_ step: SimulationStep, storeHoldID: String?) -> Answer {
        var next = self
        let answer = next.perform(step, storeHoldID: storeHoldID)
        if case .ok = answer { self = next }
        return answer
    }

    private mutating func perform(_ step: SimulationStep, storeHoldID: String?) -> Answer {
        switch step {
        case .grant(let player, let store, let id, let product, let quantity):
            return grant(player: player, store: store, transactionID: id, product: product, quantity: quantity)
        case .bonus(let player, let currency, let amount, let expiresAt, let key):
            return bonus(Wallet(player: player, currency: currency), amount: amount, expiresAt: expiresAt, key: key)
        case .spend(let player, let currency, let amount, let key):
            return spend(Wallet(player: player, currency: currency), amount: amount, key: key)
        case .adjust(let player, let currency, let amount, let allowNegative, let key):
            return adjust(Wallet(player: player, currency: currency), amount: amount, allowNegative: allowNegative, key: key)
        case .hold(let player, let currency, let amount, let seconds, let key):
            return createHold(Wallet(player: player, currency: currency), amount: amount, seconds: seconds, key: key, storeHoldID: storeHoldID)
        case .capture(let hold, let amount, let key):
            return resolve(holdID: SimulationRunner.holdID(hold, in: self), capture: true, amount: amount, key: key)
        case .release(let hold, let key):
            return resolve(holdID: SimulationRunner.holdID(hold, in: self), capture: false, amount: nil, key: key)
        case .refund(let store, let id, let share, let policy):
            return refund(store: store, transactionID: id, share: share, policy: policy)
        case .notify(let uuid, let store, let id, let effect, let reportedAt):
            return notify(uuid: uuid, store: store, transactionID: id, effect: effect, reportedAt: reportedAt)
        case .expireLots(let limit):
            return expireLots(limit: limit)
        case .expireHolds(let limit):
            return expireHolds(limit: limit)
        case .advance(let milliseconds):
            now += milliseconds
            return .ok("ok")
        case .race:
            return .refused("error a race within a race")
        }
    }
}
