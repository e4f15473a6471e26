import Foundation
import ServiceLifecycle
import WalletCore

/// A ledger database as the CLI holds it: every store protocol, run as a `Service` (a
/// PostgreSQL pool needs its task), plus what operators ask of the database itself. The
/// server sees only the store protocols; `WalletStores` opens one from a path or a URL.
public protocol LedgerDatabase: LedgerStore, Service {
    /// Where the ledger is, for messages: a path, or a URL without its password.
    var location: String { get }
    /// What the group commit did so far; nil in `.single` mode.
    var groupCommitStatistics: GroupCommitStatistics? { get }
    /// The schema version and the durability settings, as the database reports them.
    func databaseSettings() async throws(WalletError) -> DatabaseSettings
    /// Copies this ledger into `target`, which must be empty and verify at the same head hash
    /// afterwards. `progress` hears each table's name and the rows copied so far.
    func copy(to target: any LedgerDatabase, progress: (@Sendable (String, Int64) -> Void)?) async throws(WalletError) -> CopyReport
}

extension LedgerDatabase {
    /// Runs `body` with the database running beside it (a PostgreSQL pool needs its task),
    /// then stops it and closes its connections: what a one-shot command does.
    public func run<Result: Sendable>(_ body: (Self) async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.run() }
            defer { group.cancelAll() }
            return try await body(self)
        }
    }
}

/// How the store turns operations into SQL transactions.
public enum WriteMode: Sendable, Equatable {
    /// One writer per process applies the operations that queued while the previous commit was
    /// in flight together, one after another, then one commit — one fsync — answers
    /// them all. `batchMax` bounds a batch, `queueMax` the operations waiting; beyond it callers
    /// get `overloaded` at once.
    case grouped(batchMax: Int = 512, queueMax: Int = 16_384)
    /// One SQL transaction, and one commit, per operation: the naive path, kept to measure
    /// against.
    case single

    public static let `default` = WriteMode.grouped()
}

/// What the group commit has done: for benchmarks and metrics.
public struct GroupCommitStatistics: Sendable, Equatable {
    public var batches = 0
    public var operations = 0
    public var largestBatch = 0
    /// Time spent applying and committing batches: from a batch's start to its commit's end
    /// (the writer's connection reached, the transaction begun, the operations run, the commit,
    /// and back).
    public var commitSeconds = 0.0
    /// The part of `commitSeconds` the batches' transactions spent running on the writer's
    /// connection: taking the batch, its lookups, its operations (their statements and the rules
    /// between them) and the balances written, every run of a batch counted. The rest is the
    /// way to and from the connection, `BEGIN` (on PostgreSQL with the wait for the ledger's
    /// lock, and any retry's pause) and the commit.
    public var runningSeconds = 0.0
    /// Pipelined batches (PostgreSQL) that met a failure and ran again awaited.
    public var awaitedReruns = 0

    public var averageBatch: Double { batches == 0 ? 0 : Double(operations) / Double(batches) }

    package init() {}
}

/// What `copy(to:)` did.
public struct CopyReport: Sendable, Equatable {
    /// Rows copied per table, in copy order.
    public var rows: [String: Int64]
    public var transactions: Int64
    /// The head hash both ledgers end at.
    public var headHash: String

    package init(rows: [String: Int64], transactions: Int64, headHash: String) {
        self.rows = rows
        self.transactions = transactions
        self.headHash = headHash
    }
}
