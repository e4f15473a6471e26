import Foundation
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletPostgres
@testable import WalletSQL
import WalletTestSupport

/// PostgreSQL failing under the writer: restarted under load, hung, or handed a statement it
/// cannot take. Each test owns a cluster of its own (restarting the shared one would break the
/// tests running beside it) and bounds its waiting with a generous deadline that fails the test:
/// a write that never answers is the bug these tests hold off, not a slow one.
@Suite("PostgreSQL faults", .enabled(if: TestBackend.all.contains(.postgres)), .throttled)
struct PostgresFaultTests {
    /// Far beyond what any of these waits takes when the writer works; reached only by a hang.
    static let deadlineSeconds = 300
    /// The players `seed` credits, in its order.
    static let players: [PlayerID] = ["p0", "p1", "p2", "p3"]

    @Test("PostgreSQL restarted under 16 writers: every write answers, no acknowledged spend is lost, and writes succeed again without restarting the wallet")
    func restartUnderLoad() async throws {
        let cluster = try await TestPostgres.Cluster.make()
        defer { cluster.remove() }
        let store = try await PostgresEngine.open(url: cluster.freshDatabase(), poolSize: 4, writeMode: .default, clock: { Date() })
        try await Self.seed(store, players: 4)
        let startedAt = try await Self.serverStart(store)
        let answered = Counter()
        let restarts = Note()
        // Three restarts, a crash and an orderly one, each once the writers are well under way;
        // the writers go on until some time after the last.
        let modes: [TestPostgres.Cluster.StopMode] = [.immediate, .fast, .immediate]
        let logs = try await Self.withinDeadline {
            await withTaskGroup(of: [SpendOutcome].self) { group in
                group.addTask {
                    var failures: [String] = []
                    for (round, mode) in modes.enumerated() {
                        for _ in 0..<6_000 where answered.value < 80 * (round + 1) { try? await Task.sleep(for: .milliseconds(5)) }
                        do { try await offPool { try cluster.restart(mode) } } catch { failures.append("\(error)") }
                    }
                    restarts.set(failures.joined(separator: "; "))
                    return []
                }
                for writer in 0..<16 {
                    group.addTask {
                        var outcomes: [SpendOutcome] = []
                        var step = 0
                        var stepsAfterRestarts = 0
                        while step < 600, stepsAfterRestarts < 10 {
                            let key = "w\(writer)-\(step)"
                            let spend = SpendRequest(playerID: Self.players[writer % 4], amount: 1, idempotencyKey: key, actor: "t")
                            do throws(WalletError) {
                                _ = try await store.spend(spend)
                                outcomes.append(.acknowledged(key))
                            } catch {
                                outcomes.append(.failed(key, error.code, error.detail))
                            }
                            answered.increment()
                            step += 1
                            if restarts.value != nil { stepsAfterRestarts += 1 }
                        }
                        return outcomes
                    }
                }
                return await group.reduce(into: [SpendOutcome]()) { $0 += $1 }
            }
        }
        #expect(restarts.value == "", "the cluster was not restarted three times: \(restarts.value ?? "never tried")")
        // A batch whose connection died before its COMMIT runs again on a new connection, so a
        // restart may fail no write at all; one that fails must be a storage error (503).
        var acknowledged: Set<String> = []
        for outcome in logs {
            switch outcome {
            case .acknowledged(let key): acknowledged.insert(key)
            case .failed(let key, let code, let detail): #expect(code == "storage_error", "\(key): \(code) \(detail)")
            }
        }
        // The pool reconnects by itself: a new write succeeds once the server is back.
        let after = try await Self.eventually { try await store.spend(SpendRequest(playerID: "p0", amount: 1, idempotencyKey: "after", actor: "t")) }
        #expect(after.balance >= 0 && !after.replayed)
        try await store.checkReadiness()
        #expect(try await store.verify().ok)
        let stored = try await Self.storedKeys(store)
        #expect(acknowledged.subtracting(stored).isEmpty, "acknowledged but not in the ledger: \(acknowledged.subtracting(stored).sorted().prefix(10))")
        #expect(stored.contains("after"))
        #expect(try await Self.serverStart(store) != startedAt, "the server the store writes to was not restarted")
    }

    @Test("a server that stops answering: readiness turns unready while the writer is stuck, the write fails once its answer is overdue, and both recover when the server answers again")
    func frozenServer() async throws {
        let cluster = try await TestPostgres.Cluster.make()
        defer { cluster.remove() }
        let statementTimeout = Duration.seconds(1)
        let store = try await PostgresEngine.open(url: cluster.freshDatabase(), poolSize: 2, writeMode: .default, clock: { Date() }, statementTimeout: statementTimeout)
        try await Self.seed(store, players: 1)
        try await store.checkReadiness()
        try cluster.freeze()
        let frozen = SpendRequest(playerID: "p0", amount: 1, idempotencyKey: "frozen", actor: "t")
        let stuck = Task { () -> WalletError? in
            do throws(WalletError) {
                _ = try await store.spend(frozen)
                return nil
            } catch {
                return error
            }
        }
        // Once its batch has run longer than the statement timeout and the writer's margin, the
        // store says it is unready, without waiting for the frozen server. Asked again until then:
        // under a busy suite the spend once reached the writer later than the margin allows.
        try await Task.sleep(for: statementTimeout + GroupCommitWriter.stuckMargin + .seconds(1))
        // Asked until the writer is reported stuck or the spend has its answer (overdue): the
        // window between is ten seconds.
        let spendAnswered = Mutex(false)
        let watcher = Task {
            _ = await stuck.value
            spendAnswered.withLock { $0 = true }
        }
        // A check can itself wait ten seconds for a connection, so a new one starts every 250 ms
        // whatever the earlier ones are doing: one of them falls in the window.
        let found = ReadinessFinding()
        let namesWriter: @Sendable () -> Bool = { found.namesWriter }
        let unready = try await Self.withinDeadline { () async -> WalletError? in
            var checks: [Task<Void, Never>] = []
            while !spendAnswered.withLock({ $0 }), !namesWriter() {
                checks.append(Task {
                    let error = await walletError { try await store.checkReadiness() }
                    found.record(error)
                })
                try? await Task.sleep(for: .milliseconds(250))
            }
            for check in checks { await check.value }
            return found.error
        }
        _ = await watcher.value
        #expect(unready?.code == "storage_error" && unready?.detail.contains("writer") == true, "\(String(describing: unready))")
        // The session gives up on the overdue answer: the caller hears it may or may not have
        // committed, and the writer is free for the next batch.
        let failure = try await Self.withinDeadline { await stuck.value }
        #expect(failure?.code == "storage_error" && failure?.detail.contains("same idempotency key") == true, "\(String(describing: failure))")
        try cluster.thaw()
        let after = try await Self.eventually { try await store.spend(SpendRequest(playerID: "p0", amount: 2, idempotencyKey: "thawed", actor: "t")) }
        #expect(!after.replayed)
        try await Self.eventually { try await store.checkReadiness() }
        // The client's retry of the unanswered spend, with its key, applies it exactly once.
        _ = try await Self.eventually { try await store.spend(frozen) }
        #expect(try await store.balances(playerID: "p0").balances["credits"] == 997)
        #expect(try await store.verify().ok)
    }

    @Test("a statement with 70,000 binds is refused before it is sent, with a storage error, and the next write works")
    func tooManyBinds() async throws {
        let store = try await PostgresEngine.open(url: await TestPostgres.freshDatabase(), poolSize: 2, writeMode: .default, clock: { Date() })
        try await Self.seed(store, players: 1)
        let binds = 70_000
        let placeholders = Array(repeating: "?", count: binds).joined(separator: ", ")
        let values = Array(repeating: SQLValue.integer(1), count: binds)
        let change = try await Self.withinDeadline {
            await walletError { _ = try await store.write { db, _, _ in try db.execute("UPDATE accounts SET balance = balance WHERE id IN (\(placeholders))", values) } }
        }
        #expect(change?.code == "storage_error" && change?.detail.contains("65535") == true, "\(String(describing: change))")
        let query = try await Self.withinDeadline {
            await walletError { _ = try await store.read { db in try db.integer("SELECT count(*) FROM accounts WHERE id IN (\(placeholders))", values) } }
        }
        #expect(query?.code == "storage_error" && query?.detail.contains("65535") == true, "\(String(describing: query))")
        let spend = try await Self.withinDeadline { try await store.spend(SpendRequest(playerID: "p0", amount: 3, idempotencyKey: "next", actor: "t")) }
        #expect(spend.balance == 997)
        try await store.checkReadiness()
        #expect(try await store.verify().ok)
    }

    @Test("a statement that runs past the statement timeout fails with a storage error, alone in its batch, and the next write works")
    func statementTimeout() async throws {
        let store = try await PostgresEngine.open(url: await TestPostgres.freshDatabase(), poolSize: 2, writeMode: .default, clock: { Date() }, statementTimeout: .seconds(1))
        try await Self.seed(store, players: 1)
        let slow = try await Self.withinDeadline {
            await walletError { _ = try await store.write { db, _, _ in try db.execute("SELECT pg_sleep(30)") } }
        }
        #expect(slow?.code == "storage_error" && slow?.detail.contains("ran too long") == true, "\(String(describing: slow))")
        let spend = try await Self.withinDeadline { try await store.spend(SpendRequest(playerID: "p0", amount: 3, idempotencyKey: "next", actor: "t")) }
        #expect(spend.balance == 997)
        try await store.checkReadiness()
    }

    enum SpendOutcome: Sendable {
        case acknowledged(String)
        case failed(String, String, String)
    }

    /// A catalog and 1,000 credits for each of `players` players, p0, p1, ...
    static func seed(_ store: SQLLedgerStore, players: Int) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume10credits", credits: 10))
        for player in 0..<players {
            _ = try await store.grant(GrantRequest(playerID: try PlayerID("p\(player)"), store: "apple", storeTransactionID: "T\(player)", productID: "com.example.consume10credits", quantity: 100, actor: "t"))
        }
    }

    /// When the server the store reads from started.
    static func serverStart(_ store: SQLLedgerStore) async throws -> String? {
        try await store.read { db in try db.first("SELECT pg_postmaster_start_time()::text") { row in try row.text(0) } }
    }

    /// Every idempotency key the ledger holds.
    static func storedKeys(_ store: SQLLedgerStore) async throws -> Set<String> {
        Set(try await store.read { db in try db.all("SELECT key FROM idempotency_keys") { row in try row.text(0) } })
    }

    /// `operation`'s result; retried (a bounded number of times) while the server comes back.
    static func eventually<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withinDeadline {
            var lastError: (any Error)?
            for _ in 0..<100 {
                do { return try await operation() } catch { lastError = error }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw lastError ?? CancellationError()
        }
    }

    /// `work`'s result, or a test failure if it has not answered within `deadlineSeconds` (the
    /// work is left behind: a hung write cannot be cancelled).
    static func withinDeadline<Result: Sendable>(_ work: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let answer = OneAnswer<Result>()
        let outcome: Swift.Result<Result, any Error> = await withCheckedContinuation { continuation in
            answer.set(continuation)
            Task {
                do { answer.resume(.success(try await work())) } catch { answer.resume(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: .seconds(deadlineSeconds))
                answer.resume(.failure(Hung()))
            }
        }
        if case .failure(let error) = outcome, error is Hung { Issue.record("no answer within \(deadlineSeconds) s: the writer hangs") }
        return try outcome.get()
    }

    struct Hung: Error {}
}

/// A text one task leaves for others: nil until set (here: the restarts' failures, "" for none).
private final class Note: Sendable {
    private let text = Mutex<String?>(nil)
    var value: String? { text.withLock { $0 } }
    func set(_ value: String) { text.withLock { $0 = value } }
}

/// A continuation resumed by whichever answer comes first.
private final class OneAnswer<Value: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Swift.Result<Value, any Error>, Never>?>(nil)

    /// Called before either answer can come.
    func set(_ continuation: CheckedContinuation<Swift.Result<Value, any Error>, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(_ outcome: Swift.Result<Value, any Error>) {
        let waiting = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: outcome)
    }
}

/// The readiness error a frozen server's checks found: the first that names the stuck writer,
/// else the latest.
final class ReadinessFinding: Sendable {
    private let value = Mutex<WalletError?>(nil)
    var error: WalletError? { value.withLock { $0 } }
    var namesWriter: Bool { value.withLock { $0?.detail.contains("writer") == true } }
    func record(_ error: WalletError?) {
        value.withLock { current in if current?.detail.contains("writer") != true { current = error } }
    }
}
