import WalletCore

/// What an operator checks of the database itself before trusting it with money: the schema
/// version this build expects, and whether a commit survives a power loss.
public struct DatabaseSettings: Sendable, Equatable {
    /// `sqlite` or `postgresql`.
    public var engine: String
    /// The schema version the database records (after this build opened it).
    public var schemaVersion: Int64
    /// The version this build writes and understands.
    public var schemaVersionExpected: Int64
    /// Each durability setting as the database reports it: SQLite's `synchronous` on the writer's
    /// connection; PostgreSQL's `synchronous_commit` and `fsync`.
    public var durability: [String: String]
    /// Durability settings that may lose acknowledged commits in a crash or a power loss.
    public var durabilityRisks: [String]

    package init(engine: String, schemaVersion: Int64, schemaVersionExpected: Int64, durability: [String: String], durabilityRisks: [String]) {
        self.engine = engine
        self.schemaVersion = schemaVersion
        self.schemaVersionExpected = schemaVersionExpected
        self.durability = durability
        self.durabilityRisks = durabilityRisks
    }
}
