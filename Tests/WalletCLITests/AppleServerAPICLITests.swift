import Foundation
import Testing
import WalletTestSupport

/// `redeem-apple --receipt`, `apple lookup` and `apple catch-up`, run as a separate process
/// against the stand-in App Store Server API.
@Suite("App Store Server API commands", .throttled)
struct AppleServerAPICLITests {
    @Test("a receipt, an order lookup with --credit-to, and a catch-up, configured by flags or by environment")
    func commands() async throws {
        let authority = try AppleTestAuthority()
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let bought = try authority.transaction("9101")
        apple.addCustomer([bought, try authority.transaction("9102")])
        apple.addOrder("ORDER1", signedTransactions: [try authority.transaction("9103")])
        apple.addNotifications([try authority.notification("REFUND", signedTransaction: bought), try authority.notification("TEST", signedTransaction: nil)])

        let cli = try CLI()
        _ = try await cli.json("products", "set", "com.example.game.consume5credits", "--credits", "5")
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let root = directory.appendingPathComponent("root.pem").path
        try authority.rootPEM.write(toFile: root, atomically: true, encoding: .utf8)
        let key = directory.appendingPathComponent("AuthKey.p8").path
        try apple.privateKey.pemRepresentation.write(toFile: key, atomically: true, encoding: .utf8)
        let receipt = directory.appendingPathComponent("receipt.txt").path
        try (try TestReceipt.with(transactionIDs: ["9101", "9102"], signedBy: authority) + "\n").write(toFile: receipt, atomically: true, encoding: .utf8)
        let flags = [
            "--apple-bundle-id", "com.example.game", "--apple-root-certs", root, "--apple-issuer-id", AppStoreStandIn.issuerID,
            "--apple-key-id", AppStoreStandIn.keyID, "--apple-private-key", key, "--apple-api-url", apple.productionURL,
            "--apple-sandbox-api-url", apple.sandboxURL,
        ]

        let redeemed = try await cli.run(["redeem-apple", "--player", "p1", "--receipt", receipt, "--json"] + flags)
        #expect(redeemed.status == 0, "\(redeemed.stderr)")
        #expect(try (redeemed.json()["credited"] as? [[String: Any]])?.compactMap { $0["store_transaction_id"] as? String }.sorted() == ["9101", "9102"])
        let again = try await cli.run(["redeem-apple", "--player", "p1", "--receipt", receipt] + flags)
        #expect(again.status == 0 && again.stdout.contains("0 credited now, 2 before, 0 refused"), "\(again.stdout)\(again.stderr)")

        // The same settings from the environment, the key given as PEM text.
        let environment = [
            "WALLET_APPLE_BUNDLE_ID": "com.example.game", "WALLET_APPLE_ROOT_CERTS": root, "WALLET_APPLE_ISSUER_ID": AppStoreStandIn.issuerID,
            "WALLET_APPLE_KEY_ID": AppStoreStandIn.keyID, "WALLET_APPLE_PRIVATE_KEY": apple.privateKey.pemRepresentation,
            "WALLET_APPLE_API_URL": apple.productionURL,
        ]
        let looked = try await cli.run(["apple", "lookup", "--order-id", "ORDER1", "--json"], environment: environment)
        #expect(looked.status == 0, "\(looked.stderr)")
        #expect(try (looked.json()["transactions"] as? [[String: Any]])?.first?["status"] as? String == "not_credited")
        let credited = try await cli.run(["apple", "lookup", "--order-id", "ORDER1", "--credit-to", "p2"] + flags)
        #expect(credited.status == 0 && credited.stdout.contains("credited_now") && credited.stdout.contains("to p2"), "\(credited.stdout)\(credited.stderr)")

        let since = "2026-01-01T00:00:00Z"
        let caughtUp = try await cli.run(["apple", "catch-up", "--since", since, "--json"] + flags)
        #expect(caughtUp.status == 0, "\(caughtUp.stderr)")
        #expect(try caughtUp.json()["applied"] as? Int == 2)
        let overlap = try await cli.run(["apple", "catch-up", "--since", since] + flags)
        #expect(overlap.stdout.contains("0 applied now, 2 applied before"), "\(overlap.stdout)")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 5], "9101 was refunded by the caught-up REFUND")
        #expect(try await cli.json("balance", "--player", "p2")["balances"] as? [String: Int] == ["credits": 5])
        #expect(try await cli.json("verify")["ok"] as? Bool == true)
    }

    @Test("a key half configured, both or neither of --jws and --receipt, and a bad --since are usage errors; Apple down is store_unavailable")
    func refusals() async throws {
        let cli = try CLI()
        let halfConfigured = try await cli.run(["apple", "lookup", "--order-id", "X", "--apple-bundle-id", "com.example.game", "--apple-issuer-id", "I"])
        #expect(halfConfigured.status == 64 && halfConfigured.stderr.contains("--apple-key-id, --apple-private-key"), "\(halfConfigured.stderr)")
        let neither = try await cli.run(["redeem-apple", "--player", "p1", "--apple-bundle-id", "com.example.game"])
        #expect(neither.status == 64 && neither.stderr.contains("either --jws or --receipt"))
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().path
        let notAFile = try await cli.run(["redeem-apple", "--player", "p1", "--receipt", directory, "--json", "--apple-bundle-id", "com.example.game"])
        #expect(notAFile.status == 1 && notAFile.errorCode() == "invalid_request", "a directory is refused, not a crash: \(notAFile.stderr)")
        let badURL = try await cli.run([
            "apple", "lookup", "--order-id", "X", "--apple-bundle-id", "com.example.game", "--apple-issuer-id", "I", "--apple-key-id", "K",
            "--apple-private-key", "-----BEGIN PRIVATE KEY-----", "--apple-api-url", "ftp://example.com/x",
        ])
        #expect(badURL.status == 64)
        let badSince = try await cli.run(["apple", "catch-up", "--since", "yesterday", "--json", "--apple-bundle-id", "com.example.game"])
        #expect(badSince.status == 1 && badSince.errorCode() == "invalid_request", "\(badSince.stderr)")
        let unconfigured = try await cli.run(["apple", "catch-up", "--since", "2026-01-01T00:00:00Z", "--json", "--apple-bundle-id", "com.example.game"])
        #expect(unconfigured.errorCode() == "not_configured")

        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.script(.failure(status: 503), .failure(status: 503), .failure(status: 503), .failure(status: 503))
        let key = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("AuthKey.p8").path
        try apple.privateKey.pemRepresentation.write(toFile: key, atomically: true, encoding: .utf8)
        let down = try await cli.run([
            "apple", "lookup", "--order-id", "ORDER1", "--json", "--apple-bundle-id", "com.example.game", "--apple-issuer-id", AppStoreStandIn.issuerID,
            "--apple-key-id", AppStoreStandIn.keyID, "--apple-private-key", key, "--apple-api-url", apple.productionURL,
        ])
        #expect(down.status == 1 && down.errorCode() == "store_unavailable", "\(down.stderr)")
        #expect(apple.seen.count == 4)
    }

    @Test("wallet serve --apple-send-consumption answers a CONSUMPTION_REQUEST from its outbox in the background")
    func serveSendsConsumption() async throws {
        let authority = try AppleTestAuthority()
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let cli = try CLI()
        _ = try await cli.json("products", "set", "com.example.game.consume5credits", "--credits", "5")
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let root = directory.appendingPathComponent("root.pem").path
        try authority.rootPEM.write(toFile: root, atomically: true, encoding: .utf8)
        let environment = [
            "WALLET_APPLE_BUNDLE_ID": "com.example.game", "WALLET_APPLE_ROOT_CERTS": root, "WALLET_APPLE_ISSUER_ID": AppStoreStandIn.issuerID,
            "WALLET_APPLE_KEY_ID": AppStoreStandIn.keyID, "WALLET_APPLE_PRIVATE_KEY": apple.privateKey.pemRepresentation,
            "WALLET_APPLE_API_URL": apple.productionURL, "WALLET_APPLE_SEND_CONSUMPTION": "true", "WALLET_APPLE_REFUND_PREFERENCE": "grant_prorated",
        ]
        let bought = try authority.transaction("9201")
        let jws = directory.appendingPathComponent("t.jws").path
        try bought.write(toFile: jws, atomically: true, encoding: .utf8)
        let redeemed = try await cli.run(["redeem-apple", "--player", "p1", "--jws", jws], environment: environment)
        #expect(redeemed.status == 0, "\(redeemed.stderr)")

        let (server, base) = try await ServeTests.serve(cli, environment: environment)
        let notification = try authority.notification("CONSUMPTION_REQUEST", signedTransaction: bought)
        let answer = await send("POST", "\(base)/v1/notifications/apple", headers: ["Content-Type": "application/json"], body: #"{"signedPayload":"\#(notification)"}"#)
        #expect(answer?.status == 200, "\(String(describing: answer))")
        // Wait for the background sender (it runs every few seconds), up to 30 seconds.
        for _ in 0..<300 where !apple.seen.contains(where: { $0.method == "PUT" }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        server.0.terminate()
        let stopped = await CLI.finish(server)
        let put = try #require(apple.seen.first { $0.method == "PUT" }, "the server never sent the answer: \(stopped.stderr)")
        #expect(put.path == "/inApps/v2/transactions/consumption/9201" && put.body.contains(#""refundPreference":"GRANT_PRORATED""#))
        let outbox = try await cli.run(["apple", "outbox", "--json"], environment: environment)
        let replies = try #require(try outbox.json()["replies"] as? [[String: Any]])
        #expect(replies.count == 1 && replies.first?["status"] as? String == "sent", "\(outbox.stdout)")
    }
}
