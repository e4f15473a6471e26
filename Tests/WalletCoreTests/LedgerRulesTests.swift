import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// The ledger rules on their own, with no store: what any store that applies them must get.
@Suite("Ledger rules, without a database", .throttled)
struct LedgerRulesTests {
    static let purchase: LedgerTransaction = {
        var purchase = LedgerTransaction(draftOf: .purchase, playerID: "p1", currency: "credits", amount: 15, actor: "t")
        purchase.seq = 7
        return purchase
    }()

    @Test("a debit may take a balance to zero, not below; a debt allows no debit")
    func funds() throws {
        try LedgerRules.requireFunds(balance: 5, debit: 5, currency: "credits")
        #expect(throws: WalletError.insufficientFunds(balance: 4, currency: "credits")) { try LedgerRules.requireFunds(balance: 4, debit: 5, currency: "credits") }
        #expect(throws: WalletError.self) { try LedgerRules.requireFunds(balance: -2, debit: 1, currency: "credits") }
    }

    @Test("refunds claim their share, rounded down, minus what earlier refunds claimed; floor leaves the rest uncollected")
    func refunds() throws {
        func refund(_ share: Int64, _ policy: RefundPolicy, corrections: Corrections = Corrections(), balance: Int64) throws -> (owed: Int64, taken: Int64) {
            let request = RefundRequest(store: "apple", storeTransactionID: "T1", shareMillipercent: share, policy: policy, actor: "t")
            return try LedgerRules.refund(request, of: Self.purchase, corrections: corrections, playerBalance: balance)
        }
        #expect(try refund(100_000, .debt, balance: 3) == (15, 15))
        #expect(try refund(100_000, .floor, balance: 3) == (15, 3))
        #expect(try refund(33_333, .debt, balance: 15) == (4, 4), "15 × 33.333% rounds down to 4")
        var half = Corrections()
        half.add(seq: 8, kind: .refund, amount: -7, uncollected: 0)
        #expect(try refund(100_000, .debt, corrections: half, balance: 20) == (8, 8), "a full refund after half takes the rest")
        #expect(throws: WalletError.self) { try refund(40_000, .debt, corrections: half, balance: 20) }
        // A refund whose share rounds to nothing claims nothing, and blocks no later refund.
        #expect(throws: WalletError.self) { try refund(1, .debt, balance: 20) }
        half.add(seq: 9, kind: .refundReversal, amount: 7, uncollected: 0)
        #expect(half.claimed == 0 && half.taken == 0 && half.lastRefundSeq == 8)
        #expect(try refund(100_000, .debt, corrections: half, balance: 20) == (15, 15))
    }

    @Test("sealing chains the draft after the head, orders postings by bytes, and refuses an overflow")
    func seal() throws {
        let draft = LedgerTransaction(draftOf: .spend, playerID: "p1", currency: "credits", amount: -3, actor: "t")
        let legs = [
            LedgerRules.Leg(owner: "player:p1", currency: "credits", balance: 10, amount: -3),
            LedgerRules.Leg(owner: "@spend", currency: "credits", balance: 100, amount: 3),
        ]
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let (transaction, balancesAfter) = try LedgerRules.seal(draft, legs: legs, head: (41, String(repeating: "a", count: 64)), id: "id-42", now: now)
        #expect(transaction.seq == 42 && transaction.id == "id-42" && transaction.prevHash == String(repeating: "a", count: 64))
        #expect(balancesAfter == [7, 103])
        #expect(transaction.postings.map(\.account) == ["@spend", "player:p1"])
        #expect(transaction.hash == HashChain.hash(of: transaction, previous: transaction.prevHash))
        let again = try LedgerRules.seal(draft, legs: legs, head: (41, String(repeating: "a", count: 64)), id: "id-42", now: now)
        #expect(again.transaction == transaction, "the same inputs seal the same transaction")
        var full = legs
        full[1].balance = .max
        #expect(throws: WalletError.self) { try LedgerRules.seal(draft, legs: full, head: (41, ""), id: "x", now: now) }
        // Legs that do not balance, or do not start with the player's, are refused.
        var unbalanced = legs
        unbalanced[1].amount = 4
        #expect(throws: WalletError.self) { try LedgerRules.seal(draft, legs: unbalanced, head: (41, ""), id: "x", now: now) }
        #expect(throws: WalletError.self) { try LedgerRules.seal(draft, legs: legs.reversed(), head: (41, ""), id: "x", now: now) }
    }

    @Test("the hash covers the fields in the order DESIGN.md fixes: a transaction hashes to the value an independent encoder computed")
    func canonicalHashIsPinned() throws {
        let transaction = LedgerTransaction(
            seq: 7, id: "00000000-0000-4000-8000-000000000007", kind: .purchase, playerID: "p1", currency: "credits", amount: 5, actor: "t",
            createdAt: "2026-01-02T03:04:05.678Z", idempotencyKey: nil, store: "apple", storeTransactionID: "T1",
            productID: "com.example.consume5credits", quantity: 1, reasonCode: nil, note: nil, ticket: nil, refundOfSeq: nil, uncollected: 0,
            metadata: Metadata(canonicalText: #"{"a":1}"#), prevHash: "", hash: "",
            postings: [
                Posting(account: "@store:apple", currency: "credits", amount: -5, balanceAfter: -5),
                Posting(account: "player:p1", currency: "credits", amount: 5, balanceAfter: 5),
            ])
        // Computed by a separate Python encoder of the same canonical bytes (length-prefixed text,
        // tagged big-endian integers, 0 for absent), so a change of field order cannot pass.
        #expect(HashChain.hash(of: transaction, previous: HashChain.genesis) == "aef71cd0fb0d61ef83ddb372d1b7060585251fe36a8f9743687670344b8f1dfe")
    }

    @Test("one description of the transaction's fields: every export names each field once, and each field's type matches its value")
    func transactionFieldsAreDescribedOnce() {
        let exported = ExportColumn.all.compactMap { column -> TransactionField? in
            if case .transaction(let field) = column { return field }
            return nil
        }
        #expect(exported.sorted { $0.rawValue < $1.rawValue } == TransactionField.allCases)
        #expect(Set(ExportColumn.names).count == ExportColumn.all.count)
        var transaction = Self.purchase
        (transaction.quantity, transaction.refundOfSeq) = (1, 2)
        for field in TransactionField.allCases {
            if case .integer = field.value(of: transaction) {
                #expect(field.isInteger, "\(field)")
            } else {
                #expect(!field.isInteger, "\(field)")
            }
        }
        #expect(TransactionField.allCases.filter { !$0.isHashed } == [.prevHash, .hash])
    }

    @Test("a volume report's totals and breakage stop at Int64.max when its days sum past it, never wrap; sums just under it stay exact")
    func volumeTotalsClamp() {
        func day(_ date: String, _ kind: TransactionKind, _ currency: String = "credits", count: Int64, amount: Int64) -> DailyVolume {
            DailyVolume(day: date, kind: kind, currency: currency, count: count, amount: amount)
        }
        let report = VolumeReport(
            days: [
                day("2026-11-01", .purchase, count: .max - 1, amount: .max - 1),
                day("2026-11-02", .purchase, count: 1, amount: 1),
                day("2026-11-03", .purchase, count: 1, amount: 1),
                day("2026-11-01", .expiry, count: 1, amount: .max),
                day("2026-11-02", .expiry, count: 1, amount: .max),
                day("2026-11-01", .expiry, "gems", count: 1, amount: .max - 1),
                day("2026-11-02", .expiry, "gems", count: 1, amount: 1),
                day("2026-11-01", .expiry, "stars", count: 1, amount: .max - 2),
                day("2026-11-02", .expiry, "stars", count: 1, amount: 1),
                day("2026-11-01", .spend, count: 2, amount: 7),
            ], debt: [:])
        #expect(
            report.totals == [
                VolumeTotal(kind: .expiry, currency: "credits", count: 2, amount: .max),
                VolumeTotal(kind: .expiry, currency: "gems", count: 2, amount: .max),
                VolumeTotal(kind: .expiry, currency: "stars", count: 2, amount: .max - 1),
                VolumeTotal(kind: .purchase, currency: "credits", count: .max, amount: .max),
                VolumeTotal(kind: .spend, currency: "credits", count: 2, amount: 7),
            ])
        #expect(report.breakage == ["credits": .max, "gems": .max, "stars": .max - 1])
    }
}
