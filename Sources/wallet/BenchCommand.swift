import ArgumentParser
import Foundation
import WalletCore
import WalletSQL
import WalletStores

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure ledger write throughput: group commit against one transaction per operation.",
        discussion: """
            Runs the same realistic mix (75% spends with unique keys, 10% grants, 10% replayed spends, \
            5% overdrafts; --mix spends runs only spends of 3 credits with unique keys that succeed, the \
            workload of Tests/Load/sqlite-ceiling.c) from --concurrency callers against a fresh database, first through the \
            grouped writer and then with one transaction per operation, with synchronous=FULL unless \
            --durability normal. Prints both rates, their ratio, latency percentiles, where the grouped \
            writer's time went (running the operations, per operation; committing, and between batches, \
            per batch: Tests/Load/sqlite-ceiling.c prints its own first two), and whether \
            `verify` passes on both databases afterwards. With --db postgres://... the grouped run uses \
            that empty PostgreSQL database and the single run the one --single-db names (skipped without \
            it): the same workload, one lock per batch against one per operation.

            Example:
              wallet bench --operations 100000 --concurrency 64 --no-single
              wallet bench --mix spends --no-single
              wallet bench --mix spends --players 10 --lots-per-wallet 1000 \\
                --covering-lot --no-single
              wallet bench --mix spends --players 10 --lots-per-wallet 1 \\
                --covering-lot --ledger-lots 500000 --no-single
            """
    )

    @Option(
        help: ArgumentHelp(
            "Directory for the two SQLite benchmark databases (default: a new temporary directory, removed afterwards), or an empty PostgreSQL database's URL.",
            valueName: "path|url"))
    var db: String?

    @Option(help: ArgumentHelp("With a PostgreSQL --db: another empty database, for the one-commit-per-operation run.", valueName: "url"))
    var singleDb: String?

    @Option(help: ArgumentHelp("full or normal.", valueName: "level"))
    var durability: Durability = .full

    @Option(help: "Operations per run (1000 to 10000000).")
    var operations: Int = 50_000

    @Option(help: "Concurrent callers (1 to 4096).")
    var concurrency: Int = 64

    @Option(help: "Distinct players (1 to 1000000).")
    var players: Int = 1_000

    @Option(help: "Bonus lots of one credit each (expiring in 300 days) given to every wallet before timing (0 to 100000), so that spends run against wallets that keep that many lots.")
    var lotsPerWallet: Int = 0

    @Flag(help: "With --lots-per-wallet: one of each wallet's lots (the first to expire) holds every credit its timed spends take, so each spend draws that one lot whatever the lot count; the others hold one credit each. Measures the lots a wallet keeps, not the lots a spend draws.")
    var coveringLot = false

    @Option(help: "Bonus lots the ledger holds before timing, in all (0, the default, for only --lots-per-wallet's; otherwise at least --players × --lots-per-wallet and at most 10000000). The players keep their --lots-per-wallet; the rest, of one credit each, go to as many idle wallets (idle-0, idle-1, ...) as there are players, which no timed operation touches, at most 100000 each. Each lot comes with its bonus transaction and key, so runs with different --lots-per-wallet and the same --ledger-lots hold ledgers of the same size: what a wallet's lots cost, apart from what a larger ledger costs.")
    var ledgerLots: Int = 0

    @Option(help: ArgumentHelp("realistic (spends, grants, replays and overdrafts) or spends (only spends of 3 credits, all covered).", valueName: "mix"))
    var mix: BenchWorkload.Mix = .realistic

    @Flag(inversion: .prefixedNo, help: "Also run the one-commit-per-operation path, to compare (--no-single skips it).")
    var single = true

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func validate() throws {
        guard (1_000...10_000_000).contains(operations) else { throw ValidationError("--operations must be from 1000 to 10000000.") }
        guard (1...4_096).contains(concurrency) else { throw ValidationError("--concurrency must be from 1 to 4096.") }
        guard (1...1_000_000).contains(players) else { throw ValidationError("--players must be from 1 to 1000000.") }
        guard (0...Int(Limits.openLotsPerWalletMax)).contains(lotsPerWallet) else {
            throw ValidationError("--lots-per-wallet must be from 0 to \(Limits.openLotsPerWalletMax).")
        }
        guard !coveringLot || lotsPerWallet > 0 else { throw ValidationError("--covering-lot goes with --lots-per-wallet 1 or more.") }
        guard (0...10_000_000).contains(ledgerLots) else { throw ValidationError("--ledger-lots must be from 0 to 10000000.") }
        if ledgerLots > 0 {
            let players = self.players, timed = players * lotsPerWallet
            guard ledgerLots >= timed else {
                throw ValidationError("--ledger-lots \(ledgerLots) is fewer than the \(timed) lots the players' wallets hold (\(players) players × --lots-per-wallet \(lotsPerWallet)).")
            }
            let idleMax = Int(Limits.openLotsPerWalletMax)
            let firstIdle = (ledgerLots - timed + players - 1) / players
            guard firstIdle <= idleMax else {
                throw ValidationError("--ledger-lots \(ledgerLots) would give idle-0 \(firstIdle) lots, more than the \(idleMax) one wallet may keep; give more --players or fewer lots.")
            }
        }
    }

    struct Report: Encodable {
        var operations: Int
        var concurrency: Int
        var players: Int
        var lotsPerWallet: Int
        var coveringLot: Bool
        var ledgerLots: Int
        var mix: String
        var durability: String
        var groupedOpsPerSecond: Double
        var singleOpsPerSecond: Double?
        var ratio: Double?
        var p50Ms: Double
        var p99Ms: Double
        var maxMs: Double
        var singleP50Ms: Double?
        var singleP99Ms: Double?
        var averageBatch: Double
        var writerTime: BenchWorkload.WriterTime?
        var verifyOk: Bool

        enum CodingKeys: String, CodingKey {
            case operations, concurrency, players, mix, durability, ratio
            case lotsPerWallet = "lots_per_wallet"
            case coveringLot = "covering_lot"
            case ledgerLots = "ledger_lots"
            case groupedOpsPerSecond = "grouped_ops_per_second"
            case singleOpsPerSecond = "single_ops_per_second"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case maxMs = "max_ms"
            case singleP50Ms = "single_p50_ms"
            case singleP99Ms = "single_p99_ms"
            case averageBatch = "average_batch"
            case writerTime = "writer_time"
            case verifyOk = "verify_ok"
        }
    }

    func run() async throws {
        let workload = try BenchWorkload(
            operations: operations, concurrency: concurrency, players: players, lotsPerWallet: lotsPerWallet, coveringLot: coveringLot, ledgerLots: ledgerLots, mix: mix)
        if let db, db.hasPrefix("postgres") {
            let grouped = try await workload.run(path: db, durability: durability, writeMode: .default)
            var single: BenchWorkload.Result?
            if let singleDb { single = try await workload.run(path: singleDb, durability: durability, writeMode: .single) }
            try report(grouped: grouped, single: single)
            return
        }
        if singleDb != nil { throw ValidationError("--single-db goes with a PostgreSQL --db.") }
        let directory: URL
        if let db {
            directory = URL(fileURLWithPath: db)
            guard !FileManager.default.fileExists(atPath: directory.appendingPathComponent("grouped.sqlite").path),
                !FileManager.default.fileExists(atPath: directory.appendingPathComponent("single.sqlite").path)
            else { throw ValidationError("\(db) already holds a benchmark database; give an empty directory.") }
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-bench-\(UUID().uuidString)")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if db == nil { try? FileManager.default.removeItem(at: directory) } }

        let grouped = try await workload.run(path: directory.appendingPathComponent("grouped.sqlite").path, durability: durability, writeMode: .default)
        let single = self.single
            ? try await workload.run(path: directory.appendingPathComponent("single.sqlite").path, durability: durability, writeMode: .single)
            : nil
        try report(grouped: grouped, single: single)
    }

    private func report(grouped: BenchWorkload.Result, single: BenchWorkload.Result?) throws {
        let report = Report(
            operations: operations, concurrency: concurrency, players: players, lotsPerWallet: lotsPerWallet, coveringLot: coveringLot, ledgerLots: ledgerLots, mix: mix.rawValue, durability: durability.rawValue,
            groupedOpsPerSecond: grouped.opsPerSecond.rounded(), singleOpsPerSecond: single.map { $0.opsPerSecond.rounded() },
            ratio: single.map { (grouped.opsPerSecond / $0.opsPerSecond * 10).rounded() / 10 },
            p50Ms: grouped.percentile(0.50), p99Ms: grouped.percentile(0.99), maxMs: grouped.percentile(1),
            singleP50Ms: single?.percentile(0.50), singleP99Ms: single?.percentile(0.99),
            averageBatch: (grouped.averageBatch * 10).rounded() / 10, writerTime: grouped.writerTime, verifyOk: grouped.verifyOk && (single?.verifyOk ?? true))
        try Output.result(report, json: json) {
            """
            \(operations) operations (\(mix.rawValue) mix), \(concurrency) concurrent callers, \(players) players, \(lotsPerWallet) more lots per wallet\(coveringLot ? " (one covering the spends)" : "")\(ledgerLots > 0 ? ", \(ledgerLots) bonus lots in the ledger" : ""), synchronous=\(durability.rawValue.uppercased())
            grouped writer:     \(Int(report.groupedOpsPerSecond)) ops/s   p50 \(report.p50Ms) ms   p99 \(report.p99Ms) ms   max \(report.maxMs) ms   \(report.averageBatch) operations per commit
            writer's time:      \(report.writerTime.map { "\($0.runningMicrosecondsPerOperation) µs an operation running it; a batch \($0.commitMillisecondsPerBatch) ms committing, \($0.betweenMillisecondsPerBatch) ms between batches" } ?? "-")
            one commit per op:  \(report.singleOpsPerSecond.map { "\(Int($0)) ops/s   p50 \(report.singleP50Ms ?? 0) ms   p99 \(report.singleP99Ms ?? 0) ms" } ?? "not run")
            ratio:              \(report.ratio.map { "\($0)×" } ?? "-")
            verify:             \(report.verifyOk ? "ok on both databases" : "FAILED")
            """
        }
        if !report.verifyOk { throw ExitCode.failure }
    }
}

/// A random mix of operations, split between callers. Each caller replays only its own
/// earlier spends, so a replay always follows the spend it repeats.
struct BenchWorkload {
    enum Mix: String, ExpressibleByArgument, CaseIterable {
        /// 75% spends with unique keys, 10% grants, 10% replayed spends, 5% overdrafts.
        case realistic
        /// Only spends of `spendAmount` with unique keys, each covered by the wallet's balance:
        /// what the C ceiling runs.
        case spends

        /// Every spend's amount in the spends mix, as in `Tests/Load/sqlite-ceiling.c`.
        static let spendAmount: Int64 = 3
        /// The realistic mix's overdrafts: more than any seeded wallet holds, so each is refused.
        static let overdraftAmount: Int64 = 1_000_000_000
    }

    enum Operation: Sendable {
        case grant(player: PlayerID, transactionID: String, quantity: Int64)
        case spend(player: PlayerID, amount: Int64, key: String)
    }

    let callers: [[Operation]]
    /// `player-0`, `player-1`, ...: each starts with credits.
    let playerIDs: [PlayerID]
    var players: Int { playerIDs.count }
    /// Bonus lots each player's wallet is given before timing.
    let lotsPerWallet: Int
    /// Bonus lots the idle wallets (`idle-0`, ...) are given before timing, in all: what
    /// `--ledger-lots` adds to the players' own.
    let idleLots: Int
    /// Credits each player's timed spends take (overdrafts, refused, and replays excluded) when
    /// one of its lots is to cover them all (`--covering-lot`); nil otherwise.
    let coveringCredits: [Int64]?
    let concurrency: Int
    let mix: Mix
    /// Grants of the 5-credit product each player is given before timing, and their quantity:
    /// for the realistic mix one of 20; for spends only, grants of 100 (the largest quantity),
    /// enough that a player drawn six standard deviations above the mean number of spends is
    /// still covered.
    let seedGrantsPerPlayer: Int
    let seedQuantity: Int64

    init(
        operations: Int, concurrency: Int, players: Int, lotsPerWallet: Int = 0, coveringLot: Bool = false, ledgerLots: Int = 0, mix: Mix = .realistic
    ) throws(WalletError) {
        self.lotsPerWallet = lotsPerWallet
        idleLots = max(0, ledgerLots - players * lotsPerWallet)
        self.concurrency = concurrency
        self.mix = mix
        switch mix {
        case .realistic:
            (seedGrantsPerPlayer, seedQuantity) = (1, 20)
        case .spends:
            let mean = Double(operations) / Double(players)
            seedQuantity = Limits.quantityMax
            seedGrantsPerPlayer = Int(((mean + 6 * mean.squareRoot() + 1) * Double(Mix.spendAmount) / Double(5 * seedQuantity)).rounded(.up))
        }
        var random = SystemRandomNumberGenerator()
        let playerIDs = try (0..<players).map { index throws(WalletError) in try PlayerID("player-\(index)") }
        self.playerIDs = playerIDs
        let callers = (0..<concurrency).map { caller in
            var spends: [Operation] = []
            var operationsOfCaller: [Operation] = []
            let count = operations / concurrency + (caller < operations % concurrency ? 1 : 0)
            for index in 0..<count {
                let player = playerIDs[Int.random(in: 0..<players, using: &random)]
                let roll = mix == .spends ? 99 : Int.random(in: 0..<100, using: &random)
                let operation: Operation
                if roll < 10 {
                    operation = .grant(player: player, transactionID: "bench-\(caller)-\(index)", quantity: Int64.random(in: 1...3, using: &random))
                } else if roll < 20, let earlier = spends.randomElement(using: &random) {
                    operation = earlier
                } else if roll < 25 {
                    operation = .spend(player: player, amount: Mix.overdraftAmount, key: "overdraft-\(caller)-\(index)")
                } else {
                    let amount = mix == .spends ? Mix.spendAmount : Int64.random(in: 1...5, using: &random)
                    operation = .spend(player: player, amount: amount, key: "spend-\(caller)-\(index)")
                    spends.append(operation)
                }
                operationsOfCaller.append(operation)
            }
            return operationsOfCaller
        }
        self.callers = callers
        coveringCredits = coveringLot ? Self.spendCredits(of: callers, playerIDs: playerIDs) : nil
    }

    /// What each player's spends with unique keys take in all, overdrafts apart.
    private static func spendCredits(of callers: [[Operation]], playerIDs: [PlayerID]) -> [Int64] {
        let indexes = Dictionary(uniqueKeysWithValues: playerIDs.enumerated().map { ($1, $0) })
        var credits = Array(repeating: Int64(0), count: playerIDs.count)
        var keys: Set<String> = []
        for case .spend(let player, let amount, let key) in callers.joined() where amount != Mix.overdraftAmount && keys.insert(key).inserted {
            if let index = indexes[player] { credits[index] += amount }
        }
        return credits
    }

    /// Where the grouped writer's time went during a timed run (`GroupCommitStatistics`): running
    /// in the batches' transactions, per operation (`runningSeconds`); committing, per batch (the
    /// rest of `commitSeconds`: the way to and from the writer's connection, `BEGIN` and the
    /// commit); and between batches, per batch (answering the callers, waiting for the next:
    /// the rest of the run). The SQLite ceiling (`Tests/Load/sqlite-ceiling.c`) prints its own
    /// first two, to compare.
    struct WriterTime: Encodable {
        var runningMicrosecondsPerOperation: Double
        var commitMillisecondsPerBatch: Double
        var betweenMillisecondsPerBatch: Double

        enum CodingKeys: String, CodingKey {
            case runningMicrosecondsPerOperation = "running_us_per_operation"
            case commitMillisecondsPerBatch = "commit_ms_per_batch"
            case betweenMillisecondsPerBatch = "between_ms_per_batch"
        }

        /// From the statistics before and after a run of `seconds`; nil if no batch committed.
        init?(before: GroupCommitStatistics, after: GroupCommitStatistics, seconds: Double) {
            let batches = Double(after.batches - before.batches), operations = Double(after.operations - before.operations)
            guard batches > 0, operations > 0 else { return nil }
            let running = after.runningSeconds - before.runningSeconds, committing = after.commitSeconds - before.commitSeconds
            func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }
            runningMicrosecondsPerOperation = rounded(running / operations * 1_000_000)
            commitMillisecondsPerBatch = rounded((committing - running) / batches * 1_000)
            betweenMillisecondsPerBatch = rounded(max(0, seconds - committing) / batches * 1_000)
        }
    }

    struct Result {
        var opsPerSecond: Double
        /// Latencies in milliseconds, sorted.
        var latencies: [Double]
        var verifyOk: Bool
        /// Operations per commit during the timed run.
        var averageBatch: Double
        /// Where the grouped writer's time went during the timed run.
        var writerTime: WriterTime?

        func percentile(_ fraction: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let index = min(latencies.count - 1, Int((Double(latencies.count) * fraction).rounded(.up)) - 1)
            return (latencies[max(0, index)] * 1_000).rounded() / 1_000
        }
    }

    func run(path: String, durability: Durability, writeMode: WriteMode) async throws -> Result {
        try await LedgerDatabases.open(path, durability: durability, writeMode: writeMode).run { store in try await measure(store) }
    }

    /// Gives every player's wallet `lotsPerWallet` bonus lots of one credit, then `idleLots` more
    /// spread over as many idle wallets as there are players (each wallet under 100,000 credits
    /// in all, so no bonus needs the open-lot count), from `concurrency` callers as the timed run
    /// does; with `coveringCredits`, the last of a player's lots instead holds its spends and
    /// expires first (given last, so that the others still need no lot count).
    private func seedLots(_ store: any LedgerDatabase) async throws {
        let expiresAt = Timestamp.format(Date().addingTimeInterval(300 * 86_400))
        let oneCreditLots = lotsPerWallet == 0 ? 0 : playerIDs.count * (coveringCredits == nil ? lotsPerWallet : lotsPerWallet - 1)
        try await giveOneCreditLots(store, count: oneCreditLots, to: playerIDs, keyPrefix: "lot", expiresAt: expiresAt)
        let idleIDs = try (0..<(idleLots > 0 ? playerIDs.count : 0)).map { index throws(WalletError) in try PlayerID("idle-\(index)") }
        try await giveOneCreditLots(store, count: idleLots, to: idleIDs, keyPrefix: "idle-lot", expiresAt: expiresAt)
        guard lotsPerWallet > 0, let coveringCredits else { return }
        let coveringExpiresAt = Timestamp.format(Date().addingTimeInterval(200 * 86_400))
        for (player, credits) in zip(playerIDs, coveringCredits) {
            _ = try await store.bonus(
                BonusRequest(
                    playerID: player, amount: max(1, credits), expiresAt: coveringExpiresAt, reasonCode: "bench",
                    idempotencyKey: "covering-lot", actor: "bench"))
        }
    }

    /// Gives `count` bonus lots of one credit, in turn to each of `wallets`, from `concurrency` callers.
    private func giveOneCreditLots(_ store: any LedgerDatabase, count: Int, to wallets: [PlayerID], keyPrefix: String, expiresAt: String) async throws {
        guard count > 0 else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<concurrency {
                group.addTask {
                    for index in stride(from: caller, to: count, by: concurrency) {
                        _ = try await store.bonus(
                            BonusRequest(
                                playerID: wallets[index % wallets.count], amount: 1, expiresAt: expiresAt, reasonCode: "bench",
                                idempotencyKey: "\(keyPrefix)-\(index)", actor: "bench"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func measure(_ store: any LedgerDatabase) async throws -> Result {
        _ = try await store.setProduct(ProductUpdate(productID: "bench.credits", credits: 5))
        // Every player starts with credits, so most spends succeed (all of them in the spends mix).
        for (index, player) in playerIDs.enumerated() {
            for grant in 0..<seedGrantsPerPlayer {
                _ = try await store.grant(
                    GrantRequest(playerID: player, store: "bench", storeTransactionID: "seed-\(index)-\(grant)", productID: "bench.credits", quantity: seedQuantity, actor: "bench"))
            }
        }
        try await seedLots(store)
        let seeded = store.groupCommitStatistics
        let clock = ContinuousClock()
        let started = clock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for operations in callers {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(operations.count)
                    for operation in operations {
                        let begun = clock.now
                        do {
                            switch operation {
                            case .grant(let player, let transactionID, let quantity):
                                _ = try await store.grant(GrantRequest(playerID: player, store: "bench", storeTransactionID: transactionID, productID: "bench.credits", quantity: quantity, actor: "bench"))
                            case .spend(let player, let amount, let key):
                                _ = try await store.spend(SpendRequest(playerID: player, amount: amount, idempotencyKey: key, actor: "bench"))
                            }
                        } catch WalletError.insufficientFunds where mix == .realistic {
                            // Overdrafts are part of the mix: refused, and measured all the same.
                        }
                        let elapsed = clock.now - begun
                        latencies.append(elapsed.inMilliseconds)
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = clock.now - started
        let timed = store.groupCommitStatistics
        let batches = timed.map { statistics in
            Double(statistics.operations - (seeded?.operations ?? 0)) / Double(max(1, statistics.batches - (seeded?.batches ?? 0)))
        }
        let seconds = elapsed.inSeconds
        let writerTime = timed.flatMap { WriterTime(before: seeded ?? GroupCommitStatistics(), after: $0, seconds: seconds) }
        let verified = try await store.verify()
        return Result(
            opsPerSecond: Double(latencies.count) / seconds, latencies: latencies.sorted(), verifyOk: verified.ok, averageBatch: batches ?? 1, writerTime: writerTime)
    }
}
