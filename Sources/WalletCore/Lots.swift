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
    public var playerID: String
    public var lots: [WalletLot]

    public init(playerID: String, lots: [WalletLot]) {
        self.playerID = playerID
        self.lots = lots
    }

    enum CodingKeys: String, CodingKey {
        case lots
        case playerID = "player_id"
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
        max(0, amount - max(0, -balance))
    }

    /// The lots a lot-expiry sweep closes at `now`: expired ones with something left, soonest
    /// expiry first, at most `limit` of them.
    package static func expired(_ lots: [Lot], at now: String, limit: Int) -> [Lot] {
        Array(lots.filter { $0.remaining > 0 && $0.isExpired(at: now) }.sorted { ($0.expiresAt ?? "", $0.id) < ($1.expiresAt ?? "", $1.id) }.prefix(limit))
    }

    /// How a capture of `captured` out of a hold drawn as `draws` (in burn order) splits: the
    /// captured part takes the draws in their order, and the rest goes back to the lots it came
    /// from, latest in burn order first (so purchase lots are given back before bonus ones).
    /// - Throws: `invalidRequest` when `captured` is negative or more than the hold.
    package static func splitCapture(_ captured: Int64, of draws: [LotDraw]) throws(WalletError) -> (kept: [LotDraw], returned: [LotDraw]) {
        let held = draws.reduce(0) { $0 + $1.amount }
        guard captured >= 0, captured <= held else {
            throw .invalidRequest("a capture takes 0 to \(held), the amount held, not \(captured)")
        }
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
