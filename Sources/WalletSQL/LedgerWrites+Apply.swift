import Foundation
import WalletCore

/// How a store applies what Core decided (`LedgerPlan`): the accounts of its postings fetched
/// (created at zero when new), the transaction sealed as the next of the chain, its postings,
/// its idempotency key, its lot draws and the lot it makes, all in the caller's write.
extension LedgerWrites {
    /// Applies `plan` under `key`. The plan was decided on the player's balance as the write
    /// read it; a store that finds another one refuses to write.
    @discardableResult
    static func apply(_ db: any SQLSession, _ plan: LedgerPlan, key: IdempotencyKey, now: Date, context: inout BatchContext) throws -> MutationResult {
        let currency = plan.draft.currency
        var legs: [(account: Account, amount: Int64)] = []
        for leg in plan.legs { legs.append((try Account.fetch(db, context: &context, owner: leg.owner.text, currency: currency), leg.amount)) }
        guard let player = legs.first?.account, player.balance == plan.playerBalance else {
            throw WalletError.corrupt(
                "a \(plan.draft.kind.rawValue) was decided on a balance of \(plan.playerBalance) but the wallet holds \(legs.first?.account.balance ?? 0)")
        }
        let lotsBefore = context.firstLots[player.id]
        let result = try append(db, plan.draft, legs: legs, key: key, now: now, context: &context)
        try LotStorage.apply(db, seq: result.transaction.seq, draws: plan.draws)
        if let lot = plan.lot { try LotStorage.insert(db, accountID: player.id, lot, transaction: result.transaction) }
        context.lotsDrawn(accountID: player.id, before: lotsBefore, draws: plan.draws, madeLot: plan.lot != nil)
        return result
    }

    /// Books what a debit's settling decided: expired holds released, then expired lots.
    static func apply(_ db: any SQLSession, _ settlement: SettlementPlan, now: Date, context: inout BatchContext) throws {
        for release in settlement.releases {
            _ = try apply(db, release, key: HoldResolution.expiryKey(holdID: release.hold.id), now: now, context: &context)
        }
        if let expiry = settlement.expiry { try apply(db, expiry, now: now, context: &context) }
    }

    /// Applies a hold's capture or release and records its new state.
    static func apply(_ db: any SQLSession, _ resolution: HoldResolutionPlan, key: IdempotencyKey, now: Date, context: inout BatchContext) throws -> HoldResult {
        let result = try apply(db, resolution.ledger, key: key, now: now, context: &context)
        var hold = resolution.hold
        hold.resolvedSeq = result.transaction.seq
        try HoldStorage.resolve(db, hold)
        return HoldResult(hold: hold, transaction: result.transaction, balance: result.balance, replayed: false)
    }

    /// Books lots' expiry: one lot under `lot:<id>` (or, booked already under it by an older
    /// version, `lot:<id>:after:<its last draw>`), several under the seq the transaction takes.
    static func apply(_ db: any SQLSession, _ expiry: ExpiryPlan, now: Date, context: inout BatchContext) throws {
        var key: IdempotencyKey
        if expiry.lots.count == 1, let lot = expiry.lots.first {
            key = ExpiryPlan.key(of: lot, after: nil)
            if try key.replay(db, context: context) != nil {
                key = ExpiryPlan.key(of: lot, after: try LotStorage.lastDrawSeq(db, lot: lot))
            }
        } else {
            key = ExpiryPlan.key(of: expiry.lots, at: (try context.head ?? LedgerReads.head(db)).seq + 1)
        }
        var ledger = expiry.ledger
        ledger.draft.idempotencyKey = key.key
        try apply(db, ledger, key: key, now: now, context: &context)
    }

    /// Appends `draft` with its postings as the next transaction of the chain, updates the
    /// balances, and records the idempotency key: one indivisible step of the ledger.
    /// The first leg is the player's; its balance after is the result's `balance`.
    private static func append(
        _ db: any SQLSession, _ draft: LedgerTransaction, legs: [(account: Account, amount: Int64)], key: IdempotencyKey, now: Date,
        context: inout BatchContext
    ) throws -> MutationResult {
        let head = try context.head ?? LedgerReads.head(db)
        let (transaction, balancesAfter) = try LedgerRules.seal(
            draft, legs: legs.map { LedgerRules.Leg(owner: $0.account.owner, currency: $0.account.currency, balance: $0.account.balance, amount: $0.amount) },
            head: head, id: context.makeTransactionID(), now: now)
        try insert(db, transaction)
        try db.write(
            .posting,
            zip(legs, balancesAfter).map { leg, balanceAfter in
                [SQLValue.integer(transaction.seq), .integer(leg.account.id), .integer(leg.amount), .integer(balanceAfter)]
            })
        try key.record(db, seq: transaction.seq, context: &context)
        // Only now, with every statement run or held back, may the batch's later operations rely
        // on this one.
        // The balances themselves are written once per account when the batch ends
        // (`BatchContext.writeBalances`), in the same SQL transaction.
        context.advance(head: (transaction.seq, transaction.hash))
        for (leg, balanceAfter) in zip(legs, balancesAfter) {
            context.update(Account(id: leg.account.id, owner: leg.account.owner, currency: leg.account.currency, balance: balanceAfter))
        }
        return MutationResult(transaction: transaction, balance: balancesAfter[0], replayed: false)
    }

    private static func insert(_ db: any SQLSession, _ transaction: LedgerTransaction) throws {
        try db.write(.transaction, [LedgerReads.values(of: transaction)])
    }
}

/// The rows appending a transaction writes (`SQLSession.write`), which a session may hold back
/// and send many transactions' at once: each ranked after the rows it refers to.
extension RowWrite {
    static let transaction = RowWrite.insert(into: "transactions", columns: LedgerReads.transactionColumnNames, rank: 0)
    static let posting = RowWrite.insert(into: "postings", columns: ["seq", "account_id", "amount", "balance_after"], rank: 1)
    /// What a draw takes from a lot's `remaining` (negative: gives back).
    static let lotDrawn = RowWrite.subtract(from: "lots", column: "remaining", key: "id", rank: 2)
    static let lotDraw = RowWrite.insert(into: "lot_draws", columns: ["seq", "lot_id", "amount"], rank: 3)
    static let idempotencyKey = RowWrite.insert(into: "idempotency_keys", columns: ["scope", "key", "request_hash", "seq"], rank: 4)
}
