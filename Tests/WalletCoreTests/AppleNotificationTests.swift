import Foundation
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

@Suite("App Store Server Notifications V2", .throttled)
struct AppleNotificationTests {
    static let authority = AppleTests.authority

    /// A ledger where p1 redeemed T1 (quantity 2: 10 credits).
    static func setUp(_ backend: TestBackend, policy: RefundPolicy = .debt) async throws -> (ApplePurchases, TestLedger, String) {
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        let configuration = try AppleConfiguration(bundleID: "com.example.game", extraRootsPEM: [authority.rootPEM], refundPolicy: policy)
        let purchases = ApplePurchases(configuration: configuration, ledger: ledger.store)
        let transaction = try authority.transaction("T1", quantity: 2)
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: transaction, actor: "t")
        return (purchases, ledger, transaction)
    }

    /// The transaction as Apple signs it in a REFUND notification: revoked, maybe partly.
    static func revoked(_ percentage: Int64? = nil) throws -> String {
        var changes: [String: Any] = ["revocationDate": AppleTestAuthority.milliseconds(Date()), "revocationReason": 0]
        if let percentage { changes["revocationPercentage"] = percentage }
        return try authority.transaction("T1", quantity: 2, changes: changes)
    }

    @Test("REFUND takes the credits back once; a re-delivered notification changes nothing", arguments: TestBackend.all)
    func refund(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await Self.setUp(backend)
        let notification = try Self.authority.notification("REFUND", uuid: "n-1", signedTransaction: Self.revoked())
        let outcome = try await purchases.handleNotification(signedPayload: notification)
        #expect(outcome.outcome.rawValue == "refunded" && !outcome.replayed && outcome.ledgerSeq == 2)
        #expect(try await ledger.balance("p1") == 0)
        let again = try await purchases.handleNotification(signedPayload: notification)
        #expect(again.replayed && again.outcome.rawValue == "refunded" && again.ledgerSeq == 2)
        let other = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", uuid: "n-2", signedTransaction: Self.revoked()))
        #expect(other.outcome.rawValue == "already_applied" && !other.replayed)
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.store.verify().transactions == 2)
    }

    @Test("a partial REFUND takes its revocationPercentage", arguments: TestBackend.all)
    func partialRefund(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await Self.setUp(backend)
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked(30_000)))
        #expect(outcome.outcome.rawValue == "refunded")
        #expect(try await ledger.balance("p1") == 7)
    }

    @Test("REFUND after the credits were spent: debt goes negative, floor stops at zero", arguments: TestBackend.all, [RefundPolicy.debt, .floor])
    func refundAfterSpending(_ backend: TestBackend, _ policy: RefundPolicy) async throws {
        let (purchases, ledger, _) = try await Self.setUp(backend, policy: policy)
        try await ledger.spend("p1", 8, key: "k1")
        _ = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked()))
        #expect(try await ledger.balance("p1") == (policy == .debt ? -8 : 0))
        let refund = try await ledger.store.history(HistoryQuery(playerID: "p1", kind: .refund)).transactions.first
        #expect(refund?.uncollected == (policy == .debt ? 0 : 8))
    }

    @Test("REFUND_REVERSED re-credits what the refund took, once", arguments: TestBackend.all)
    func refundReversed(backend: TestBackend) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(backend, policy: .floor)
        try await ledger.spend("p1", 6, key: "k1")
        _ = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked()))
        #expect(try await ledger.balance("p1") == 0)
        let reversal = try Self.authority.notification("REFUND_REVERSED", uuid: "r-1", signedTransaction: transaction)
        let outcome = try await purchases.handleNotification(signedPayload: reversal)
        #expect(outcome.outcome.rawValue == "refund_reversed")
        #expect(try await ledger.balance("p1") == 4, "the floor refund took 4, and 4 come back")
        #expect(try await purchases.handleNotification(signedPayload: reversal).replayed)
        let second = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND_REVERSED", uuid: "r-2", signedTransaction: transaction))
        #expect(second.outcome.rawValue == "already_applied")
        #expect(try await ledger.balance("p1") == 4)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("CONSUMPTION_REQUEST records the share of the purchase already spent", arguments: TestBackend.all)
    func consumption(backend: TestBackend) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(backend)
        try await ledger.spend("p1", 4, key: "k1")
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: transaction))
        #expect(outcome.outcome.rawValue == "consumption_recorded" && outcome.spentShareMillipercent == 40_000)
        #expect(try await ledger.balance("p1") == 6)
    }

    @Test("with lots the share is exact: the oldest purchase is spent first, a newer one stays whole, whatever the balance", arguments: TestBackend.all)
    func consumptionExact(backend: TestBackend) async throws {
        let (purchases, ledger, first) = try await Self.setUp(backend)
        let second = try Self.authority.transaction("T2")
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: second, actor: "t")
        try await ledger.spend("p1", 4, key: "k1")
        // The balance (11) still covers either purchase: only the lots know T1 paid for the spend.
        let older = try await purchases.handleNotification(signedPayload: Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: first))
        let newer = try await purchases.handleNotification(signedPayload: Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: second))
        #expect(older.spentShareMillipercent == 40_000 && newer.spentShareMillipercent == 0)
    }

    @Test("TEST and other types are recorded without a ledger change", arguments: TestBackend.all, ["TEST", "DID_CHANGE_RENEWAL_STATUS", "ONE_TIME_CHARGE"])
    func recordedOnly(_ backend: TestBackend, _ type: String) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(backend)
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification(type, signedTransaction: type == "TEST" ? nil : transaction))
        #expect(outcome.outcome.rawValue == "recorded" && outcome.ledgerSeq == nil)
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("a refund for a transaction the wallet never credited is recorded and answered", arguments: TestBackend.all)
    func neverCredited(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await Self.setUp(backend)
        let unknown = try Self.authority.transaction("T-unknown", changes: ["revocationDate": AppleTestAuthority.milliseconds(Date())])
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: unknown))
        #expect(outcome.outcome.rawValue == "no_purchase")
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("REFUND_REVERSED for a purchase never refunded is recorded as no_refund and changes nothing", arguments: TestBackend.all)
    func reversalWithoutRefund(backend: TestBackend) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(backend)
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND_REVERSED", signedTransaction: transaction))
        #expect(outcome.outcome.rawValue == "no_refund" && outcome.ledgerSeq == nil)
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("invalid notifications are refused and record nothing", arguments: TestBackend.all, ["signature", "bundle", "inner", "untrusted", "no-transaction", "sandbox"])
    func invalid(_ backend: TestBackend, _ kind: String) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(backend)
        let payload: String
        switch kind {
        case "signature":
            let good = try Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: Self.revoked())
            payload = String(good.dropLast(4)) + "AAAA"
        case "bundle": payload = try Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: Self.revoked(), bundleID: "com.other")
        case "inner": payload = try Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: String(transaction.dropLast(4)) + "AAAA")
        case "no-transaction": payload = try Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: nil)
        case "sandbox":
            let production = try Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: Self.revoked())
            let parts = production.split(separator: ".")
            var claims = try JSONSerialization.jsonObject(with: Base64URL.decode(parts[1])!) as! [String: Any]
            var data = claims["data"] as! [String: Any]
            data["environment"] = "Sandbox"
            claims["data"] = data
            payload = try Self.authority.sign(claims)
        default: payload = try AppleTestAuthority(name: "Other").notification("REFUND", uuid: "bad-1", signedTransaction: Self.revoked())
        }
        let error = await walletError { _ = try await purchases.handleNotification(signedPayload: payload) }
        #expect(error?.code == "purchase_invalid", "\(kind)")
        #expect(try await ledger.balance("p1") == 10)
        // Nothing was recorded: the same UUID, properly signed, still applies.
        let good = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", uuid: "bad-1", signedTransaction: Self.revoked()))
        #expect(good.outcome.rawValue == "refunded" && !good.replayed)
    }
}

/// Apple retries on its own schedule, hours apart: reports arrive in any order, and the end
/// state must match the latest one Apple signed.
@Suite("Refund reports in any order", .throttled)
struct RefundOrderTests {
    static let authority = AppleTests.authority
    static let hour: Int64 = 3_600_000

    func notification(_ type: String, at signedDate: Int64, transaction: String? = nil) throws -> String {
        try Self.authority.notification(type, signedTransaction: transaction ?? AppleNotificationTests.revoked(), signedDate: signedDate)
    }

    @Test("a REFUND before the purchase is redeemed: the transaction is never credited afterwards (422 refunded)", arguments: TestBackend.all)
    func refundBeforeRedeem(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        let purchases = ApplePurchases(configuration: try Self.authority.configuration(), ledger: ledger.store)
        let early = try await purchases.handleNotification(signedPayload: notification("REFUND", at: AppleTestAuthority.milliseconds(Date())))
        #expect(early.outcome.rawValue == "no_purchase")
        let error = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: try Self.authority.transaction("T1", quantity: 2), actor: "t") }
        #expect(error?.code == "purchase_invalid" && error?.detail.hasPrefix("refunded") == true)
        let grant = await walletError { try await ledger.grant("p1", "T1", product: "com.example.game.consume5credits") }
        #expect(grant?.code == "purchase_invalid")
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("REFUND_REVERSED delivered before its REFUND: the late, older REFUND is superseded and the credits stay", arguments: TestBackend.all)
    func reversalBeforeRefund(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await AppleNotificationTests.setUp(backend)
        let now = AppleTestAuthority.milliseconds(Date())
        let reversal = try await purchases.handleNotification(signedPayload: notification("REFUND_REVERSED", at: now))
        #expect(reversal.outcome.rawValue == "no_refund")
        let lateRefund = try await purchases.handleNotification(signedPayload: notification("REFUND", at: now - Self.hour))
        #expect(lateRefund.outcome.rawValue == "superseded")
        #expect(try await ledger.balance("p1") == 10)
        // A REFUND signed after the reversal is news, and applies.
        let newer = try await purchases.handleNotification(signedPayload: notification("REFUND", at: now + Self.hour))
        #expect(newer.outcome.rawValue == "refunded")
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("REFUND, then REFUND_REVERSED, then an old REFUND again: the end state is Apple's latest (reversed)", arguments: TestBackend.all)
    func refundReversedThenStaleRefund(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await AppleNotificationTests.setUp(backend)
        let now = AppleTestAuthority.milliseconds(Date())
        #expect(try await purchases.handleNotification(signedPayload: notification("REFUND", at: now)).outcome.rawValue == "refunded")
        #expect(try await purchases.handleNotification(signedPayload: notification("REFUND_REVERSED", at: now + Self.hour)).outcome.rawValue == "refund_reversed")
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await purchases.handleNotification(signedPayload: notification("REFUND", at: now - Self.hour)).outcome.rawValue == "superseded")
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a support refund of 50% followed by Apple's full REFUND takes the rest, not nothing", arguments: TestBackend.all)
    func partialThenFull(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await AppleNotificationTests.setUp(backend)
        let half = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 50, actor: "support"))
        #expect(half.balance == 5)
        let again = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 50, actor: "support"))
        #expect(again.replayed && again.transaction.seq == half.transaction.seq)
        let full = try await purchases.handleNotification(signedPayload: notification("REFUND", at: AppleTestAuthority.milliseconds(Date())))
        #expect(full.outcome.rawValue == "refunded")
        #expect(try await ledger.balance("p1") == 0)
        let smaller = await walletError { _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 30, actor: "support")) }
        #expect(smaller?.code == "already_refunded")
        // The reversal gives back everything the refunds took.
        #expect(try await purchases.handleNotification(signedPayload: notification("REFUND_REVERSED", at: AppleTestAuthority.milliseconds(Date()) + Self.hour)).outcome.rawValue == "refund_reversed")
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a refund whose share rounds to 0 credits takes nothing and does not block a later real refund", arguments: TestBackend.all)
    func zeroShare(backend: TestBackend) async throws {
        let (_, ledger, _) = try await AppleNotificationTests.setUp(backend)
        let tiny = await walletError { _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 5, actor: "support")) }
        #expect(tiny?.code == "already_refunded")
        let real = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", percentage: 100, actor: "support"))
        #expect(real.balance == 0 && real.transaction.amount == -10)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a revocationPercentage Apple will never make valid is recorded as invalid (200), not retried forever", arguments: TestBackend.all)
    func invalidShare(backend: TestBackend) async throws {
        let (purchases, ledger, _) = try await AppleNotificationTests.setUp(backend)
        for share: Int64 in [0, 100_001, -5] {
            let outcome = try await purchases.handleNotification(signedPayload: notification("REFUND", at: AppleTestAuthority.milliseconds(Date()), transaction: AppleNotificationTests.revoked(share)))
            #expect(outcome.outcome.rawValue == "invalid")
        }
        #expect(try await ledger.balance("p1") == 10)
    }

    @Test("a notification's transaction from a refused environment is refused even without data.environment", arguments: TestBackend.all)
    func innerEnvironment(backend: TestBackend) async throws {
        let (purchases, _, _) = try await AppleNotificationTests.setUp(backend)
        let sandbox = try Self.authority.transaction("T1", quantity: 2, changes: ["environment": "Sandbox", "revocationDate": AppleTestAuthority.milliseconds(Date())])
        let payload = try Self.authority.sign([
            "notificationType": "REFUND", "notificationUUID": "n-env", "signedDate": AppleTestAuthority.milliseconds(Date()),
            "data": ["bundleId": "com.example.game", "signedTransactionInfo": sandbox],
        ])
        let error = await walletError { _ = try await purchases.handleNotification(signedPayload: payload) }
        #expect(error?.code == "purchase_invalid")
    }
}
