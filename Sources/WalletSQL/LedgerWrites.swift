import Foundation
import WalletCore

/// The ledger's write operations, each run inside one write transaction (or, batched, a part of
/// one) that the caller opens, on requests already validated and keyed (`Checked`). Each
/// reads as load, decide, apply: it replays a key used before, loads what Core's rule needs, asks
/// `Decide`, and applies the plan (`LedgerWrites+Apply.swift`). Every business decision is Core's;
/// what is here is reading and writing. The invariants of DESIGN.md hold by construction: postings
/// sum to zero, balances equal their postings, `seq` is gap-free, the hash chain is extended, and
/// an idempotency key is recorded in the same write as its effect.
enum LedgerWrites {
    static func grant(_ db: any SQLSession, _ checked: Checked<GrantRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        let at = Timestamp.format(now)
        if var replay = try key.replay(db, context: context) {
            if let owned = try EntitlementStorage.item(db, purchaseSeq: replay.transaction.seq) {
                let state = try EntitlementStorage.state(db, storedPlayerID: owned.playerID, name: owned.name) ?? .none
                replay.entitlement = Entitlement(name: owned.name, state: state, at: at, items: nil)
            }
            return replay
        }
        let reported = try StoreTransactionState.find(db, store: request.store, storeTransactionID: request.storeTransactionID, context: &context)
        let tokenOwner = try request.accountToken.flatMap { token in try StoreAccountToken.owner(db, store: request.store, token: token) }
        let product = try product(db, id: request.productID, context: &context)
        let balance = try product.map { try balanceOf(db, .player(request.playerID.text), currency: $0.currency, context: &context) } ?? 0
        let plan = try Decide.grant(request, product: product, reported: reported, tokenOwner: tokenOwner, balance: balance, at: at)
        var result = try apply(db, plan.ledger, key: key, now: now, context: &context)
        if let token = plan.bindAccountToken {
            try StoreAccountToken.bind(db, store: request.store, token: token, playerID: request.playerID, seq: result.transaction.seq)
        }
        if let record = request.record { try StorePurchaseStorage.insert(db, record, purchase: result.transaction, finish: plan.finish, now: now) }
        if let grant = plan.entitlement {
            let purchase = result.transaction
            let changed = try changeEntitlement(
                db, .purchase(purchase, grant), playerID: purchase.playerID, name: grant.name, actor: request.actor,
                key: EntitlementKeys.purchase(purchase), now: now, context: &context)
            result.entitlement = changed.entitlement
        }
        return result
    }

    // MARK: - Entitlements

    /// Applies an entitlement change of `playerID`'s (as stored) `name`: its items read,
    /// `Decide.entitlement`, then its transaction and the tables, in the caller's write.
    static func changeEntitlement(
        _ db: any SQLSession, _ change: Decide.EntitlementChange, playerID: String, name: String, actor: String, key: IdempotencyKey, now: Date,
        context: inout BatchContext
    ) throws -> EntitlementChangeResult {
        let at = Timestamp.format(now)
        let items = try EntitlementStorage.items(db, storedPlayerID: playerID, name: name)
        let balance = try balanceOf(db, .player(playerID), currency: defaultCurrency, context: &context)
        let plan = try Decide.entitlement(change, playerID: playerID, name: name, items: items, balance: balance, actor: actor, at: at)
        let result = try apply(db, plan.ledger, key: key, now: now, context: &context)
        try EntitlementStorage.apply(db, plan, playerID: playerID, seq: result.transaction.seq)
        return EntitlementChangeResult(transaction: result.transaction, entitlement: Entitlement(name: name, state: plan.state, at: at, items: nil), replayed: false)
    }

    /// Support's grant, revocation or extension, under the caller's key.
    static func changeEntitlement(_ db: any SQLSession, _ checked: Checked<EntitlementChangeRequest>, now: Date, context: inout BatchContext) throws
        -> EntitlementChangeResult
    {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) {
            let state = try EntitlementStorage.state(db, storedPlayerID: request.playerID.text, name: request.entitlement.text) ?? .none
            return EntitlementChangeResult(
                transaction: replay.transaction, entitlement: Entitlement(name: request.entitlement.text, state: state, at: Timestamp.format(now), items: nil),
                replayed: true)
        }
        return try changeEntitlement(
            db, .support(request), playerID: request.playerID.text, name: request.entitlement.text, actor: request.actor, key: key, now: now, context: &context)
    }

    /// The entitlement a refunded (or refund-reversed) store purchase granted, changed to match:
    /// nil when the purchase granted none.
    private static func correctEntitlement(
        _ db: any SQLSession, of purchase: LedgerTransaction, restoring: Bool, actor: String, now: Date, context: inout BatchContext
    ) throws -> EntitlementChangeResult? {
        guard let owned = try EntitlementStorage.item(db, purchaseSeq: purchase.seq) else { return nil }
        let change: Decide.EntitlementChange = restoring ? .refundReversal(item: owned.item, purchase: purchase) : .refund(item: owned.item, purchase: purchase)
        let key = EntitlementKeys.correction(of: owned.item, restoring: restoring, store: purchase.store ?? "", next: (try context.head ?? LedgerReads.head(db)).seq + 1)
        return try changeEntitlement(db, change, playerID: owned.playerID, name: owned.name, actor: actor, key: key, now: now, context: &context)
    }

    static func bonus(_ db: any SQLSession, _ checked: Checked<BonusRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        _ = try Decide.bonusExpiry(request, now: now)
        try requireKnownCurrency(db, request.currency, context: &context)
        let (wallet, account) = try load(db, request.playerID, currency: request.currency, now: now, context: &context, reading: .none)
        let plan = try Decide.bonus(request, wallet: wallet, walletFull: try LotStorage.isFull(db, account: account))
        return try apply(db, plan, key: key, now: now, context: &context)
    }

    static func spend(_ db: any SQLSession, _ checked: Checked<SpendRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        try requireKnownCurrency(db, request.currency, context: &context)
        let (wallet, _) = try load(
            db, request.playerID, currency: request.currency, now: now, context: &context, reading: .debit(request.amount, refusable: true))
        let plan = try Decide.spend(request, wallet: wallet)
        try apply(db, plan.settlement, now: now, context: &context)
        return try apply(db, plan.spend, key: key, now: now, context: &context)
    }

    static func adjust(_ db: any SQLSession, _ checked: Checked<AdjustRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        try requireKnownCurrency(db, request.currency, context: &context)
        let reading: LotReading = request.amount < 0 ? .debit(Int64(clamping: request.amount.magnitude), refusable: !request.allowNegative) : .none
        let (wallet, account) = try load(db, request.playerID, currency: request.currency, now: now, context: &context, reading: reading)
        let walletFull = request.amount > 0 ? try LotStorage.isFull(db, account: account) : false
        let plan = try Decide.adjust(request, wallet: wallet, walletFull: walletFull)
        try apply(db, plan.settlement, now: now, context: &context)
        return try apply(db, plan.adjustment, key: key, now: now, context: &context)
    }

    /// Refunds a purchase up to `shareMillipercent` of it in all (`LedgerRules.refund`).
    static func refund(_ db: any SQLSession, _ checked: Checked<RefundRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        guard let purchase = try LedgerReads.purchase(db, store: request.store, storeTransactionID: request.storeTransactionID) else {
            throw WalletError.notFound("no purchase for store transaction \(request.store)/\(request.storeTransactionID); nothing was refunded")
        }
        // A refund removes the entitlement the purchase granted (whatever the share), and takes
        // back its credits if it credited any.
        if purchase.amount == 0 {
            guard let changed = try correctEntitlement(db, of: purchase, restoring: false, actor: request.actor, now: now, context: &context) else {
                throw WalletError.alreadyRefunded("store transaction \(request.store)/\(request.storeTransactionID) credited nothing and granted nothing to refund")
            }
            // Under the refund's own key too, as a refund of credits is: the same refund sent
            // again (a retry after a timeout) answers this one.
            try key.record(db, seq: changed.transaction.seq, context: &context)
            return try mutationResult(of: changed, db, context: context)
        }
        do {
            _ = try correctEntitlement(db, of: purchase, restoring: false, actor: request.actor, now: now, context: &context)
        } catch WalletError.alreadyRefunded {
            // A later step of a partial refund: the entitlement went with the first.
        }
        let corrections = try Corrections.of(db, purchase: purchase)
        // A refund draws from its purchase's lot first, wherever it is in the burn order: it reads them all.
        let (wallet, _) = try load(db, storedPlayerID: purchase.playerID, currency: purchase.currency, now: now, context: &context, reading: .all)
        // The wallet is settled before the refund is decided, and stays settled when the refund
        // is refused: a notification records such a refusal in this same write.
        let settlement = try Decide.settle(wallet, debiting: nil)
        try apply(db, settlement, now: now, context: &context)
        let plan = try Decide.refund(request, of: purchase, corrections: corrections, settled: settlement.wallet)
        return try apply(db, plan, key: key, now: now, context: &context)
    }

    /// Re-credits what the purchase's refunds since the last reversal took back, keyed by the
    /// store transaction and the last refund reversed (`Corrections.reversalKey`).
    static func reverseRefund(_ db: any SQLSession, store: String, storeTransactionID: String, actor: String, now: Date, context: inout BatchContext) throws -> MutationResult {
        guard let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: storeTransactionID) else {
            throw WalletError.notFound("no purchase for store transaction \(store)/\(storeTransactionID)")
        }
        var restored: EntitlementChangeResult?
        do {
            restored = try correctEntitlement(db, of: purchase, restoring: true, actor: actor, now: now, context: &context)
        } catch WalletError.notFound where purchase.amount > 0 {
            // Its credits may still have a refund to reverse.
        }
        if purchase.amount == 0 {
            guard let restored else { throw WalletError.notFound("store transaction \(store)/\(storeTransactionID) has no refund to reverse") }
            return try mutationResult(of: restored, db, context: context)
        }
        let corrections = try Corrections.of(db, purchase: purchase)
        let key = corrections.reversalKey(store: store, storeTransactionID: storeTransactionID)
        if let restored, corrections.lastRefundSeq == nil || corrections.claimed == 0 { return try mutationResult(of: restored, db, context: context) }
        if let replay = try key.replay(db, context: context) { return replay }
        let balance = try balanceOf(db, .player(purchase.playerID), currency: purchase.currency, context: &context)
        let plan = try Decide.reverseRefund(of: purchase, corrections: corrections, balance: balance, actor: actor)
        return try apply(db, plan, key: key, now: now, context: &context)
    }

    // MARK: - Holds

    static func createHold(_ db: any SQLSession, _ checked: Checked<HoldRequest>, now: Date, context: inout BatchContext) throws -> HoldResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return try holdResult(db, replay) }
        try requireKnownCurrency(db, request.currency, context: &context)
        let (wallet, _) = try load(
            db, request.playerID, currency: request.currency, now: now, context: &context, reading: .debit(request.amount, refusable: true))
        let plan = try Decide.placeHold(request, wallet: wallet)
        try apply(db, plan.settlement, now: now, context: &context)
        let result = try apply(db, plan.hold.ledger, key: key, now: now, context: &context)
        let hold = Hold(
            id: RandomID.uuid(), playerID: request.playerID.text, currency: request.currency, amount: request.amount, status: .open,
            expiresAt: plan.hold.expiresAt, holdSeq: result.transaction.seq, resolvedSeq: nil, captured: nil, placedBy: HoldParty(actor: request.actor))
        try HoldStorage.insert(db, hold, context: &context)
        return HoldResult(hold: hold, transaction: result.transaction, balance: result.balance, replayed: false)
    }

    /// Captures or releases an open hold, once (`Decide.resolveHold`): the key that resolved it
    /// replays its answer.
    static func resolveHold(_ db: any SQLSession, _ checked: Checked<HoldResolution>, now: Date, context: inout BatchContext) throws -> HoldResult {
        let (request, key) = (checked.request, checked.key)
        // Who may resolve it is checked before anything, a replay included: another player's
        // hold stays unknown, whatever key is sent.
        guard let hold = try HoldStorage.find(db, id: request.holdID) else { throw WalletError.notFound("no hold \(request.holdID)") }
        try hold.requireResolvable(by: request.resolver)
        if let replay = try key.replay(db, context: context) { return try holdResult(db, replay) }
        let held = try HoldStorage.held(db, hold)
        let plan = try Decide.resolveHold(request, held: held, balance: try balanceOf(db, .player(hold.playerID), currency: hold.currency, context: &context), now: now)
        return try apply(db, plan, key: key, now: now, context: &context)
    }

    private static func holdResult(_ db: any SQLSession, _ result: MutationResult) throws -> HoldResult {
        guard let hold = try HoldStorage.find(db, seq: result.transaction.seq) else {
            throw WalletError.corrupt("transaction \(result.transaction.seq) has no hold")
        }
        return HoldResult(hold: hold, transaction: result.transaction, balance: result.balance, replayed: result.replayed)
    }

    // MARK: - Expiry sweeps

    /// Releases up to `limit` holds past their expiry (status `expired`), soonest first; returns
    /// how many it released. Each in a savepoint of its own: one that a rule refuses (credits
    /// given back past the largest balance, which `LedgerRules.seal` refuses) stays open and
    /// due, and the others are released; the batch then comes back short, so a sweep moves on.
    static func expireHolds(_ db: any SQLSession, limit: Int, now: Date, context: inout BatchContext) throws -> Int {
        let due = try HoldStorage.due(db, at: Timestamp.format(now), limit: limit)
        var released = 0
        for hold in due {
            let outcome = try Savepoint.attempt(db, context: &context) { context in
                let held = try HoldStorage.held(db, hold)
                let plan = try Decide.expireHold(held, balance: try balanceOf(db, .player(hold.playerID), currency: hold.currency, context: &context), now: now)
                _ = try apply(db, plan, key: HoldResolution.expiryKey(holdID: hold.id), now: now, context: &context)
            }
            if case .success = outcome { released += 1 }
        }
        return released
    }

    /// Books up to `limit` lots expired at `now`, soonest expiry first, across wallets, each by
    /// its own transaction; returns how many it booked.
    static func expireLots(_ db: any SQLSession, limit: Int, now: Date, context: inout BatchContext) throws -> Int {
        let due = try LotStorage.due(db, at: Timestamp.format(now), limit: limit)
        var booked = 0
        for (lot, playerID, currency) in due where lot.remaining > 0 {
            let balance = try balanceOf(db, .player(playerID), currency: currency, context: &context)
            try apply(db, Decide.expiry([lot], playerID: playerID, currency: currency, balance: balance), now: now, context: &context)
            booked += 1
        }
        return booked
    }

    /// An entitlement change answered where a mutation's result is expected (a refund or a
    /// reversal of a purchase that credited nothing): its transaction and the wallet's balance.
    private static func mutationResult(of changed: EntitlementChangeResult, _ db: any SQLSession, context: BatchContext) throws -> MutationResult {
        let playerOwner = AccountOwner.player(changed.transaction.playerID).text
        let balance = changed.transaction.postings.first(where: { Identifier.same($0.account, playerOwner) })?.balanceAfter ?? 0
        return MutationResult(transaction: changed.transaction, balance: balance, replayed: false, entitlement: changed.entitlement)
    }

    // MARK: - Loading

    /// What a write reads of a wallet's lots (`load`).
    enum LotReading {
        /// None: a credit.
        case none
        /// What a debit of this amount needs (`LotStorage.forDebit`); `refusable` when the
        /// settled balance must cover it (not an adjustment allowed below zero).
        case debit(Int64, refusable: Bool)
        /// Every open lot: a refund, which draws from its purchase's lot first.
        case all
    }

    /// The wallet a request names, as a write reads it (`load(_:storedPlayerID:...)`).
    private static func load(
        _ db: any SQLSession, _ playerID: PlayerID, currency: String, now: Date, context: inout BatchContext, reading: LotReading
    ) throws -> (WalletSnapshot, Account?) {
        try load(db, storedPlayerID: playerID.text, currency: currency, now: now, context: &context, reading: reading)
    }

    /// The player's wallet as a write reads it: its balance, and for a debit, which settles it
    /// first, its open holds past their expiry with their draws and the open lots `reading`
    /// names. Also its account, nil for a wallet without one yet. The id is taken as stored: a
    /// refund loads the wallet of its purchase, whose id may predate the player id syntax.
    private static func load(
        _ db: any SQLSession, storedPlayerID playerID: String, currency: String, now: Date, context: inout BatchContext, reading: LotReading
    ) throws -> (WalletSnapshot, Account?) {
        let account = try Account.find(db, context: &context, owner: AccountOwner.player(playerID).text, currency: currency)
        var wallet = WalletSnapshot(playerID: playerID, currency: currency, balance: account?.balance ?? 0, lots: [], now: now)
        guard let account else { return (wallet, account) }
        // What the batch's prefetch read of this wallet, if it did and nothing but the batch's
        // own draws from those lots changed it since.
        func expiredHolds() throws -> [HeldCredits] {
            if context.withoutOpenHolds.contains(BatchContext.ExactPair(playerID, currency)) { return [] }
            return try HoldStorage.expired(db, storedPlayerID: playerID, currency: currency, now: now).map { hold in try HoldStorage.held(db, hold) }
        }
        switch reading {
        case .none:
            return (wallet, account)
        case .all:
            wallet.expiredHolds = try expiredHolds()
            wallet.lots = try LotStorage.open(db, accountID: account.id)
        case .debit(let amount, let refusable):
            wallet.expiredHolds = try expiredHolds()
            // A bound that overflows bounds nothing: then the lots are read until they cover the debit.
            var balanceAtMost: Int64? = refusable ? account.balance : nil
            for held in wallet.expiredHolds {
                balanceAtMost = balanceAtMost.flatMap { bound in
                    let (sum, overflow) = bound.addingReportingOverflow(held.hold.amount)
                    return overflow ? nil : sum
                }
            }
            wallet.lots = try LotStorage.forDebit(
                db, accountID: account.id, debit: amount, balanceAtMost: balanceAtMost, at: wallet.at, known: context.firstLots[account.id])
        }
        return (wallet, account)
    }

    /// The balance of `owner`'s account in `currency`, zero for a wallet without an account yet.
    static func balanceOf(_ db: any SQLSession, _ owner: AccountOwner, currency: String, context: inout BatchContext) throws -> Int64 {
        try Account.find(db, context: &context, owner: owner.text, currency: currency)?.balance ?? 0
    }

    /// A product as the catalog holds it now, read once per batch.
    private static func product(_ db: any SQLSession, id: String, context: inout BatchContext) throws -> Product? {
        if let product = context.products[Identifier(id)] { return product }
        let product = try LedgerReads.product(db, id: id)
        if let product { context.remember(product) }
        return product
    }

    private static func requireKnownCurrency(_ db: any SQLSession, _ currency: String, context: inout BatchContext) throws {
        if context.knownCurrencies.contains(Identifier(currency)) { return }
        guard try db.first("SELECT 1 FROM currencies WHERE code = ?", [.text(currency)], { _ in true }) == true else {
            throw WalletError.unknownCurrency("currency '\(currency)' is unknown: no product in the catalog uses it")
        }
        context.currencyKnown(Identifier(currency))
    }
}
