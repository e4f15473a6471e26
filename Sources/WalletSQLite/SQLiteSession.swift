import WalletCore
import WalletSQL
import GRDB
import GRDBSQLite

/// `SQLSession` on a GRDB connection, inside a transaction GRDB opened: statements prepared and
/// cached by GRDB (`cachedStatement`), bound and stepped with SQLite's own calls.
///
/// GRDB's `StatementArguments` boxes each value in an existential and converts it to a
/// `DatabaseValue` before binding, and `Row` copies each result; on the write path, where one
/// writer runs six to ten statements per operation for every operation of the process, that
/// was a third of the writer's time (`wallet bench`, see README "Performance").
///
/// A statement is stepped only while the connection is inside a transaction: if SQLite has
/// rolled the transaction back (disk full, I/O error), GRDB would refuse the next statement,
/// and so does this — a write must never autocommit on its own outside its batch.
///
/// Rows written by a `RowWrite` are written at once (a statement is no round trip here), a
/// transaction's rows of one write together: its two postings in one statement, its draws from
/// lots in a statement per power of two.
final class SQLiteSession: SQLSession {
    let db: Database
    /// Every statement but a query that starts with SELECT counts: cautious, never short.
    private(set) var changesSent = 0

    init(db: Database) { self.db = db }

    func execute(_ sql: String, _ values: [SQLValue]) throws {
        changesSent += 1
        try run(sql, values)
    }

    func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws {
        if !sql.hasPrefix("SELECT") { changesSent += 1 }
        let statement = try prepared(sql, values)
        defer { sqlite3_reset(statement) }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: try body(SQLiteRow(statement: statement))
            case SQLITE_DONE: return
            case let code: throw failure(code, sql)
            }
        }
    }

    /// SQLite runs each statement to its end before it returns: nothing is ever pending.
    func sync() throws {}

    private func run(_ sql: String, _ values: [SQLValue]) throws {
        let statement = try prepared(sql, values)
        defer { sqlite3_reset(statement) }
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else { throw failure(code, sql) }
    }

    /// The cached statement for `sql`, reset and bound to `values` in order (1, 2, ...).
    private func prepared(_ sql: String, _ values: [SQLValue]) throws -> SQLiteStatement {
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        guard sqlite3_get_autocommit(db.sqliteConnection) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the transaction was rolled back", sql: sql)
        }
        sqlite3_reset(statement)
        // Parameters left unbound would keep the previous run's values: cleared, unless every
        // one is bound below (each statement of the write path binds all of its own).
        if Int(sqlite3_bind_parameter_count(statement)) != values.count { sqlite3_clear_bindings(statement) }
        for (offset, value) in values.enumerated() {
            let index = CInt(offset + 1)
            let code: CInt
            switch value {
            case .null: code = sqlite3_bind_null(statement, index)
            case .integer(let integer): code = sqlite3_bind_int64(statement, index, integer)
            case .text(let text): code = Self.bind(text, to: statement, at: index)
            }
            guard code == SQLITE_OK else {
                // A bind's failure sets no message of its own on the connection: SQLite's text for its code.
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding parameter \(index): \(String(cString: sqlite3_errstr(code)))", sql: sql)
            }
        }
        return statement
    }

    /// Binds `text` by its UTF-8 bytes and their length, read in place (no C string is made
    /// for it), so text holding a NUL byte is bound whole, as `SQLiteRow.textOrNil` reads it.
    private static func bind(_ text: String, to statement: SQLiteStatement, at index: CInt) -> CInt {
        var text = text
        return text.withUTF8 { bytes in
            // SQLite binds NULL for a null pointer: the empty text is bound from a literal.
            guard let start = bytes.baseAddress, let count = CInt(exactly: bytes.count) else {
                return bytes.isEmpty ? sqlite3_bind_text(statement, index, "", 0, transient) : SQLITE_TOOBIG
            }
            return start.withMemoryRebound(to: CChar.self, capacity: bytes.count) { sqlite3_bind_text(statement, index, $0, count, transient) }
        }
    }

    private func failure(_ code: CInt, _ sql: String) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }, sql: sql)
    }

    /// SQLite copies the bytes of bound text before the call returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self) }
}

/// The current row of a stepped SQLite statement.
private struct SQLiteRow: SQLRow {
    let statement: SQLiteStatement

    func integerOrNil(_ column: Int) -> Int64? {
        sqlite3_column_type(statement, CInt(column)) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, CInt(column))
    }

    func textOrNil(_ column: Int) -> String? {
        guard let bytes = sqlite3_column_text(statement, CInt(column)) else { return nil }
        // Length-delimited: text holding a NUL byte is read whole, as it was written.
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, CInt(column)))), as: UTF8.self)
    }
}
