import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// Every write decided without a database: what `Decide` plans from a snapshot, and what it refuses.
@Suite("Decisions (Core, no database)", .throttled)
struct DecideTests {
    /// 2026-11-22T12:00:00.000Z.
    static let now = Date(timeIntervalSince1970: 1_795_348_800)
    static let at = Timestamp.format(now)

    static func lot(_ id: Int64, _ category: LotCategory, _ remaining: Int64, expires: String? = nil) -> Lot {
        Lot(id: id, category: category, amount: remaining, remaining: remaining, createdAt: "2026-11-0\(id % 9 + 1)T00:00:00.000Z", expiresAt: expires, sourceSeq: id)
    }

    static func wallet(balance: Int64, lots: [Lot], holds: [HeldCredits] = []) -> WalletSnapshot {
        WalletSnapshot(playerID: "p", currency: "credits", balance: balance, lots: lots, expiredHolds: holds, now: now)
    }

    static func hold(_ id: String, amount: Int64, expires: String, status: Hold.Status = .open) -> Hold {
        Hold(id: id, playerID: "p", currency: "credits", amount: amount, status: status, expiresAt: expires, holdSeq: 9, resolvedSeq: nil, captured: nil)
    }

    /// Paid 5 (lot 1), bonus 3 expiring in December (lot 2), bonus 7 expired on the 20th (lot 6).
    static let lots = [lot(1, .paid, 5), lot(2, .bonus, 3, expires: "2026-12-01T00:00:00.000Z"), lot(6, .bonus, 7, expires: "2026-11-20T00:00:00.000Z")]

    @Test("a spend settles first: the expired lot is booked to @expired, then the spend draws in burn order from what is left")
    func spendSettles() throws {
        let plan = try Decide.spend(SpendRequest(playerID: "p", amount: 4, idempotencyKey: "s", actor: "game"), wallet: Self.wallet(balance: 15, lots: Self.lots))
        let expiry = try #require(plan.settlement.expiry)
        #expect(expiry.lots.map(\.id) == [6] && expiry.ledger.playerAmount == -7)
        #expect(expiry.ledger.legs == [PlannedLeg(owner: .player("p"), amount: -7), PlannedLeg(owner: .system(.expired), amount: 7)])
        #expect(plan.spend.playerBalance == 8, "decided on the settled balance")
        #expect(plan.spend.draws == [LotDraw(lotID: 2, amount: 3), LotDraw(lotID: 1, amount: 1)])
        #expect(plan.spend.legs == [PlannedLeg(owner: .player("p"), amount: -4), PlannedLeg(owner: .system(.spend), amount: 4)])
    }

    @Test("a debit the settled balance cannot cover is refused with that balance, and nothing is planned")
    func refusedDebit() {
        let request = SpendRequest(playerID: "p", amount: 9, idempotencyKey: "s", actor: "game")
        #expect(throws: WalletError.insufficientFunds(balance: 8, currency: "credits")) {
            try Decide.spend(request, wallet: Self.wallet(balance: 15, lots: Self.lots))
        }
        let hold = HoldRequest(playerID: "p", amount: 9, expiresInSeconds: 60, idempotencyKey: "h", actor: "game")
        #expect(throws: WalletError.insufficientFunds(balance: 8, currency: "credits")) { try Decide.placeHold(hold, wallet: Self.wallet(balance: 15, lots: Self.lots)) }
    }

    @Test("a debit of a wallet whose expired holds would give back credits past the largest balance is refused before anything is planned")
    func settlementPastLargestBalance() throws {
        let lot = Self.lot(1, .paid, 0)
        let held = HeldCredits(hold: Self.hold("h", amount: 5, expires: "2026-11-21T00:00:00.000Z"), draws: [LotDraw(lotID: 1, amount: 5)], lots: [lot])
        let request = SpendRequest(playerID: "p", amount: 1, idempotencyKey: "s", actor: "game")
        #expect(throws: WalletError.invalidRequest("the balance of player:p would overflow")) {
            try Decide.spend(request, wallet: Self.wallet(balance: .max - 2, lots: [], holds: [held]))
        }
        #expect(throws: WalletError.invalidRequest("the balance of player:p would overflow")) {
            try Decide.settle(Self.wallet(balance: .max - 2, lots: [], holds: [held]), debiting: nil)
        }
        // Refused too where an expiring lot would bring the settled balance back in range: the
        // release is booked before the expiry, and its balance would pass the largest.
        let expiring = Self.lot(6, .bonus, 10, expires: "2026-11-20T00:00:00.000Z")
        #expect(throws: WalletError.invalidRequest("the balance of player:p would overflow")) {
            try Decide.settle(Self.wallet(balance: .max - 2, lots: [expiring], holds: [held]), debiting: nil)
        }
        // Exactly up to it, the hold's 5 come back and the spend draws from them.
        let plan = try Decide.spend(request, wallet: Self.wallet(balance: .max - 5, lots: [], holds: [held]))
        #expect(plan.settlement.releases.count == 1 && plan.spend.playerBalance == .max && plan.spend.draws == [LotDraw(lotID: 1, amount: 1)])
    }

    @Test("a debit whose funds check passes but whose lots hold less than the balance is refused as a corrupt ledger, never drawn short")
    func lotsShortOfBalance() throws {
        let wallet = Self.wallet(balance: 10, lots: [Self.lot(1, .paid, 4)])
        let spend = SpendRequest(playerID: "p", amount: 6, idempotencyKey: "s", actor: "game")
        #expect(throws: WalletError.self) { try Decide.spend(spend, wallet: wallet) }
        do {
            _ = try Decide.spend(spend, wallet: wallet)
        } catch {
            #expect(error.code == "ledger_corrupt")
        }
        // Allowed below zero, a support debit takes what the lots have and leaves the rest as debt.
        let debit = AdjustRequest(playerID: "p", amount: -6, reasonCode: "fraud", note: "n", idempotencyKey: "a", allowNegative: true, actor: "support")
        #expect(try Decide.adjust(debit, wallet: wallet, walletFull: false).adjustment.draws == [LotDraw(lotID: 1, amount: 4)])
    }

    @Test("a hold resolves once: resolved ones answer hold_<status>, an expired one cannot be captured, a capture above the hold is refused")
    func holdStateMachine() throws {
        let draws = [LotDraw(lotID: 2, amount: 3), LotDraw(lotID: 1, amount: 2)]
        let live = HeldCredits(hold: Self.hold("h", amount: 5, expires: "2026-11-23T00:00:00.000Z"), draws: draws, lots: Self.lots)
        func resolve(_ held: HeldCredits, _ action: HoldResolution.Action) throws(WalletError) -> HoldResolutionPlan {
            try Decide.resolveHold(HoldResolution(holdID: held.hold.id, action: action, idempotencyKey: "k", actor: "game"), held: held, balance: 8, now: Self.now)
        }
        let captured = try resolve(live, .capture(amount: 4))
        #expect(captured.hold.status == .captured && captured.hold.captured == 4)
        #expect(captured.ledger.draft.kind == .capture && captured.ledger.draws == [LotDraw(lotID: 1, amount: -1)], "the rest goes back to the lot it came from")
        #expect(captured.ledger.legs.reduce(0) { $0 + $1.amount } == 0)
        #expect(throws: WalletError.captureExceedsHold("the hold holds 5 credits; a capture of 6 is more")) { try resolve(live, .capture(amount: 6)) }
        var done = live
        done.hold.status = .released
        #expect((try? resolve(done, .release)) == nil)
        #expect(throws: WalletError.self) { try resolve(done, .release) }
        do {
            _ = try resolve(done, .capture(amount: nil))
            Issue.record("a released hold was captured")
        } catch {
            #expect(error.code == "hold_released")
        }
        var lapsed = live
        lapsed.hold.expiresAt = "2026-11-22T11:00:00.000Z"
        do {
            _ = try resolve(lapsed, .capture(amount: nil))
            Issue.record("an expired hold was captured")
        } catch {
            #expect(error.code == "hold_expired")
        }
        #expect(try resolve(lapsed, .release).hold.status == .expired, "a release of a lapsed hold books it expired")
    }

    @Test("a refund takes the purchase's own lot first; a reversal needs a refund to reverse")
    func refundAndReversal() throws {
        var purchase = LedgerTransaction(draftOf: .purchase, playerID: "p", currency: "credits", amount: 5, actor: "apple")
        purchase.seq = 1
        purchase.store = "apple"
        purchase.storeTransactionID = "T1"
        let settled = Self.wallet(balance: 8, lots: Array(Self.lots.prefix(2)))
        let request = RefundRequest(store: "apple", storeTransactionID: "T1", actor: "apple")
        let plan = try Decide.refund(request, of: purchase, corrections: Corrections(), settled: settled)
        #expect(plan.draws == [LotDraw(lotID: 1, amount: 5)] && plan.draft.refundOfSeq == 1 && plan.playerAmount == -5)
        #expect(throws: WalletError.self) { try Decide.reverseRefund(of: purchase, corrections: Corrections(), balance: 3, actor: "apple") }
        let reversal = try Decide.reverseRefund(of: purchase, corrections: Corrections(claimed: 5, taken: 5, lastRefundSeq: 2), balance: -2, actor: "apple")
        #expect(reversal.playerAmount == 5 && reversal.lot == NewLot(category: .paid, amount: 3, expiresAt: nil), "a debt of 2 is repaid first")
    }

    @Test("a free credit to a full wallet is refused unless it only repays a debt; a purchase is never refused for it")
    func room() throws {
        let full = WalletSnapshot(playerID: "p", currency: "credits", balance: Limits.openLotsPerWalletMax, lots: [], now: Self.now)
        let bonus = BonusRequest(playerID: "p", amount: 1, reasonCode: "event", idempotencyKey: "b", actor: "game")
        #expect(throws: WalletError.self) { try Decide.bonus(bonus, wallet: full, walletFull: true) }
        #expect(try Decide.bonus(bonus, wallet: full, walletFull: false).lot?.amount == 1)
        var owing = full
        owing.balance = -3
        #expect(try Decide.bonus(bonus, wallet: owing, walletFull: true).lot == nil, "under the limit by its balance: no count needed, and all of it repays")
    }

    /// Random wallets of lots and expired holds, settled and then debited: the plans move exactly
    /// what the decision says, never draw more than a lot holds, and balance to zero.
    @Test("property: settling and debiting any wallet keeps every sum", arguments: 0..<200)
    func settleProperty(seed: Int) throws {
        var random = SeededRandom(seed: UInt64(seed) &+ 77)
        let expiries = [nil, "2026-11-20T00:00:00.000Z", "2026-11-22T12:00:00.000Z", "2026-12-01T00:00:00.000Z"]
        var lots: [Lot] = []
        for id in 1...Int64.random(in: 1...8, using: &random) {
            let category = LotCategory.allCases.randomElement(using: &random) ?? .paid
            lots.append(Self.lot(id, category, Int64.random(in: 0...20, using: &random), expires: category == .bonus ? expiries.randomElement(using: &random) ?? nil : nil))
        }
        var holds: [HeldCredits] = []
        for index in 0..<Int.random(in: 0...2, using: &random) {
            let drawn = lots.shuffled(using: &random).prefix(2).map { LotDraw(lotID: $0.id, amount: Int64.random(in: 1...4, using: &random)) }
            let amount = drawn.reduce(0) { $0 + $1.amount }
            holds.append(HeldCredits(hold: Self.hold("h\(index)", amount: amount, expires: "2026-11-21T00:00:00.000Z"), draws: drawn, lots: lots))
        }
        let balance = lots.reduce(0) { $0 + $1.remaining } - Int64.random(in: 0...6, using: &random)
        // As a store loads it: the wallet's lots with something left; the holds' lots as they are.
        let wallet = Self.wallet(balance: balance, lots: lots.filter { $0.remaining > 0 }, holds: holds)
        let settlement = try Decide.settle(wallet, debiting: nil)
        let plans = settlement.releases.map(\.ledger) + (settlement.expiry.map { [$0.ledger] } ?? [])
        #expect(balance + plans.reduce(0) { $0 + $1.playerAmount } == settlement.wallet.balance, "the plans move the balance to the settled one")
        #expect(settlement.wallet.balance == LotRules.settledBalance(balance, lots: lots + holds.flatMap(\.lots), expiredHolds: holds.map { ($0.hold.amount, $0.draws) }, at: Self.at))
        var running = balance
        for plan in plans {
            #expect(plan.legs.reduce(0) { $0 + $1.amount } == 0, "\(plan.draft.kind) balances")
            #expect(plan.playerBalance == running, "each plan is decided on the balance the one before left")
            running += plan.playerAmount
        }
        #expect(settlement.wallet.lots.allSatisfy { !$0.isExpired(at: Self.at) && $0.remaining > 0 }, "no expired or empty lot is left to draw from")
        let spendable = settlement.wallet.lots.reduce(0) { $0 + $1.remaining }
        let amount = Int64.random(in: 1...30, using: &random)
        let request = SpendRequest(playerID: "p", amount: amount, idempotencyKey: "s", actor: "game")
        if settlement.wallet.balance >= amount, spendable >= amount {
            let spend = try Decide.spend(request, wallet: wallet).spend
            #expect(spend.draws.reduce(0) { $0 + $1.amount } == amount)
            let remaining = Dictionary(settlement.wallet.lots.map { ($0.id, $0.remaining) }, uniquingKeysWith: { first, _ in first })
            #expect(spend.draws.allSatisfy { $0.amount > 0 && $0.amount <= remaining[$0.lotID] ?? 0 }, "a draw never takes more than its lot holds")
        } else if settlement.wallet.balance < amount {
            #expect(throws: WalletError.insufficientFunds(balance: settlement.wallet.balance, currency: "credits")) { try Decide.spend(request, wallet: wallet) }
        }
    }
}
