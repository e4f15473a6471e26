import GRDB
import WalletCore
import WalletSQL

extension SQLiteEngine {
    package var engineName: String { "sqlite" }

    /// `synchronous` is a setting of each connection: the writer's is the one commits follow.
    package func settings() async throws -> DatabaseSettings {
        let (version, synchronous) = try await writer.writeWithoutTransaction { db in
            (try Int64.fetchOne(db, sql: "PRAGMA user_version") ?? 0, try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1)
        }
        let names = [0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"]
        let name = names[synchronous] ?? "\(synchronous)"
        return DatabaseSettings(
            engine: engineName, schemaVersion: version, schemaVersionExpected: Int64(Schema.version), durability: ["synchronous": name],
            durabilityRisks: synchronous >= 2 ? [] : ["synchronous=\(name): the last commits may be lost in a power loss (--durability normal)"])
    }
}
