import WalletCore

/// A schema's versions, kept as GRDB's `DatabaseMigrator` keeps them: a database records the
/// version it is at, and every later migration runs once, in order, inside the transaction that
/// opens it. An empty database gets the latest schema at once; a newer version, a gap in the
/// migrations, or tables without a version (another program's database) are refused before
/// anything is written. Each engine says how it reads and records the version; the rules are
/// these, once, for both.
package struct SchemaMigrator: Sendable {
    /// The change from `version - 1` to `version`: one script or statement per element.
    package struct Migration: Sendable {
        package let version: Int
        package let statements: [String]

        package init(version: Int, statements: [String]) {
            self.version = version
            self.statements = statements
        }
    }

    /// What opening a database at some version takes.
    package enum Plan: Equatable {
        case upToDate
        /// An empty database: create the latest schema.
        case create
        /// Run these migrations, in order.
        case upgrade([Int])
    }

    /// The version this build writes and understands.
    package let latest: Int
    /// What creates the latest schema in an empty database.
    package let create: [String]
    /// Every migration from version 2 on (version 1 is where every database started).
    package let migrations: [Migration]
    /// What runs at every open, once the database is at `latest`: statements that must hold
    /// whatever the version, such as `transactionKindRows`.
    package let everyOpen: [String]
    /// How messages name the database: "the database", "the PostgreSQL database".
    package let name: String

    package init(latest: Int, create: [String], migrations: [Migration], everyOpen: [String] = [], name: String) {
        self.latest = latest
        self.create = create
        self.migrations = migrations
        self.everyOpen = everyOpen
        self.name = name
    }

    /// One row in `transaction_kinds` per `TransactionKind`, adding the ones missing (SQLite and
    /// PostgreSQL spell `ON CONFLICT DO NOTHING` alike). Both stores run it at every open, so the
    /// table lists whatever this build can write: a new kind is one Core case, whose row follows
    /// at the next open with no schema version (a new kind used to take one, to widen a CHECK
    /// and, on SQLite, make the whole `transactions` table again). An older wallet that meets a
    /// newer kind in the ledger refuses that row as an unknown kind, as it always has.
    package static let transactionKindRows =
        "INSERT INTO transaction_kinds (kind) VALUES "
        + TransactionKind.allCases.map { "('\($0.rawValue.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''"))')" }
            .joined(separator: ", ")
        + " ON CONFLICT DO NOTHING"

    /// What a database at `version` (0 for none) needs; throws `unsupportedDatabase` for one
    /// this build must not touch. `isEmpty` is asked only for a database without a version.
    package func plan(version: Int, isEmpty: () throws -> Bool) throws -> Plan {
        if version == latest { return .upToDate }
        if version > latest {
            throw WalletError.unsupportedDatabase("\(name) has wallet schema version \(version), but this wallet knows only version \(latest); use a newer wallet")
        }
        if version <= 0 {
            guard try isEmpty() else { throw WalletError.unsupportedDatabase("\(name) holds tables but no wallet schema version; it is not a wallet database") }
            return .create
        }
        let steps = Array(version + 1...latest)
        guard steps.allSatisfy({ step in migrations.contains { $0.version == step } }) else {
            throw WalletError.unsupportedDatabase("\(name) has wallet schema version \(version), which this wallet cannot upgrade")
        }
        return .upgrade(steps)
    }

    /// Brings the database to `latest` in the caller's transaction, then runs `everyOpen`: `run`
    /// executes a statement (or script), `record` stores a version reached.
    package func migrate(version: Int, isEmpty: () throws -> Bool, run: (String) throws -> Void, record: (Int) throws -> Void) throws {
        switch try plan(version: version, isEmpty: isEmpty) {
        case .upToDate:
            break
        case .create:
            for statement in create { try run(statement) }
            try record(latest)
        case .upgrade(let steps):
            for step in steps {
                guard let migration = migrations.first(where: { $0.version == step }) else { continue }
                for statement in migration.statements { try run(statement) }
                try record(step)
            }
        }
        for statement in everyOpen { try run(statement) }
    }
}
