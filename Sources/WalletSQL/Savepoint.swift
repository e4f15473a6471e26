import WalletCore

/// A savepoint around one operation of a batch, with prepared statements (GRDB's
/// `inSavepoint` parses its SQL on every call, a cost paid for every operation here).
enum Savepoint {
    /// Runs `operation` so that a failure undoes it alone. Awaited (not `pipelined`): in a
    /// savepoint, its writes answered before it counts as done, so a failure is always this
    /// operation's. Pipelined: with no savepoint and no wait, so a batch's statements go out
    /// in a row; an operation that fails having sent nothing that changes the database
    /// (a rule's refusal after reads) left nothing to undo, and any other failure throws
    /// `PipelineBroken`, after which the batch runs again awaited.
    static func run(_ db: any SQLSession, pipelined: Bool = false, _ operation: () throws -> Void) throws {
        if pipelined {
            let changesBefore = db.changesSent
            do {
                try operation()
            } catch let error as SQLRetry {
                throw error
            } catch {
                // A database error, or a storage error, may be an earlier operation's write
                // reported late (a read sends the rows held back first).
                guard let refusal = error as? WalletError, refusal.isRuleRefusal, db.changesSent == changesBefore else { throw PipelineBroken() }
                throw error
            }
            return
        }
        try db.execute("SAVEPOINT operation")
        do {
            try operation()
            // Every write of the operation answered: a failure is this operation's, not the next one's.
            try db.sync()
        } catch let error as SQLRetry {
            throw error
        } catch {
            // Answers to writes sent before the failure are not this caller's concern now.
            try? db.sync()
            try db.execute("ROLLBACK TO SAVEPOINT operation")
            try db.execute("RELEASE SAVEPOINT operation")
            try db.sync()
            throw error
        }
        try db.execute("RELEASE SAVEPOINT operation")
    }

    /// Runs one part of a composite operation in its own awaited savepoint (nested in the
    /// operation's, or in a batch run without them, in none): a rule's
    /// refusal undoes that part alone, and forgets what it cached, and is returned as its
    /// outcome; any other failure ends the whole operation.
    static func attempt<Result>(
        _ db: any SQLSession, context: inout BatchContext, _ part: (inout BatchContext) throws -> Result
    ) throws -> Swift.Result<Result, WalletError> {
        let checkpoint = context.checkpoint()
        var outcome: Result?
        do {
            try run(db) { outcome = try part(&context) }
        } catch let refusal as WalletError where refusal.isRuleRefusal {
            context.rollBack(to: checkpoint)
            return .failure(refusal)
        }
        guard let outcome else { throw WalletError.storage("a part of the operation did not run") }
        return .success(outcome)
    }
}
