import WalletCore
import Foundation
import ServiceLifecycle

/// How a ledger reaches its database: SQLite (`SQLiteEngine`) or PostgreSQL (`PostgresEngine`).
/// An engine opens transactions and maps its native errors; every rule, read and check runs
/// above it, once, in `SQLLedgerStore`.
package protocol SQLEngine: Sendable {
    /// Runs `body` in one write transaction that excludes every other writer of the database
    /// (another process's included) from the ledger until it commits: the exclusion is had
    /// before `body` runs (the group commit takes its batch off the queue there), and `body`
    /// never runs once this has returned or thrown. An engine may run `body` again after a
    /// serialization failure: beyond the session, it may only do what a rerun finds done
    /// (`GroupCommitWriter`'s batch is taken once, on the first run).
    func transaction<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result
    /// Runs `body` on one consistent snapshot, without waiting for writers.
    func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result
    /// Whether the group commit reads what a batch's operations will look up ahead, in a few
    /// statements (`BatchContext.prefetch`): where each lookup is a round trip (PostgreSQL).
    var prefetches: Bool { get }
    /// The longest the group commit waits, under load, for the callers its last batch answered
    /// to come back before it starts the next batch (`GroupCommitWriter.drain`): kept where a
    /// batch costs round trips of its own (PostgreSQL); none on SQLite, where the writer would
    /// wait while the server reads those callers' next requests (`SQLiteEngine.batchLinger`).
    var batchLinger: Duration { get }
    /// Any error of this engine as a `WalletError` a caller can report.
    func mapped(_ error: any Error) -> WalletError
    /// Runs what the engine needs while it is used (PostgreSQL's connection pool) until the task
    /// is cancelled or a graceful shutdown comes; then closes it.
    func run() async throws
    /// Where the ledger is, for logs: a path, or a URL without its password.
    var location: String { get }
    /// Brings what the database generates (PostgreSQL's identity sequence) past the rows a copy
    /// wrote with their own ids, in the copy's transaction.
    func afterCopy(_ db: any SQLSession) throws
    /// The longest one statement may run before the engine fails it: the group commit counts a
    /// batch that runs longer (and a margin) as stuck, and the store as unready.
    var statementTimeout: Duration { get }
    /// The schema version and the durability settings, as the database reports them (`wallet doctor`).
    func settings() async throws -> DatabaseSettings
    /// `sqlite` or `postgresql`: what traces and `wallet doctor` call the store.
    var engineName: String { get }
}

/// The ledger's operations on a SQL database: the one implementation of `LedgerStore`, whatever
/// the engine. Every write goes through the group commit (or, in `.single` mode, its own
/// transaction); reads run on snapshots. Run it as a `Service` (in `wallet serve`'s service
/// group, or with `run(_:)` for one command) so that a PostgreSQL pool is served and closed.
package struct SQLLedgerStore: LedgerDatabase {
    package let engine: any SQLEngine
    let clock: @Sendable () -> Date
    let makeTransactionID: @Sendable () -> String
    /// Nil in `.single` mode: each operation is then its own transaction.
    private let groupCommit: GroupCommitWriter?

    package init(engine: any SQLEngine, writeMode: WriteMode, clock: @escaping @Sendable () -> Date, makeTransactionID: @escaping @Sendable () -> String) {
        self.engine = engine
        self.clock = clock
        self.makeTransactionID = makeTransactionID
        switch writeMode {
        case .grouped(let batchMax, let queueMax):
            groupCommit = GroupCommitWriter(engine: engine, clock: clock, makeTransactionID: makeTransactionID, batchMax: batchMax, queueMax: queueMax)
        case .single:
            groupCommit = nil
        }
    }

    /// Where the ledger is: a path, or a URL without its password.
    package var location: String { engine.location }

    package func databaseSettings() async throws(WalletError) -> DatabaseSettings {
        do {
            return try await engine.settings()
        } catch {
            throw engine.mapped(error)
        }
    }

    package func run() async throws {
        try await engine.run()
    }

    /// Runs one business operation: in the next group commit, or as its own write transaction
    /// in `.single` mode. Returns once the operation is committed.
    package func write<Result: Sendable>(
        hints: WriteHints = WriteHints(), _ operation: @escaping @Sendable (any SQLSession, Date, inout BatchContext) throws -> Result
    ) async throws(WalletError) -> Result {
        do {
            if let groupCommit { return try await groupCommit.submit(hints: hints, operation) }
            let (clock, makeTransactionID) = (self.clock, self.makeTransactionID)
            return try await engine.transaction { session in
                var context = BatchContext(makeTransactionID: makeTransactionID)
                let result = try operation(session, clock(), &context)
                try context.writeBalances(session)
                return result
            }
        } catch {
            throw engine.mapped(error)
        }
    }

    /// Runs a read on a snapshot; it never waits for writes.
    package func read<Result: Sendable>(_ operation: @escaping @Sendable (any SQLSession) throws -> Result) async throws(WalletError) -> Result {
        do {
            return try await engine.read(operation)
        } catch {
            throw engine.mapped(error)
        }
    }

    /// Operations waiting for a group commit to take them (0 in `.single` mode): the next batch's,
    /// including those of a batch whose transaction waits for the ledger's lock.
    package var queuedWriteCount: Int { groupCommit?.queuedCount ?? 0 }

    /// What the group commit did so far; nil in `.single` mode.
    package var groupCommitStatistics: GroupCommitStatistics? { groupCommit?.statistics }

    /// How long a failed commit keeps readiness failing (`GroupCommitWriter.holdCommitFailures`).
    package func holdCommitFailures(for duration: Duration) { groupCommit?.holdCommitFailures(for: duration) }

    /// Ready when the writer is not stuck (no batch has run longer than the statement timeout and
    /// a margin), the database answers a read, and the latest write committed (or failed more
    /// than a few seconds ago): a full disk, a lock held past the busy timeout or a database
    /// server that went away or hangs makes the instance unready, so a balancer stops sending it
    /// writes.
    package func checkReadiness() async throws(WalletError) {
        // First, and without asking the database: a writer stuck on a server that stopped
        // answering would leave a read waiting as long.
        if let stuck = groupCommit?.stuckFor {
            throw .storage("the writer has been waiting \(stuck.components.seconds) s for its batch to commit (the statement timeout is \(engine.statementTimeout.components.seconds) s)")
        }
        _ = try await read { db in try db.first("SELECT 1") { row in try row.integer(0) } }
        if let failure = groupCommit?.recentCommitFailure { throw .storage("writes cannot commit: \(failure.prefix(200))") }
    }
}

extension SQLLedgerStore {
    package func setProduct(_ update: ProductUpdate) async throws(WalletError) -> Product {
        try await write { db, now, context in try LedgerWrites.setProduct(db, update, now: now, context: &context) }
    }

    package func products() async throws(WalletError) -> [Product] {
        try await read { db in try LedgerReads.products(db) }
    }

    package func grant(_ request: GrantRequest) async throws(WalletError) -> MutationResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.grant(db, checked, now: now, context: &context) }
    }

    package func grantEach(_ requests: [GrantRequest]) async throws(WalletError) -> [Result<MutationResult, WalletError>] {
        guard requests.count <= Limits.grantsPerWriteMax else {
            throw .invalidRequest("at most \(Limits.grantsPerWriteMax) store transactions are credited in one write, not \(requests.count)")
        }
        let checked = requests.map { request -> Result<Checked<GrantRequest>, WalletError> in
            do throws(WalletError) { return .success(try Checked(request)) } catch { return .failure(error) }
        }
        let valid = checked.compactMap { try? $0.get() }
        let hints = WriteHints(
            keys: valid.flatMap(\.hints.keys), accounts: valid.flatMap(\.hints.accounts), storeTransactions: valid.flatMap(\.hints.storeTransactions))
        return try await write(hints: hints) { db, now, context in
            try checked.map { item in
                switch item {
                case .failure(let refusal): .failure(refusal)
                case .success(let grant): try Savepoint.attempt(db, context: &context) { context in try LedgerWrites.grant(db, grant, now: now, context: &context) }
                }
            }
        }
    }

    package func bonus(_ request: BonusRequest) async throws(WalletError) -> MutationResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.bonus(db, checked, now: now, context: &context) }
    }

    package func expireLots(limit: Int) async throws(WalletError) -> Int {
        guard (1...Limits.pageSizeMax).contains(limit) else { throw .invalidRequest("limit must be 1 to \(Limits.pageSizeMax)") }
        return try await write { db, now, context in try LedgerWrites.expireLots(db, limit: limit, now: now, context: &context) }
    }

    package func createHold(_ request: HoldRequest) async throws(WalletError) -> HoldResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.createHold(db, checked, now: now, context: &context) }
    }

    package func resolveHold(_ request: HoldResolution) async throws(WalletError) -> HoldResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.resolveHold(db, checked, now: now, context: &context) }
    }

    package func expireHolds(limit: Int) async throws(WalletError) -> Int {
        guard (1...Limits.pageSizeMax).contains(limit) else { throw .invalidRequest("limit must be 1 to \(Limits.pageSizeMax)") }
        return try await write { db, now, context in try LedgerWrites.expireHolds(db, limit: limit, now: now, context: &context) }
    }

    package func holds(playerID: PlayerID) async throws(WalletError) -> [Hold] {
        try await read { db in try HoldStorage.list(db, playerID: playerID, recent: 50) }
    }

    package func spend(_ request: SpendRequest) async throws(WalletError) -> MutationResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.spend(db, checked, now: now, context: &context) }
    }

    package func adjust(_ request: AdjustRequest) async throws(WalletError) -> MutationResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.adjust(db, checked, now: now, context: &context) }
    }

    package func refund(_ request: RefundRequest) async throws(WalletError) -> MutationResult {
        let checked = try Checked(request)
        return try await write(hints: checked.hints) { db, now, context in try LedgerWrites.refund(db, checked, now: now, context: &context) }
    }

    package func balances(playerID: PlayerID) async throws(WalletError) -> WalletBalances {
        let now = clock()
        return try await read { db in try LedgerReads.balances(db, playerID: playerID, now: now) }
    }

    package func lots(_ query: LotQuery) async throws(WalletError) -> LotPage {
        try query.validate()
        let now = clock()
        return try await read { db in try LedgerReads.lots(db, query, now: now) }
    }

    package func purchase(store: String, storeTransactionID: String) async throws(WalletError) -> LedgerTransaction? {
        try Validate.store(store)
        try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID)
        return try await read { db in try LedgerReads.purchase(db, store: store, storeTransactionID: storeTransactionID) }
    }

    package func history(_ query: HistoryQuery) async throws(WalletError) -> HistoryPage {
        let bounds = try query.validated()
        return try await read { db in try LedgerReads.history(db, query, from: bounds.from, to: bounds.to) }
    }

    package func changeEntitlement(_ request: EntitlementChangeRequest) async throws(WalletError) -> EntitlementChangeResult {
        let checked = try Checked(request)
        return try await write { db, now, context in try LedgerWrites.changeEntitlement(db, checked, now: now, context: &context) }
    }

    package func entitlements(playerID: PlayerID) async throws(WalletError) -> EntitlementList {
        let at = Timestamp.format(clock())
        return try await read { db in EntitlementList(playerID: playerID, entitlements: try EntitlementStorage.list(db, playerID: playerID, at: at)) }
    }

    package func entitlement(playerID: PlayerID, name: EntitlementName) async throws(WalletError) -> Entitlement {
        let at = Timestamp.format(clock())
        return try await read { db in
            Entitlement(name: name.text, state: try EntitlementStorage.state(db, storedPlayerID: playerID.text, name: name.text) ?? .none, at: at, items: nil)
        }
    }

    package func verify(progress: (@Sendable (Int64) -> Void)? = nil) async throws(WalletError) -> VerifyReport {
        try await read { db in try LedgerVerifier.verify(db, progress: progress) }
    }
}
