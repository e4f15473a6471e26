import WalletCore
import WalletSQL
import Dispatch
import Logging
import NIOCore
import PostgresNIO
import Synchronization


/// `SQLSession` on one leased PostgreSQL connection. Statements that return no row are queued
/// without waiting for their answer, which comes in order before the answer of the next query
/// that returns rows, or at `sync()`: this thread waits for an operation's reads and once for
/// all its writes (postgres-nio still runs the queued statements one after another, a round
/// trip each), and the first failed write is reported at the next wait, before anything that
/// came after it. Rows written by a `RowWrite` are held back until any other statement is sent,
/// or `sync()`: then each write's rows go in as few statements as it makes, so the operations
/// of a batch that only append to the ledger send a few statements a table between them, not
/// five each.
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
    /// Rows held back (`write`).
    private var held = HeldRows()

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
        try sendHeld()
        pending.append(try send(sql, values))
    }

    /// Holds `rows` back until another statement is sent, or `sync()`.
    func write(_ write: RowWrite, _ rows: [[SQLValue]]) throws {
        changesSent += 1
        if try held.hold(write, rows) { try sendHeld() }
    }

    /// Sends the rows held back.
    private func sendHeld() throws {
        for statement in try held.take() { pending.append(try send(statement.sql, statement.values)) }
    }

    func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws {
        if !sql.hasPrefix("SELECT") { changesSent += 1 }
        try sendHeld()
        let answer = try send(sql, values)
        // The writes sent before this query were answered before it: their failure comes first.
        try sync()
        for row in try wait(answer) {
            try body(PostgresSQLRow(row: row.makeRandomAccess()))
        }
    }

    /// Sends what is held back, and waits for every statement sent so far; throws the first
    /// one's failure.
    func sync() throws {
        var unsent: (any Error)?
        do { try sendHeld() } catch { unsent = error }
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
        // A statement sent before the held rows failed first.
        if let failure = failure ?? unsent { throw failure }
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
            // Rows held back would only be rolled back.
            held.drop()
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
