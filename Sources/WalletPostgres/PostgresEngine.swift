import WalletCore
import WalletSQL
import Dispatch
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The ledger on a PostgreSQL database (15 or later), through postgres-nio's `PostgresClient`
/// pool, so that many `wallet serve` processes can share one ledger.
///
/// Every write transaction first locks the one row of `ledger_lock` (`FOR UPDATE`, at READ
/// COMMITTED): writers of every process take turns, as SQLite's file lock makes them, so the
/// chain's head, the accounts and the keys a batch reads stay true until it commits. The group
/// commit takes that lock once per batch, not once per operation. A serialization failure or a
/// deadlock runs the transaction again, a few times; after that, or when the server cannot be
/// reached, the caller gets `storage_error` (503 with Retry-After). No statement waits longer
/// than the statement timeout and a margin, or longer than its connection lives (see
/// `PostgresSession`), so a server that restarts or hangs never wedges the writer.
///
/// The ledger's code is synchronous (`SQLSession`); it runs on a thread of its own per
/// session, waiting for each statement's answer, never on Swift's cooperative threads.
package struct PostgresEngine: SQLEngine {
    let client: PostgresClient
    package let location: String
    /// Each lookup is a round trip: a batch reads what its operations will look up first.
    package var prefetches: Bool { true }
    /// A batch takes the ledger lock, prefetches and commits, round trips each whatever its
    /// size: waiting up to 0.6 ms for the callers of the last batch keeps batches full (64
    /// operations against 39–42 without the wait; 1,648 ops/s against 1,571 and 1,574 in
    /// `wallet bench`, one round each way).
    package var batchLinger: Duration { .microseconds(600) }
    /// The pool's task: started on open, cancelled by `close()` (which closes the pool).
    private let poolTask: Task<Void, Never>

    static let poolSizeRange = 1...1_000
    /// How many times a transaction runs before a serialization failure or deadlock is reported.
    static let attemptsMax = 5
    /// How long a session waits for a connection of the pool before the request gets 503.
    static let connectionWaitSeconds = 10
    /// How long one statement may run: the server cancels it after this (`statement_timeout`
    /// on every connection of the pool), and the session gives up on an answer that has not come
    /// `answerWaitMargin` later (a server that froze, a network that drops packets without a
    /// reset), closing the connection. Tests pass a shorter one to `open`.
    package static let statementTimeoutDefault = Duration.seconds(60)
    /// How much longer than the statement timeout a session waits for an answer before it
    /// closes the connection.
    static let answerWaitMargin = Duration.seconds(15)
    /// The longest statement this engine lets run: the writer counts a batch that runs this
    /// long, plus its own margin, as stuck.
    package let statementTimeout: Duration

    /// Server-side limits on every session: no statement, lock wait or idle transaction of a
    /// stalled or partitioned instance holds the ledger for longer than these.
    static func sessionSettings(statementTimeout: Duration) -> [(String, String)] {
        let milliseconds = statementTimeout.components.seconds * 1_000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
        return [
            ("statement_timeout", "\(milliseconds)ms"), ("lock_timeout", "\(min(milliseconds, 30_000))ms"),
            ("idle_in_transaction_session_timeout", "\(max(milliseconds, 60_000))ms"), ("application_name", "wallet"),
        ]
    }

    /// Whether `database` is a URL rather than a SQLite path: anything with `://`, whatever
    /// its case or leading spaces (a mistyped URL must never become a file name that error
    /// messages print, password included). `PostgresURL` refuses schemes other than PostgreSQL's.
    package static func names(_ database: String) -> Bool {
        database.contains("://")
    }

    package static func open(
        url: String, poolSize: Int, writeMode: WriteMode, clock: @escaping @Sendable () -> Date,
        makeTransactionID: @escaping @Sendable () -> String = RandomID.uuid, statementTimeout: Duration = statementTimeoutDefault
    ) async throws(WalletError) -> SQLLedgerStore {
        let target = try PostgresURL(url)
        guard poolSizeRange.contains(poolSize) else {
            throw .invalidRequest("the PostgreSQL pool size must be from \(poolSizeRange.lowerBound) to \(poolSizeRange.upperBound), not \(poolSize)")
        }
        var configuration = PostgresClient.Configuration(
            host: target.host, port: target.port, username: target.user, password: target.password, database: target.database, tls: try target.tls())
        configuration.options.maximumConnections = poolSize
        configuration.options.connectTimeout = .seconds(Int64(connectionWaitSeconds))
        configuration.options.additionalStartupParameters = sessionSettings(statementTimeout: statementTimeout)
        var logger = Logger(label: "wallet.postgres")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let engine = PostgresEngine(client: client, location: target.redacted, poolTask: Task { await client.run() }, statementTimeout: statementTimeout)
        do {
            try await engine.transaction(lock: false) { db in try PostgresSchema.apply(db) }
        } catch {
            await engine.close()
            throw engine.mapped(error)
        }
        return SQLLedgerStore(engine: engine, writeMode: writeMode, clock: clock, makeTransactionID: makeTransactionID)
    }

    package func transaction<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
        try await transaction(lock: true, body)
    }

    /// Runs `body` in a READ COMMITTED transaction, after taking the ledger lock unless told
    /// not to (the schema's creation takes its own), and again after a serialization failure.
    private func transaction<Result: Sendable>(lock: Bool, _ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await session { db in
                    try db.inTransaction("BEGIN ISOLATION LEVEL READ COMMITTED") {
                        if lock {
                            guard try db.first("SELECT id FROM ledger_lock WHERE id = 1 FOR UPDATE", [], { _ in true }) == true else {
                                throw WalletError.corrupt("the ledger_lock row is missing, so writers cannot take turns; nothing was written")
                            }
                        }
                        return try body(db)
                    }
                }
            } catch let retry as SQLRetry {
                guard attempt < Self.attemptsMax else {
                    throw WalletError.storage("PostgreSQL aborted the write \(attempt) times (\(retry)); nothing was written, try again")
                }
                attempt += 1
                try await Task.sleep(for: .milliseconds(Int64.random(in: 1...(5 << attempt))))
            }
        }
    }

    package func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await session { db in
                    try db.inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { try body(db) }
                }
            } catch is SQLRetry where attempt < Self.attemptsMax {
                // A leased connection that had closed (a read is never aborted otherwise).
                attempt += 1
            }
        }
    }

    /// Leases a connection and runs `work` on a thread that may wait for the server.
    private func session<Result: Sendable>(_ work: @escaping @Sendable (PostgresSession) throws -> Result) async throws -> Result {
        let client = self.client
        let answerWait = statementTimeout + Self.answerWaitMargin
        let leased = Flag()
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    leased.set()
                    return try await Blocking.run { try work(PostgresSession(connection: connection, answerWait: answerWait)) }
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(Self.connectionWaitSeconds))
                return nil
            }
            if let outcome = try await group.next(), let result = outcome {
                group.cancelAll()
                return result
            }
            // The timer ended first. Work that has its connection goes on (each statement has
            // its own limits) and its own answer or error is the caller's; only a wait for a
            // connection is given up.
            if leased.isSet {
                while let outcome = try await group.next() {
                    if let result = outcome { return result }
                }
            }
            group.cancelAll()
            do {
                while let outcome = try await group.next() {
                    if let result = outcome { return result }
                }
            } catch {
                // Leased after all, just before the cancellation: the work ran, and its own error
                // is the caller's. Otherwise the lease was cancelled: the wait is what failed.
                if leased.isSet { throw error }
            }
            throw WalletError.storage("no connection to PostgreSQL at \(location) within \(Self.connectionWaitSeconds) s; nothing was written, try again")
        }
    }

    package func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true { try await Task.sleep(for: .seconds(3_600)) }
        }
        await close()
    }

    /// Closes the pool's connections; the engine answers no request afterwards.
    func close() async {
        poolTask.cancel()
        await poolTask.value
    }

    package func afterCopy(_ db: any SQLSession) throws {
        for table in ["accounts", "lots"] {
            try db.execute("SELECT setval(pg_get_serial_sequence('\(table)', 'id'), coalesce((SELECT max(id) FROM \(table)), 0) + 1, false)")
        }
    }
}

/// A flag set once, read from other tasks.
private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Runs blocking work on threads of its own, away from Swift's cooperative pool.
enum Blocking {
    private static let queue = DispatchQueue(label: "wallet.postgres.sessions", attributes: .concurrent)

    static func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Swift.Result { try work() }) }
        }
    }
}
