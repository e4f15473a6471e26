import PostgresNIO
import Synchronization

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
