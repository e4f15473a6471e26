import WalletCore
import WalletSQL

extension PostgresEngine {
    package var engineName: String { "postgresql" }

    package func settings() async throws -> DatabaseSettings {
        let (version, synchronousCommit, fsync) = try await read { db in
            (
                try db.integer("SELECT max(version) FROM wallet_schema") ?? 0, try db.first("SHOW synchronous_commit") { try $0.text(0) } ?? "?",
                try db.first("SHOW fsync") { try $0.text(0) } ?? "?"
            )
        }
        var risks: [String] = []
        if ["off", "local"].contains(synchronousCommit) {
            risks.append("synchronous_commit=\(synchronousCommit): the server answers commits before they reach (every) disk")
        }
        if fsync != "on" { risks.append("fsync=\(fsync): a crash of the server's machine can corrupt the database") }
        return DatabaseSettings(
            engine: engineName, schemaVersion: version, schemaVersionExpected: Int64(PostgresSchema.version),
            durability: ["synchronous_commit": synchronousCommit, "fsync": fsync], durabilityRisks: risks)
    }
}
