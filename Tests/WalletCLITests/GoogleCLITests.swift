import Foundation
import Testing
import WalletCore
import WalletGoogle
import WalletStores
import WalletTestSupport

/// Google Play end to end: `wallet serve` and the Google commands, as separate processes, against
/// the stand-in Google (OAuth token endpoint, Android Publisher API, JWKS).
@Suite("Google Play, served", .throttled)
struct GoogleCLITests {
    @Test("a purchase redeemed over HTTP is credited once and consumed by the server; a push with Google's token voids it; a forged push is 401; lookup, outbox and catch-up agree")
    func served() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        google.add(purchase: GoogleProductPurchase(orderId: "GPA.1111-2222-3333-44444", quantity: 2, regionCode: "US"), token: "tok-served", productID: "com.example.consume5credits")
        let cli = try await CLI.withCatalog()
        let keyFile = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("service-account.json").path
        try google.serviceAccountJSON().write(toFile: keyFile, atomically: true, encoding: .utf8)
        let service = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "game backend")["key"] as? String)
        let environment = [
            "WALLET_GOOGLE_PACKAGE_NAME": GoogleStandIn.packageName, "WALLET_GOOGLE_SERVICE_ACCOUNT": keyFile, "WALLET_GOOGLE_API_URL": google.url,
            "WALLET_GOOGLE_PUSH_AUDIENCE": GoogleStandIn.pushAudience, "WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT": GoogleStandIn.pushServiceAccount,
            "WALLET_GOOGLE_JWKS_URL": google.jwksURL,
        ]
        let (server, base) = try await ServeTests.serve(cli, environment: environment)
        defer {
            server.0.terminate()
            _ = CLI.finishBlocking(server)
        }
        let body = #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-served"}"#
        let headers = ["Authorization": "Bearer \(service)", "Content-Type": "application/json"]
        let first = await send("POST", "\(base)/v1/purchases/google", headers: headers, body: body)
        #expect(first?.status == 201 && first?.body.contains(#""balance":10"#) == true, "\(String(describing: first))")
        let again = await send("POST", "\(base)/v1/purchases/google", headers: headers, body: body)
        #expect(again?.status == 201 && again?.body.contains(#""balance":10"#) == true)
        #expect(google.seen(.purchase).count == 1, "a replay asks Google nothing")

        // The server consumes the purchase on Google's side within a few seconds.
        var consumed = false
        for _ in 0..<100 where !consumed {
            consumed = google.purchase(token: "tok-served", productID: "com.example.consume5credits")?.consumptionState == 1
            if !consumed { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(consumed)

        // A void, pushed with Google's token; the same push forged is refused and does nothing.
        google.addVoided(
            GoogleVoidedPurchase(
                purchaseToken: "tok-served", orderId: "GPA.1111-2222-3333-44444", voidedTimeMillis: String(Int64(Date().timeIntervalSince1970 * 1_000) - 1_000),
                voidedSource: 0, voidedReason: 1, refundType: 2, voidedQuantity: 1))
        let notification = #"{"version":"1.0","packageName":"com.example.game","eventTimeMillis":"1","voidedPurchaseNotification":{"purchaseToken":"tok-served","productType":2,"refundType":2}}"#
        let push = #"{"message":{"data":"\#(Data(notification.utf8).base64EncodedString())","messageId":"9001"},"subscription":"projects/p/subscriptions/wallet"}"#
        let forged = await send(
            "POST", "\(base)/v1/notifications/google", headers: ["Authorization": "Bearer \(try GoogleStandIn.pushToken(.wrongAudience))", "Content-Type": "application/json"], body: push)
        #expect(forged?.status == 401)
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 10])
        let pushed = await send("POST", "\(base)/v1/notifications/google", headers: ["Authorization": "Bearer \(try GoogleStandIn.pushToken())", "Content-Type": "application/json"], body: push)
        #expect(pushed?.status == 200 && pushed?.body.contains(#""outcome":"refunded""#) == true, "\(String(describing: pushed))")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 5], "one of two units voided")

        let looked = try await cli.run(["google", "lookup", "--order-id", "GPA.1111-2222-3333-44444"], environment: environment)
        #expect(looked.status == 0 && looked.stdout.contains("to p1") && looked.stdout.contains("consumption done"), "\(looked.stdout)\(looked.stderr)")
        let outbox = try await cli.run(["google", "outbox", "--json"], environment: environment)
        #expect(try (outbox.json()["purchases"] as? [[String: Any]])?.first?["status"] as? String == "done", "\(outbox.stdout)\(outbox.stderr)")
        let caught = try await cli.run(["google", "catch-up"], environment: environment)
        #expect(caught.status == 0 && caught.stdout.contains("0 applied now, 1 applied before"), "\(caught.stdout)\(caught.stderr)")
        // While another run holds the catch-up (the server's, say), the command skips and says so.
        let calls = google.seen(.voided).count
        let held = try await LedgerDatabases.open(cli.databasePath).takeLease(GooglePurchases.catchUpLease, holder: "another-run", for: .seconds(600))
        #expect(held.holder == "another-run")
        let skipped = try await cli.run(["google", "catch-up"], environment: environment)
        #expect(skipped.status == 0 && skipped.stdout.contains("skipped: another run holds the Google catch-up"), "\(skipped.stdout)\(skipped.stderr)")
        #expect(google.seen(.voided).count == calls, "the skipped run asked Google nothing")
        let redeemed = try await cli.run(
            ["redeem-google", "--player", "p2", "--product", "com.example.consume5credits", "--token", "tok-served", "--json"], environment: environment)
        #expect(redeemed.status == 1 && redeemed.errorCode() == "idempotency_key_reused", "\(redeemed.stderr)")
        #expect(try await cli.json("verify")["ok"] as? Bool == true)
    }

    @Test("half a Google configuration is a usage error naming what is missing; a key file that is not one is refused without quoting it")
    func refusals() async throws {
        let cli = try CLI()
        let noKey = try await cli.run(["redeem-google", "--player", "p1", "--product", "x", "--token", "t", "--google-package-name", "com.example.game"])
        #expect(noKey.status == 64 && noKey.stderr.contains("--google-service-account"), "\(noKey.stderr)")
        let badPackage = try await cli.run(["google", "catch-up", "--google-package-name", "not a package", "--google-service-account", "{}"])
        #expect(badPackage.status == 64, "\(badPackage.stderr)")
        let secret = #"{"type":"service_account","client_email":"a@b.c","private_key":"-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----\n","private_key_id":"k","token_uri":"https://oauth2.googleapis.com/token"}"#
        let badKey = try await cli.run(["google", "lookup", "--order-id", "GPA.1", "--google-package-name", "com.example.game", "--google-service-account", secret])
        #expect(badKey.status == 64 && !badKey.stderr.contains("SECRETSECRET"), "\(badKey.stderr)")
        let pushHalf = try await cli.run(["serve", "--google-push-audience", "https://wallet.example.com/v1/notifications/google"])
        #expect(pushHalf.status == 64 && pushHalf.stderr.contains("--google-push-service-account"), "\(pushHalf.stderr)")
    }
}
