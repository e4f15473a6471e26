import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import WalletCore
import WalletGoogle
@testable import WalletServer
import WalletTestSupport

/// The Google Play routes over an in-memory Google: status codes, access, bodies, and what the
/// ledger holds afterwards.
@Suite("Google Play routes", .throttled)
struct GoogleRouteTests {
    static func pushBody(_ id: String, _ notification: String) -> ByteBuffer {
        let data = Data((#"{"version":"1.0","packageName":"com.example.game","eventTimeMillis":"1","# + notification + "}").utf8).base64EncodedString()
        return ByteBuffer(string: #"{"message":{"data":"\#(data)","messageId":"\#(id)"},"subscription":"projects/p/subscriptions/s"}"#)
    }

    @Test("redeem: 201, a replay marked Idempotent-Replayed, player tokens only into their own wallet, 409 purchase_pending, 422 for what Google does not know, 400 for malformed tokens", arguments: TestBackend.all)
    func redeem(backend: TestBackend) async throws {
        let google = InMemoryGooglePlay()
        google.add("tok-1", GoogleProductPurchase(orderId: "GPA.1234-5678-9012-34567", quantity: 2))
        google.add("tok-pending", GoogleProductPurchase(purchaseState: 2))
        let server = try await TestServer(backend, google: google)
        try await server.test { client in
            let body = ByteBuffer(string: #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-1"}"#)
            let asOther = try await client.execute(uri: "/v1/purchases/google", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p2"))"], body: body)
            #expect(asOther.status == .forbidden)
            let first = try await client.execute(uri: "/v1/purchases/google", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p1"))"], body: body)
            #expect(first.status == .created)
            let again = try await client.execute(uri: "/v1/purchases/google", method: .post, headers: server.bearer(.service) + .jsonContent, body: body)
            #expect(again.status == .created && again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            let support = try await client.execute(uri: "/v1/purchases/google", method: .post, headers: server.bearer(.support) + .jsonContent, body: body)
            #expect(support.status == .forbidden)

            let pending = try await client.execute(
                uri: "/v1/purchases/google", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: ByteBuffer(string: #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-pending"}"#))
            #expect(pending.status == .conflict && String(buffer: pending.body).contains("purchase_pending"))
            let unknown = try await client.execute(
                uri: "/v1/purchases/google", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: ByteBuffer(string: #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-made-up"}"#))
            #expect(unknown.status == .unprocessableContent && String(buffer: unknown.body).contains("purchase_invalid"))
            for bad in [
                #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"../x"}"#,
                #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-1","purchase_token":"tok-2"}"#,
                #"{"player_id":"p1","product_id":"com.example.consume5credits"}"#,
                #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-1","quantity":9}"#,
            ] {
                let refused = try await client.execute(uri: "/v1/purchases/google", method: .post, headers: server.bearer(.service) + .jsonContent, body: ByteBuffer(string: bad))
                #expect(refused.status == .badRequest, "\(bad)")
            }

            let order = try await client.execute(uri: "/v1/google/orders/GPA.1234-5678-9012-34567", method: .get, headers: server.bearer(.support))
            #expect(order.status == .ok && String(buffer: order.body).contains(#""store_transaction_id":"tok-1""#))
            let byService = try await client.execute(uri: "/v1/google/orders/GPA.1234-5678-9012-34567", method: .get, headers: server.bearer(.service))
            #expect(byService.status == .forbidden)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await server.store.verify().ok)
    }

    @Test("push: 401 and nothing done without the push token; applied once by message id; 503 while Google does not list the void", arguments: TestBackend.all)
    func push(backend: TestBackend) async throws {
        let google = InMemoryGooglePlay()
        google.add("tok-v")
        let server = try await TestServer(backend, google: google)
        _ = try await GooglePurchases(configuration: try GoogleConfiguration(packageName: "com.example.game"), api: google, ledger: server.store)
            .redeem(playerID: "p1", productID: "com.example.consume5credits", purchaseToken: "tok-v", actor: "t")
        let voided = #""voidedPurchaseNotification":{"purchaseToken":"tok-v","productType":2,"refundType":1}"#
        let auth: HTTPFields = .jsonContent + [.authorization: "Bearer \(TestServer.googlePushToken)"]
        try await server.test { client in
            for headers: HTTPFields in [.jsonContent, .jsonContent + [.authorization: "Bearer forged"], server.bearer(.admin) + .jsonContent] {
                let refused = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: headers, body: Self.pushBody("m1", voided))
                #expect(refused.status == .unauthorized)
            }
            let early = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: auth, body: Self.pushBody("m1", voided))
            #expect(early.status == .serviceUnavailable)
            google.void("tok-v", at: Int64(Date().timeIntervalSince1970 * 1_000) - 1_000)
            let applied = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: auth, body: Self.pushBody("m1", voided))
            #expect(applied.status == .ok && String(buffer: applied.body).contains(#""outcome":"refunded""#))
            let again = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: auth, body: Self.pushBody("m1", voided))
            #expect(again.status == .ok && String(buffer: again.body).contains(#""replayed":true"#))
            let malformed = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: auth, body: ByteBuffer(string: #"{"message":{"data":"!!"}}"#))
            #expect(malformed.status == .badRequest)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 0)
        #expect(try await server.store.verify().ok)
    }

    @Test("without Google configured every Google route answers 501 not_configured")
    func notConfigured() async throws {
        // SQLite only: no route here reaches the ledger; each is refused before it would.
        let server = try await TestServer(.sqlite)
        try await server.test { client in
            let redeem = try await client.execute(
                uri: "/v1/purchases/google", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: ByteBuffer(string: #"{"player_id":"p1","product_id":"com.example.consume5credits","purchase_token":"tok-1"}"#))
            #expect(redeem.status == .notImplemented)
            let push = try await client.execute(uri: "/v1/notifications/google", method: .post, headers: .jsonContent, body: Self.pushBody("m1", #""testNotification":{}"#))
            #expect(push.status == .notImplemented)
            let order = try await client.execute(uri: "/v1/google/orders/GPA.1", method: .get, headers: server.bearer(.support))
            #expect(order.status == .notImplemented)
        }
    }
}
