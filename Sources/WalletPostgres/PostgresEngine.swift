import WalletCore
import WalletSQL
import Dispatch
import Foundation
import Logging
import NIOCore
import NIOSSL
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
    package var defersStatements: Bool { true }
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

    package func mapped(_ error: any Error) -> WalletError {
        if let error = error as? WalletError { return error }
        if error is CancellationError { return .storage("the request was cancelled before PostgreSQL answered; try again") }
        if let retry = error as? SQLRetry { return .storage("PostgreSQL aborted the write (\(retry)); nothing was written, try again") }
        if let lost = error as? ConnectionLost {
            return .storage(
                "PostgreSQL at \(location) \(lost.reason); a write under way may or may not have committed: retry it with the same idempotency key")
        }
        // Prepared statements report the server's errors as the older `PostgresError`.
        if case .server(let server)? = error as? PostgresError {
            return serverError(state: server.fields[.sqlState] ?? "", message: server.fields[.message], constraint: server.fields[.constraintName])
        }
        guard let error = error as? PSQLError else { return .storage("PostgreSQL: \(String(describing: error).prefix(300))") }
        switch error.code {
        case .server:
            return serverError(
                state: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message], constraint: error.serverInfo?[.constraintName])
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return .storage(
                "PostgreSQL at \(location) cannot be reached or closed the connection; a write under way may or may not have committed: retry it with the same idempotency key")
        case .sslUnsupported:
            return .storage("PostgreSQL at \(location) does not offer TLS, which sslmode requires")
        default:
            return .storage("PostgreSQL at \(location): \(error.code)")
        }
    }

    /// An error the server answered, by its SQLSTATE.
    private func serverError(state: String, message: String?, constraint: String?) -> WalletError {
        let message = message.map { String($0.prefix(300)) }
        switch state {
        case "23503" where constraint == PostgresSchema.kindReference:
            // The words of SQLite's `transactions_known_kind` trigger, so both stores say it alike.
            return .storage(
                "transaction_kinds has no row for this transaction's kind; nothing was written. Opening the database with a wallet that knows the kind adds its row")
        case "42P01", "42703", "42883":
            return .unsupportedDatabase("the PostgreSQL database does not hold the tables this wallet expects (\(message ?? state))")
        case "28P01", "28000":
            return .storage("PostgreSQL at \(location) refused the user name or password")
        case "3D000":
            return .storage("PostgreSQL at \(location) has no such database")
        case "57014":
            return .storage("PostgreSQL cancelled a statement that ran too long; nothing was written, try again")
        case "55P03":
            return .storage("another writer held the ledger lock for over 30 s; nothing was written, try again")
        case "57P01", "57P02", "57P03", "08000", "08003", "08006":
            // The server is shutting down or restarting, and may have said so in answer to a
            // COMMIT it had already made durable.
            return .storage(
                "PostgreSQL at \(location) is restarting or shutting down (\(state)); a write under way may or may not have committed: retry it with the same idempotency key")
        default:
            return .storage("PostgreSQL error \(state): \(message ?? "no message")")
        }
    }
}

/// `SQLSession` on one leased PostgreSQL connection. Statements that return no row are queued
/// without waiting for their answer, which comes in order before the answer of the next query
/// that returns rows, or at `sync()`: this thread waits for an operation's reads and once for
/// all its writes (postgres-nio still runs the queued statements one after another), and the
/// first failed write is reported at the next wait, before anything that came after it.
///
/// No wait is unbounded. postgres-nio drops a statement written to a connection that has already
/// closed without ever answering it (the write reaches no handler), so a session whose connection
/// died under it (a server restarted, a message it could not decode) would wait forever; this one
/// sees the connection closed and fails the statement, and gives up on a server that does not
/// answer within `answerWait`, closing the connection.
final class PostgresSession: SQLSession {
    let connection: PostgresConnection
    private static let logger = Logger(label: "wallet.postgres.session")
    /// Statements sent whose answers were not read yet, in order.
    private var pending: [EventLoopFuture<[PostgresRow]>] = []
    /// How long one answer may take: the statement timeout and a margin.
    private let answerWait: Duration
    /// Whether a statement was sent on this session.
    private var sentAny = false

    /// The most parameters a statement can bind: the wire protocol counts them in 16 bits.
    static let bindsMax = 65_535

    init(connection: PostgresConnection, answerWait: Duration) {
        self.connection = connection
        self.answerWait = answerWait
    }

    /// Every statement but a query that starts with SELECT counts: cautious, never short.
    private(set) var changesSent = 0

    func execute(_ sql: String, _ values: [SQLValue]) throws {
        changesSent += 1
        pending.append(try send(sql, values))
    }

    func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws {
        if !sql.hasPrefix("SELECT") { changesSent += 1 }
        let answer = try send(sql, values)
        // The writes sent before this query were answered before it: their failure comes first.
        try sync()
        for row in try wait(answer) {
            try body(PostgresSQLRow(row: row.makeRandomAccess()))
        }
    }

    /// Waits for every statement sent so far; throws the first one's failure.
    func sync() throws {
        let sent = pending
        pending = []
        var failure: (any Error)?
        for answer in sent {
            do {
                _ = try wait(answer)
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Runs `begin`, then `body`, then COMMIT, and checks that the server committed: a
    /// transaction that failed answers COMMIT with ROLLBACK and no error.
    func inTransaction<Result>(_ begin: String, _ body: () throws -> Result) throws -> Result {
        try execute(begin)
        do {
            let result = try body()
            try sync()
            let tag = try wait(connection.query("COMMIT", logger: Self.logger)).metadata.command
            guard tag == "COMMIT" else { throw WalletError.storage("PostgreSQL rolled the transaction back at commit; nothing was written, try again") }
            return result
        } catch {
            try? sync()
            _ = try? wait(connection.query("ROLLBACK", logger: Self.logger))
            throw error
        }
    }

    /// Sends `sql`: a query or a change through this connection's prepared statement for it
    /// (parsed and planned once per connection, not once per run), anything else as it is.
    private func send(_ sql: String, _ values: [SQLValue]) throws -> EventLoopFuture<[PostgresRow]> {
        // More would wrap the 16-bit count of the messages that describe and bind the statement:
        // PostgreSQL's answer is then one the client cannot read, and the connection closes.
        guard values.count <= Self.bindsMax else {
            throw WalletError.storage("a statement with \(values.count) parameters was refused before it was sent: PostgreSQL takes at most \(Self.bindsMax); nothing was written")
        }
        guard !connection.isClosed else {
            // The pool can lease a connection that closed a moment ago (a server restarted): when
            // nothing was sent on it yet, the transaction runs again on another.
            guard sentAny else { throw SQLRetry("the leased connection had closed") }
            throw ConnectionLost.closed
        }
        sentAny = true
        guard PostgresDialect.preparable(sql) else {
            var bindings = PostgresBindings(capacity: values.count)
            for value in values {
                switch value {
                case .null: bindings.appendNull()
                case .integer(let integer): bindings.append(integer)
                case .text(let text): bindings.append(text)
                }
            }
            return connection.query(PostgresQuery(unsafeSQL: PostgresDialect.numbered(sql), binds: bindings), logger: Self.logger).map(\.rows)
        }
        let statement: PreparedQuery
        if let found = PreparedStatements.shared.find(sql, on: connection) {
            statement = found
        } else {
            // A statement that failed before would fail this PREPARE too: report that one.
            try sync()
            statement = try wait(connection.prepare(query: PostgresDialect.numbered(sql)))
            PreparedStatements.shared.keep(statement, for: sql, on: connection)
        }
        return statement.execute(values.map { value in
            switch value {
            case .null: PostgresData.null
            case .integer(let integer): PostgresData(int64: integer)
            case .text(let text): PostgresData(string: text)
            }
        })
    }

    /// Waits for `answer`, at most `answerWait`, and no longer than the connection lives.
    private func wait<Answer: Sendable>(_ answer: EventLoopFuture<Answer>) throws -> Answer {
        let answered = Answered<Answer>()
        answer.whenComplete { answered.settle($0) }
        let deadline = ContinuousClock.now + answerWait
        var outcome: Result<Answer, any Error>?
        while outcome == nil {
            outcome = answered.wait(upTo: .milliseconds(200))
            guard outcome == nil else { break }
            if connection.isClosed {
                // The connection fails what it had been sent when it closes, before its close
                // future completes; whatever is still unanswered then was dropped.
                _ = try? connection.closeFuture.wait()
                outcome = answered.result ?? .failure(ConnectionLost.closed)
            } else if ContinuousClock.now >= deadline {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = try? closing.wait()
                outcome = answered.result ?? .failure(ConnectionLost.unanswered(answerWait))
            }
        }
        do {
            return try (outcome ?? .failure(ConnectionLost.closed)).get()
        } catch {
            // Serialization failure or deadlock: the whole transaction may succeed if run again.
            // (Prepared statements report the server's errors as the older `PostgresError`.)
            let state: String? = switch error {
            case let error as PSQLError: error.serverInfo?[.sqlState]
            case PostgresError.server(let server): server.fields[.sqlState]
            default: nil
            }
            if let state, state == "40001" || state == "40P01" { throw SQLRetry("SQLSTATE \(state)") }
            if case PostgresError.connectionClosed = error { throw ConnectionLost.closed }
            throw error
        }
    }
}

/// The connection closed, or its server stopped answering, before a statement was answered: the
/// statement may or may not have run (a COMMIT among them).
struct ConnectionLost: Error, CustomStringConvertible {
    let reason: String

    static let closed = ConnectionLost(reason: "closed the connection before it answered")

    static func unanswered(_ wait: Duration) -> ConnectionLost {
        ConnectionLost(reason: "did not answer within \(wait.components.seconds) s (the statement timeout and a margin), so the connection was closed")
    }

    var description: String { reason }
}

/// An answer handed from the event loop to the session's thread, which waits for it in steps.
private final class Answered<Answer: Sendable>: Sendable {
    private let state = Mutex<Result<Answer, any Error>?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    /// The answer, if it came.
    var result: Result<Answer, any Error>? { state.withLock { $0 } }

    func settle(_ result: Result<Answer, any Error>) {
        state.withLock { $0 = result }
        signal.signal()
    }

    /// The answer, waiting for it at most `step`.
    func wait(upTo step: Duration) -> Result<Answer, any Error>? {
        let nanoseconds = step.components.seconds * 1_000_000_000 + step.components.attoseconds / 1_000_000_000
        _ = signal.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        return result
    }
}

/// The prepared statements of each open connection, by SQL; forgotten when it closes.
final class PreparedStatements: Sendable {
    static let shared = PreparedStatements()
    private let statements = Mutex<[ObjectIdentifier: [String: PreparedQuery]]>([:])

    func find(_ sql: String, on connection: PostgresConnection) -> PreparedQuery? {
        statements.withLock { $0[ObjectIdentifier(connection)]?[sql] }
    }

    func keep(_ statement: PreparedQuery, for sql: String, on connection: PostgresConnection) {
        let key = ObjectIdentifier(connection)
        let first = statements.withLock { statements in
            defer { statements[key, default: [:]][sql] = statement }
            return statements[key] == nil
        }
        if first {
            connection.closeFuture.whenComplete { [weak self] _ in self?.statements.withLock { _ = $0.removeValue(forKey: key) } }
        }
    }
}

/// A row of a PostgreSQL answer: integers from int2, int4 or int8 columns, text from text.
private struct PostgresSQLRow: SQLRow {
    let row: PostgresRandomAccessRow

    func integerOrNil(_ column: Int) throws -> Int64? {
        guard column < row.count else { throw WalletError.storage("a query read column \(column) of a row of \(row.count)") }
        let cell = row[column]
        guard var bytes = cell.bytes else { return nil }
        // postgres-nio asks for every result in binary; the row description of a prepared
        // statement still says text (it was described before any Bind), so the bytes decide.
        let value: Int64? = switch bytes.readableBytes {
        case 8: bytes.readInteger(as: Int64.self)
        case 4: bytes.readInteger(as: Int32.self).map(Int64.init)
        case 2: bytes.readInteger(as: Int16.self).map(Int64.init)
        default: nil
        }
        guard let value else { throw WalletError.corrupt("column \(column) holds no integer (\(cell.dataType))") }
        return value
    }

    func textOrNil(_ column: Int) throws -> String? {
        guard column < row.count else { throw WalletError.storage("a query read column \(column) of a row of \(row.count)") }
        let cell = row[column]
        guard var bytes = cell.bytes else { return nil }
        // Text is its UTF-8 bytes in either format.
        return bytes.readString(length: bytes.readableBytes)
    }
}

/// The ledger's SQL, written with `?` parameters (SQLite's), as PostgreSQL reads it.
enum PostgresDialect {
    private static let cache = Mutex<[String: String]>([:])

    /// Whether `sql` is worth a prepared statement: a query or a change of rows. Transaction
    /// control and schema statements run as they are.
    static func preparable(_ sql: String) -> Bool {
        let head = sql.prefix(7).uppercased()
        return head.hasPrefix("SELECT") || head.hasPrefix("INSERT") || head.hasPrefix("UPDATE") || head.hasPrefix("DELETE")
    }

    /// `sql` with each `?` outside quotes numbered `$1`, `$2`, ... in order, and each `?N` as `$N`.
    static func numbered(_ sql: String) -> String {
        if let cached = cache.withLock({ $0[sql] }) { return cached }
        var result = ""
        var next = 1
        var quoted = false
        var characters = sql.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            if character == "'" { quoted.toggle() }
            guard character == "?", !quoted else {
                result.append(character)
                continue
            }
            var digits = ""
            while let digit = pending, digit.isASCII, digit.isNumber {
                digits.append(digit)
                pending = characters.next()
            }
            if digits.isEmpty {
                digits = String(next)
                next += 1
            }
            result += "$" + digits
        }
        // Statements are a fixed set written in the code: the cache stays small.
        cache.withLock { $0[sql] = result }
        return result
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

/// A `postgres://user:password@host:port/database?sslmode=...&sslrootcert=...` URL, read as
/// libpq reads it (for the parts the wallet supports), with its password kept out of every
/// description.
struct PostgresURL: Sendable {
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var sslMode: String
    var rootCertificatePath: String?

    static let sslModes = ["disable", "prefer", "require", "verify-ca", "verify-full"]

    init(_ text: String) throws(WalletError) {
        guard text.utf8.count <= 2_048, let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw .invalidRequest("the database URL is not a valid postgres:// URL")
        }
        user = components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? NSUserName()
        password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw .invalidRequest("the database URL's port must be from 1 to 65535") }
        let path = String(components.percentEncodedPath.drop { $0 == "/" }).removingPercentEncoding ?? ""
        database = path.isEmpty ? user : path
        sslMode = "prefer"
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value, Self.sslModes.contains(mode) else {
                    throw .invalidRequest("the database URL's sslmode must be one of \(Self.sslModes.joined(separator: ", "))")
                }
                sslMode = mode
            case "sslrootcert":
                rootCertificatePath = item.value
            default:
                // Not echoed: a password with a '?' in it would otherwise be shown here.
                throw .invalidRequest("the database URL has a parameter this wallet does not know (known: sslmode, sslrootcert)")
            }
        }
    }

    /// The URL with its password replaced by `***`: what logs and errors show.
    var redacted: String {
        let credentials = password == nil ? user : "\(user):***"
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(sslMode)"
    }

    /// TLS as libpq's sslmode means it: `prefer` and `require` encrypt without checking the
    /// certificate, `verify-ca` checks it against the CA, `verify-full` also checks the name.
    func tls() throws(WalletError) -> PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificatePath {
            do {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootCertificatePath))
            } catch {
                throw .invalidRequest("cannot read the CA certificates (PEM) at sslrootcert '\(rootCertificatePath.prefix(200))'")
            }
        }
        switch sslMode {
        case "disable":
            return .disable
        case "prefer":
            configuration.certificateVerification = .none
            return .prefer(configuration)
        case "require":
            configuration.certificateVerification = rootCertificatePath == nil ? .none : .noHostnameVerification
            return .require(configuration)
        case "verify-ca":
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        default:
            configuration.certificateVerification = .fullVerification
            return .require(configuration)
        }
    }
}
