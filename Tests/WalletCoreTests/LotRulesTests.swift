import Testing
@testable import WalletCore
import WalletTestSupport

/// The lot rules alone: burn order, draws, debt repayment, expiry selection, capture splits.
@Suite("Lot rules", .throttled)
struct LotRulesTests {
    static let now = "2026-11-22T12:00:00.000Z"

    static func lot(_ id: Int64, _ category: LotCategory, _ remaining: Int64, created: String, expires: String? = nil) -> Lot {
        Lot(id: id, category: category, amount: remaining, remaining: remaining, createdAt: created, expiresAt: expires, sourceSeq: id)
    }

    static let lots = [
        lot(1, .paid, 5, created: "2026-11-01T00:00:00.000Z"),
        lot(2, .bonus, 3, created: "2026-11-02T00:00:00.000Z", expires: "2026-12-01T00:00:00.000Z"),
        lot(3, .adjustment, 4, created: "2026-11-03T00:00:00.000Z"),
        lot(4, .bonus, 2, created: "2026-11-04T00:00:00.000Z", expires: "2026-11-25T00:00:00.000Z"),
        lot(5, .paid, 6, created: "2026-10-01T00:00:00.000Z"),
        lot(6, .bonus, 7, created: "2026-11-05T00:00:00.000Z", expires: "2026-11-20T00:00:00.000Z"),
        lot(7, .opening, 1, created: "2026-09-01T00:00:00.000Z"),
        lot(8, .bonus, 0, created: "2026-11-06T00:00:00.000Z"),
    ]

    @Test("burn order: expiring soonest first, then free credits oldest first, purchases last oldest first; expired and empty lots never")
    func burnOrder() {
        #expect(LotRules.burnOrder(Self.lots, at: Self.now).map(\.id) == [4, 2, 7, 3, 5, 1])
        #expect(LotRules.spendable(Self.lots, at: Self.now) == 21)
        // At the very instant of its expiry a lot is gone.
        #expect(!LotRules.burnOrder(Self.lots, at: "2026-11-25T00:00:00.000Z").map(\.id).contains(4))
    }

    @Test("a debit draws in burn order and records its breakdown; more than the lots give is insufficient funds naming what they give")
    func draws() throws {
        #expect(try LotRules.draw(6, from: Self.lots, at: Self.now, currency: "credits") == [LotDraw(lotID: 4, amount: 2), LotDraw(lotID: 2, amount: 3), LotDraw(lotID: 7, amount: 1)])
        #expect(try LotRules.draw(21, from: Self.lots, at: Self.now, currency: "credits").reduce(0) { $0 + $1.amount } == 21)
        #expect(throws: WalletError.insufficientFunds(balance: 21, currency: "credits")) {
            try LotRules.draw(22, from: Self.lots, at: Self.now, currency: "credits")
        }
        // The expired lot 6 (7 credits) is never drawn, even though its expiry is not booked yet.
        #expect(try !LotRules.draw(21, from: Self.lots, at: Self.now, currency: "credits").contains { $0.lotID == 6 })
    }

    @Test("property: any debit the lots can give is drawn exactly, in burn order, never past a lot's remainder")
    func drawProperty() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let lots = (1...Int64.random(in: 1...8, using: &generator)).map { id in
                Self.lot(
                    id, LotCategory.allCases.randomElement(using: &generator) ?? .paid, Int64.random(in: 0...20, using: &generator),
                    created: "2026-11-\(String(format: "%02d", Int.random(in: 1...28, using: &generator)))T00:00:00.000Z",
                    expires: Bool.random(using: &generator) ? "2026-11-\(String(format: "%02d", Int.random(in: 1...30, using: &generator)))T00:00:00.000Z" : nil)
            }
            let available = LotRules.spendable(lots, at: Self.now)
            let amount = Int64.random(in: 1...max(1, available + 5), using: &generator)
            guard amount <= available else {
                #expect(throws: WalletError.self) { try LotRules.draw(amount, from: lots, at: Self.now, currency: "credits") }
                continue
            }
            let draws = try LotRules.draw(amount, from: lots, at: Self.now, currency: "credits")
            #expect(draws.reduce(0) { $0 + $1.amount } == amount)
            let order = LotRules.burnOrder(lots, at: Self.now).map(\.id)
            #expect(draws.map(\.lotID) == Array(order.prefix(draws.count)), "a prefix of the burn order")
            for draw in draws {
                let lot = try #require(lots.first { $0.id == draw.lotID })
                #expect(draw.amount > 0 && draw.amount <= lot.remaining && !lot.isExpired(at: Self.now))
            }
            // Every lot before the last one drawn is emptied.
            for draw in draws.dropLast() {
                #expect(draw.amount == lots.first { $0.id == draw.lotID }?.remaining)
            }
        }
    }

    @Test("as far as the lots go: a debit allowed below zero takes them all; a refund takes its purchase's lot first, then the burn order")
    func drawAvailable() {
        #expect(LotRules.drawAvailable(30, from: Self.lots, at: Self.now).reduce(0) { $0 + $1.amount } == 21)
        #expect(LotRules.drawAvailable(7, from: Self.lots, at: Self.now, firstFrom: 1) == [LotDraw(lotID: 1, amount: 5), LotDraw(lotID: 4, amount: 2)])
        // A purchase whose lot is spent, or expired, does not come first.
        #expect(LotRules.drawAvailable(2, from: Self.lots, at: Self.now, firstFrom: 6) == [LotDraw(lotID: 4, amount: 2)])
        #expect(LotRules.drawAvailable(2, from: Self.lots, at: Self.now, firstFrom: 99) == [LotDraw(lotID: 4, amount: 2)])
    }

    @Test("a credit repays a debt first; only the rest becomes a lot")
    func debtFirst() {
        #expect(LotRules.lotAmount(ofCredit: 5, balance: -3) == 2)
        #expect(LotRules.lotAmount(ofCredit: 5, balance: -8) == 0)
        #expect(LotRules.lotAmount(ofCredit: 5, balance: 4) == 5)
        // The deepest debt there is (a balance `LedgerRules.seal` allows) takes any credit, and
        // negating it does not trap.
        #expect(LotRules.lotAmount(ofCredit: 1_000_000_000, balance: .min) == 0)
        let returned = LotRules.planReturn([LotDraw(lotID: 1, amount: 3)], balance: .min)
        #expect(returned.repaid == 3 && returned.toLots.isEmpty)
    }

    @Test("the expiry sweep takes expired lots with something left, soonest first, bounded")
    func expirySweep() {
        let later = "2026-12-02T00:00:00.000Z"
        #expect(LotRules.expired(Self.lots, at: later, limit: 10).map(\.id) == [6, 4, 2])
        #expect(LotRules.expired(Self.lots, at: later, limit: 2).map(\.id) == [6, 4])
        #expect(LotRules.expired(Self.lots, at: Self.now, limit: 10).map(\.id) == [6])
    }

    @Test("a capture keeps the first draws and gives the rest back, purchase lots first; more than held is refused")
    func captureSplit() throws {
        let draws = [LotDraw(lotID: 4, amount: 2), LotDraw(lotID: 2, amount: 3), LotDraw(lotID: 1, amount: 5)]
        let partial = try LotRules.splitCapture(4, of: draws)
        #expect(partial.kept == [LotDraw(lotID: 4, amount: 2), LotDraw(lotID: 2, amount: 2)])
        #expect(partial.returned == [LotDraw(lotID: 2, amount: 1), LotDraw(lotID: 1, amount: 5)])
        #expect(try LotRules.splitCapture(10, of: draws).returned.isEmpty)
        #expect(try LotRules.splitCapture(0, of: draws).kept.isEmpty)
        #expect(throws: WalletError.self) { try LotRules.splitCapture(11, of: draws) }
        #expect(throws: WalletError.self) { try LotRules.splitCapture(-1, of: draws) }
    }

    @Test("credits a hold gives back repay a debt first, taken from the returned draws in burn order; only the rest goes back to lots")
    func returns() {
        let returned = [LotDraw(lotID: 4, amount: 2), LotDraw(lotID: 2, amount: 3), LotDraw(lotID: 1, amount: 5)]
        let free = LotRules.planReturn(returned, balance: 7)
        #expect(free.repaid == 0 && free.toLots == returned, "no debt: everything goes back")
        let owing = LotRules.planReturn(returned, balance: -4)
        #expect(owing.repaid == 4 && owing.toLots == [LotDraw(lotID: 2, amount: 1), LotDraw(lotID: 1, amount: 5)])
        let deep = LotRules.planReturn(returned, balance: -50)
        #expect(deep.repaid == 10 && deep.toLots.isEmpty, "a debt larger than the return takes it all")
        let exact = LotRules.planReturn(returned, balance: -10)
        #expect(exact.repaid == 10 && exact.toLots.isEmpty, "exactly the debt")
    }

    @Test("what would go back to a lot past its expiry is split off to expire; returns to live lots are not")
    func splitReturns() {
        // Lot 6 expired at 2026-11-20; lot 4 expires on the 25th.
        let back = [LotDraw(lotID: 6, amount: 2), LotDraw(lotID: 4, amount: 1)]
        let split = LotRules.splitReturns(back, lots: Self.lots, at: Self.now)
        #expect(split.live == [LotDraw(lotID: 4, amount: 1)] && split.expired == 2)
        let before = LotRules.splitReturns(back, lots: Self.lots, at: "2026-11-19T00:00:00.000Z")
        #expect(before.live == back && before.expired == 0)
    }

    @Test("the settled balance: expired lots' remainders out, expired holds' credits back (a debt repaid first, returns to expired lots out)")
    func settledBalance() {
        // Open lots 4, 2, 7, 3, 5, 1 hold 21; the expired lot 6 holds 7 more: the balance is 28.
        #expect(LotRules.settledBalance(28, lots: Self.lots, expiredHolds: [], at: Self.now) == 21)
        // An expired hold of 5 drawn from lot 6 (expired: its credits expire with it) and lot 1.
        let hold = (amount: Int64(5), draws: [LotDraw(lotID: 6, amount: 2), LotDraw(lotID: 1, amount: 3)])
        #expect(LotRules.settledBalance(28, lots: Self.lots, expiredHolds: [hold], at: Self.now) == 24, "3 back to lot 1; 2 expire with lot 6")
        #expect(LotRules.settledBalance(28, lots: Self.lots + Self.lots, expiredHolds: [hold], at: Self.now) == 24, "a lot named twice counts once")
        // In debt by 4 (after a refund while the credits were held): lot 6's 2 expired and repay
        // nothing; lot 1's 3 repay 3 of the debt.
        let empty = Self.lots.map { lot in Lot(id: lot.id, category: lot.category, amount: lot.amount, remaining: 0, createdAt: lot.createdAt, expiresAt: lot.expiresAt, sourceSeq: lot.sourceSeq) }
        #expect(LotRules.settledBalance(-4, lots: empty, expiredHolds: [hold], at: Self.now) == -1)
    }

    @Test("credits given back past the largest balance settle at Int64.max and say so, never trap; up to it they settle exactly")
    func overflowingSettlement() {
        // A wallet refilled to near the largest balance while 5 of its credits were held (lot 1's).
        let hold = (amount: Int64(5), draws: [LotDraw(lotID: 1, amount: 5)])
        let held = [Self.lot(1, .paid, 0, created: "2026-11-01T00:00:00.000Z")]
        let past = LotRules.settle(.max - 2, lots: held, expiredHolds: [hold], at: Self.now)
        #expect(past.overflows && past.balance == .max && past.holdReturns.count == 1)
        #expect(LotRules.settledBalance(.max - 2, lots: held, expiredHolds: [hold], at: Self.now) == .max, "a read shows the largest balance")
        let upTo = LotRules.settle(.max - 5, lots: held, expiredHolds: [hold], at: Self.now)
        #expect(!upTo.overflows && upTo.balance == .max && upTo.lots.map(\.remaining) == [5])
        // With 10 in a lot expired on the 20th, the same wallet settles 7 below the largest
        // balance: what expires is taken out before what comes back is added.
        let expiring = Self.lot(6, .bonus, 10, created: "2026-11-05T00:00:00.000Z", expires: "2026-11-20T00:00:00.000Z")
        let net = LotRules.settle(.max - 2, lots: held + [expiring], expiredHolds: [hold], at: Self.now)
        #expect(!net.overflows && net.balance == .max - 7 && net.expiredLots.map(\.id) == [6] && net.lots.map(\.remaining) == [5])
        // A ledger that breaks its own rules (expiring lots holding more than a balance near the
        // smallest) is read at the smallest balance, never trapped on.
        let broken = LotRules.settle(.min + 3, lots: [expiring], expiredHolds: [], at: Self.now)
        #expect(broken.balance == .min && !broken.overflows && broken.expiredLots.map(\.id) == [6])
    }

    @Test("property: a return adds up — what repays the debt and what goes back to lots is what came back, never more than the debt")
    func returnProperty() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let returned = (0..<Int.random(in: 0...5, using: &generator)).map { LotDraw(lotID: Int64($0), amount: Int64.random(in: 1...50, using: &generator)) }
            let balance = Int64.random(in: -200...200, using: &generator)
            let plan = LotRules.planReturn(returned, balance: balance)
            let total = returned.reduce(0) { $0 + $1.amount }
            #expect(plan.repaid + plan.toLots.reduce(0) { $0 + $1.amount } == total)
            #expect(plan.repaid == min(total, max(0, -balance)))
            #expect(plan.toLots.allSatisfy { back in back.amount > 0 && back.amount <= (returned.first { $0.lotID == back.lotID }?.amount ?? 0) })
        }
    }
}
