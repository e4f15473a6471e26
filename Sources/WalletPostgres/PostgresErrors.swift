import WalletCore
import WalletSQL
import PostgresNIO

extension PostgresEngine {
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
