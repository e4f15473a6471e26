import Tracing
import WalletCore
import Foundation
import Synchronization

/// The single writer of DESIGN.md, "Storage and performance". Every ledger write of the process
/// goes through `submit`; an operation's answer is given only once the transaction holding it
/// has committed, so an answered write is on disk (with `synchronous=FULL`). A failing
/// operation's caller gets its own error and nothing of it stays (a rule's refusal before it
/// wrote; anything else reruns the batch with a savepoint per operation, `apply`); if the
/// commit itself fails, every caller of the batch gets that error and nothing was written. If
/// SQLite rolls the whole transaction back (disk full, I/O error), GRDB answers every later
/// statement and the commit with `SQLITE_ABORT`, so the batch fails as a whole — no caller is
/// told that a lost write committed (`GroupCommitTests.transactionLost` holds that in place).
final class GroupCommitWriter: Sendable {
    private let engine: any SQLEngine
    private let clock: @Sendable () -> Date
    private let makeTransactionID: @Sendable () -> String
    private let batchMax: Int
    private let queueMax: Int
    private let state = Mutex(State())
    /// How often a batch that waits for the callers of the previous one (`SQLEngine.batchLinger`)
    /// looks whether they came back.
    static let lingerStep = Duration.microseconds(100)

    private struct State {
        var queue: [any PendingWrite] = []
        var draining = false
        var statistics = GroupCommitStatistics()
        /// When the latest commit failed, and why; nil once one succeeds.
        var commitFailure: (at: ContinuousClock.Instant, error: String)?
        /// How long after a failed commit the writer reports itself unable to write (unless a
        /// commit succeeds first): long enough for a balancer to stop sending writes, short
        /// enough that traffic comes back to find out whether the disk recovered.
        var failureHold: Duration = .seconds(5)
        /// When the batch being committed started; nil between batches.
        var batchStarted: ContinuousClock.Instant?
        /// Currency codes that committed batches found in the catalog, handed to each new batch
        /// (`BatchContext.knownCurrencies`): the writer looks a code up once per process, not
        /// once per batch.
        var knownCurrencies: Set<Identifier> = []
    }

    /// How much longer than the engine's statement timeout a batch may run before the writer
    /// counts as stuck: a healthy batch takes milliseconds, one waiting for the ledger lock or a
    /// slow statement up to the timeout, after which the engine fails it.
    static let stuckMargin = Duration.seconds(5)

    /// How long the batch under way has run, once that is longer than the statement timeout and
    /// `stuckMargin`: the database stopped answering and the writer can make no progress. Nil
    /// otherwise.
    var stuckFor: Duration? {
        let limit = engine.statementTimeout + Self.stuckMargin
        return state.withLock { state in
            guard let started = state.batchStarted else { return nil }
            let elapsed = ContinuousClock.now - started
            return elapsed > limit ? elapsed : nil
        }
    }

    /// Sets `State.failureHold`: a test lengthens it, so that a machine slowed by the whole suite
    /// cannot outlast it between the failed commit and the readiness check that looks for it.
    func holdCommitFailures(for duration: Duration) {
        state.withLock { $0.failureHold = duration }
    }

    /// Why writes cannot commit now (the latest commit failed, a few seconds ago at most), or nil.
    var recentCommitFailure: String? {
        state.withLock { state in
            guard let failure = state.commitFailure, ContinuousClock.now - failure.at < state.failureHold else { return nil }
            return failure.error
        }
    }

    /// Batches and operations committed so far.
    var statistics: GroupCommitStatistics { state.withLock { $0.statistics } }

    /// Operations waiting for a batch to take them (the batch whose transaction waits for the
    /// ledger's lock takes them too).
    var queuedCount: Int { state.withLock { $0.queue.count } }

    init(engine: any SQLEngine, clock: @escaping @Sendable () -> Date, makeTransactionID: @escaping @Sendable () -> String, batchMax: Int, queueMax: Int) {
        precondition(batchMax >= 1 && queueMax >= 1, "a batch and the queue hold at least one operation")
        self.engine = engine
        self.clock = clock
        self.makeTransactionID = makeTransactionID
        self.batchMax = batchMax
        self.queueMax = queueMax
    }

    /// Runs `operation` in the next batch and returns its result once the batch committed.
    func submit<Result: Sendable>(
        hints: WriteHints = WriteHints(), _ operation: @escaping @Sendable (any SQLSession, Date, inout BatchContext) throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            let pending = Pending(hints: hints, operation: operation, continuation: continuation)
            let startDrain: Bool? = state.withLock { state in
                guard state.queue.count < queueMax else { return nil }
                state.queue.append(pending)
                defer { state.draining = true }
                return !state.draining
            }
            switch startDrain {
            case nil:
                continuation.resume(throwing: WalletError.overloaded("the write queue is full (\(queueMax) operations waiting); retry shortly"))
            case true?:
                Task { await drain() }
            case false?:
                break
            }
        }
    }

    /// Commits batches until the queue is empty. Only one drain runs at a time.
    private func drain() async {
        var previousBatch = 0
        while true {
            // Under load, the callers answered by the last commit are on their way back with
            // their next operation: where the engine says a fuller batch is worth a wait
            // (`SQLEngine.batchLinger`), wait a little until seven in eight of them are here, so
            // that one commit serves many instead of a few. A lone caller never waits.
            var lingered = Duration.zero
            let lingerMax = engine.batchLinger
            let awaited = previousBatch >= 8 ? min(previousBatch * 7 / 8, batchMax) : 0
            while lingered < lingerMax, state.withLock({ $0.queue.count }) < awaited {
                try? await Task.sleep(for: Self.lingerStep)
                lingered += Self.lingerStep
            }
            let idle = state.withLock { state in
                if state.queue.isEmpty { state.draining = false }
                return state.queue.isEmpty
            }
            if idle { return }
            previousBatch = await commit()
        }
    }

    /// Takes the next batch off the queue: the operations waiting now, at most `batchMax` (and
    /// at most `limit`). Only the drain takes, so a queue found holding operations still holds
    /// them when it takes.
    private func takeBatch(atMost limit: Int = .max) -> [any PendingWrite] {
        state.withLock { state in
            let count = min(batchMax, limit, state.queue.count)
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return batch
        }
    }

    /// Commits the next batch in a span of its own when traces are on (`wallet serve
    /// --otel-endpoint` bootstraps a tracer): a root span, since the batch serves many requests
    /// (the drain task would otherwise inherit the first one's), with the batch's size and the
    /// store. A slow request's span and the batch it waited for overlap in time. Returns the
    /// batch's size.
    private func commit() async -> Int {
        let tracer = InstrumentationSystem.tracer
        if tracer is NoOpTracer {
            return await commitBatch().size
        }
        let engineName = engine.engineName
        return await tracer.withSpan("group commit", context: .topLevel, ofKind: .internal) { span in
            span.attributes["wallet.store"] = engineName
            let outcome = await commitBatch()
            span.attributes["wallet.batch.size"] = outcome.size
            // A batch that did not commit is a failed span, its error's type only (the message
            // may quote an id).
            if let failure = outcome.failure {
                span.setStatus(SpanStatus(code: .error))
                span.attributes["error.type"] = String(describing: type(of: failure))
            }
            return outcome.size
        }
    }

    /// Commits the next batch and answers its operations; its size, and the error when it did
    /// not commit. The batch is taken off the queue once the transaction began
    /// (`SQLEngine.transaction` takes the ledger's lock first): operations that arrive while
    /// another process's batch holds the lock go in this one instead of waiting for the next.
    /// The statistics count the batch before its callers hear their answers, so a caller that
    /// reads them after its answer finds its batch there.
    private func commitBatch() async -> (size: Int, failure: (any Error)?) {
        let started = ContinuousClock.now
        let (waiting, knownCurrencies) = state.withLock { state in
            state.batchStarted = started
            return (state.queue.count, state.knownCurrencies)
        }
        var failure: (any Error)?
        let taken = TakenBatch()
        var found: Set<Identifier> = []
        do {
            found = try await apply(taken, pipelined: true, knownCurrencies: knownCurrencies)
        } catch is PipelineBroken {
            // The pipelined run met a failure it cannot pin on one operation (a statement
            // refused, a refusal after a write) before its COMMIT was sent, so nothing of it
            // committed: run the batch again awaiting each operation's writes, so each
            // failure is its own operation's. A failure of the COMMIT itself is never run
            // again: the batch may have committed.
            state.withLock { $0.statistics.awaitedReruns += 1 }
            do { found = try await apply(taken, pipelined: false, knownCurrencies: knownCurrencies) } catch { failure = error }
        } catch {
            failure = error
        }
        // A transaction that failed before its body ran (no connection, the lock not had in
        // time) took nothing: the operations that were waiting when it began hear its error,
        // and those that came since go in the next batch, as they would have.
        let (takenBatch, running) = taken.outcome
        let batch = takenBatch ?? takeBatch(atMost: waiting)
        let ended = ContinuousClock.now
        state.withLock { state in
            state.batchStarted = nil
            // Only a batch that committed returned what it found; a failed one left it empty.
            state.knownCurrencies.formUnion(found)
            state.statistics.batches += 1
            state.statistics.operations += batch.count
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            state.statistics.commitSeconds += (ended - started).inSeconds
            state.statistics.runningSeconds += running.inSeconds
            state.commitFailure = failure.map { (ended, "\($0)") }
        }
        for pending in batch { pending.complete(commitError: failure) }
        return (batch.count, failure)
    }

    /// Runs a batch in one transaction: takes it off the queue (on the body's first run, whether
    /// pipelined or awaited, before any retry), then its prefetch, then each operation
    /// (`Savepoint.run`). Awaited, each operation runs in a savepoint and its writes are answered
    /// before the next starts. `pipelined` (a batch's first run), none of that: the operations run
    /// one after another without a savepoint each, their ledger rows held back and written a table
    /// at a time (`RowWrite`), on PostgreSQL without waiting for the answers; any failure but a
    /// rule's refusal before the operation wrote ends the run (`PipelineBroken`, or the database's
    /// error at the commit), and the caller then runs the batch again awaited. A refusal after a
    /// write (rare: a refund refused once its wallet was settled) costs a rerun. Returns the
    /// currency codes the batch knows of, for the batches after it.
    private func apply(_ taken: TakenBatch, pipelined: Bool, knownCurrencies: Set<Identifier>) async throws -> Set<Identifier> {
        let clock = self.clock
        let makeTransactionID = self.makeTransactionID
        let prefetch = engine.prefetches
        return try await engine.transaction { db in
            let started = ContinuousClock.now
            defer { taken.ran(for: ContinuousClock.now - started) }
            // Taken on the transaction's first run; a rerun (awaited, or after a serialization
            // failure) runs the same operations.
            let batch = taken.batch(orTake: { self.takeBatch() })
            var context = BatchContext(makeTransactionID: makeTransactionID, knownCurrencies: knownCurrencies)
            // Where each lookup is a round trip (PostgreSQL), the batch makes them all at once.
            if prefetch {
                try context.prefetch(
                    db, keys: batch.flatMap(\.hints.keys), accounts: batch.flatMap(\.hints.accounts), storeTransactions: batch.flatMap(\.hints.storeTransactions))
            }
            for pending in batch {
                let now = clock()
                let checkpoint = context.checkpoint()
                do {
                    try Savepoint.run(db, pipelined: pipelined) { try pending.execute(db, now, &context) }
                } catch let error as SQLRetry {
                    // The whole transaction must run again (a PostgreSQL serialization
                    // failure or deadlock): the engine retries the batch from the start.
                    throw error
                } catch let error as PipelineBroken {
                    throw error
                } catch {
                    // Nothing of this operation stays (its savepoint rolled back, or pipelined, it
                    // wrote nothing): forget what it cached.
                    context.rollBack(to: checkpoint)
                    pending.fail(error)
                }
            }
            guard pipelined else {
                try context.writeBalances(db)
                return context.knownCurrencies
            }
            // Every statement answered before the engine sends COMMIT: a failure here (the
            // operations' held rows are sent with the balances, or at the sync) means nothing
            // committed, and the batch may run again awaited.
            do {
                try context.writeBalances(db)
                try db.sync()
            } catch let error as SQLRetry {
                throw error
            } catch {
                throw PipelineBroken()
            }
            return context.knownCurrencies
        }
    }
}

/// The operations of one batch, taken off the queue by the first run of its transaction, and
/// how long its transaction's runs took (`GroupCommitStatistics.runningSeconds`).
private final class TakenBatch: Sendable {
    private let state = Mutex<(batch: [any PendingWrite]?, running: Duration)>((nil, .zero))

    /// The batch taken, if any, and the time the transaction's runs took.
    var outcome: (batch: [any PendingWrite]?, running: Duration) { state.withLock { $0 } }

    /// Counts one run of the transaction's body.
    func ran(for duration: Duration) {
        state.withLock { $0.running += duration }
    }

    /// The batch taken, or the one `take` gives if none was yet.
    func batch(orTake take: () -> [any PendingWrite]) -> [any PendingWrite] {
        state.withLock { state in
            if let batch = state.batch { return batch }
            let batch = take()
            state.batch = batch
            return batch
        }
    }
}

/// A pipelined batch met a failure it cannot pin on one operation.
struct PipelineBroken: Error {}

extension SQLEngine {
    /// SQLite's statements are local, and wait at most its busy timeout (30 s) for the file lock.
    package var statementTimeout: Duration { .seconds(60) }
}

/// An operation waiting in the queue, its result type erased.
private protocol PendingWrite: Sendable {
    /// What the operation will look up.
    var hints: WriteHints { get }
    /// Runs the operation inside the batch's transaction and keeps its outcome.
    func execute(_ db: any SQLSession, _ now: Date, _ context: inout BatchContext) throws
    /// Records a failure of this operation alone (nothing of it stays).
    func fail(_ error: any Error)
    /// Answers the caller once the batch committed, or with the commit's error.
    func complete(commitError: (any Error)?)
}

private final class Pending<Result: Sendable>: PendingWrite, @unchecked Sendable {
    // Touched only by the drain: `execute` and `fail` in the batch's transaction, `complete` after it.
    let hints: WriteHints
    private let operation: @Sendable (any SQLSession, Date, inout BatchContext) throws -> Result
    private let continuation: CheckedContinuation<Result, any Error>
    private var outcome: Swift.Result<Result, any Error>?

    init(hints: WriteHints, operation: @escaping @Sendable (any SQLSession, Date, inout BatchContext) throws -> Result, continuation: CheckedContinuation<Result, any Error>) {
        self.hints = hints
        self.operation = operation
        self.continuation = continuation
    }

    func execute(_ db: any SQLSession, _ now: Date, _ context: inout BatchContext) throws {
        outcome = .success(try operation(db, now, &context))
    }

    func fail(_ error: any Error) {
        outcome = .failure(error)
    }

    func complete(commitError: (any Error)?) {
        if let commitError {
            continuation.resume(throwing: commitError)
        } else if let outcome {
            continuation.resume(with: outcome)
        } else {
            continuation.resume(throwing: WalletError.storage("the operation did not run"))
        }
    }
}
