import WalletCore
import WalletSQL
import Foundation
import GRDB
import ServiceLifecycle

/// The ledger on one SQLite file, through one GRDB `DatabasePool` and the connection that copies
/// its WAL into the database (`WALCheckpointer`): WAL, foreign keys, a busy timeout so several
/// processes can share the file, and `synchronous=FULL` unless asked otherwise.
/// Every write is one IMMEDIATE transaction, which SQLite's file lock serializes across processes.
package struct SQLiteEngine: SQLEngine {
    let writer: any DatabaseWriter
    /// Copies the WAL into the database beside the writer (`open` makes one; a test's own pool
    /// has none, and its writer checkpoints as SQLite does by default).
    let checkpointer: WALCheckpointer?

    /// How long a write waits for another process's write before it fails with `storage_error`.
    static let busyTimeoutSeconds: TimeInterval = 30

    package var location: String { writer.path }
    /// A lookup is a B-tree probe in this process: read one by one, measured 10% faster than
    /// read ahead.
    package var prefetches: Bool { false }
    /// None: a batch starts with whoever is waiting, so that while one batch commits, the server
    /// already reads and checks the requests of the next, instead of the writer idling while
    /// the cores parse the requests its last batch's callers sent next. Over HTTP (`wrk -t2
    /// -c64`, 100 players, as `Tests/Load/http-spend.sh`) this measured 9,185–9,855 spends/s
    /// against 7,035–7,749 with a 0.6 ms wait for seven in eight of them; letting the callers
    /// that can run at once go first (one `Task.yield()`) gave 7,738–9,378, since the requests
    /// being read then go first too. In-process (`wallet bench`, whose callers come back at
    /// once) batches hold about 35 operations instead of 63–64, and the rate is 5% lower on
    /// average (README "Performance", "Fifth sitting").
    package var batchLinger: Duration { .zero }

    /// Opens (and on first use creates) the database at `path`.
    /// - Throws: `unsupportedDatabase` for a file that is not a wallet database of a version this
    ///   build knows; `storage` when the file cannot be opened.
    /// `checkpointStep` and `writerCheckpointAt` are `WALCheckpointer`'s, in WAL frames (pages);
    /// tests make them small.
    package static func open(
        path: String, durability: Durability = .full, writeMode: WriteMode = .default, clock: @escaping @Sendable () -> Date = { Date() },
        checkpointStep: Int32 = WALCheckpointer.step, writerCheckpointAt: Int32 = WALCheckpointer.writerLimit
    ) throws(WalletError) -> SQLLedgerStore {
        let checkpointer = WALCheckpointer(step: checkpointStep, writerLimit: writerCheckpointAt)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.label = "wallet"
        configuration.prepareDatabase { db in
            // Savepoint and statement journals in memory: a group commit's awaited rerun opens a
            // savepoint per operation, a grant of several purchases one per purchase, and their
            // journals are only for rolling back inside the transaction.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // The writer keeps a 64 MiB page cache, so the hot pages of the ledger's indexes stay
            // in memory; readers keep SQLite's 2 MiB, so a long export stays small.
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = -65536")
                // The WAL is copied into the database by the checkpointer's passes, every
                // 8 MiB, beside the writer; the writer checkpoints itself every 64 MiB (instead
                // of SQLite's 4 MiB), so that the WAL starts again from its first page.
                checkpointer.install(on: db)
            }
            // After a checkpoint, a WAL that grew (a burst of writes while an export read) is
            // cut back to 64 MiB instead of keeping its largest size on disk.
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
        }
        let pool: DatabasePool
        do {
            try refuseForeignDatabase(path: path)
            pool = try DatabasePool(path: path, configuration: configuration)
            // DatabasePool sets synchronous=NORMAL on its writer once it is open, after any
            // prepareDatabase hook, so the durable setting is issued here, afterwards.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            }
        } catch {
            throw mapped(error, path: path)
        }
        return try store(writer: pool, checkpointer: checkpointer, writeMode: writeMode, clock: clock)
    }

    /// Reads an existing file read-only first: another program's database, or a newer wallet's,
    /// is refused before anything (such as the switch to WAL) changes a byte of it.
    private static func refuseForeignDatabase(path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0, status.st_size > 0 else { return }
        var configuration = Configuration()
        configuration.readonly = true
        // Another process may be creating the same file right now: wait for it as writes do.
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.read { db in
            _ = try Schema.migrator.plan(version: try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0) { try isEmpty(db) }
        }
        try queue.close()
    }

    /// A store on an existing GRDB writer (tests use their own pools). Applies the schema to an
    /// empty database.
    static func store(
        writer: any DatabaseWriter, checkpointer: WALCheckpointer? = nil, writeMode: WriteMode = .default,
        clock: @escaping @Sendable () -> Date = { Date() }, makeTransactionID: @escaping @Sendable () -> String = RandomID.uuid
    ) throws(WalletError) -> SQLLedgerStore {
        let engine = SQLiteEngine(writer: writer, checkpointer: checkpointer)
        do {
            try writer.write { db in try Self.applySchema(db) }
        } catch {
            throw engine.mapped(error)
        }
        return SQLLedgerStore(engine: engine, writeMode: writeMode, clock: clock, makeTransactionID: makeTransactionID)
    }

    /// Creates the schema in an empty database, upgrades an older one, accepts one at the known
    /// version, and refuses anything else without touching it (`SchemaMigrator`).
    static func applySchema(_ db: Database) throws {
        try Schema.migrator.migrate(
            version: try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0, isEmpty: { try isEmpty(db) },
            run: { script in try db.execute(sql: script) }, record: { version in try db.execute(sql: "PRAGMA user_version = \(version)") })
    }

    private static func isEmpty(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'") == 0
    }

    package func transaction<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
        try await writer.write { db in try body(SQLiteSession(db: db)) }
    }

    package func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
        try await writer.read { db in try body(SQLiteSession(db: db)) }
    }

    /// No service runs beside a SQLite database (the checkpointer's passes run when the writer's
    /// commits ask for them): this only waits for the end of the service.
    package func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true { try await Task.sleep(for: .seconds(3_600)) }
        }
    }

    package func mapped(_ error: any Error) -> WalletError { Self.mapped(error, path: writer.path) }

    /// SQLite gives a new account the largest id plus one: nothing to do.
    package func afterCopy(_ db: any SQLSession) throws {}

    /// Turns any error from the storage layer into a `WalletError` a caller can report.
    static func mapped(_ error: any Error, path: String) -> WalletError {
        if let error = error as? WalletError { return error }
        guard let error = error as? DatabaseError else { return .storage("\(error)") }
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return .unsupportedDatabase("\(path) is not a SQLite database")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .storage("the database at \(path) stayed locked by another writer for over \(Int(busyTimeoutSeconds)) s; nothing was written, try again")
        case .SQLITE_CANTOPEN:
            return .storage("cannot open the database at \(path): check that the directory exists and is writable")
        case .SQLITE_FULL:
            return .storage("the disk is full; nothing was written")
        case .SQLITE_READONLY:
            return .storage("the database at \(path) is read-only; nothing was written")
        default:
            return .storage("database error: \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// The `PRAGMA synchronous` value of the writer connection (2 is FULL, 1 NORMAL).
    func synchronousSetting() async throws -> Int {
        try await writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }
}

extension SQLLedgerStore {
    /// The GRDB writer of a SQLite store (tests reach the file through it); nil on PostgreSQL.
    var sqliteWriter: (any DatabaseWriter)? { (engine as? SQLiteEngine)?.writer }
}
