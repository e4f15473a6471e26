import ArgumentParser
import Foundation
import WalletCore
import WalletSQL
import WalletStores

/// Where the database is and how this process opens it.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            "Path of the SQLite database, or a postgres://user:password@host:port/db?sslmode=... URL (env WALLET_DB; default ./wallet.sqlite). Prefer WALLET_DB for a URL with a password: arguments show in ps.",
            valueName: "path|url"))
    var databasePath: String?

    @Option(help: ArgumentHelp("PostgreSQL connections this process keeps at most, 1 to 1000 (env WALLET_DB_POOL_SIZE; default 10).", valueName: "count"))
    var dbPoolSize: Int?

    @Option(help: ArgumentHelp("full (synchronous=FULL, survives power loss) or normal (faster, may lose the last commits).", valueName: "level"))
    var durability: Durability = .full

    /// The database path: --db, else WALLET_DB, else ./wallet.sqlite.
    var resolvedDatabasePath: String {
        databasePath ?? ProcessInfo.processInfo.environment["WALLET_DB"] ?? "./wallet.sqlite"
    }

    /// The pool size: --db-pool-size, else WALLET_DB_POOL_SIZE, else the default.
    func resolvedPoolSize() throws -> Int {
        try wholeNumberSetting(dbPoolSize, "WALLET_DB_POOL_SIZE", name: "--db-pool-size (or WALLET_DB_POOL_SIZE)", range: 1...1_000)
            ?? LedgerDatabases.postgresPoolSizeDefault
    }

    func validate() throws {
        if resolvedDatabasePath.isEmpty { throw ValidationError("--db (or WALLET_DB) must not be empty.") }
        _ = try resolvedPoolSize()
    }

    func openStore(writeMode: WriteMode = .default) async throws -> any LedgerDatabase {
        try await LedgerDatabases.open(resolvedDatabasePath, durability: durability, writeMode: writeMode, poolSize: resolvedPoolSize())
    }
}

/// The options every command takes: where the database is and how to print.
struct GlobalOptions: ParsableArguments {
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    var durability: Durability { database.durability }
    var resolvedDatabasePath: String { database.resolvedDatabasePath }

    /// Opens the database, runs `body` with it, then closes it (a PostgreSQL pool's
    /// connections included): what every one-shot command does.
    func withStore<Result: Sendable>(_ body: (any LedgerDatabase) async throws -> Result) async throws -> Result {
        try await openStore(writeMode: .default).run(body)
    }

    func openStore(writeMode: WriteMode = .default) async throws -> any LedgerDatabase {
        try await database.openStore(writeMode: writeMode)
    }
}

/// A whole-number setting from its flag, else its environment variable, within `range`; nil
/// when neither is given. The one parser of numeric settings, so each says what is wrong alike.
func wholeNumberSetting(_ flag: Int?, _ variable: String, name: String, range: ClosedRange<Int>) throws -> Int? {
    guard let value = try flag ?? ProcessInfo.processInfo.environment[variable].map({ text in
        guard let value = Int(text) else { throw ValidationError("\(name) must be a whole number, not '\(text.prefix(40))'.") }
        return value
    }) else { return nil }
    guard range.contains(value) else { throw ValidationError("\(name) must be from \(range.lowerBound) to \(range.upperBound), not \(value).") }
    return value
}

extension Durability: ExpressibleByArgument {}
extension RefundPolicy: ExpressibleByArgument {}
extension TransactionKind: ExpressibleByArgument {}
extension ProductType: ExpressibleByArgument {}

/// Who the CLI records as the actor of operations that take no --actor: the local operator.
let cliActor = "cli"
