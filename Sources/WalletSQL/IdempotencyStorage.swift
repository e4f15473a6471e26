import WalletCore

/// The `idempotency_keys` table: a key is recorded in the same write as its effect, and a request
/// sent again under it replays the original answer.
extension IdempotencyKey {
    /// The original result if this key was used for this same request; throws
    /// `idempotencyKeyReused` if it was used for another; nil if unused.
    func replay(_ db: any SQLSession, context: BatchContext) throws -> MutationResult? {
        let used: (requestHash: String, seq: Int64)?
        switch context.keys[BatchContext.KeyID(scope, key)] {
        case .unused?:
            used = nil
        case .used(let requestHash, let seq)?:
            used = (requestHash, seq)
        case nil:
            used = try db.first("SELECT request_hash, seq FROM idempotency_keys WHERE scope = ? AND key = ?", [.text(scope), .text(key)]) { row in
                (requestHash: try row.text(0), seq: try row.integer(1))
            }
        }
        guard let used else { return nil }
        guard used.requestHash == requestHash else { throw WalletError.idempotencyKeyReused(reusedDetail) }
        let transaction = try context.replayed[used.seq] ?? LedgerReads.transaction(db, seq: used.seq)
        let playerOwner = AccountOwner.player(transaction.playerID).text
        guard let posting = transaction.postings.first(where: { Identifier.same($0.account, playerOwner) }) else {
            throw WalletError.corrupt("transaction \(transaction.seq) has no posting for \(playerOwner)")
        }
        return MutationResult(transaction: transaction, balance: posting.balanceAfter, replayed: true)
    }

    func record(_ db: any SQLSession, seq: Int64, context: inout BatchContext) throws {
        try db.write(.idempotencyKey, [[.text(scope), .text(key), .text(requestHash), .integer(seq)]])
        context.recordKey(scope: scope, key: key, requestHash: requestHash, seq: seq)
    }
}
