import Foundation
import WalletCore
import WalletPostgres
import WalletSQL
import WalletSQLite

/// SQLite's `synchronous` setting, named here so that the CLI's `--durability` option can choose it
/// without importing an engine.
public typealias Durability = WalletSQLite.Durability

/// Opens ledger databases by where they are: the one place that knows every store. The CLI
/// holds what it returns only as a `LedgerDatabase`.
public enum LedgerDatabases {
    /// Connections a PostgreSQL database keeps at most, unless told otherwise.
    public static let postgresPoolSizeDefault = 10

    /// Whether `database` names a database server (a URL) rather than a SQLite file.
    public static func isServer(_ database: String) -> Bool {
        PostgresEngine.names(database)
    }

    /// Opens the ledger `database` names: a `postgres://` or `postgresql://` URL, or else the
    /// path of a SQLite file (created on first use). Run what it returns as a `Service`, or
    /// through `run(_:)`, so that a PostgreSQL pool is served and then closed.
    public static func open(
        _ database: String, durability: Durability = .full, writeMode: WriteMode = .default, poolSize: Int = postgresPoolSizeDefault,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws(WalletError) -> any LedgerDatabase {
        try await SQLLedgerStore.open(database: database, durability: durability, writeMode: writeMode, poolSize: poolSize, clock: clock)
    }
}

extension SQLLedgerStore {
    /// `LedgerDatabases.open`, for tests that look inside the store.
    package static func open(
        database: String, durability: Durability = .full, writeMode: WriteMode = .default, poolSize: Int = LedgerDatabases.postgresPoolSizeDefault,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws(WalletError) -> SQLLedgerStore {
        if PostgresEngine.names(database) {
            return try await PostgresEngine.open(url: database, poolSize: poolSize, writeMode: writeMode, clock: clock)
        }
        return try SQLiteEngine.open(path: database, durability: durability, writeMode: writeMode, clock: clock)
    }
}
