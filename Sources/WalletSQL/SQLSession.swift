import WalletCore

/// What the ledger's code says to a SQL database, whichever it is: statements with `?`
/// parameters (or `?N` for the Nth) bound to integers, text or NULL, and rows read by column
/// index. The writes, reads, audit and verification are written once against it; SQLite
/// (`SQLiteSession`) and PostgreSQL (`PostgresSession`) each run them on their own connection,
/// inside a transaction their engine opened. The SQL they share is the common subset of both.
package protocol SQLSession {
    /// Runs a statement that returns no row.
    func execute(_ sql: String, _ values: [SQLValue]) throws
    /// Writes `rows` by `write` (`RowWrite.statements`): at once, or held back (PostgreSQL,
    /// `HeldRows`) until the next statement of any other kind, or `sync()`, then each
    /// `RowWrite`'s held rows in as few statements as it makes, in the order of their ranks. So
    /// a row held back is written before anything that could read it, or refer to it, runs.
    func write(_ write: RowWrite, _ rows: [[SQLValue]]) throws
    /// Runs a query and hands each row to `body`, in order.
    func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws
    /// Writes the rows held back, and waits until every statement run so far has been
    /// answered; throws the first failure: a session may send statements without waiting for
    /// them (PostgreSQL pipelines them). An engine syncs before it commits.
    func sync() throws
    /// How many statements (or writes held back) that may change the database this session was
    /// given so far: a batch run without savepoints tells by it whether an operation wrote
    /// anything (`Savepoint.run`).
    var changesSent: Int { get }
}

extension SQLSession {
    package func execute(_ sql: String) throws { try execute(sql, []) }

    /// At once, in `write`'s statements (SQLite, where a statement is no round trip).
    package func write(_ write: RowWrite, _ rows: [[SQLValue]]) throws {
        for statement in try write.statements(rows) { try execute(statement.sql, statement.values) }
    }

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

/// A write of rows that one statement makes whatever their number, so that a session may hold
/// such rows back and send those of each `RowWrite` in one statement (`SQLSession.write`): an
/// INSERT of rows, or an UPDATE that subtracts an amount from a column of rows found by key.
/// The ledger appends a transaction as five of them (its row, its postings, the lots it draws
/// from, its breakdown, its key), a row or a few each, and a batch of 40 operations sent them as 200
/// statements: on PostgreSQL a round trip each, most of a batch's time (README "Performance").
package struct RowWrite: Sendable {
    package enum Kind: Sendable {
        /// `INSERT INTO table (columns) VALUES (...), ...`: a row is the columns' values.
        case insert
        /// `UPDATE table SET columns[1] = columns[1] - amount WHERE columns[0] = key`: a row is
        /// (key, amount), an integer each; the rows of one key add up.
        case subtract
    }

    let kind: Kind
    package let table: String
    let columns: [String]
    /// Where a session sends these rows among others it holds: after those of every write of a
    /// lower rank, so that a row is written after the rows it refers to (a transaction's
    /// postings after it). Each `RowWrite` has its own.
    package let rank: Int
    /// The statement for 1, 2, 4, ... rows, as many as one statement takes, made once.
    private let texts: [String]

    /// Parameters one statement binds at most, far under SQLite's 32,766 and PostgreSQL's 65,535:
    /// 64 transaction rows of 21 columns, 512 rows of the narrower writes.
    static let parametersPerStatementMax = 2_048
    /// Rows one statement writes at most, whatever their width: a debit from each of a wallet's
    /// lots (`Limits.openLotsPerWalletMax`) is a few hundred statements, never one too large.
    static let rowsPerStatementMax = 512

    /// The values a row of this write has.
    package var columnCount: Int { columns.count }

    /// Rows one statement of this write takes at most: a power of two, as the number every
    /// statement writes is, so that an engine prepares at most ten texts of each write.
    var rowsMax: Int { 1 << (texts.count - 1) }

    private init(_ kind: Kind, table: String, columns: [String], rank: Int) {
        self.kind = kind
        self.table = table
        self.columns = columns
        self.rank = rank
        var texts: [String] = []
        var rows = 1
        while rows <= Self.rowsPerStatementMax, rows * columns.count <= Self.parametersPerStatementMax {
            texts.append(Self.text(kind, table: table, columns: columns, rows: rows))
            rows *= 2
        }
        self.texts = texts
    }

    package static func insert(into table: String, columns: [String], rank: Int) -> RowWrite {
        RowWrite(.insert, table: table, columns: columns, rank: rank)
    }

    package static func subtract(from table: String, column: String, key: String, rank: Int) -> RowWrite {
        RowWrite(.subtract, table: table, columns: [key, column], rank: rank)
    }

    private static func text(_ kind: Kind, table: String, columns: [String], rows: Int) -> String {
        switch kind {
        case .insert:
            let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
            return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES " + Array(repeating: row, count: rows).joined(separator: ", ")
        case .subtract:
            let (key, column) = (columns[0], columns[1])
            guard rows > 1 else { return "UPDATE \(table) SET \(column) = \(column) - ?2 WHERE \(key) = ?1" }
            // Joined from a VALUES list, as `BatchContext.writeBalances` is (both engines read
            // the list's columns as column1, column2).
            return "UPDATE \(table) SET \(column) = \(column) - changed.column2 FROM (VALUES "
                + Array(repeating: "(CAST(? AS BIGINT), CAST(? AS BIGINT))", count: rows).joined(separator: ", ")
                + ") AS changed WHERE \(table).\(key) = changed.column1"
        }
    }

    /// The statements that write `rows`, in order: at most `rowsMax` rows each, in powers of
    /// two, largest first. For a subtraction, the rows of one key become one row of
    /// their sum first (an UPDATE joined from a list that names a row twice changes it once), in
    /// the order each key came first; a sum that overflows is a storage error.
    package func statements(_ rows: [[SQLValue]]) throws -> [(sql: String, values: [SQLValue])] {
        // One row, the usual case where a session sends at once (SQLite): nothing to sum or join.
        if rows.count == 1, let row = rows.first {
            if kind == .subtract { _ = try Self.keyAndAmount(row) }
            return [(texts[0], row)]
        }
        var rows = rows
        if kind == .subtract { rows = try Self.summedByKey(rows) }
        var statements: [(sql: String, values: [SQLValue])] = []
        var start = 0
        while start < rows.count {
            var power = texts.count - 1
            while 1 << power > rows.count - start { power -= 1 }
            let end = start + 1 << power
            statements.append((texts[power], rows[start..<end].flatMap { $0 }))
            start = end
        }
        return statements
    }

    private static func summedByKey(_ rows: [[SQLValue]]) throws -> [[SQLValue]] {
        var order: [Int64] = []
        var sums: [Int64: Int64] = [:]
        for row in rows {
            let (key, amount) = try keyAndAmount(row)
            guard let sum = sums[key] else {
                order.append(key)
                sums[key] = amount
                continue
            }
            let (total, overflow) = sum.addingReportingOverflow(amount)
            guard !overflow else { throw WalletError.storage("amounts subtracted from one row overflow") }
            sums[key] = total
        }
        return order.map { key in [.integer(key), .integer(sums[key] ?? 0)] }
    }

    private static func keyAndAmount(_ row: [SQLValue]) throws -> (key: Int64, amount: Int64) {
        guard row.count == 2, case .integer(let key) = row[0], case .integer(let amount) = row[1] else {
            throw WalletError.storage("a subtraction's row is not (key, amount)")
        }
        return (key, amount)
    }
}

/// The rows a session holds back (`SQLSession.write`) until it sends any other statement, or
/// syncs: each write's rows together, in the order of their ranks, sent by `take()`.
package struct HeldRows {
    private var writes: [(write: RowWrite, rows: [[SQLValue]])] = []
    private var count = 0

    /// Rows held back at most: a batch holds a few hundred, one that takes from each of a
    /// wallet's lots thousands; beyond this they go out whatever comes next.
    package static let rowsMax = 4_096

    package init() {}

    /// Holds `rows` of `write`; true once as many are held as should be sent now.
    package mutating func hold(_ write: RowWrite, _ rows: [[SQLValue]]) throws -> Bool {
        if let index = writes.firstIndex(where: { $0.write.rank >= write.rank }), writes[index].write.rank == write.rank {
            // Two writes of one rank would have their rows sent as one's.
            guard writes[index].write.table == write.table else {
                throw WalletError.storage("writes to \(writes[index].write.table) and \(write.table) share rank \(write.rank); nothing was written")
            }
            writes[index].rows += rows
        } else {
            writes.insert((write, rows), at: writes.firstIndex { $0.write.rank > write.rank } ?? writes.endIndex)
        }
        count += rows.count
        return count >= Self.rowsMax
    }

    /// The statements that write every row held, in order, holding none after; if they cannot
    /// be made, the rows stay held, so that the transaction cannot commit without them.
    package mutating func take() throws -> [(sql: String, values: [SQLValue])] {
        guard !writes.isEmpty else { return [] }
        let statements = try writes.flatMap { try $0.write.statements($0.rows) }
        drop()
        return statements
    }

    /// Forgets the rows held: their transaction is being rolled back.
    package mutating func drop() {
        writes = []
        count = 0
    }
}
