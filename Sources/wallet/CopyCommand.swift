import ArgumentParser
import Foundation
import WalletCore
import WalletSQL
import WalletStores

struct CopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy a whole ledger into an empty database: SQLite to PostgreSQL, or back.",
        discussion: """
            Verifies the source's hash chain and balances first and refuses a source that does not \
            verify, before anything is written. Then copies every table (transactions, postings, \
            idempotency keys, API keys, notifications, catalog) from one snapshot of the source, in \
            one transaction of the target, which must hold no ledger yet (it is created if it does \
            not exist). Finally verifies the target and checks that it ends at the source's head \
            hash. Stop the servers writing to the source first: writes after the snapshot are not \
            copied. Each side is a SQLite path or a postgres:// URL (prefer the WALLET_COPY_FROM and \
            WALLET_COPY_TO environment variables for URLs with passwords).

            Example:
              WALLET_COPY_TO=postgres://wallet@db.internal:5432/wallet wallet copy \\
                --from ./wallet.sqlite
            """
    )

    @Option(help: ArgumentHelp("The ledger to copy: a SQLite path or a postgres:// URL (env WALLET_COPY_FROM).", valueName: "path|url"))
    var from: String?

    @Option(help: ArgumentHelp("The empty ledger to fill: a SQLite path or a postgres:// URL (env WALLET_COPY_TO).", valueName: "path|url"))
    var to: String?

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    func validate() throws {
        guard let source = from ?? environment["WALLET_COPY_FROM"], !source.isEmpty else {
            throw ValidationError("--from (or WALLET_COPY_FROM) names the ledger to copy.")
        }
        guard let target = to ?? environment["WALLET_COPY_TO"], !target.isEmpty else {
            throw ValidationError("--to (or WALLET_COPY_TO) names the empty ledger to fill.")
        }
        if source == target { throw ValidationError("--from and --to name the same ledger.") }
    }

    struct Report: Encodable {
        var transactions: Int64
        var headHash: String
        var rows: [String: Int64]
        var source: String
        var target: String

        enum CodingKeys: String, CodingKey {
            case transactions, rows, source, target
            case headHash = "head_hash"
        }
    }

    func run() async throws {
        let sourceDatabase = from ?? environment["WALLET_COPY_FROM"] ?? ""
        let targetDatabase = to ?? environment["WALLET_COPY_TO"] ?? ""
        if !sourceDatabase.contains("://"), !FileManager.default.fileExists(atPath: sourceDatabase) {
            throw ValidationError("the source '\(sourceDatabase)' does not exist.")
        }
        let source = try await LedgerDatabases.open(sourceDatabase, writeMode: .single)
        let target = try await LedgerDatabases.open(targetDatabase, writeMode: .single)
        let progress = Progress("rows copied")
        let copied = try await source.run { source in
            try await target.run { target in try await source.copy(to: target) { _, rows in progress.report(rows) } }
        }
        progress.finish()
        let report = Report(transactions: copied.transactions, headHash: copied.headHash, rows: copied.rows, source: source.location, target: target.location)
        try Output.result(report, json: json) {
            "Copied \(copied.transactions) transactions (\(copied.rows.values.reduce(0, +)) rows) from \(source.location) to \(target.location); both end at head hash \(copied.headHash)."
        }
    }
}
