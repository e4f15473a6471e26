import Foundation
import WalletCore

/// A small reference model of the ledger, written independently of `LotRules` and
/// `LedgerRules` (it calls neither): the simulation holds the stores to it after every step.
/// Each rule of the issue lives in one method here (marked `Rule:`), so that a rule that
/// changes is changed in one place.
///
/// The model is a value: an operation works on a copy and the copy is kept only when the
/// operation succeeds, as a refused write leaves the ledger untouched.
struct SimulationModel {
    struct Wallet: Hashable {
        var player: String
        var currency: String
    }

    struct ModelLot {
        /// The order lots were created in: the store's lot ids follow it.
        var id: Int
        var wallet: Wallet
        var category: LotCategory
        var remaining: Int64
        var createdAt: Int64
        var expiresAt: Int64?
    }

    struct ModelHold {
        /// The store's id (the simulation passes it in; the model cannot make it up).
        var id: String
        var wallet: Wallet
        var amount: Int64
        var status: Hold.Status
        var captured: Int64?
        var expiresAt: Int64
        /// What the hold took from each lot, in burn order.
        var draws: [(lot: Int, amount: Int64)]
    }

    struct Purchase {
        var wallet: Wallet
        var amount: Int64
        /// The lot the purchase made (none when it only repaid a debt).
        var lot: Int?
        /// What refunds since the last reversal claimed (taken plus uncollected) and took.
        var claimed: Int64 = 0
        var taken: Int64 = 0
        /// The last refund's number (stands for its seq in the reversal's key).
        var lastRefund: Int?
    }

    /// What an idempotency key was first used for and what it answered.
    struct KeyUse {
        var requestHash: String
        var balance: Int64
        var hold: Int?
        var notificationOutcome: String?
    }

    /// An operation's answer: the store's must read the same (see `SimulationOutcome`).
    enum Answer {
        case ok(String)
        case refused(String)

        var text: String {
            switch self {
            case .ok(let text), .refused(let text): text
            }
        }
    }

    static let products: [String: (currency: String, credits: Int64)] = [
        "com.example.consume5credits": ("credits", 5), "com.example.gems10": ("gems", 10), "com.example.game.consume5credits": ("credits", 5),
    ]

    var now: Int64
    var balances: [Wallet: Int64] = [:]
    var lots: [ModelLot] = []
    var holds: [ModelHold] = []
    var purchases: [String: Purchase] = [:]
    var keys: [String: KeyUse] = [:]
    /// The latest refund state a store reported per store transaction (`store/id`).
    var reportedStates: [String: (refunded: Bool, reportedAt: Int64)] = [:]
    var notifications: [String: String] = [:]
    var refundCount = 0

    init(now: Int64) {
        self.now = now
    }

    func balance(_ wallet: Wallet) -> Int64 { balances[wallet] ?? 0 }

    // MARK: Rules

    /// Rule: a lot or hold is expired at `now` when its expiry is at or before `now`.
    func isExpired(_ expiresAt: Int64?) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// Rule: burn order. Lots with an expiry first (soonest first), then the non-expiring
    /// non-paid lots oldest first, then paid lots oldest first; ties by lot id.
    static func burnKey(_ lot: ModelLot) -> (Int, Int64, Int64, Int) {
        let rank = lot.expiresAt != nil ? 0 : (lot.category == .paid ? 2 : 1)
        return (rank, lot.expiresAt ?? 0, lot.createdAt, lot.id)
    }

    /// The lots a debit of `wallet` may draw from now, in burn order: never an expired one.
    func drawable(_ wallet: Wallet) -> [Int] {
        lots.indices.filter { lots[$0].wallet == wallet && lots[$0].remaining > 0 && !isExpired(lots[$0].expiresAt) }
            .sorted { Self.burnKey(lots[$0]) < Self.burnKey(lots[$1]) }
    }

    /// Rule: a debit draws in burn order as far as the lots go (a refund takes its purchase's
    /// own lot first). Returns the draws; the caller moves the balance.
    mutating func draw(_ amount: Int64, from wallet: Wallet, first: Int? = nil) -> [(lot: Int, amount: Int64)] {
        var order = drawable(wallet)
        if let first, let position = order.firstIndex(of: first) { order.insert(order.remove(at: position), at: 0) }
        var left = amount
        var draws: [(lot: Int, amount: Int64)] = []
        for lot in order where left > 0 {
            let taken = min(lots[lot].remaining, left)
            lots[lot].remaining -= taken
            draws.append((lot, taken))
            left -= taken
        }
        return draws
    }

    /// Rule: a credit repays the debt (a negative balance) first; only the rest becomes a lot.
    mutating func credit(_ amount: Int64, to wallet: Wallet, category: LotCategory, expiresAt: Int64? = nil) -> Int? {
        let lotAmount = max(0, amount - max(0, -balance(wallet)))
        balances[wallet] = balance(wallet) + amount
        guard lotAmount > 0 else { return nil }
        lots.append(ModelLot(id: lots.count, wallet: wallet, category: category, remaining: lotAmount, createdAt: now, expiresAt: expiresAt))
        return lots.count - 1
    }

    /// Rule: booking a lot's expiry takes its whole remainder out of the balance.
    mutating func bookExpiry(_ lot: Int) {
        balances[lots[lot].wallet] = balance(lots[lot].wallet) - lots[lot].remaining
        lots[lot].remaining = 0
    }

    /// Rule: a hold gives back what it does not keep: the debt is repaid first from the returned
    /// draws in burn order, the rest goes back to the lots it came from; but what would go back
    /// to a lot that has expired leaves the wallet (to `@expired`) at once, repaying nothing, and
    /// the lot keeps what it had until its own expiry is booked.
    mutating func resolveHold(_ index: Int, status: Hold.Status, captured: Int64?) {
        let hold = holds[index]
        var keep = captured ?? 0
        var debt = max(0, -balance(hold.wallet))
        balances[hold.wallet] = balance(hold.wallet) + hold.amount - keep
        for draw in hold.draws {
            let kept = min(keep, draw.amount)
            keep -= kept
            if isExpired(lots[draw.lot].expiresAt) {
                // Expired on the way back: it leaves the wallet with the release itself, and
                // repays nothing.
                balances[hold.wallet] = balance(hold.wallet) - (draw.amount - kept)
                continue
            }
            let repaid = min(debt, draw.amount - kept)
            debt -= repaid
            let back = draw.amount - kept - repaid
            guard back > 0 else { continue }
            lots[draw.lot].remaining += back
        }
        holds[index].status = status
        holds[index].captured = captured
    }

    /// Rule: the holds a sweep or a settlement releases as expired, soonest expiry first, then by id.
    func expiredOpenHolds(of wallet: Wallet?) -> [Int] {
        holds.indices.filter { holds[$0].status == .open && isExpired(holds[$0].expiresAt) && (wallet == nil || holds[$0].wallet == wallet) }
            // Hold ids are lowercase ASCII UUIDs: String order is their byte order.
            .sorted { (holds[$0].expiresAt, holds[$0].id) < (holds[$1].expiresAt, holds[$1].id) }
    }

    /// Rule: the lots a sweep or a settlement books as expired, soonest expiry first, then by id.
    func expiredLots(of wallet: Wallet?) -> [Int] {
        lots.indices.filter { lots[$0].remaining > 0 && isExpired(lots[$0].expiresAt) && (wallet == nil || lots[$0].wallet == wallet) }
            .sorted { (lots[$0].expiresAt ?? 0, $0) < (lots[$1].expiresAt ?? 0, $1) }
    }

    /// Rule: every debit first settles its wallet: its expired open holds are released as
    /// expired, then its expired lots with something left are booked.
    mutating func settle(_ wallet: Wallet) {
        for hold in expiredOpenHolds(of: wallet) { resolveHold(hold, status: .expired, captured: nil) }
        for lot in expiredLots(of: wallet) { bookExpiry(lot) }
    }

    /// Rule: spend, hold and a negative adjustment need the settled balance to cover them.
    func fundsRefusal(_ wallet: Wallet, _ amount: Int64) -> Answer? {
        balance(wallet) >= amount ? nil : .refused("error insufficient_funds balance=\(balance(wallet))")
    }

    // MARK: Idempotency

    /// A replay answers the first result; the same key for another request is refused.
    func replay(_ key: String, hash: String) -> Answer? {
        guard let use = keys[key] else { return nil }
        guard use.requestHash == hash else { return .refused("error idempotency_key_reused") }
        if let hold = use.hold { return .ok("hold \(holds[hold].status.rawValue) balance=\(use.balance) replayed") }
        return .ok("ok balance=\(use.balance) replayed")
    }

    // MARK: Operations

    mutating func grant(player: String, store: String, transactionID: String, product: String, quantity: Int64) -> Answer {
        let key = "purchase:\(store)|\(transactionID)"
        if let replayed = replay(key, hash: "\(player)|\(product)|\(quantity)") { return replayed }
        if reportedStates["\(store)/\(transactionID)"]?.refunded == true { return .refused("error purchase_invalid") }
        guard let entry = Self.products[product] else { return .refused("error unknown_product") }
        let wallet = Wallet(player: player, currency: entry.currency)
        let amount = entry.credits * quantity
        let lot = credit(amount, to: wallet, category: .paid)
        purchases["\(store)/\(transactionID)"] = Purchase(wallet: wallet, amount: amount, lot: lot)
        keys[key] = KeyUse(requestHash: "\(player)|\(product)|\(quantity)", balance: balance(wallet))
        return .ok("ok balance=\(balance(wallet))")
    }

    mutating func bonus(_ wallet: Wallet, amount: Int64, expiresAt: Int64?, key: String) -> Answer {
        let scoped = "bonus:\(wallet.player)|\(key)"
        let hash = "\(amount)|\(wallet.currency)|\(expiresAt.map(String.init) ?? "-")"
        if let replayed = replay(scoped, hash: hash) { return replayed }
        if let expiresAt, expiresAt <= now { return .refused("error invalid_request") }
        _ = credit(amount, to: wallet, category: .bonus, expiresAt: expiresAt)
        keys[scoped] = KeyUse(requestHash: hash, balance: balance(wallet))
        return .ok("ok balance=\(balance(wallet))")
    }

    mutating func spend(_ wallet: Wallet, amount: Int64, key: String) -> Answer {
        let scoped = "spend:\(wallet.player)|\(key)"
        let hash = "\(amount)|\(wallet.currency)"
        if let replayed = replay(scoped, hash: hash) { return replayed }
        settle(wallet)
        if let refusal = fundsRefusal(wallet, amount) { return refusal }
        _ = draw(amount, from: wallet)
        balances[wallet] = balance(wallet) - amount
        keys[scoped] = KeyUse(requestHash: hash, balance: balance(wallet))
        return .ok("ok balance=\(balance(wallet))")
    }

    /// Rule: a negative adjustment with `allowNegative` takes what the lots have and leaves the
    /// rest as debt; without it, it needs the funds. A positive one is a credit.
    mutating func adjust(_ wallet: Wallet, amount: Int64, allowNegative: Bool, key: String) -> Answer {
        let scoped = "adjustment:\(wallet.player)|\(key)"
        let hash = "\(amount)|\(wallet.currency)|\(allowNegative)"
        if let replayed = replay(scoped, hash: hash) { return replayed }
        if amount > 0 {
            _ = credit(amount, to: wallet, category: .adjustment)
        } else {
            settle(wallet)
            if !allowNegative, let refusal = fundsRefusal(wallet, -amount) { return refusal }
            _ = draw(-amount, from: wallet)
            balances[wallet] = balance(wallet) + amount
        }
        keys[scoped] = KeyUse(requestHash: hash, balance: balance(wallet))
        return .ok("ok balance=\(balance(wallet))")
    }

    mutating func createHold(_ wallet: Wallet, amount: Int64, seconds: Int64, key: String, storeHoldID: String?) -> Answer {
        let scoped = "hold:\(wallet.player)|\(key)"
        let hash = "\(amount)|\(wallet.currency)|\(seconds)"
        if let replayed = replay(scoped, hash: hash) { return replayed }
        settle(wallet)
        if let refusal = fundsRefusal(wallet, amount) { return refusal }
        let draws = draw(amount, from: wallet)
        balances[wallet] = balance(wallet) - amount
        let id = storeHoldID ?? "missing-hold-\(holds.count)"
        holds.append(ModelHold(id: id, wallet: wallet, amount: amount, status: .open, captured: nil, expiresAt: now + seconds * 1_000, draws: draws))
        keys[scoped] = KeyUse(requestHash: hash, balance: balance(wallet), hold: holds.count - 1)
        return .ok("hold open balance=\(balance(wallet))")
    }

    /// Rule: resolving a hold. A capture (of `amount`, or all) of an expired hold is refused, as is
    /// one larger than the hold; a release of an expired hold marks it expired. Once resolved,
    /// only the resolving key replays.
    mutating func resolve(holdID: String, capture: Bool, amount: Int64?, key: String) -> Answer {
        let scoped = "hold_resolution:\(holdID)|\(key)"
        let hash = capture ? "capture|\(amount.map(String.init) ?? "all")" : "release"
        if let replayed = replay(scoped, hash: hash) { return replayed }
        guard let index = holds.firstIndex(where: { $0.id == holdID }) else { return .refused("error not_found") }
        let hold = holds[index]
        guard hold.status == .open else { return .refused("error hold_\(hold.status.rawValue)") }
        let expired = isExpired(hold.expiresAt)
        if capture {
            if expired { return .refused("error hold_expired") }
            let captured = amount ?? hold.amount
            guard captured <= hold.amount else { return .refused("error capture_exceeds_hold") }
            resolveHold(index, status: .captured, captured: captured)
        } else {
            resolveHold(index, status: expired ? .expired : .released, captured: nil)
        }
        keys[scoped] = KeyUse(requestHash: hash, balance: balance(hold.wallet), hold: index)
        return .ok("hold \(holds[index].status.rawValue) balance=\(balance(hold.wallet))")
    }

    /// Rule: a refund claims `amount × share / 100000` less what the refunds since the last
    /// reversal claimed; `debt` takes it all (lots first, the purchase's own lot first),
    /// `floor` at most the balance. It settles the wallet first.
    mutating func refund(store: String, transactionID: String, share: Int64, policy: RefundPolicy) -> Answer {
        let scoped = "refund:\(store):\(share)|\(transactionID)"
        if let replayed = replay(scoped, hash: policy.rawValue) { return replayed }
        guard var purchase = purchases["\(store)/\(transactionID)"] else { return .refused("error not_found") }
        settle(purchase.wallet)
        let owed = purchase.amount * share / 100_000 - purchase.claimed
        guard owed > 0 else { return .refused("error already_refunded") }
        let taken = policy == .debt ? owed : max(0, min(owed, balance(purchase.wallet)))
        _ = draw(taken, from: purchase.wallet, first: purchase.lot)
        balances[purchase.wallet] = balance(purchase.wallet) - taken
        purchase.claimed += owed
        purchase.taken += taken
        refundCount += 1
        purchase.lastRefund = refundCount
        purchases["\(store)/\(transactionID)"] = purchase
        keys[scoped] = KeyUse(requestHash: policy.rawValue, balance: balance(purchase.wallet))
        return .ok("ok balance=\(balance(purchase.wallet))")
    }

    /// Rule: a reversal re-credits what the refunds since the last reversal took, once per refund.
    mutating func reverseRefund(store: String, transactionID: String) -> Answer {
        guard var purchase = purchases["\(store)/\(transactionID)"] else { return .refused("no_refund") }
        let scoped = "refund_reversal:\(store):\(purchase.lastRefund ?? 0)|\(transactionID)"
        if keys[scoped] != nil { return .refused("already_applied") }
        guard purchase.lastRefund != nil, purchase.claimed > 0 else { return .refused("no_refund") }
        _ = credit(purchase.taken, to: purchase.wallet, category: .paid)
        purchase.claimed = 0
        purchase.taken = 0
        purchases["\(store)/\(transactionID)"] = purchase
        keys[scoped] = KeyUse(requestHash: "reversal", balance: balance(purchase.wallet))
        return .ok("refund_reversed")
    }

    enum NotificationEffect: Equatable, CustomStringConvertible {
        case refund(share: Int64, policy: RefundPolicy)
        case reversal
        case consumption

        var description: String {
            switch self {
            case .refund(let share, let policy): "refund share=\(share) \(policy.rawValue)"
            case .reversal: "refund_reversal"
            case .consumption: "consumption_request"
            }
        }
    }

    /// Rule: notifications, as NotificationStorage applies them: one outcome per UUID (a UUID seen
    /// before answers its first outcome, whatever it carries now); a refund or reversal older than
    /// the report kept for its store transaction is `superseded`, otherwise it becomes the kept
    /// report (even when it then finds no purchase); errors become recorded outcomes.
    mutating func notify(uuid: String, store: String, transactionID: String, effect: NotificationEffect, reportedAt: Int64) -> Answer {
        if let outcome = notifications[uuid] { return .ok("notification \(outcome) replayed") }
        let stateKey = "\(store)/\(transactionID)"
        var outcome: String
        if effect != .consumption, let kept = reportedStates[stateKey], kept.reportedAt > reportedAt {
            outcome = "superseded"
        } else {
            if effect != .consumption {
                reportedStates[stateKey] = (effect != .reversal, reportedAt)
            }
            switch effect {
            case .refund(let share, let policy):
                outcome = notifiedRefund(store: store, transactionID: transactionID, share: share, policy: policy)
            case .reversal:
                var attempt = self
                let answer = attempt.reverseRefund(store: store, transactionID: transactionID)
                if case .ok = answer { self = attempt }
                outcome = answer.text
            case .consumption:
                outcome = consumption(stateKey)
            }
        }
        notifications[uuid] = outcome
        return .ok("notification \(outcome)")
    }

    /// A refund carried by a notification. `already_refunded` is caught inside the write, after
    /// the refund settled the wallet: the settlement stays.
    private mutating func notifiedRefund(store: String, transactionID: String, share: Int64, policy: RefundPolicy) -> String {
        var attempt = self
        let answer = attempt.refund(store: store, transactionID: transactionID, share: share, policy: policy)
        switch answer.text {
        case "error not_found":
            return "no_purchase"
        case "error idempotency_key_reused":
            return "already_applied"
        case "error already_refunded":
            self = attempt
            return "already_applied"
        default:
            self = attempt
            return answer.text.hasSuffix("replayed") ? "already_applied" : "refunded"
        }
    }

    /// Rule: the share of a purchase already spent: from its own lot, or (no lot) the balance.
    private func consumption(_ stateKey: String) -> String {
        guard let purchase = purchases[stateKey] else { return "no_purchase" }
        let remaining = purchase.lot.map { lots[$0].remaining } ?? balance(purchase.wallet)
        let share = purchase.amount > 0 ? (purchase.amount - min(max(remaining, 0), purchase.amount)) * 100_000 / purchase.amount : 0
        return "consumption_recorded share=\(share)"
    }

    mutating func expireLots(limit: Int) -> Answer {
        let due = expiredLots(of: nil).prefix(limit)
        for lot in due { bookExpiry(lot) }
        return .ok("count \(due.count)")
    }

    mutating func expireHolds(limit: Int) -> Answer {
        let due = expiredOpenHolds(of: nil).prefix(limit)
        for hold in due { resolveHold(hold, status: .expired, captured: nil) }
        return .ok("count \(due.count)")
    }

    // MARK: What the stores must show

    /// Rule: what `balances(playerID:)` answers. Settled: as a debit would see it now (expired
    /// holds returned, expired lots booked), `held` only open holds not expired. Not settled:
    /// the booked balance and every open hold.
    func shownBalance(_ wallet: Wallet, settled: Bool) -> (balance: Int64, held: Int64) {
        var view = self
        if settled { view.settle(wallet) }
        let held = view.holds.filter { $0.wallet == wallet && $0.status == .open }.reduce(Int64(0)) { $0 + $1.amount }
        return (view.balance(wallet), held)
    }

    /// Rule: what `lots(playerID:)` answers: every lot with something left, expired ones too.
    func shownLots(_ player: String) -> [String] {
        lots.filter { $0.wallet.player == player && $0.remaining > 0 }.map { lot in
            Self.lotLine(currency: lot.wallet.currency, category: lot.category, remaining: lot.remaining, expiresAt: lot.expiresAt.map(Self.format))
        }.sorted()
    }

    /// What `holds(playerID:)` answers: the open holds, then the 50 most recent resolved ones.
    func shownHolds(_ player: String) -> [String] {
        let mine = holds.filter { $0.wallet.player == player }
        let shown = mine.filter { $0.status == .open } + mine.filter { $0.status != .open }.suffix(50)
        return shown.map { Self.holdLine(id: $0.id, currency: $0.wallet.currency, amount: $0.amount, status: $0.status, captured: $0.captured) }.sorted()
    }

    static func lotLine(currency: String, category: LotCategory, remaining: Int64, expiresAt: String?) -> String {
        "lot \(currency) \(category.rawValue) \(remaining) expires=\(expiresAt ?? "never")"
    }

    static func holdLine(id: String, currency: String, amount: Int64, status: Hold.Status, captured: Int64?) -> String {
        "hold \(id.prefix(8)) \(currency) \(amount) \(status.rawValue) captured=\(captured.map(String.init) ?? "-")"
    }

    static func format(_ milliseconds: Int64) -> String {
        Timestamp.format(Date(timeIntervalSince1970: (Double(milliseconds) + 0.5) / 1_000))
    }
}
