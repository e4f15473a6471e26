import Foundation
import Testing
import WalletTestSupport
@testable import WalletCore

@Suite("App Store Server Notifications V2")
struct AppleNotificationTests {
    static let authority = AppleTests.authority

    /// A ledger where p1 redeemed T1 (quantity 2: 10 credits).
    static func setUp(policy: RefundPolicy = .debt) async throws -> (ApplePurchases, TestLedger, String) {
        let ledger = try TestLedger()
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

    @Test("REFUND takes the credits back once; a re-delivered notification changes nothing")
    func refund() async throws {
        let (purchases, ledger, _) = try await Self.setUp()
        let notification = try Self.authority.notification("REFUND", uuid: "n-1", signedTransaction: Self.revoked())
        let outcome = try await purchases.handleNotification(signedPayload: notification)
        #expect(outcome.outcome == "refunded" && !outcome.replayed && outcome.ledgerSeq == 2)
        #expect(try await ledger.balance("p1") == 0)
        let again = try await purchases.handleNotification(signedPayload: notification)
        #expect(again.replayed && again.outcome == "refunded" && again.ledgerSeq == 2)
        let other = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", uuid: "n-2", signedTransaction: Self.revoked()))
        #expect(other.outcome == "already_applied" && !other.replayed)
        #expect(try await ledger.balance("p1") == 0)
        #expect(try await ledger.store.verify().transactions == 2)
    }

    @Test("a partial REFUND takes its revocationPercentage")
    func partialRefund() async throws {
        let (purchases, ledger, _) = try await Self.setUp()
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked(30_000)))
        #expect(outcome.outcome == "refunded")
        #expect(try await ledger.balance("p1") == 7)
    }

    @Test("REFUND after the credits were spent: debt goes negative, floor stops at zero", arguments: [RefundPolicy.debt, .floor])
    func refundAfterSpending(_ policy: RefundPolicy) async throws {
        let (purchases, ledger, _) = try await Self.setUp(policy: policy)
        try await ledger.spend("p1", 8, key: "k1")
        _ = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked()))
        #expect(try await ledger.balance("p1") == (policy == .debt ? -8 : 0))
        let refund = try await ledger.store.history(HistoryQuery(playerID: "p1", kind: .refund)).transactions.first
        #expect(refund?.uncollected == (policy == .debt ? 0 : 8))
    }

    @Test("REFUND_REVERSED re-credits what the refund took, once")
    func refundReversed() async throws {
        let (purchases, ledger, transaction) = try await Self.setUp(policy: .floor)
        try await ledger.spend("p1", 6, key: "k1")
        _ = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: Self.revoked()))
        #expect(try await ledger.balance("p1") == 0)
        let reversal = try Self.authority.notification("REFUND_REVERSED", uuid: "r-1", signedTransaction: transaction)
        let outcome = try await purchases.handleNotification(signedPayload: reversal)
        #expect(outcome.outcome == "refund_reversed")
        #expect(try await ledger.balance("p1") == 4, "the floor refund took 4, and 4 come back")
        #expect(try await purchases.handleNotification(signedPayload: reversal).replayed)
        let second = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND_REVERSED", uuid: "r-2", signedTransaction: transaction))
        #expect(second.outcome == "already_applied")
        #expect(try await ledger.balance("p1") == 4)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("CONSUMPTION_REQUEST records the share of the purchase already spent")
    func consumption() async throws {
        let (purchases, ledger, transaction) = try await Self.setUp()
        try await ledger.spend("p1", 4, key: "k1")
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: transaction))
        #expect(outcome.outcome == "consumption_recorded" && outcome.spentShareThousandths == 40_000)
        #expect(try await ledger.balance("p1") == 6)
    }

    @Test("TEST and other types are recorded without a ledger change", arguments: ["TEST", "DID_CHANGE_RENEWAL_STATUS", "ONE_TIME_CHARGE"])
    func recordedOnly(_ type: String) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp()
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification(type, signedTransaction: type == "TEST" ? nil : transaction))
        #expect(outcome.outcome == "recorded" && outcome.ledgerSeq == nil)
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("a refund for a transaction the wallet never credited is recorded and answered")
    func neverCredited() async throws {
        let (purchases, ledger, _) = try await Self.setUp()
        let unknown = try Self.authority.transaction("T-unknown", changes: ["revocationDate": AppleTestAuthority.milliseconds(Date())])
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND", signedTransaction: unknown))
        #expect(outcome.outcome == "no_purchase")
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("REFUND_REVERSED for a purchase never refunded is recorded as no_refund and changes nothing")
    func reversalWithoutRefund() async throws {
        let (purchases, ledger, transaction) = try await Self.setUp()
        let outcome = try await purchases.handleNotification(signedPayload: Self.authority.notification("REFUND_REVERSED", signedTransaction: transaction))
        #expect(outcome.outcome == "no_refund" && outcome.ledgerSeq == nil)
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("invalid notifications are refused and record nothing", arguments: ["signature", "bundle", "inner", "untrusted", "no-transaction", "sandbox"])
    func invalid(_ kind: String) async throws {
        let (purchases, ledger, transaction) = try await Self.setUp()
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
        #expect(good.outcome == "refunded" && !good.replayed)
    }
}
