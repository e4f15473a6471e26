import Testing
@testable import WalletCore

/// The lot rules alone: burn order, draws, debt repayment, expiry selection, capture splits.
@Suite("Lot rules")
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
}
