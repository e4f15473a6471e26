import ArgumentParser
import Foundation
import WalletCore

/// The options every command takes: where the database is and how to print.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp("Path of the SQLite database (env WALLET_DB; default ./wallet.sqlite).", valueName: "path"))
    var databasePath: String?

    @Option(help: ArgumentHelp("full (synchronous=FULL, survives power loss) or normal (faster, may lose the last commits).", valueName: "level"))
    var durability: Durability = .full

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    /// The database path: --db, else WALLET_DB, else ./wallet.sqlite.
    var resolvedDatabasePath: String {
        databasePath ?? ProcessInfo.processInfo.environment["WALLET_DB"] ?? "./wallet.sqlite"
    }

    func validate() throws {
        if resolvedDatabasePath.isEmpty { throw ValidationError("--db (or WALLET_DB) must not be empty.") }
    }

    func openStore(writeMode: WriteMode = .default) throws(WalletError) -> SQLiteLedgerStore {
        try SQLiteLedgerStore.open(path: resolvedDatabasePath, durability: durability, writeMode: writeMode)
    }
}

extension Durability: ExpressibleByArgument {}
extension RefundPolicy: ExpressibleByArgument {}
extension TransactionKind: ExpressibleByArgument {}

/// Who the CLI records as the actor of operations that take no --actor: the local operator.
let cliActor = "cli"
