/// Credit lots: every credit of a wallet is a lot (what it added, what remains, when it expires),
/// and every debit draws from lots in one burn order and records its breakdown. These are the
/// rules alone, as plain functions of the lots an operation read; the stores keep the lots.
///
/// Purchased credits never expire (App Store Review Guideline 3.1.1 forbids expiring purchased
/// in-game currency): only bonus lots carry an expiry.
public enum LotCategory: String, Codable, Sendable, CaseIterable {
    /// From a store purchase.
    case paid
    /// Given away (daily login, events, compensation), possibly expiring.
    case bonus
    /// A support credit.
    case adjustment
    /// What a wallet held when lots began (the migration's one lot per existing balance).
    case opening
}

/// One lot of a wallet in one currency.
public struct Lot: Codable, Sendable, Equatable {
    public var id: Int64
    public var category: LotCategory
    public var amount: Int64
    public var remaining: Int64
    /// RFC 3339 UTC with milliseconds, as the ledger writes times: compares as text.
    public var createdAt: String
    /// Only bonus lots expire.
    public var expiresAt: String?
    /// The transaction that credited it.
    public var sourceSeq: Int64

    public init(id: Int64, category: LotCategory, amount: Int64, remaining: Int64, createdAt: String, expiresAt: String?, sourceSeq: Int64) {
        self.id = id
        self.category = category
        self.amount = amount
        self.remaining = remaining
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.sourceSeq = sourceSeq
    }

    /// Whether its expiry has passed at `now` (a lot expires at its `expiresAt`, not after it).
    public func isExpired(at now: String) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }
}

/// An open lot of a wallet, as players, games and support read it.
public struct WalletLot: Codable, Sendable, Equatable {
    public var id: Int64
    public var currency: String
    public var category: LotCategory
    public var amount: Int64
    public var remaining: Int64
    public var createdAt: String
    public var expiresAt: String?
    public var sourceSeq: Int64
    /// Past its expiry, its expiry not booked yet: not spendable.
    public var expired: Bool

    package init(_ lot: Lot, currency: String, now: String) {
        id = lot.id
        self.currency = currency
        category = lot.category
        amount = lot.amount
        remaining = lot.remaining
        createdAt = lot.createdAt
        expiresAt = lot.expiresAt
        sourceSeq = lot.sourceSeq
        expired = lot.isExpired(at: now)
    }

    enum CodingKeys: String, CodingKey {
        case id, currency, category, amount, remaining, expired
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case sourceSeq = "source_seq"
    }
}

/// A player's open lots, as the API and the CLI answer them.
public struct PlayerLots: Encodable, Sendable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    public var lots: [WalletLot]
    /// Present only when another page follows: the `after` that reads it.
    public var next: Int64?

    public init(playerID: PlayerID, lots: [WalletLot], next: Int64? = nil) {
        self.playerID = playerID.text
        self.lots = lots
        self.next = next
    }

    enum CodingKeys: String, CodingKey {
        case lots, next
        case playerID = "player_id"
    }
}

/// A page of a player's open lots, in the order `PlayerLots` answers them (per currency: spendable
/// ones in burn order, then expired ones whose expiry is not booked yet, by id).
public struct LotQuery: Sendable, Equatable {
    public var playerID: PlayerID
    public var limit: Int
    /// Continue after this lot (exclusive): the `next` of the previous page.
    public var after: Int64?

    public init(playerID: PlayerID, limit: Int = Limits.pageSizeDefault, after: Int64? = nil) {
        self.playerID = playerID
        self.limit = limit
        self.after = after
    }

    /// Refuses a page size outside `1...Limits.pageSizeMax` and a lot id below 1.
    package func validate() throws(WalletError) {
        try Validate.pageSize(limit)
        if let after, after < 1 { throw .invalidRequest("after must be a positive lot id", field: "after") }
    }
}

/// One page of a player's open lots; `next` is the last lot's id when another page follows.
public struct LotPage: Sendable, Equatable {
    public var lots: [WalletLot]
    public var next: Int64?

    public init(lots: [WalletLot], next: Int64?) {
        self.lots = lots
        self.next = next
    }
}

/// How much a debit took from one lot (negative: what a release or capture gave back).
public struct LotDraw: Codable, Sendable, Equatable {
    public var lotID: Int64
    public var amount: Int64

    public init(lotID: Int64, amount: Int64) {
        self.lotID = lotID
        self.amount = amount
    }
}

package enum LotRules {
    /// The lots a debit may draw from at `now`, in burn order: expiring lots first, soonest
    /// expiry first; then the non-expiring bonus, adjustment and opening lots, oldest first;
    /// purchase lots last, oldest first (free credits go before paid ones, and a refund finds a
    /// purchase unspent as long as possible). Empty and expired lots are left out: a debit never
    /// draws from an expired lot, even before its expiry entry is written.
    package static func burnOrder(_ lots: [Lot], at now: String) -> [Lot] {
        burnSorted(lots.filter { $0.remaining > 0 && !$0.isExpired(at: now) })
    }

    /// Lots in burn order, whatever they hold.
    package static func burnSorted(_ lots: [Lot]) -> [Lot] {
        lots.sorted { a, b in
            let (rankA, rankB) = (rank(a), rank(b))
            if rankA != rankB { return rankA < rankB }
            if let expiryA = a.expiresAt, let expiryB = b.expiresAt, expiryA != expiryB { return expiryA < expiryB }
            if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
            return a.id < b.id
        }
    }

    private static func rank(_ lot: Lot) -> Int {
        if lot.expiresAt != nil { return 0 }
        return lot.category == .paid ? 2 : 1
    }

    /// Whether `lots`, the first open lots of a wallet in burn order (`burnSorted`, expired ones
    /// included, as the store's burn-order index gives them), decide a debit of `debit` at `now`
    /// as all of the wallet's lots would, so that the store reads no more. Expired lots come
    /// first in that order (the soonest expiries), so once a lot that has not expired is read,
    /// every expired one is too, and `settle` books the same expiry. Then the debit draws only
    /// from lots read if their spendable credits cover it (credits given back by expired holds
    /// only add to lots); or it is refused whatever the rest hold if `balanceAtMost` (the balance
    /// plus what the wallet's expired holds hold, nil for a debit allowed below zero, which takes
    /// every lot) less the expired credits read cannot cover it.
    package static func decides(_ lots: [Lot], debit: Int64, balanceAtMost: Int64?, at now: String) -> Bool {
        guard let last = lots.last, !last.isExpired(at: now) else { return false }
        var (spendable, expired): (Int64, Int64) = (0, 0)
        for lot in lots where lot.remaining > 0 {
            if lot.isExpired(at: now) { expired += lot.remaining } else { spendable += lot.remaining }
        }
        if spendable >= debit { return true }
        guard let balanceAtMost else { return false }
        return balanceAtMost - expired < debit
    }

    /// What the lots spendable at `now` add up to.
    package static func spendable(_ lots: [Lot], at now: String) -> Int64 {
        burnOrder(lots, at: now).reduce(0) { $0 + $1.remaining }
    }

    /// The breakdown of a debit of `amount` at `now`, in burn order.
    /// - Throws: `insufficientFunds` with what the lots can give, when they cannot give `amount`.
    package static func draw(_ amount: Int64, from lots: [Lot], at now: String, currency: String) throws(WalletError) -> [LotDraw] {
        let draws = drawAvailable(amount, from: lots, at: now)
        guard draws.reduce(0, { $0 + $1.amount }) == amount else { throw .insufficientFunds(balance: spendable(lots, at: now), currency: currency) }
        return draws
    }

    /// The breakdown of a debit of `amount` at `now` as far as the lots go: a debit allowed
    /// below zero (a refund under the `debt` policy, an adjustment with `allowNegative`) takes
    /// every lot and leaves the rest as debt. A refund names its purchase (`firstFrom`, the
    /// seq that credited it): what is left of that lot goes first, then the burn order.
    package static func drawAvailable(_ amount: Int64, from lots: [Lot], at now: String, firstFrom sourceSeq: Int64? = nil) -> [LotDraw] {
        let ordered = burnOrder(lots, at: now)
        let first = sourceSeq.flatMap { seq in ordered.first { $0.sourceSeq == seq } }
        var left = amount
        var draws: [LotDraw] = []
        for lot in (first.map { [$0] } ?? []) + ordered.filter({ $0.id != first?.id }) where left > 0 {
            let taken = min(lot.remaining, left)
            draws.append(LotDraw(lotID: lot.id, amount: taken))
            left -= taken
        }
        return draws
    }

    /// A credit of `amount` to a wallet whose balance is `balance`: a debt (a negative balance,
    /// from a refund of credits already spent) is repaid first, and only the rest becomes a lot.
    package static func lotAmount(ofCredit amount: Int64, balance: Int64) -> Int64 {
        max(0, amount - debt(ofBalance: balance))
    }

    /// What a wallet whose balance is `balance` owes: nothing at zero or above. A balance of
    /// exactly `Int64.min` (which `LedgerRules.seal` allows) owes one more than `Int64.max`
    /// credits; it counts as `Int64.max`, since no credit comes near either.
    package static func debt(ofBalance balance: Int64) -> Int64 {
        balance >= 0 ? 0 : balance == .min ? .max : -balance
    }

    /// The lot a credit of `amount` makes in a wallet whose balance is `balance` before it
    /// (`lotAmount`), nil when it all repays a debt.
    package static func lot(ofCredit amount: Int64, balance: Int64, category: LotCategory, expiresAt: String? = nil) -> NewLot? {
        let lotAmount = lotAmount(ofCredit: amount, balance: balance)
        return lotAmount > 0 ? NewLot(category: category, amount: lotAmount, expiresAt: expiresAt) : nil
    }

    /// Whether a wallet whose balance is `balance` may keep `lotsMax` open lots already: every
    /// open lot holds at least one credit, so a balance under it proves there is room, and the
    /// store need not count them.
    package static func mayBeFull(balance: Int64, lotsMax: Int64 = Limits.openLotsPerWalletMax) -> Bool {
        balance >= lotsMax
    }

    /// Refuses a free credit (a bonus, a support credit) of `credit` that would make a lot in a
    /// wallet that keeps `Limits.openLotsPerWalletMax` open ones already (`walletFull`, read by the
    /// store only when `mayBeFull`). Store purchases and refund reversals are never refused for
    /// it: the store was paid, and only real purchases make such lots.
    package static func requireRoom(
        walletFull: Bool, credit: Int64, wallet: WalletSnapshot, lotsMax: Int64 = Limits.openLotsPerWalletMax
    ) throws(WalletError) {
        guard walletFull, mayBeFull(balance: wallet.balance, lotsMax: lotsMax), lotAmount(ofCredit: credit, balance: wallet.balance) > 0 else { return }
        throw .tooManyLots(
            "the wallet of \(wallet.playerID.prefix(64)) keeps \(lotsMax) open lots of \(wallet.currency), the most one wallet may; spend or let some expire first; nothing was credited")
    }

    /// The breakdown of a debit of `amount` that the funds check (`LedgerRules.requireFunds`)
    /// allowed: a settled wallet's lots hold its balance, so they cover it.
    /// - Throws: `corrupt` when they do not.
    package static func drawCovering(_ amount: Int64, from lots: [Lot], at now: String, wallet: WalletSnapshot) throws(WalletError) -> [LotDraw] {
        let draws = drawAvailable(amount, from: lots, at: now)
        guard draws.reduce(0, { $0 + $1.amount }) == amount else {
            throw .corrupt("the lots of \(wallet.playerID.prefix(64)) in \(wallet.currency) hold less than its balance of \(wallet.balance)")
        }
        return draws
    }

    /// Credits a hold gives back to live lots (`returned`: the `live` part of `splitReturns`, in
    /// burn order) to a wallet whose balance is `balance` before: like every credit, they repay a
    /// debt first (taken from the returned draws in their order) and only the rest goes back to
    /// the lots it came from. What belonged to expired lots never repays anything: it expired.
    package static func planReturn(_ returned: [LotDraw], balance: Int64) -> (repaid: Int64, toLots: [LotDraw]) {
        var debt = Self.debt(ofBalance: balance)
        var repaid: Int64 = 0
        var toLots: [LotDraw] = []
        for draw in returned where draw.amount > 0 {
            let repaying = min(debt, draw.amount)
            debt -= repaying
            repaid += repaying
            if draw.amount > repaying { toLots.append(LotDraw(lotID: draw.lotID, amount: draw.amount - repaying)) }
        }
        return (repaid, toLots)
    }

    /// Splits what a hold gives back (`returned`, in burn order) at `now`: what goes back to a
    /// live lot (`live`, then through `planReturn`), and what would go back to a lot among `lots`
    /// that has expired meanwhile (`expired`, in all): that part never becomes spendable nor
    /// repays a debt; it is booked to `@expired` by the same transaction that gives the rest back.
    package static func splitReturns(_ returned: [LotDraw], lots: [Lot], at now: String) -> (live: [LotDraw], expired: Int64) {
        let expiredIDs = Set(lots.lazy.filter { $0.isExpired(at: now) }.map(\.id))
        var live: [LotDraw] = []
        var expired: Int64 = 0
        for back in returned {
            if expiredIDs.contains(back.lotID) { expired += back.amount } else { live.append(back) }
        }
        return (live, expired)
    }

    /// What a hold of `amount`, drawn as `draws` (in burn order) from `lots`, gives back when it is
    /// captured for `captured` (0: released or expired) at `now`, to a wallet whose balance is
    /// `balance`: the captured part goes to `@spend` (`splitCapture`); of the rest, what would go
    /// back to a lot expired meanwhile expires (`splitReturns`), and the live part repays a debt
    /// first and goes back to its lots (`planReturn`).
    package static func giveBack(
        _ amount: Int64, captured: Int64, draws: [LotDraw], lots: [Lot], balance: Int64, at now: String
    ) throws(WalletError) -> HoldReturn {
        let split = try splitCapture(captured, of: draws)
        let returns = splitReturns(split.returned, lots: lots, at: now)
        let plan = planReturn(returns.live, balance: balance)
        return HoldReturn(captured: captured, toWallet: amount - captured - returns.expired, expired: returns.expired, toLots: plan.toLots)
    }

    /// A wallet settled at `now` before a debit reads it: its expired holds given back in the
    /// order given (`giveBack`, nothing captured), then every lot past its expiry booked
    /// (`expired`). `lots` are the wallet's open lots and the lots the holds drew from, each as it
    /// is now (a lot named twice counts once).
    ///
    /// A wallet's open holds are bounded by `@holds` (at most `Int64.max` in all), not by its
    /// balance, so a wallet refilled while its credits were held can find what comes back past
    /// `Int64.max`: then the settled balance is `Int64.max` and `overflows` is set (a read shows
    /// the largest balance there is; a debit is refused, `Decide.settle`), never a trap.
    package static func settle(_ balance: Int64, lots: [Lot], expiredHolds holds: [(amount: Int64, draws: [LotDraw])], at now: String) -> SettledWallet {
        var byID: [Int64: Lot] = [:]
        for lot in lots where byID[lot.id] == nil { byID[lot.id] = lot }
        let known = Array(byID.values)
        // What expires first: returns never go to an expired lot (`splitReturns`), so which lots
        // expire and what they hold do not depend on them, and a balance that ends in range
        // never passes `Int64.max` on the way. The lots hold at most the balance (none in debt),
        // so only a ledger that breaks that could pass `Int64.min` here, and is read, not trapped on.
        let expiring = expired(known, at: now, limit: byID.count)
        let (left, underflow) = balance.subtractingReportingOverflow(expiring.reduce(0) { $0 + $1.remaining })
        var balance = underflow ? .min : left
        var overflows = false
        var returns: [HoldReturn] = []
        for hold in holds {
            // Nothing is captured, so `splitCapture` cannot refuse it.
            guard let back = try? giveBack(hold.amount, captured: 0, draws: hold.draws, lots: known, balance: balance, at: now) else { continue }
            let (sum, overflow) = balance.addingReportingOverflow(back.toWallet)
            overflows = overflows || overflow
            balance = overflow ? .max : sum
            for draw in back.toLots { byID[draw.lotID]?.remaining += draw.amount }
            returns.append(back)
        }
        let expiredIDs = Set(expiring.map(\.id))
        let open = byID.values.filter { $0.remaining > 0 && !expiredIDs.contains($0.id) }.sorted { $0.id < $1.id }
        return SettledWallet(balance: balance, overflows: overflows, holdReturns: returns, expiredLots: expiring, lots: open)
    }

    /// The balance a debit of this wallet would find at `now`, before any of it is written
    /// (`settle`). What balances answer, so that a player is never shown credits a spend cannot
    /// use, nor refused credits a spend could.
    package static func settledBalance(_ balance: Int64, lots: [Lot], expiredHolds holds: [(amount: Int64, draws: [LotDraw])], at now: String) -> Int64 {
        settle(balance, lots: lots, expiredHolds: holds, at: now).balance
    }

    /// The lots a lot-expiry sweep closes at `now`: expired ones with something left, soonest
    /// expiry first, at most `limit` of them.
    package static func expired(_ lots: [Lot], at now: String, limit: Int) -> [Lot] {
        Array(lots.filter { $0.remaining > 0 && $0.isExpired(at: now) }.sorted { ($0.expiresAt ?? "", $0.id) < ($1.expiresAt ?? "", $1.id) }.prefix(limit))
    }

    /// How a capture of `captured` out of a hold drawn as `draws` (in burn order) splits: the
    /// captured part takes the draws in their order, and the rest goes back to the lots it came
    /// from, latest in burn order first (so purchase lots are given back before bonus ones).
    /// - Throws: `captureExceedsHold` when `captured` is more than the hold, `invalidRequest` when negative.
    package static func splitCapture(_ captured: Int64, of draws: [LotDraw]) throws(WalletError) -> (kept: [LotDraw], returned: [LotDraw]) {
        let held = draws.reduce(0) { $0 + $1.amount }
        guard captured >= 0 else { throw .invalidRequest("a capture takes 0 to \(held), the amount held, not \(captured)", field: "amount") }
        guard captured <= held else { throw .captureExceedsHold("the hold holds \(held); a capture of \(captured) is more") }
        var left = captured
        var kept: [LotDraw] = []
        var returned: [LotDraw] = []
        for draw in draws {
            let taken = min(draw.amount, left)
            if taken > 0 { kept.append(LotDraw(lotID: draw.lotID, amount: taken)) }
            if draw.amount - taken > 0 { returned.append(LotDraw(lotID: draw.lotID, amount: draw.amount - taken)) }
            left -= taken
        }
        return (kept, returned)
    }
}

/// What a hold gives back when it is captured, released or expired (`LotRules.giveBack`).
package struct HoldReturn: Sendable, Equatable {
    /// What a capture took, to `@spend`.
    package var captured: Int64
    /// What comes back to the wallet's balance.
    package var toWallet: Int64
    /// What would have gone back to lots expired meanwhile: to `@expired`.
    package var expired: Int64
    /// What goes back to each lot (after a debt is repaid).
    package var toLots: [LotDraw]
}

/// A wallet as a debit finds it once settled (`LotRules.settle`).
package struct SettledWallet: Sendable, Equatable {
    package var balance: Int64
    /// The credits given back took the balance past `Int64.max` (`balance` is then `Int64.max`).
    package var overflows = false
    /// What each expired hold gives back, in the order given.
    package var holdReturns: [HoldReturn]
    /// The lots booked as expired, soonest expiry first.
    package var expiredLots: [Lot]
    /// The open lots left, by id, with what holds gave back.
    package var lots: [Lot]
}

/// How expiries are swept, by the background service and by `wallet expire` alike: bounded
/// batches, each one write, until a batch comes back short. Every batch books what it names (a
/// lot's remainder, a hold's release), so each one makes progress; and a pass stops after
/// `batchesMax` batches all the same, leaving the rest to the next pass.
package enum ExpirySweep {
    /// Lots or holds one write books at most.
    package static let batchMax = 200
    /// Batches one pass runs at most (`batchMax` × this many lots or holds).
    package static let batchesMax = 500

    /// Runs `batch` with `batchMax` until it books fewer, at most `batchesMax` times, or until
    /// `stop` says so between two batches (a graceful shutdown); returns how many it booked.
    package static func all(stop: () -> Bool = { false }, _ batch: (Int) async throws(WalletError) -> Int) async throws(WalletError) -> Int {
        var total = 0
        for _ in 0..<batchesMax {
            let count = try await batch(batchMax)
            total += count
            if count < batchMax || Task.isCancelled || stop() { break }
        }
        return total
    }
}
