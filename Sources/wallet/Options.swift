import ArgumentParser
import Foundation
import WalletCore
import WalletSQL
import WalletStores

/// The options every command takes: where the database is and how to print.
struct GlobalOptions: ParsableArguments {
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

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    /// The database path: --db, else WALLET_DB, else ./wallet.sqlite.
    var resolvedDatabasePath: String {
        databasePath ?? ProcessInfo.processInfo.environment["WALLET_DB"] ?? "./wallet.sqlite"
    }

    /// The pool size: --db-pool-size, else WALLET_DB_POOL_SIZE, else the default.
    func resolvedPoolSize() throws -> Int {
        let variable = ProcessInfo.processInfo.environment["WALLET_DB_POOL_SIZE"]
        guard let size = try dbPoolSize ?? variable.map({ text in
            guard let size = Int(text) else { throw ValidationError("WALLET_DB_POOL_SIZE must be a whole number, not '\(text.prefix(40))'.") }
            return size
        }) else { return LedgerDatabases.postgresPoolSizeDefault }
        guard (1...1_000).contains(size) else { throw ValidationError("--db-pool-size (or WALLET_DB_POOL_SIZE) must be from 1 to 1000, not \(size).") }
        return size
    }

    func validate() throws {
        if resolvedDatabasePath.isEmpty { throw ValidationError("--db (or WALLET_DB) must not be empty.") }
        _ = try resolvedPoolSize()
    }

    /// Opens the database, runs `body` with it, then closes it (a PostgreSQL pool's
    /// connections included): what every one-shot command does.
    func withStore<Result: Sendable>(_ body: (any LedgerDatabase) async throws -> Result) async throws -> Result {
        try await openStore(writeMode: .default).run(body)
    }

    func openStore(writeMode: WriteMode = .default) async throws -> any LedgerDatabase {
        try await LedgerDatabases.open(resolvedDatabasePath, durability: durability, writeMode: writeMode, poolSize: resolvedPoolSize())
    }
}

extension Durability: ExpressibleByArgument {}
extension RefundPolicy: ExpressibleByArgument {}
extension TransactionKind: ExpressibleByArgument {}
extension ProductType: ExpressibleByArgument {}

/// Who the CLI records as the actor of operations that take no --actor: the local operator.
let cliActor = "cli"
