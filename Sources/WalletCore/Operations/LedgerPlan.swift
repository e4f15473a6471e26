import Foundation

/// What a write read of one player's wallet in one currency, before it decides anything.
package struct WalletSnapshot: Sendable {
    /// Text, as stored (see `LedgerTransaction.playerID`): a refund loads the wallet of the
    /// purchase it takes back, whose player id may predate the id syntax.
    package var playerID: String
    package var currency: String
    /// Zero for a wallet without an account yet.
    package var balance: Int64
    /// Its lots with something left, in any order.
    package var lots: [Lot]
    /// Its open holds past their expiry, soonest first, each with what it drew.
    package var expiredHolds: [HeldCredits]
    /// When the write runs.
    package let now: Date
    /// `now` as the ledger writes times, which compare as text.
    package let at: String

    package init(playerID: String, currency: String, balance: Int64, lots: [Lot], expiredHolds: [HeldCredits] = [], now: Date) {
        self.playerID = playerID
        self.currency = currency
        self.balance = balance
        self.lots = lots
        self.expiredHolds = expiredHolds
        self.now = now
        at = Timestamp.format(now)
    }
}

/// A hold with what its hold transaction took from each lot, in burn order, and those lots as
/// they are now.
package struct HeldCredits: Sendable {
    package var hold: Hold
    package var draws: [LotDraw]
    package var lots: [Lot]

    package init(hold: Hold, draws: [LotDraw], lots: [Lot]) {
        self.hold = hold
        self.draws = draws
        self.lots = lots
    }
}

/// A posting a plan makes: `amount` into `owner`'s account in the transaction's currency.
package struct PlannedLeg: Sendable, Equatable {
    package var owner: AccountOwner
    package var amount: Int64
}

/// A lot a credit makes.
package struct NewLot: Sendable, Equatable {
    package var category: LotCategory
    package var amount: Int64
    package var expiresAt: String?
}

/// One ledger transaction as Core decided it, for a store to apply as is: the transaction (not
/// yet in the chain), its postings (the player's first), what it takes from (or, negative, gives
/// back to) lots, and the lot it makes. A store applies a plan in the state it was decided on:
/// `playerBalance` is the player's balance the decision read.
package struct LedgerPlan: Sendable {
    package var draft: LedgerTransaction
    package var legs: [PlannedLeg]
    package var playerBalance: Int64
    package var draws: [LotDraw] = []
    package var lot: NewLot?

    /// The player's posting: what the plan changes the balance by.
    package var playerAmount: Int64 { legs.first?.amount ?? 0 }

    /// A transaction of `amount` from `counterpart` into the player's wallet (negative: out of it).
    package init(_ draft: LedgerTransaction, amount: Int64, counterpart: SystemAccount, playerBalance: Int64) {
        self.draft = draft
        legs = [PlannedLeg(owner: .player(draft.playerID), amount: amount), PlannedLeg(owner: .system(counterpart), amount: -amount)]
        self.playerBalance = playerBalance
    }

    package init(_ draft: LedgerTransaction, legs: [PlannedLeg], playerBalance: Int64) {
        self.draft = draft
        self.legs = legs
        self.playerBalance = playerBalance
    }
}

/// A purchase's credit, the store account token to bind to the player with it, the entitlement
/// its product grants, if any, and how to finish it on the store's side, if it is to be.
package struct GrantPlan: Sendable {
    package var ledger: LedgerPlan
    package var bindAccountToken: String?
    package var entitlement: EntitlementGrant?
    package var finish: PurchaseFinish.Action?

    /// An entitlement a purchase grants: for ever, or for `period` from `startsAt`.
    package struct EntitlementGrant: Sendable {
        package var name: String
        package var startsAt: String
        package var period: PassDuration?
    }
}

/// An entitlement change: its transaction (two zero postings), the item it adds (its seq the
/// transaction's, once applied) or the item it toggles, and the state it leaves.
package struct EntitlementPlan: Sendable {
    package var ledger: LedgerPlan
    package var name: String
    package var added: EntitlementItem?
    package var toggled: EntitlementItem?
    package var state: EntitlementState
}

/// A hold placed: its transaction and when it expires.
package struct HoldPlacement: Sendable {
    package var ledger: LedgerPlan
    package var expiresAt: String
}

/// A hold captured, released or expired: its transaction and the hold's new state (its
/// `resolvedSeq` is the transaction's, known once applied).
package struct HoldResolutionPlan: Sendable {
    package var ledger: LedgerPlan
    package var hold: Hold
}

/// The lots of one wallet booked as expired together, by one transaction.
package struct ExpiryPlan: Sendable {
    package var ledger: LedgerPlan
    package var lots: [Lot]

    /// The key of one lot's expiry: `lot:<id>`. A lot that holds credits again after its expiry
    /// was booked (a hold released into it by a version before releases booked such credits
    /// themselves) is booked again under `lot:<id>:after:<seq>`, `seq` its last draw, so that no
    /// sweep is ever stuck on it.
    package static func key(of lot: Lot, after lastDrawSeq: Int64?) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("expiry")
        canonical.append(lot.id)
        // The first key's hash is what every version wrote for it.
        if let lastDrawSeq { canonical.append(lastDrawSeq) }
        let key = lastDrawSeq.map { "lot:\(lot.id):after:\($0)" } ?? "lot:\(lot.id)"
        return IdempotencyKey(scope: "expiry", key: key, requestHash: canonical.sha256Hex(), reusedDetail: "lot \(lot.id) has expired already")
    }

    /// The key of several lots' expiry booked together by a debit's settling, at `seq`
    /// (`lots:<count>:at:<seq>`): booked because the lots hold credits past their expiry, read
    /// in this same write, so no key could replay it anyway.
    package static func key(of lots: [Lot], at seq: Int64) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("expiry")
        for lot in lots { canonical.append(lot.id) }
        return IdempotencyKey(
            scope: "expiry", key: "lots:\(lots.count):at:\(seq)", requestHash: canonical.sha256Hex(), reusedDetail: "these lots have expired already")
    }
}

/// What settling a wallet books before a debit reads it: its expired holds released, then its
/// expired lots; and the wallet as the debit then finds it.
package struct SettlementPlan: Sendable {
    package var releases: [HoldResolutionPlan]
    package var expiry: ExpiryPlan?
    package var wallet: WalletSnapshot

    /// Whether it books nothing.
    package var isEmpty: Bool { releases.isEmpty && expiry == nil }
}
