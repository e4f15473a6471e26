import Foundation

/// Every write of the ledger decided as a plain function: what the request asks, what the store
/// read for it (`WalletSnapshot`, the hold, the purchase, the product), the time; and the plan
/// the store applies as is (`LedgerPlan`), or the `WalletError` that refuses it before anything
/// is written. A store loads, calls one of these, and applies; it decides nothing itself.
package enum Decide {
    /// The actor of what the wallet books on its own: expiries of lots and holds.
    package static let expiryActor = "wallet:expiry"

    // MARK: - Settling a wallet before a debit

    /// Settles `wallet` before a debit of `debit` (nil: one allowed below zero, or none): its
    /// expired holds are released (status `expired`; their credits come back as every credit
    /// does, a debt repaid first), then its expired lots that still hold credits are booked as
    /// one expiry to `@expired` (breakage). Expiry is a ledger entry, never silent: a debit never
    /// draws from an expired lot, and never finds credits locked by an expired hold.
    /// - Throws: `insufficientFunds` when the settled balance cannot cover `debit`: then nothing
    ///   of the settlement is booked either, and the wallet stays as it was. `invalidRequest` when
    ///   a release would take the balance past `Int64.max` (as `LedgerRules.seal` refuses it),
    ///   `corrupt` when an expired hold cannot be given back.
    package static func settle(_ wallet: WalletSnapshot, debiting debit: Int64?) throws(WalletError) -> SettlementPlan {
        let at = wallet.at
        // Most debits find nothing to settle: then the wallet is as read, without a copy of its lots.
        if wallet.expiredHolds.isEmpty, !wallet.lots.contains(where: { $0.remaining > 0 && $0.isExpired(at: at) }) {
            if let debit { try LedgerRules.requireFunds(balance: wallet.balance, debit: debit, currency: wallet.currency) }
            return unsettled(wallet)
        }
        let settled = LotRules.settle(
            wallet.balance, lots: wallet.lots + wallet.expiredHolds.flatMap(\.lots),
            expiredHolds: wallet.expiredHolds.map { ($0.hold.amount, $0.draws) }, at: at)
        if let debit { try LedgerRules.requireFunds(balance: settled.balance, debit: debit, currency: wallet.currency) }
        guard settled.holdReturns.count == wallet.expiredHolds.count else {
            throw .corrupt("an expired hold of \(wallet.playerID.prefix(64)) cannot be given back")
        }
        var balance = wallet.balance
        var releases: [HoldResolutionPlan] = []
        for (held, back) in zip(wallet.expiredHolds, settled.holdReturns) {
            releases.append(try resolution(held.hold, status: .expired, back, balance: balance, idempotencyKey: HoldResolution.expiryKeyName, actor: expiryActor))
            // Releases come before the expiry, so their credits may pass the largest balance even
            // where the settled one does not (`LotRules.settle`): refused as `seal` would.
            let (sum, overflow) = balance.addingReportingOverflow(back.toWallet)
            guard !overflow else { throw .invalidRequest("the balance of \(AccountOwner.player(wallet.playerID).text) would overflow") }
            balance = sum
        }
        let expiry = settled.expiredLots.isEmpty
            ? nil : expiry(settled.expiredLots, playerID: wallet.playerID, currency: wallet.currency, balance: balance)
        var after = wallet
        after.balance = settled.balance
        after.lots = settled.lots
        after.expiredHolds = []
        return SettlementPlan(releases: releases, expiry: expiry, wallet: after)
    }

    /// Nothing to settle: a credit reads the wallet as it is.
    private static func unsettled(_ wallet: WalletSnapshot) -> SettlementPlan {
        SettlementPlan(releases: [], expiry: nil, wallet: wallet)
    }

    /// The one `expiry` transaction of `lots` (one wallet's, whose balance is `balance`): their
    /// remainders leave the wallet for `@expired`, each lot's share in the breakdown. The player
    /// id is the wallet's as stored (see `LedgerTransaction.playerID`): the sweep finds lots of
    /// any wallet.
    package static func expiry(_ lots: [Lot], playerID: String, currency: String, balance: Int64) -> ExpiryPlan {
        let total = lots.reduce(Int64(0)) { $0 + $1.remaining }
        var draft = LedgerTransaction(draftOf: .expiry, playerID: playerID, currency: currency, amount: -total, actor: expiryActor)
        if lots.count == 1, let lot = lots.first {
            draft.note = "lot \(lot.id) (\(lot.category.rawValue), credited at seq \(lot.sourceSeq)) expired at \(lot.expiresAt ?? "")"
        } else {
            draft.note = "\(lots.count) lots expired, from \(lots.first?.expiresAt ?? "") to \(lots.last?.expiresAt ?? "")"
        }
        var ledger = LedgerPlan(draft, amount: -total, counterpart: .expired, playerBalance: balance)
        ledger.draws = lots.map { LotDraw(lotID: $0.id, amount: $0.remaining) }
        return ExpiryPlan(ledger: ledger, lots: lots)
    }

    // MARK: - Credits

    /// A store purchase credited: refused when the store reported it refunded, when its account
    /// token belongs to another player (`tokenOwner`), or when the product is not sold (inactive,
    /// unknown, or sold on another store).
    package static func grant(
        _ request: GrantRequest, product: Product?, reported: StoreTransactionState?, tokenOwner: String?, balance: Int64, at: String
    ) throws(WalletError) -> GrantPlan {
        if reported?.state == .refunded {
            throw .purchaseInvalid(
                "refunded: the store reported store transaction \(request.store)/\(request.storeTransactionID) refunded; nothing was credited")
        }
        if let tokenOwner, !Identifier.same(tokenOwner, request.playerID.text) {
            throw .purchaseInvalid("the purchase's account token belongs to another player; nothing was credited")
        }
        guard let product, product.active else {
            throw .unknownProduct("product '\(request.productID)' is not in the catalog or is inactive; nothing was credited")
        }
        if let store = product.store, !Identifier.same(store, request.store) {
            throw .unknownProduct("product '\(request.productID)' is sold on \(store), not \(request.store); nothing was credited")
        }
        if let sold = request.productType, sold != product.type {
            throw .purchaseInvalid(
                "the store sold '\(request.productID)' as \(sold.rawValue) but the catalog lists it as \(product.type.rawValue); nothing was credited")
        }
        if product.type != .consumable, request.quantity != 1 {
            throw .purchaseInvalid("a \(product.type.rawValue) product is bought one at a time, not \(request.quantity); nothing was credited")
        }
        let (amount, overflow) = product.credits.multipliedReportingOverflow(by: request.quantity)
        guard !overflow else { throw .invalidRequest("credits × quantity is too large", field: "quantity") }
        var draft = LedgerTransaction(draftOf: .purchase, playerID: request.playerID.text, currency: product.currency, amount: amount, actor: request.actor)
        draft.idempotencyKey = request.storeTransactionID
        draft.store = request.store
        draft.storeTransactionID = request.storeTransactionID
        draft.productID = request.productID
        draft.quantity = request.quantity
        // A purchase that grants only an entitlement still books its `purchase` (of zero): every
        // store purchase is one keyed transaction that refunds, lookups and replays find.
        var ledger = LedgerPlan(draft, amount: amount, counterpart: .store(request.store), playerBalance: balance)
        if amount > 0 { ledger.lot = LotRules.lot(ofCredit: amount, balance: balance, category: .paid) }
        var entitlement: GrantPlan.EntitlementGrant?
        // A purchase date is the store's word, but never later than a day past the wallet's
        // clock (clocks drift; a pass never starts in the future).
        let purchasedAt = try request.purchasedAt.map { text throws(WalletError) in try Timestamp.parse(text, field: .member("purchased_at")) }
        if let purchasedAt, let now = Timestamp.milliseconds(rfc3339: Array(at.utf8)),
            let latest = Timestamp.adding(months: 0, days: 1, to: now), purchasedAt > Timestamp.format(milliseconds: latest)
        {
            throw .purchaseInvalid("the purchase date \(purchasedAt) is in the future; nothing was credited")
        }
        if let name = product.entitlement {
            let period = try product.duration.map { text throws(WalletError) in try PassDuration(text) }
            entitlement = GrantPlan.EntitlementGrant(name: name, startsAt: purchasedAt ?? at, period: period)
        }
        return GrantPlan(
            ledger: ledger, bindAccountToken: tokenOwner == nil ? request.accountToken : nil, entitlement: entitlement,
            finish: request.record?.finishes == true ? PurchaseFinish.Action(product.type) : nil)
    }

    // MARK: - Entitlements

    /// What changes an entitlement, as a write decides it.
    package enum EntitlementChange: Sendable {
        /// A store purchase (`purchase`, already applied) grants it from `startsAt`.
        case purchase(LedgerTransaction, GrantPlan.EntitlementGrant)
        /// The store refunded that purchase's item, or reversed its refund.
        case refund(item: EntitlementItem, purchase: LedgerTransaction)
        case refundReversal(item: EntitlementItem, purchase: LedgerTransaction)
        /// Support's grant, revocation or extension.
        case support(EntitlementChangeRequest)
    }

    /// An entitlement change of `playerID`'s `name`, whose items are `items`: the `entitlement`
    /// transaction (two zero postings, the player's wallet in the default currency whose
    /// balance is `balance`, and `@entitlements`) recording the change and the state it leaves,
    /// and the item to add or toggle. A refund of an item refunded already is refused
    /// (`alreadyRefunded`), a reversal of one not refunded too (`notFound`).
    package static func entitlement(
        _ change: EntitlementChange, playerID: String, name: String, items: [EntitlementItem], balance: Int64, actor: String, at: String
    ) throws(WalletError) -> EntitlementPlan {
        var draft = LedgerTransaction(draftOf: .entitlement, playerID: playerID, currency: defaultCurrency, amount: 0, actor: actor)
        var owned = items
        var added: EntitlementItem?
        var toggled: EntitlementItem?
        var entry: EntitlementEntry
        // A new item's seq is the transaction's, the highest yet: known once applied.
        let newSeq = Int64.max
        switch change {
        case .purchase(let purchase, let grant):
            draft.store = purchase.store
            draft.storeTransactionID = purchase.storeTransactionID
            draft.productID = purchase.productID
            draft.idempotencyKey = purchase.storeTransactionID
            added = EntitlementItem(seq: newSeq, kind: grant.period.map { .period($0) } ?? .forever, startsAt: grant.startsAt, purchaseSeq: purchase.seq, active: true)
            entry = EntitlementEntry(name: name, change: .purchase, startsAt: grant.startsAt, period: grant.period?.text, purchaseSeq: purchase.seq, state: .none)
        case .refund(let item, let purchase), .refundReversal(let item, let purchase):
            let restoring: Bool
            if case .refundReversal = change { restoring = true } else { restoring = false }
            guard item.active != restoring else {
                if restoring { throw .notFound("the entitlement \(name) from store transaction \(purchase.store ?? "")/\(purchase.storeTransactionID ?? "") has no refund to reverse") }
                throw .alreadyRefunded("the entitlement \(name) from store transaction \(purchase.store ?? "")/\(purchase.storeTransactionID ?? "") was refunded already")
            }
            draft.store = purchase.store
            draft.storeTransactionID = purchase.storeTransactionID
            draft.productID = purchase.productID
            draft.idempotencyKey = purchase.storeTransactionID
            var updated = item
            updated.active = restoring
            toggled = updated
            owned = owned.map { $0.seq == item.seq ? updated : $0 }
            entry = EntitlementEntry(name: name, change: restoring ? .refundReversal : .refund, itemSeq: item.seq, state: .none)
        case .support(let request):
            draft.idempotencyKey = request.idempotencyKey
            draft.note = request.note
            draft.ticket = request.ticket
            let kind: EntitlementItem.Kind
            switch request.action {
            case .grant(let duration): kind = duration.map { .period($0) } ?? .forever
            case .revoke: kind = .revoke
            case .extend(let days): kind = .period(try PassDuration("P\(days)D"))
            }
            added = EntitlementItem(seq: newSeq, kind: kind, startsAt: at, purchaseSeq: nil, active: true)
            entry = EntitlementEntry(name: name, change: request.change, startsAt: at, period: added?.period?.text, reasonCode: request.reasonCode, state: .none)
        }
        if let added { owned.append(added) }
        entry.state = try EntitlementRules.fold(owned)
        draft.metadata = try entry.metadata()
        let ledger = LedgerPlan(draft, amount: 0, counterpart: .entitlements, playerBalance: balance)
        return EntitlementPlan(ledger: ledger, name: name, added: added, toggled: toggled, state: entry.state)
    }

    /// Bonus credits, possibly expiring. `walletFull`: the wallet keeps the most open lots it may
    /// (read only when `LotRules.mayBeFull` says the balance allows it).
    package static func bonus(_ request: BonusRequest, wallet: WalletSnapshot, walletFull: Bool) throws(WalletError) -> LedgerPlan {
        let expiry = try bonusExpiry(request, now: wallet.now)
        try LotRules.requireRoom(walletFull: walletFull, credit: request.amount, wallet: wallet)
        var draft = LedgerTransaction(draftOf: .bonus, playerID: request.playerID.text, currency: request.currency, amount: request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.reasonCode = request.reasonCode
        draft.note = request.note
        var details: [String: JSONValue] = [:]
        if let expiry { details["expires_at"] = .string(expiry) }
        if let campaign = request.campaign { details["campaign"] = .string(campaign) }
        if !details.isEmpty { draft.metadata = try Metadata(.object(details)) }
        var ledger = LedgerPlan(draft, amount: request.amount, counterpart: BonusRequest.counterpart, playerBalance: wallet.balance)
        ledger.lot = LotRules.lot(ofCredit: request.amount, balance: wallet.balance, category: .bonus, expiresAt: expiry)
        return ledger
    }

    /// A bonus's expiry, which must be in the future at `now`: checked before anything is read.
    package static func bonusExpiry(_ request: BonusRequest, now: Date) throws(WalletError) -> String? {
        let expiry = try request.expiry
        if let expiry, expiry <= Timestamp.format(now) {
            throw .invalidRequest("expires_at must be in the future; \(request.expiresAt ?? "") has passed", field: "expires_at")
        }
        return expiry
    }

    /// A support correction: a credit makes an `adjustment` lot; a debit settles the wallet
    /// first and draws in burn order, below zero only with `allowNegative`.
    package static func adjust(
        _ request: AdjustRequest, wallet: WalletSnapshot, walletFull: Bool
    ) throws(WalletError) -> (settlement: SettlementPlan, adjustment: LedgerPlan) {
        var draft = LedgerTransaction(draftOf: .adjustment, playerID: request.playerID.text, currency: request.currency, amount: request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.reasonCode = request.reasonCode
        draft.note = request.note
        draft.ticket = request.ticket
        if request.amount < 0 {
            return try debit(draft, from: wallet, counterpart: AdjustRequest.counterpart, allowingDebt: request.allowNegative)
        }
        try LotRules.requireRoom(walletFull: walletFull, credit: request.amount, wallet: wallet)
        var ledger = LedgerPlan(draft, amount: request.amount, counterpart: AdjustRequest.counterpart, playerBalance: wallet.balance)
        ledger.lot = LotRules.lot(ofCredit: request.amount, balance: wallet.balance, category: .adjustment)
        return (unsettled(wallet), ledger)
    }

    /// Re-credits what the purchase's refunds since the last reversal took back, as a purchase
    /// lot (a debt repaid first).
    /// - Throws: `notFound` when there is no refund to reverse.
    package static func reverseRefund(
        of purchase: LedgerTransaction, corrections: Corrections, balance: Int64, actor: String
    ) throws(WalletError) -> LedgerPlan {
        guard corrections.lastRefundSeq != nil, corrections.claimed > 0, let store = purchase.store, let storeTransactionID = purchase.storeTransactionID else {
            throw .notFound("store transaction \(purchase.store ?? "")/\(purchase.storeTransactionID ?? "") has no refund to reverse")
        }
        var draft = LedgerTransaction(draftOf: .refundReversal, playerID: purchase.playerID, currency: purchase.currency, amount: corrections.taken, actor: actor)
        draft.idempotencyKey = storeTransactionID
        draft.store = store
        draft.storeTransactionID = storeTransactionID
        draft.refundOfSeq = purchase.seq
        var ledger = LedgerPlan(draft, amount: corrections.taken, counterpart: .refunds, playerBalance: balance)
        ledger.lot = LotRules.lot(ofCredit: corrections.taken, balance: balance, category: .paid)
        return ledger
    }

    // MARK: - Debits

    /// A spend: the wallet settled, its settled balance covering `amount`, drawn in burn order.
    package static func spend(_ request: SpendRequest, wallet: WalletSnapshot) throws(WalletError) -> (settlement: SettlementPlan, spend: LedgerPlan) {
        var draft = LedgerTransaction(draftOf: .spend, playerID: request.playerID.text, currency: request.currency, amount: -request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.note = request.reason
        draft.metadata = request.metadata
        let (settlement, ledger) = try debit(draft, from: wallet, counterpart: SpendRequest.counterpart, allowingDebt: false)
        return (settlement, ledger)
    }

    /// The one way credits leave a wallet by request (a spend, a hold, a support debit): the
    /// wallet settled first, then `-draft.amount` drawn in burn order to `counterpart`. Refused
    /// when the settled balance cannot cover it, unless `allowingDebt` (then it takes every lot
    /// and leaves the rest as debt).
    private static func debit(
        _ draft: LedgerTransaction, from wallet: WalletSnapshot, counterpart: SystemAccount, allowingDebt: Bool
    ) throws(WalletError) -> (SettlementPlan, LedgerPlan) {
        let amount = -draft.amount
        let settlement = try settle(wallet, debiting: allowingDebt ? nil : amount)
        let settled = settlement.wallet
        var ledger = LedgerPlan(draft, amount: draft.amount, counterpart: counterpart, playerBalance: settled.balance)
        ledger.draws = allowingDebt
            ? LotRules.drawAvailable(amount, from: settled.lots, at: settled.at)
            : try LotRules.drawCovering(amount, from: settled.lots, at: settled.at, wallet: settled)
        return (settlement, ledger)
    }

    /// A refund of `request.shareMillipercent` of `purchase` in all (`LedgerRules.refund`) from a
    /// wallet settled first (`settle(_:debiting: nil)`, applied whether or not the refund then
    /// is: a refund needs no funds); what is left of the purchase's own lot is taken first.
    package static func refund(
        _ request: RefundRequest, of purchase: LedgerTransaction, corrections: Corrections, settled: WalletSnapshot
    ) throws(WalletError) -> LedgerPlan {
        let (owed, taken) = try LedgerRules.refund(request, of: purchase, corrections: corrections, playerBalance: settled.balance)
        var draft = LedgerTransaction(draftOf: .refund, playerID: purchase.playerID, currency: purchase.currency, amount: -taken, actor: request.actor)
        draft.idempotencyKey = request.storeTransactionID
        draft.store = request.store
        draft.storeTransactionID = request.storeTransactionID
        draft.refundOfSeq = purchase.seq
        draft.uncollected = owed - taken
        var ledger = LedgerPlan(draft, amount: -taken, counterpart: .refunds, playerBalance: settled.balance)
        ledger.draws = LotRules.drawAvailable(taken, from: settled.lots, at: settled.at, firstFrom: purchase.seq)
        return ledger
    }

    // MARK: - Holds

    /// A hold: the wallet settled, `amount` drawn in burn order to `@holds` until it expires.
    package static func placeHold(_ request: HoldRequest, wallet: WalletSnapshot) throws(WalletError) -> (settlement: SettlementPlan, hold: HoldPlacement) {
        var draft = LedgerTransaction(draftOf: .hold, playerID: request.playerID.text, currency: request.currency, amount: -request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.note = request.reason
        // The game's metadata as it sent it, within a spend's limits: the hold's id and expiry
        // are in `holds` (by `hold_seq`), and its capture or release names both.
        draft.metadata = request.metadata
        let (settlement, ledger) = try debit(draft, from: wallet, counterpart: HoldRequest.counterpart, allowingDebt: false)
        let expiresAt = Timestamp.format(wallet.now.addingTimeInterval(Double(request.expiresInSeconds)))
        return (settlement, HoldPlacement(ledger: ledger, expiresAt: expiresAt))
    }

    /// Captures or releases an open hold, once. A hold resolved already answers 409
    /// `hold_<status>`; one past its expiry cannot be captured, and a release of it books it
    /// `expired`. Who may resolve it (`Hold.requireResolvable`) is checked before this, and
    /// before any replay.
    package static func resolveHold(_ request: HoldResolution, held: HeldCredits, balance: Int64, now: Date) throws(WalletError) -> HoldResolutionPlan {
        let hold = held.hold
        guard hold.status == .open else {
            throw .holdResolved(status: hold.status, detail: "the hold was \(hold.status.rawValue) already (seq \(hold.resolvedSeq ?? 0)); nothing changed")
        }
        let at = Timestamp.format(now)
        let expired = hold.isExpired(at: at)
        let status: Hold.Status
        let captured: Int64
        switch request.action {
        case .capture(let amount):
            if expired { throw .holdResolved(status: .expired, detail: "the hold expired at \(hold.expiresAt) and cannot be captured; nothing changed") }
            status = .captured
            captured = amount ?? hold.amount
            guard captured <= hold.amount else {
                throw .captureExceedsHold("the hold holds \(hold.amount) \(hold.currency); a capture of \(captured) is more")
            }
        case .release:
            status = expired ? .expired : .released
            captured = 0
        }
        let back = try LotRules.giveBack(hold.amount, captured: captured, draws: held.draws, lots: held.lots, balance: balance, at: at)
        return try resolution(hold, status: status, back, balance: balance, idempotencyKey: request.idempotencyKey, actor: request.actor, reason: request.reason)
    }

    /// A hold past its expiry released by the wallet itself (status `expired`).
    package static func expireHold(_ held: HeldCredits, balance: Int64, now: Date) throws(WalletError) -> HoldResolutionPlan {
        let back = try LotRules.giveBack(held.hold.amount, captured: 0, draws: held.draws, lots: held.lots, balance: balance, at: Timestamp.format(now))
        return try resolution(held.hold, status: .expired, back, balance: balance, idempotencyKey: HoldResolution.expiryKeyName, actor: expiryActor)
    }

    /// The `capture` or `release` transaction of a hold: what was captured to `@spend`, what
    /// would go back to expired lots to `@expired`, the rest back to the wallet and its lots.
    private static func resolution(
        _ hold: Hold, status: Hold.Status, _ back: HoldReturn, balance: Int64, idempotencyKey: String, actor: String, reason: String? = nil
    ) throws(WalletError) -> HoldResolutionPlan {
        var legs = [PlannedLeg(owner: .player(hold.playerID), amount: back.toWallet), PlannedLeg(owner: .system(.holds), amount: -hold.amount)]
        if back.captured > 0 { legs.append(PlannedLeg(owner: .system(.spend), amount: back.captured)) }
        if back.expired > 0 { legs.append(PlannedLeg(owner: .system(.expired), amount: back.expired)) }
        var draft = LedgerTransaction(
            draftOf: status == .captured ? .capture : .release, playerID: hold.playerID, currency: hold.currency, amount: back.toWallet, actor: actor)
        draft.idempotencyKey = idempotencyKey
        draft.note = status == .expired ? "hold \(hold.id) expired at \(hold.expiresAt)" : reason
        var details: [String: JSONValue] = ["hold_id": .string(hold.id), "hold_seq": .integer(hold.holdSeq), "status": .string(status.rawValue)]
        if back.expired > 0 { details["expired"] = .integer(back.expired) }
        draft.metadata = try Metadata(.object(details))
        var ledger = LedgerPlan(draft, legs: legs, playerBalance: balance)
        ledger.draws = back.toLots.map { LotDraw(lotID: $0.lotID, amount: -$0.amount) }
        var resolved = hold
        resolved.status = status
        resolved.captured = status == .captured ? back.captured : nil
        return HoldResolutionPlan(ledger: ledger, hold: resolved)
    }
}

/// A request on one player's wallet in one currency, whose other side is always the same
/// system account: the batch's prefetch reads both before the batch runs.
package protocol WalletOperation: LedgerMutation {
    var playerID: PlayerID { get }
    var currency: String { get }
    static var counterpart: SystemAccount { get }
}

extension SpendRequest: WalletOperation { package static var counterpart: SystemAccount { .spend } }
extension BonusRequest: WalletOperation { package static var counterpart: SystemAccount { .bonuses } }
extension AdjustRequest: WalletOperation { package static var counterpart: SystemAccount { .adjustments } }
extension HoldRequest: WalletOperation { package static var counterpart: SystemAccount { .holds } }
