import Foundation

/// One void a store reported of a purchase (Google Play: one entry of its Voided Purchases API),
/// named as the store names it. A purchase of several units may be voided unit by unit, and a
/// store keeps its list for a while only (Google: 30 days), so the ledger records each void it
/// applied (`store_voids`) and adds them up itself.
public struct StoreVoid: Sendable, Equatable {
    /// Names this void among the purchase's (Google: its order id and voided time): reported
    /// again, it records nothing and moves nothing.
    public var voidID: String
    /// The units it voided; nil for the whole purchase.
    public var units: Int64?

    public init(voidID: String, units: Int64?) {
        self.voidID = voidID
        self.units = units
    }

    /// The most voids one notification carries: more than a purchase's units (`Limits.quantityMax`),
    /// so that a store listing a full void beside every unit's still fits.
    public static let perNotificationMax = 2 * Int(Limits.quantityMax)

    package func validate() throws(WalletError) {
        try Validate.asciiIdentifier(voidID, field: "void id")
        if let units, !(1...Limits.quantityMax).contains(units) {
            throw .invalidRequest("a void takes 1 to \(Limits.quantityMax) units")
        }
    }
}

/// How voids add up to a refund of a purchase: the rule, once, for every store that voids by units.
public enum StoreVoids {
    /// What voids reported for a purchase do, given those the ledger recorded for it before.
    package struct Decision: Sendable, Equatable {
        /// The reported voids not recorded before (each once): the write records them with the refund.
        package var new: [StoreVoid]
        /// The share of the purchase all its voids take back in all, in thousandths of a percent;
        /// nil when nothing is new, so nothing moves.
        package var share: Int64?
    }

    /// Decides `reported` against `recorded` for a purchase of `quantity` units crediting `amount`
    /// (nil: the wallet never credited it, so nothing is recorded and the whole is void, which
    /// keeps the purchase from crediting later). Voids seen before, or twice in one report, count once.
    package static func decide(reported: [StoreVoid], recorded: [StoreVoid], purchase: (quantity: Int64, amount: Int64)?) -> Decision {
        guard let purchase else { return Decision(new: [], share: Limits.refundShareMax) }
        var seen = Set(recorded.map { Array($0.voidID.utf8) })
        var new: [StoreVoid] = []
        for void in reported where seen.insert(Array(void.voidID.utf8)).inserted {
            new.append(void)
        }
        guard !new.isEmpty else { return Decision(new: [], share: nil) }
        let full = (recorded + new).contains { $0.units == nil }
        let share = share(
            recordedUnits: units(recorded, quantity: purchase.quantity), newUnits: units(new, quantity: purchase.quantity), quantity: purchase.quantity, full: full,
            amount: purchase.amount)
        return Decision(new: new, share: share)
    }

    /// The units `voids` take, added up without overflow: at most `quantity`.
    private static func units(_ voids: [StoreVoid], quantity: Int64) -> Int64 {
        voids.reduce(0) { total, void in min(total + min(max(void.units ?? quantity, 0), quantity), quantity) }
    }

    /// The share of a purchase of `quantity` units crediting `amount` that its voids take back in
    /// all, in thousandths of a percent: the whole when one is `full` or the units reach the
    /// quantity, else the units voided before and now added up. The ledger takes
    /// `amount × share / 100000` (rounded down): the share is the smallest that takes the voided
    /// units' credits exactly, or, where thousandths of a percent cannot say it exactly (credits ×
    /// quantity above 100,000), the largest that takes no more than they credited.
    public static func share(recordedUnits: Int64, newUnits: Int64, quantity: Int64, full: Bool, amount: Int64?) -> Int64 {
        guard quantity >= 1, !full else { return Limits.refundShareMax }
        let taken = min(max(recordedUnits, 0), quantity) + min(max(newUnits, 0), quantity)
        guard taken < quantity else { return Limits.refundShareMax }
        var share = (taken * Limits.refundShareMax + quantity - 1) / quantity
        if let amount, amount >= quantity, amount.multipliedReportingOverflow(by: share).overflow == false,
            amount * share / Limits.refundShareMax > amount / quantity * taken
        {
            share -= 1
        }
        return share
    }
}
