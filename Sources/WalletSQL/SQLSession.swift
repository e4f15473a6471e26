import WalletCore

/// What the ledger's code says to a SQL database, whichever it is: statements with `?`
/// parameters (or `?N` for the Nth) bound to integers, text or NULL, and rows read by column
/// index. The writes, reads, audit and verification are written once against it; SQLite
/// (`SQLiteSession`) and PostgreSQL (`PostgresSession`) each run them on their own connection,
/// inside a transaction their engine opened. The SQL they share is the common subset of both.
package protocol SQLSession {
    /// Runs a statement that returns no row.
    func execute(_ sql: String, _ values: [SQLValue]) throws
    /// Runs a query and hands each row to `body`, in order.
    func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws
    /// Waits until every statement run so far has been answered, and throws the first failure:
    /// a session may send statements without waiting for them (PostgreSQL pipelines them).
    func sync() throws
    /// How many statements that may change the database this session sent so far: a session
    /// whose statements are deferred tells by it whether an operation wrote anything.
    var changesSent: Int { get }
}

extension SQLSession {
    package func execute(_ sql: String) throws { try execute(sql, []) }

    /// The first row of a query, read by `read`; nil if there is none.
    package func first<Result>(_ sql: String, _ values: [SQLValue] = [], _ read: (any SQLRow) throws -> Result) throws -> Result? {
        var result: Result?
        try forEach(sql, values) { row in
            if result == nil { result = try read(row) }
        }
        return result
    }

    /// The integer in the first column of the first row; nil for no row or NULL (`max` of nothing).
    package func integer(_ sql: String, _ values: [SQLValue] = []) throws -> Int64? {
        try first(sql, values) { row in try row.integerOrNil(0) }.flatMap { $0 }
    }

    /// Every row of a query, each read by `read`.
    package func all<Result>(_ sql: String, _ values: [SQLValue] = [], _ read: (any SQLRow) throws -> Result) throws -> [Result] {
        var results: [Result] = []
        try forEach(sql, values) { row in results.append(try read(row)) }
        return results
    }
}

/// A value bound to a statement parameter.
package enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)

    package static func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    package static func integer(_ value: Int64?) -> SQLValue { value.map(SQLValue.integer) ?? .null }
}

/// The current row of a query, read by column index (0-based).
package protocol SQLRow {
    /// The column's integer, nil for NULL.
    func integerOrNil(_ column: Int) throws -> Int64?
    /// The column's text, nil for NULL.
    func textOrNil(_ column: Int) throws -> String?
}

extension SQLRow {
    /// The column's integer; a NULL where the schema allows none is a storage error.
    package func integer(_ column: Int) throws -> Int64 {
        guard let value = try integerOrNil(column) else { throw WalletError.corrupt("a stored row has NULL in integer column \(column)") }
        return value
    }

    /// The column's text; a NULL where the schema allows none is a storage error.
    package func text(_ column: Int) throws -> String {
        guard let value = try textOrNil(column) else { throw WalletError.corrupt("a stored row has NULL in text column \(column)") }
        return value
    }
}

/// Thrown by a session when the database aborted the whole transaction for a reason that a
/// new attempt may not meet (a serialization failure, a deadlock): the engine runs the
/// transaction again, a bounded number of times.
package struct SQLRetry: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }
}
