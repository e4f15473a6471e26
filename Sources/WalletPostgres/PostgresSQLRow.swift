import WalletCore
import WalletSQL
import NIOCore
import PostgresNIO

/// A row of a PostgreSQL answer: integers from int2, int4 or int8 columns, text from text.
struct PostgresSQLRow: SQLRow {
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
