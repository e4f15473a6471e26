import Crypto
import Foundation
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

/// The App Store Server API paths, against a stand-in Apple on 127.0.0.1: StoreKit 1 receipts,
/// order lookups, notification catch-up, and the client's retries and refusals.
@Suite("App Store Server API (stand-in Apple)", .throttled)
struct AppStoreServerAPIClientTests {
    static let authority = AppleTests.authority

    /// A ledger with the Apple catalog, and purchases that ask `standIn`.
    static func purchases(
        _ standIn: AppStoreStandIn, backend: TestBackend, environments: Set<AppleConfiguration.Environment> = [.production],
        binding: AccountTokenBinding = .firstUse, configure: (inout AppStoreServerAPIConfiguration) -> Void = { _ in }
    ) async throws -> (ApplePurchases, TestLedger) {
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.gems10", credits: 10, currency: "gems"))
        var configuration = try standIn.apiConfiguration()
        configure(&configuration)
        var appleConfiguration = try authority.configuration(environments: environments)
        appleConfiguration.accountTokenBinding = binding
        let purchases = ApplePurchases(configuration: appleConfiguration, ledger: ledger.store, api: AppStoreServerAPI(configuration: configuration))
        return (purchases, ledger)
    }

    @Test("a forged receipt naming another customer's uncredited transaction is refused before Apple is asked; nothing is credited or bound", arguments: TestBackend.all)
    func forgedReceipt(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        let victimToken = UUID().uuidString.lowercased()
        apple.addCustomer([try Self.authority.transaction("7001", changes: ["appAccountToken": victimToken])])
        let attributes = try TestReceipt.attributes(transactionIDs: ["7001"])
        let genuine = try #require(Data(base64Encoded: try TestReceipt.with(transactionID: "7002", signedBy: Self.authority)))
        // A genuine receipt of the attacker's own, its id rewritten to the victim's.
        var rewritten = Array(genuine)
        let at = try #require(rewritten.indices.first { rewritten[$0...].starts(with: Array("7002".utf8)) })
        rewritten[at + 3] = UInt8(ascii: "1")
        for forged in [
            try TestReceipt.receipt(attributes), try TestReceipt.signed(attributes, by: try AppleTestAuthority(name: "Forger")),
            Data(rewritten).base64EncodedString(),
        ] {
            let error = await walletError { _ = try await purchases.redeemReceipt(playerID: "mallory", receipt: forged, actor: "player:mallory") }
            #expect(error?.code == "invalid_request", "\(error?.detail ?? "credited")")
        }
        #expect(apple.seen.isEmpty, "Apple is never asked about a receipt that does not verify")
        #expect(try await ledger.transactionCount() == 0)
        // The victim's purchase, and its token, are still the victim's.
        let result = try await purchases.redeemReceipt(playerID: "kate", receipt: try TestReceipt.signed(attributes, by: Self.authority), actor: "player:kate")
        #expect(result.credited.map(\.storeTransactionID) == ["7001"] && result.credited.first?.playerID == "kate")
        #expect(try await ledger.balance("kate") == 5)
        #expect(try await ledger.balance("mallory") == 0)
    }

    /// A stand-in whose one customer (transaction 7101) has a history of one transaction a
    /// page that always claims more pages follow, and the purchases and ledger over it.
    static func endlessHistory(_ apple: AppStoreStandIn, backend: TestBackend) async throws -> (ApplePurchases, TestLedger) {
        apple.setPageSize(1)
        apple.setEndlessHistory()
        let opened = try await Self.purchases(apple, backend: backend)
        apple.addCustomer([try Self.authority.transaction("7101")])
        return opened
    }

    @Test("Apple paging without end: the wallet stops at historyPagesMax pages and answers store_unavailable, crediting nothing", arguments: TestBackend.all)
    func endlessHistory(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.endlessHistory(apple, backend: backend)
        // The receipt also names 7100, which the history never shows: paging would go on forever.
        let error = await walletError {
            _ = try await purchases.redeemReceipt(
                playerID: "p1", receipt: try TestReceipt.with(transactionIDs: ["7101", "7100"], signedBy: Self.authority), actor: "t")
        }
        #expect(error?.code == "store_unavailable" && error?.detail.contains("\(AppStoreServerAPI.historyPagesMax) pages") == true, "\(error?.detail ?? "")")
        #expect(apple.seen.count == AppStoreServerAPI.historyPagesMax)
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("a long history is read only back to the oldest purchase the receipt names: a customer with more than 1,000 purchases still redeems", arguments: TestBackend.all)
    func historyStopsOnceSeen(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.endlessHistory(apple, backend: backend)
        let redeemed = try await purchases.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionID: "7101", signedBy: Self.authority), actor: "t")
        #expect(redeemed.credited.map(\.storeTransactionID) == ["7101"])
        #expect(apple.seen.count == 1, "every purchase the receipt names was on the first page")
        #expect(try await ledger.balance("p1") == 5)
    }

    @Test("derived account tokens: StoreKit 2, receipts and order credits credit only purchases carrying the player's UUIDv5; first use binds otherwise", arguments: TestBackend.all, [false, true])
    func derivedTokens(_ backend: TestBackend, derived: Bool) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let studio = UUID()
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend, binding: derived ? .derived(namespace: studio) : .firstUse)
        let kate = AccountToken.derived(namespace: studio, playerID: "kate").uuidString.lowercased()
        let history = [
            try Self.authority.transaction("7201", changes: ["appAccountToken": kate]),
            try Self.authority.transaction("7202", changes: ["appAccountToken": UUID().uuidString]),  // a token the game never derived
            try Self.authority.transaction("7203"),  // no token
            try Self.authority.transaction("7204", changes: ["appAccountToken": kate]),
        ]
        apple.addCustomer(history)
        apple.addOrder("MQH2JBHVNY", signedTransactions: [history[3]])
        // StoreKit 2: Mallory cannot take Kate's purchase in either mode once it is Kate's; in the
        // derived mode she cannot take it even first.
        var stolen: WalletError?
        do {
            _ = try await purchases.redeem(playerID: "mallory", signedTransaction: history[0], actor: "t")
        } catch {
            stolen = error
        }
        #expect((stolen?.code == "purchase_invalid") == derived, "\(stolen?.detail ?? "credited")")
        let receipt = try TestReceipt.with(transactionIDs: ["7201", "7202", "7203"], signedBy: Self.authority)
        let result = try await purchases.redeemReceipt(playerID: "kate", receipt: receipt, actor: "player:kate")
        if derived {
            #expect(result.credited.map(\.storeTransactionID) == ["7201"])
            #expect(Dictionary(uniqueKeysWithValues: result.refused.map { ($0.storeTransactionID ?? "-", $0.code) }) == ["7202": "purchase_invalid", "7203": "purchase_invalid"])
            let order = try await purchases.lookUpOrder(orderID: "MQH2JBHVNY", creditTo: "mallory", actor: "support")
            #expect(order.transactions.map(\.status) == ["refused"] && order.transactions.first?.refusal?.code == "purchase_invalid")
            _ = try await purchases.lookUpOrder(orderID: "MQH2JBHVNY", creditTo: "kate", actor: "support")
            #expect(try await ledger.balance("kate") == 10)
            #expect(try await ledger.balance("mallory") == 0)
        } else {
            // First use: Mallory redeemed 7201 first and now holds its token; 7202 and 7203 credit Kate.
            #expect(result.credited.map(\.storeTransactionID).sorted() == ["7202", "7203"])
            #expect(try await ledger.balance("mallory") == 5)
            #expect(try await ledger.balance("kate") == 10)
        }
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a receipt credits each consumable Apple lists once, in one write; what was credited before, another player's, unknown, revoked and foreign ones are listed, not credited", arguments: TestBackend.all)
    func receipt(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        let other = try AppleTestAuthority(name: "Other")
        let history = [
            try Self.authority.transaction("1001"),
            try Self.authority.transaction("1002", product: "com.example.game.gems10", quantity: 2),
            try Self.authority.transaction("1003", product: "com.example.game.unknown"),
            try Self.authority.transaction("1004"),
            try Self.authority.transaction("1005", changes: ["revocationDate": AppleTestAuthority.milliseconds(Date())]),
            try Self.authority.transaction("1006", changes: ["bundleId": "com.example.other"]),
            try other.transaction("1007"),
            try Self.authority.transaction("1008"),
            try Self.authority.transaction("1009", changes: ["environment": "Sandbox"]),
            // The customer's, but not in this receipt (finished, or another device's): not this request's to credit.
            try Self.authority.transaction("1010"),
        ]
        apple.addCustomer(history)
        // 1001 reached the player by StoreKit 2 earlier; 1004 was credited to someone else.
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: history[0], actor: "t")
        _ = try await purchases.redeem(playerID: "p2", signedTransaction: history[3], actor: "t")

        let named = try TestReceipt.with(transactionIDs: (1001...1009).map(String.init), signedBy: Self.authority)
        let result = try await purchases.redeemReceipt(playerID: "p1", receipt: named, actor: "player:p1")
        #expect(result.environment == "Production" && result.complete)
        #expect(result.credited.map(\.storeTransactionID).sorted() == ["1002", "1008"])
        #expect(result.alreadyCredited.map(\.storeTransactionID) == ["1001"])
        let refused = Dictionary(uniqueKeysWithValues: result.refused.map { ($0.storeTransactionID ?? "unverified", $0.code) })
        #expect(refused == [
            "1003": "unknown_product", "1004": "already_credited_elsewhere", "1005": "purchase_invalid", "1006": "purchase_invalid", "1009": "purchase_invalid",
            "unverified": "purchase_invalid",
        ])
        #expect(result.refused.first { $0.storeTransactionID == "1009" }?.detail.contains("Sandbox environment is not accepted") == true)
        let (p1, p1Gems, p2) = (try await ledger.balance("p1"), try await ledger.balance("p1", "gems"), try await ledger.balance("p2"))
        #expect(p1 == 10 && p1Gems == 20 && p2 == 5)
        // Apple was asked for consumables, newest first, with a token it accepts.
        #expect(!(result.credited + result.alreadyCredited).contains { $0.storeTransactionID == "1010" } && !result.refused.contains { $0.storeTransactionID == "1010" })
        let asked = try #require(apple.seen.last)
        #expect(asked.path == "/inApps/v2/history/1001" && asked.query["productType"] == "CONSUMABLE" && asked.query["sort"] == "DESCENDING")
        #expect(apple.seen.allSatisfy { $0.tokenProblem == nil })

        // The same receipt again credits nothing more.
        let again = try await purchases.redeemReceipt(playerID: "p1", receipt: named, actor: "player:p1")
        #expect(again.credited.isEmpty && again.alreadyCredited.map(\.storeTransactionID).sorted() == ["1001", "1002", "1008"])
        #expect(try await ledger.balance("p1") == 10)
        #expect(try await ledger.transactionCount() == 4)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("history pages are followed by their revision until Apple has no more", arguments: TestBackend.all)
    func paging(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.setPageSize(2)
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        apple.addCustomer(try (1...5).map { try Self.authority.transaction("20\($0)") })
        let result = try await purchases.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionIDs: (1...5).map { "20\($0)" }, signedBy: Self.authority), actor: "t")
        #expect(result.credited.count == 5 && result.complete)
        #expect(apple.seen.map { $0.query["revision"] ?? "-" } == ["-", "rev-2", "rev-4"])
        #expect(try await ledger.balance("p1") == 25)
    }

    @Test("production first; sandbox only when accepted and production does not know the transaction", arguments: TestBackend.all)
    func sandboxFallback(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let sandboxTransaction = try Self.authority.transaction("3001", changes: ["environment": "Sandbox"])
        apple.addCustomer([sandboxTransaction], environment: .sandbox)

        let (both, ledger) = try await Self.purchases(apple, backend: backend, environments: [.production, .sandbox])
        let result = try await both.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionID: "3001", signedBy: Self.authority), actor: "t")
        #expect(result.environment == "Sandbox" && result.credited.map(\.storeTransactionID) == ["3001"])
        #expect(apple.seen.map(\.environment) == [.production, .sandbox])
        #expect(try await ledger.balance("p1") == 5)

        let (productionOnly, other) = try await Self.purchases(apple, backend: backend)
        let error = await walletError { _ = try await productionOnly.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionID: "3001", signedBy: Self.authority), actor: "t") }
        #expect(error?.code == "not_found" && error?.detail.contains("no such transaction") == true, "\(String(describing: error))")
        #expect(apple.seen.suffix(1).map(\.environment) == [.production], "sandbox is never asked when it is not accepted")
        #expect(try await other.transactionCount() == 0)
    }

    @Test("5xx, 429 with Retry-After (UNIX milliseconds) and Apple's retryable codes are tried again; a fresh token each time", arguments: TestBackend.all)
    func retries(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        apple.addCustomer([try Self.authority.transaction("4001")])
        let retryAt = AppleTestAuthority.milliseconds(Date().addingTimeInterval(0.2))
        apple.script(.failure(status: 500), .failure(status: 429, errorCode: 4_290_000, headers: ["Retry-After": "\(retryAt)"]), .failure(status: 404, errorCode: 4_040_006))
        let result = try await purchases.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionID: "4001", signedBy: Self.authority), actor: "t")
        #expect(result.credited.count == 1 && apple.seen.count == 4)
        // The attempt after the 429 waited for its Retry-After.
        #expect(apple.seen[2].at >= Date(timeIntervalSince1970: Double(retryAt) / 1_000))
        #expect(apple.seen.allSatisfy { $0.tokenProblem == nil })
        #expect(try await ledger.balance("p1") == 5)
    }

    @Test("failures that last, a 401 and a non-retryable 4xx are reported, and nothing is credited", arguments: TestBackend.all)
    func failures(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.addCustomer([try Self.authority.transaction("5001")])
        let receipt = try TestReceipt.with(transactionID: "5001", signedBy: Self.authority)

        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        apple.script(.failure(status: 503), .failure(status: 502), .failure(status: 500, errorCode: 5_000_001), .failure(status: 500))
        var error = await walletError { _ = try await purchases.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
        #expect(error?.code == "store_unavailable" && apple.seen.count == 4, "\(String(describing: error))")

        apple.script(.failure(status: 400, errorCode: 4_000_006))
        error = await walletError { _ = try await purchases.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
        #expect(error?.code == "invalid_request" && error?.detail.contains("not one Apple issues") == true && apple.seen.count == 5, "no retry for a 400")

        // Apple asking for a wait longer than the wallet will give is reported at once.
        apple.script(.failure(status: 429, headers: ["Retry-After": "\(AppleTestAuthority.milliseconds(Date().addingTimeInterval(3_600)))"]))
        error = await walletError { _ = try await purchases.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
        #expect(error?.code == "store_unavailable" && apple.seen.count == 6, "\(String(describing: error))")

        let (wrongKey, _) = try await Self.purchases(apple, backend: backend) { configuration in
            configuration.credentials = (try? AppStoreServerAPICredentials(
                issuerID: AppStoreStandIn.issuerID, keyID: AppStoreStandIn.keyID, privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation,
                bundleID: AppStoreStandIn.bundleID)) ?? configuration.credentials
        }
        error = await walletError { _ = try await wrongKey.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
        #expect(error?.code == "not_configured" && error?.detail.contains("credentials") == true && apple.seen.count == 7, "a 401 is not retried")
        #expect(apple.seen.last?.tokenProblem == "signature")

        let (slow, _) = try await Self.purchases(apple, backend: backend) { configuration in
            configuration.requestTimeout = .milliseconds(300)
            configuration.attempts = 1
        }
        apple.script(.delay(.seconds(2)))
        error = await walletError { _ = try await slow.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
        #expect(error?.code == "store_unavailable" && error?.detail.contains("did not answer") == true, "\(String(describing: error))")
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("a receipt that is not one, or holds no purchase, asks Apple nothing; without an API key the route is not configured", arguments: TestBackend.all)
    func receiptRefusals(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        for (receipt, named) in [("not base64 at all!", "base64"), (try TestReceipt.signed([(2, try TestReceipt.utf8("com.example.game"))], by: Self.authority), "no in-app purchase"), (#"{"Store":"GooglePlay","Payload":"x"}"#, "App Store")] {
            let error = await walletError { _ = try await purchases.redeemReceipt(playerID: "p1", receipt: receipt, actor: "t") }
            #expect(error?.code == "invalid_request" && error?.detail.contains(named) == true, "\(String(describing: error))")
        }
        #expect(apple.seen.isEmpty)
        let unconfigured = ApplePurchases(configuration: try Self.authority.configuration(), ledger: ledger.store)
        let error = await walletError { _ = try await unconfigured.redeemReceipt(playerID: "p1", receipt: try TestReceipt.with(transactionID: "1", signedBy: Self.authority), actor: "t") }
        #expect(error?.code == "not_configured")
        let unconfiguredLookup = await walletError { _ = try await unconfigured.lookUpOrder(orderID: "MQH2JBHVNX", creditTo: nil, actor: "t") }
        #expect(unconfiguredLookup?.code == "not_configured")
        let lookAlike = await walletError { _ = try await purchases.lookUpOrder(orderID: "../history/1", creditTo: nil, actor: "t") }
        #expect(lookAlike?.code == "invalid_request" && apple.seen.isEmpty, "an id that is not one never reaches a URL")
    }

    @Test("an order lookup shows each transaction and to whom it was credited; --credit-to credits the rest once", arguments: TestBackend.all)
    func orderLookup(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        let credited = try Self.authority.transaction("6001")
        apple.addOrder("MQH2JBHVNX", signedTransactions: [credited, try Self.authority.transaction("6002"), try AppleTestAuthority(name: "Other").transaction("6003")])
        _ = try await purchases.redeem(playerID: "p2", signedTransaction: credited, actor: "t")

        let looked = try await purchases.lookUpOrder(orderID: "MQH2JBHVNX", creditTo: nil, actor: "support")
        #expect(looked.transactions.map(\.status) == ["credited", "not_credited", "refused"])
        #expect(looked.transactions[0].credit?.playerID == "p2" && looked.transactions[2].storeTransactionID == nil)
        #expect(try await ledger.transactionCount() == 1, "a lookup alone credits nothing")

        let creditedNow = try await purchases.lookUpOrder(orderID: "MQH2JBHVNX", creditTo: "p1", actor: "support")
        #expect(creditedNow.transactions.map(\.status) == ["credited", "credited_now", "refused"])
        #expect(creditedNow.transactions[1].credit?.playerID == "p1")
        let again = try await purchases.lookUpOrder(orderID: "MQH2JBHVNX", creditTo: "p3", actor: "support")
        #expect(again.transactions.map(\.status) == ["credited", "credited", "refused"] && again.transactions[1].credit?.playerID == "p1")
        #expect(try await ledger.balance("p1") == 5)
        #expect(try await ledger.balance("p3") == 0)
        #expect(try await ledger.store.verify().ok)

        let unknown = await walletError { _ = try await purchases.lookUpOrder(orderID: "NOSUCHORDER", creditTo: nil, actor: "support") }
        #expect(unknown?.code == "not_found")
    }

    @Test("catch-up applies missed notifications through the live path; overlap with live ones and with an earlier catch-up changes nothing", arguments: TestBackend.all)
    func catchUp(backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.setPageSize(2)
        let (purchases, ledger) = try await Self.purchases(apple, backend: backend)
        let bought = try Self.authority.transaction("7001")
        _ = try await purchases.redeem(playerID: "p1", signedTransaction: bought, actor: "t")
        let refund = try Self.authority.notification("REFUND", signedTransaction: bought)
        let live = try Self.authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought)
        let foreign = try Self.authority.notification("TEST", signedTransaction: nil, bundleID: "com.example.other")
        apple.addNotifications([live, refund, try Self.authority.notification("TEST", signedTransaction: nil), foreign])
        // Delivered, so not a failure; and one from before the period.
        apple.addNotifications([try Self.authority.notification("TEST", signedTransaction: nil)], failed: false)
        let old = AppleTestAuthority.milliseconds(Date().addingTimeInterval(-3 * 86_400))
        apple.addNotifications([try Self.authority.notification("TEST", signedTransaction: nil, signedDate: old)])
        _ = try await purchases.handleNotification(signedPayload: live)

        let since = Date().addingTimeInterval(-86_400)
        let report = try await purchases.catchUp(since: since, until: Date(), onlyFailures: true)
        #expect(report.notifications == 4 && report.applied == 2 && report.alreadyApplied == 1 && report.refused.count == 1)
        #expect(report.outcomes["refunded"] == 1 && report.outcomes["recorded"] == 1)
        #expect(try await ledger.balance("p1") == 0, "the refund took back the 5 credits")
        #expect(apple.seen.count == 2 && apple.seen.allSatisfy { $0.body.contains(#""onlyFailures":true"#) })
        #expect(apple.seen.map { $0.query["paginationToken"] ?? "-" } == ["-", "page-2"])
        let body = try #require(try JSONSerialization.jsonObject(with: Data(apple.seen[0].body.utf8)) as? [String: Any])
        #expect((body["startDate"] as? NSNumber)?.int64Value == AppleTestAuthority.milliseconds(since), "dates go in milliseconds")

        let again = try await purchases.catchUp(since: since, until: Date(), onlyFailures: false)
        #expect(again.notifications == 5 && again.applied == 1 && again.alreadyApplied == 3, "the delivered one too; never the one before the period")
        #expect(try await ledger.transactionCount() == 2)
        #expect(try await ledger.store.verify().ok)
        let backwards = await walletError { _ = try await purchases.catchUp(since: Date(), until: since, onlyFailures: false) }
        #expect(backwards?.code == "invalid_request")
    }
}
