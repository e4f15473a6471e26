import GRDB
import GRDBSQLite

/// The statements every ledger write runs, bound and stepped with SQLite's own calls.
///
/// GRDB's `StatementArguments` boxes each value in an existential and converts it to a
/// `DatabaseValue` before binding, and `Row` copies each result; on the write path, where one
/// writer runs about eight statements per operation for every operation of the process, that
/// was a third of the writer's time (`wallet bench`, see README "Performance"). The statements
/// are still prepared and cached by GRDB (`cachedStatement`), inside a transaction GRDB opened.
///
/// A statement is stepped only while the connection is inside a transaction: if SQLite has
/// rolled the transaction back (disk full, I/O error), GRDB would refuse the next statement,
/// and so does this — a write must never autocommit on its own outside its batch.
struct RawStatement {
    private let statement: SQLiteStatement
    private let connection: SQLiteConnection?
    private let sql: String

    init(_ db: Database, sql: String) throws {
        let cached = try db.cachedStatement(sql: sql)
        statement = cached.sqliteStatement
        connection = db.sqliteConnection
        self.sql = sql
        guard sqlite3_get_autocommit(connection) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the write transaction was rolled back", sql: sql)
        }
    }

    /// Binds `values` to the parameters in order (1, 2, ...).
    func bind(_ values: [RawValue]) -> RawStatement {
        sqlite3_reset(statement)
        for (offset, value) in values.enumerated() {
            let index = CInt(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let integer): sqlite3_bind_int64(statement, index, integer)
            case .text(let text): sqlite3_bind_text(statement, index, text, -1, transient)
            }
        }
        return self
    }

    /// Runs a statement that returns no row.
    func execute() throws {
        defer { sqlite3_reset(statement) }
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else { throw failure(code) }
    }

    /// Runs a query and reads its first row, if any.
    func first<Result>(_ read: (RawRow) -> Result) throws -> Result? {
        defer { sqlite3_reset(statement) }
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return read(RawRow(statement: statement))
        case SQLITE_DONE: return nil
        case let code: throw failure(code)
        }
    }

    private func failure(_ code: CInt) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: connection.map { String(cString: sqlite3_errmsg($0)) }, sql: sql)
    }

    /// SQLite copies the bytes of bound text before the call returns.
    private var transient: sqlite3_destructor_type { unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self) }
}

/// A value bound to a statement parameter.
enum RawValue {
    case null
    case integer(Int64)
    case text(String)

    static func text(_ value: String?) -> RawValue { value.map(RawValue.text) ?? .null }
    static func integer(_ value: Int64?) -> RawValue { value.map(RawValue.integer) ?? .null }
}

/// The current row of a query, read by column index.
struct RawRow {
    fileprivate let statement: SQLiteStatement

    func integer(_ column: CInt) -> Int64 { sqlite3_column_int64(statement, column) }

    func text(_ column: CInt) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: bytes)
    }
}
