import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Issue 28: a debit reads the lots it draws (through `lots_burn`, in burn order) and stops, so
/// its cost does not grow with the wallet; lot lists are paged. On both stores, with a clock that
/// goes back and forth so that dates and ids disagree, as they may after a clock change.
@Suite("Lot reads in burn order", .throttled)
struct LotReadTests {
    static func bonus(_ ledger: TestLedger, _ player: PlayerID, _ amount: Int64, key: String, expiresAt: String? = nil) async throws {
        _ = try await ledger.store.bonus(BonusRequest(playerID: player, amount: amount, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: key, actor: "game"))
    }

    static func accountID(_ ledger: TestLedger, _ player: String, _ currency: String = "credits") async throws -> Int64 {
        try await ledger.store.read { db in
            try db.integer("SELECT id FROM accounts WHERE owner = ? AND currency = ?", [.text("player:\(player)"), .text(currency)]) ?? 0
        }
    }

    /// A wallet of every kind of lot: purchases, support credits, expiring and lasting bonuses,
    /// some sharing an expiry, made while the clock moves back and forth, and two expired.
    static func mixedWallet(_ backend: TestBackend) async throws -> (TestLedger, TestClock) {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let times = ["2026-11-22T12:00:00Z", "2026-11-22T11:00:00Z", "2026-11-22T12:30:00Z", "2026-11-22T11:30:00Z"]
        for index in 0..<16 {
            clock.set(times[index % times.count])
            switch index % 4 {
            case 0: try await ledger.grant("p", "T\(index)")
            case 1: _ = try await ledger.store.adjust(AdjustRequest(playerID: "p", amount: 2, reasonCode: "goodwill", note: "n", idempotencyKey: "a\(index)", actor: "s"))
            case 2: try await bonus(ledger, "p", 3, key: "b\(index)", expiresAt: index % 8 == 2 ? "2026-12-01T00:00:00Z" : "2026-11-25T00:00:00Z")
            default: try await bonus(ledger, "p", 1, key: "b\(index)", expiresAt: index == 3 ? "2026-11-22T13:00:00Z" : nil)
            }
        }
        try await bonus(ledger, "p", 4, key: "soon", expiresAt: "2026-11-22T13:00:00Z")
        clock.set("2026-11-22T14:00:00Z")
        return (ledger, clock)
    }

    @Test("the store's burn order (lots_burn) is Core's: the same lots in the same order", arguments: TestBackend.all)
    func storeOrderIsCoreOrder(backend: TestBackend) async throws {
        let (ledger, _) = try await Self.mixedWallet(backend)
        let accountID = try await Self.accountID(ledger, "p")
        let read = try await ledger.store.read { db in try LotStorage.open(db, accountID: accountID) }
        #expect(read.count == 17)
        #expect(read.map(\.id) == LotRules.burnSorted(read).map(\.id))
        #expect(read.map(\.id) != read.map(\.id).sorted(), "dates and ids disagree here, so the order is not the ids'")
        for limit in [1, 4, 9] {
            let first = try await ledger.store.read { db in try LotStorage.first(db, accountID: accountID, limit: limit) }
            #expect(first == Array(read.prefix(limit)))
        }
    }

    @Test("a debit reads the expired lots and the first that cover it, and draws as if it had read them all", arguments: TestBackend.all)
    func debitReadsWhatItDraws(backend: TestBackend) async throws {
        let (ledger, clock) = try await Self.mixedWallet(backend)
        let accountID = try await Self.accountID(ledger, "p")
        let at = Timestamp.format(clock.now)
        let all = try await ledger.store.read { db in try LotStorage.open(db, accountID: accountID) }
        let balance = try await ledger.store.read { db in try db.integer("SELECT balance FROM accounts WHERE id = ?", [.integer(accountID)]) ?? 0 }
        for debit: Int64 in [1, 3, 7, 20, balance - 5, balance + 1] {
            let read = try await ledger.store.read { db in
                try LotStorage.forDebit(db, accountID: accountID, debit: debit, balanceAtMost: balance, at: at)
            }
            #expect(read == Array(all.prefix(read.count)), "a prefix of the burn order")
            #expect(read.filter { $0.isExpired(at: at) }.count == 2, "every expired lot is read, to be booked")
            if debit <= balance - 5 { #expect(LotRules.drawAvailable(debit, from: read, at: at) == LotRules.drawAvailable(debit, from: all, at: at)) }
            if debit <= 3 { #expect(read.count == LotStorage.debitReadFirst, "a small debit reads the first page only") }
        }
        let overdraft = try await ledger.store.read { db in
            try LotStorage.forDebit(db, accountID: accountID, debit: 1_000_000, balanceAtMost: balance, at: at)
        }
        #expect(overdraft.count == LotStorage.debitReadFirst, "a debit the balance cannot cover reads no further")
        let belowZero = try await ledger.store.read { db in
            try LotStorage.forDebit(db, accountID: accountID, debit: 1_000_000, balanceAtMost: nil, at: at)
        }
        #expect(belowZero == all, "a debit allowed below zero takes every lot")

        // The ledger's own spend, after that: the expired lots booked, the rest drawn in burn order.
        let spend = try await ledger.spend("p", 7, key: "s")
        let drawn = try await ledger.store.read { db in
            try db.all("SELECT lot_id, amount FROM lot_draws WHERE seq = ?", [.integer(spend.transaction.seq)]) { row in
                LotDraw(lotID: try row.integer(0), amount: try row.integer(1))
            }
        }
        let expected = LotRules.drawAvailable(7, from: all, at: at)
        #expect(Set(drawn.map(\.lotID)) == Set(expected.map(\.lotID)) && drawn.reduce(0) { $0 + $1.amount } == 7)
        #expect(spend.balance == balance - 5 - 7, "the 1 + 4 expired credits are booked, then 7 spent")
        let refused = await walletError { _ = try await ledger.spend("p", balance, key: "too-much") }
        #expect(refused == .insufficientFunds(balance: balance - 12, currency: "credits"))
        #expect(try await ledger.store.verify().ok)
    }

    @Test("whether the first lots decide a debit")
    func decides() {
        let at = "2026-11-22T12:00:00.000Z"
        func lot(_ id: Int64, _ remaining: Int64, expires: String? = nil) -> Lot {
            Lot(id: id, category: .bonus, amount: 10, remaining: remaining, createdAt: "2026-11-01T00:00:00.000Z", expiresAt: expires, sourceSeq: 1)
        }
        let expired = lot(1, 5, expires: "2026-11-22T11:00:00.000Z")
        #expect(!LotRules.decides([], debit: 1, balanceAtMost: 100, at: at))
        #expect(!LotRules.decides([expired], debit: 1, balanceAtMost: 0, at: at), "more expired lots may follow")
        #expect(LotRules.decides([expired, lot(2, 3)], debit: 3, balanceAtMost: 100, at: at))
        #expect(!LotRules.decides([expired, lot(2, 3)], debit: 4, balanceAtMost: 100, at: at))
        #expect(LotRules.decides([expired, lot(2, 3)], debit: 96, balanceAtMost: 100, at: at), "100 less the 5 expired cannot cover 96")
        #expect(!LotRules.decides([expired, lot(2, 3)], debit: 95, balanceAtMost: 100, at: at))
        #expect(!LotRules.decides([expired, lot(2, 3)], debit: 96, balanceAtMost: nil, at: at), "below zero takes every lot")
        #expect(!LotRules.decides([lot(2, 0), lot(3, 0)], debit: 1, balanceAtMost: 100, at: at), "empty lots give nothing")
    }

    @Test("lot lists are paged: the pages add up to the whole list, in its order, next only before another page", arguments: TestBackend.all)
    func pages(backend: TestBackend) async throws {
        let (ledger, _) = try await Self.mixedWallet(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "gems.5", credits: 5, currency: "gems"))
        try await ledger.grant("p", "G1", product: "gems.5")
        try await ledger.grant("p", "G2", product: "gems.5")
        let whole = try await ledger.store.lots(LotQuery(playerID: "p", limit: Limits.pageSizeMax))
        #expect(whole.lots.count == 19 && whole.next == nil)
        #expect(whole.lots.map(\.currency) == Array(repeating: "credits", count: 17) + ["gems", "gems"])
        #expect(whole.lots.suffix(4).prefix(2).allSatisfy(\.expired) && !whole.lots.prefix(15).contains(where: \.expired), "expired lots last in their currency")
        for limit in [1, 2, 3, 5, 18, 19] {
            var query = LotQuery(playerID: "p", limit: limit)
            var listed: [WalletLot] = []
            var pages = 0
            while true {
                let page = try await ledger.store.lots(query)
                pages += 1
                listed += page.lots
                #expect(page.lots.count == limit || page.next == nil)
                guard let next = page.next else { break }
                #expect(next == page.lots.last?.id)
                query.after = next
            }
            #expect(listed == whole.lots, "pages of \(limit)")
            #expect(pages == (19 + limit - 1) / limit)
        }
        #expect(try await ledger.store.allLots(playerID: "p") == whole.lots)
        try await ledger.grant("q", "Q1")
        let otherLot = try #require(try await ledger.store.lots(LotQuery(playerID: "q")).lots.first)
        for bad in [LotQuery(playerID: "p", after: otherLot.id), LotQuery(playerID: "p", after: 0), LotQuery(playerID: "p", limit: 0),
                    LotQuery(playerID: "p", limit: Limits.pageSizeMax + 1)] {
            let refused = await walletError { _ = try await ledger.store.lots(bad) }
            #expect(refused?.code == "invalid_request", "\(bad)")
        }
    }
}
