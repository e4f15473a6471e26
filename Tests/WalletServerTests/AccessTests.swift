import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import WalletCore
@testable import WalletServer
import WalletTestSupport

/// Who may call what, stated here independently of the router, and checked against it.
@Suite("Authentication and roles", .throttled)
struct AccessTests {
    enum Credential: String, CaseIterable, CustomTestStringConvertible {
        case none, admin, service, support, auditor, playerOwn, playerOther, revokedKey, expiredToken, forgedToken, garbage

        var testDescription: String { rawValue }
    }

    /// Every protected route with the credentials that pass its access check.
    static let allowed: [(method: HTTPRequest.Method, path: String, body: String, allowed: Set<Credential>)] = [
        (.get, "/v1/products", "", [.admin, .service, .support, .auditor]),
        (.put, "/v1/products/new.product", #"{"credits": 3}"#, [.admin]),
        (.post, "/v1/purchases", #"{"player_id": "p1", "store": "apple", "store_transaction_id": "T-access", "product_id": "com.example.consume5credits"}"#, [.service]),
        (.post, "/v1/purchases/apple", #"{"player_id": "p1", "signed_transaction": "\#(try! TestServer.apple.transaction("T-apple"))"}"#, [.service, .playerOwn]),
        // Bodies and ids that fail validation (400) once admitted: the server has no App Store Server API key.
        (.post, "/v1/purchases/apple/receipt", #"{"player_id": "p1", "receipt": "x"}"#, [.service, .playerOwn]),
        (.post, "/v1/wallets/p1/restore", #"{"receipt": "x"}"#, [.service, .playerOwn]),
        (.get, "/v1/apple/orders/not!an!order", "", [.support, .admin]),
        (.post, "/v1/apple/orders/not!an!order/credit", #"{"player_id": "p1"}"#, [.support, .admin]),
        (.post, "/v1/purchases/google", #"{"player_id": "p1", "product_id": "com.example.consume5credits", "purchase_token": "tok-none"}"#, [.service, .playerOwn]),
        (.get, "/v1/google/orders/not!an!order", "", [.support, .admin]),
        (.post, "/v1/refunds", #"{"store": "apple", "store_transaction_id": "T-none"}"#, [.service, .support, .admin]),
        (.get, "/v1/wallets/p1", "", [.service, .support, .auditor, .playerOwn]),
        (.get, "/v1/wallets/p1/transactions", "", [.service, .support, .auditor, .playerOwn]),
        (.post, "/v1/wallets/p1/spend", #"{"amount": 1, "idempotency_key": "access"}"#, [.service, .playerOwn]),
        (.post, "/v1/wallets/p1/adjustments", #"{"amount": 1, "reason_code": "goodwill", "note": "n", "idempotency_key": "access"}"#, [.support, .admin]),
        (.get, "/v1/wallets/p1/statement", "", [.support, .auditor, .playerOwn]),
        (.post, "/v1/wallets/p1/bonuses", #"{"amount": 1, "reason_code": "event", "idempotency_key": "access"}"#, [.service, .support, .admin]),
        (.get, "/v1/wallets/p1/lots", "", [.service, .support, .auditor, .playerOwn]),
        (.get, "/v1/wallets/p1/entitlements", "", [.service, .support, .auditor, .playerOwn]),
        (.get, "/v1/wallets/p1/entitlements/vip", "", [.service, .support, .auditor, .playerOwn]),
        (.post, "/v1/wallets/p1/entitlements", #"{"action": "grant", "entitlement": "vip", "reason_code": "goodwill", "note": "n", "idempotency_key": "access"}"#, [.support, .admin]),
        (.post, "/v1/wallets/p1/holds", #"{"amount": 1, "expires_in_seconds": 60, "idempotency_key": "access"}"#, [.service, .playerOwn]),
        (.get, "/v1/wallets/p1/holds", "", [.service, .support, .auditor, .playerOwn]),
        // An unknown hold: admitted callers get 404 (a player only ever finds their own wallet's holds).
        (.post, "/v1/holds/00000000-0000-4000-8000-000000000000/capture", #"{"idempotency_key": "access"}"#, [.service, .playerOwn, .playerOther]),
        (.post, "/v1/holds/00000000-0000-4000-8000-000000000000/release", #"{"idempotency_key": "access"}"#, [.service, .support, .admin, .playerOwn, .playerOther]),
        (.get, "/v1/ledger/export", "", [.auditor, .admin]),
        (.get, "/v1/ledger/verify", "", [.auditor, .admin]),
        (.get, "/v1/ledger/head", "", [.auditor, .admin]),
        (.post, "/v1/ledger/export/links", #"{"format": "jsonl"}"#, [.auditor, .admin]),
        (.get, "/v1/ledger/volume?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z", "", [.auditor, .admin]),
        (.get, "/v1/me", "", [.admin, .service, .support, .auditor]),
        (.get, "/v1/keys", "", [.admin]),
        (.post, "/v1/keys", #"{"role": "auditor", "name": "made in the matrix"}"#, [.admin]),
        (.post, "/v1/keys/key_none/revoke", "", [.admin]),
        (.get, "/v1/events", "", [.service, .auditor, .admin]),
        (.get, "/v1/webhooks", "", [.admin]),
        (.post, "/v1/webhooks", #"{"url": "https://access.example.com/", "types": ["*"]}"#, [.admin]),
        (.get, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000", "", [.admin]),
        (.delete, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000", "", [.admin]),
        (.post, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000/disable", "", [.admin]),
        (.post, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000/enable", "", [.admin]),
        (.post, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000/rotate-secret", "", [.admin]),
        (.post, "/v1/webhooks/wh_00000000-0000-4000-8000-000000000000/replay", #"{"from_seq": 1}"#, [.admin]),
        (.get, "/v1/transactions/1", "", [.service, .support, .auditor, .admin]),
        // Never credited: admitted callers get 404.
        (.get, "/v1/purchases/apple/T-none", "", [.support, .auditor, .admin]),
        (.get, "/v1/outboxes", "", [.auditor, .admin]),
        (.get, "/v1/wallets/p1/notifications", "", [.support, .auditor]),
    ]

    @Test("the table covers every protected route of the router", arguments: TestBackend.all)
    func tableCoversRouter(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let protected = server.routes.routes.filter { !$0.access.isOpen }.map { "\($0.method.rawValue) \($0.path)" }
        let tabled = Self.allowed.map { "\($0.method.rawValue) \($0.path.split(separator: "?")[0])" }
        #expect(protected.count == tabled.count)
        for route in server.routes.routes where !route.access.isOpen {
            let concrete = route.path.replacingOccurrences(of: "{player_id}", with: "p1").replacingOccurrences(of: "{product_id}", with: "new.product")
                .replacingOccurrences(of: "{order_id}", with: "not!an!order").replacingOccurrences(of: "{key_id}", with: "key_none")
                .replacingOccurrences(of: "{hold_id}", with: "00000000-0000-4000-8000-000000000000").replacingOccurrences(of: "{name}", with: "vip")
                .replacingOccurrences(of: "{webhook_id}", with: "wh_00000000-0000-4000-8000-000000000000")
                .replacingOccurrences(of: "{seq}", with: "1").replacingOccurrences(of: "{store_transaction_id}", with: "T-none")
                .replacingOccurrences(of: "{store}", with: "apple")
            #expect(tabled.contains("\(route.method.rawValue) \(concrete)"), "\(route.path) is missing from the access table")
        }
    }

    @Test("each credential is admitted or refused on each route, on each store", arguments: Credential.allCases, TestBackend.all)
    func matrix(_ credential: Credential, backend: TestBackend) async throws {
        let server = try await TestServer(backend, google: InMemoryGooglePlay())
        try await server.credit("p1", quantity: 10)
        let revoked = try await server.store.createAPIKey(role: .admin, name: "gone")
        _ = try await server.store.revokeAPIKey(id: revoked.key.id)
        let authorization: String? = switch credential {
        case .none: nil
        case .admin, .service, .support, .auditor: "Bearer \(server.keys[KeyRole(rawValue: credential.rawValue)!]!)"
        case .playerOwn: "Bearer \(playerToken("p1"))"
        case .playerOther: "Bearer \(playerToken("p2"))"
        case .revokedKey: "Bearer \(revoked.secret)"
        case .expiredToken: "Bearer \(playerToken("p1", expiresIn: -10))"
        case .forgedToken: "Bearer \(playerToken("p1", secret: "another-secret-that-is-long-enough-too"))"
        case .garbage: "Basic dXNlcjpwYXNz"
        }
        try await server.test { client in
            for route in Self.allowed {
                var headers: HTTPFields = route.body.isEmpty ? [:] : .jsonContent
                if let authorization { headers[.authorization] = authorization }
                let response = try await client.execute(uri: route.path, method: route.method, headers: headers, body: route.body.isEmpty ? nil : json(route.body))
                let label = "\(credential.rawValue) \(route.method.rawValue) \(route.path) → \(response.status.code)"
                switch credential {
                case .none, .revokedKey, .expiredToken, .forgedToken, .garbage:
                    #expect(response.status == .unauthorized, "\(label)")
                    #expect(try response.problemCode() == "unauthorized")
                    #expect(response.headers[.wwwAuthenticate] == "Bearer")
                default:
                    if route.allowed.contains(credential) {
                        #expect(response.status != .unauthorized && response.status != .forbidden, "\(label)")
                        #expect(response.status.code < 500, "\(label)")
                    } else {
                        #expect(response.status == .forbidden, "\(label)")
                        #expect(try response.problemCode() == "forbidden")
                    }
                }
            }
        }
    }

    @Test("a hold is resolved by the kind of caller that placed it: the game's by a service key only; a player's own by that player or a service key", arguments: TestBackend.all)
    func holdOwnership(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 10)
        let service = server.bearer(.service) + .jsonContent
        let own: HTTPFields = [.authorization: "Bearer \(playerToken("p1"))", .contentType: "application/json"]
        let other: HTTPFields = [.authorization: "Bearer \(playerToken("p2"))", .contentType: "application/json"]
        try await server.test { client in
            func hold(_ headers: HTTPFields, key: String) async throws -> String {
                let created = try await client.execute(
                    uri: "/v1/wallets/p1/holds", method: .post, headers: headers + [.idempotencyKey: key], body: json(#"{"amount": 5, "expires_in_seconds": 600}"#))
                #expect(created.status == .created)
                return try #require((try created.object()["hold"] as? [String: Any])?["id"] as? String)
            }
            func resolve(_ id: String, _ action: String, _ headers: HTTPFields, key: String) async throws -> (HTTPResponse.Status, String?) {
                let response = try await client.execute(uri: "/v1/holds/\(id)/\(action)", method: .post, headers: headers + [.idempotencyKey: key], body: json("{}"))
                return (response.status, response.status.code >= 400 ? try response.problemCode() : nil)
            }
            let games = try await hold(service, key: "g")
            for action in ["release", "capture"] {
                let (status, code) = try await resolve(games, action, own, key: "x-\(action)")
                #expect(status == .forbidden && code == "forbidden", "the player may not \(action) the game's hold")
                let (otherStatus, otherCode) = try await resolve(games, action, other, key: "y-\(action)")
                #expect(otherStatus == .notFound && otherCode == "not_found", "another player's hold is unknown to them")
            }
            #expect(try await resolve(games, "capture", service, key: "c").0 == .created, "the game captures its own hold in full")
            let players = try await hold(own, key: "o")
            #expect(try await resolve(players, "release", own, key: "r").0 == .created)
            let second = try await hold(own, key: "o2")
            #expect(try await resolve(second, "capture", service, key: "c2").0 == .created, "a service key resolves a player's hold")
            let balance = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: server.bearer(.service))
            #expect(try balance.object()["balances"] as? [String: Int] == ["credits": 40])
        }
        #expect(try await server.store.verify().ok)
    }

    @Test("player tokens: algorithm, subject, not-before, and a server without a secret", arguments: TestBackend.all)
    func playerTokens(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            for token in [
                playerToken("p1", alg: "none"), playerToken("p1", alg: "HS512"), playerToken("p 1"), playerToken(""),
                playerToken("p1", extraClaims: #","nbf":\#(Int(Date().timeIntervalSince1970) + 600)"#),
                playerToken("p1") + "x", "a.b.c", "..", String(repeating: "a.", count: 3000),
            ] {
                let response = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(token)"])
                #expect(response.status == .unauthorized, "\(token.prefix(60))")
            }
            let good = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(good.status == .ok)
        }
        let keysOnly = try await TestServer(backend, playerTokens: false)
        try await keysOnly.test { client in
            let response = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(response.status == .unauthorized)
        }
    }

    @Test("ES256 player tokens: signatures of the configured public key only; HS256, alg none and other keys are refused", arguments: TestBackend.all)
    func es256PlayerTokens(backend: TestBackend) async throws {
        let gameKey = P256.Signing.PrivateKey()
        let otherKey = P256.Signing.PrivateKey()
        let publicKeyPEM = gameKey.publicKey.pemRepresentation
        let server = try await TestServer(backend, tokens: try PlayerTokenVerifier(publicKeyPEM: publicKeyPEM))
        try await server.credit("p1")
        try await server.test { client in
            for token in [
                try es256PlayerToken("p1", key: otherKey), try es256PlayerToken("p1", key: gameKey, alg: "HS256"),
                try es256PlayerToken("p1", key: gameKey, alg: "none"), try es256PlayerToken("p1", key: gameKey, expiresIn: -10),
                try es256PlayerToken("p1", key: gameKey) + "AA", playerToken("p1"),
                // The classic confusion: an HS256 token whose secret is the server's public key.
                playerToken("p1", secret: publicKeyPEM),
            ] {
                let response = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(token)"])
                #expect(response.status == .unauthorized, "\(token.prefix(60))")
                #expect(try response.problemCode() == "unauthorized")
            }
            let good = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(try es256PlayerToken("p1", key: gameKey))"])
            #expect(good.status == .ok)
            let otherWallet = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(try es256PlayerToken("p2", key: gameKey))"])
            #expect(otherWallet.status == .forbidden)
        }
        #expect(throws: APIError.self) { try PlayerTokenVerifier(publicKeyPEM: "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----") }
        #expect(throws: APIError.self) { try PlayerTokenVerifier(publicKeyPEM: P256.Signing.PrivateKey().pemRepresentation) }
    }

    @Test("a player spends from their own wallet, recorded as the player", arguments: TestBackend.all)
    func playerSpends(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            let response = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post,
                headers: .jsonContent + [.authorization: "Bearer \(playerToken("p1"))", .idempotencyKey: "k1"],
                body: json(#"{"amount": 2}"#))
            #expect(response.status == .created)
            let page = try await server.store.history(HistoryQuery(playerID: "p1", limit: 1))
            #expect(page.transactions.first?.actor == "player:p1")
            #expect(page.transactions.first?.kind == .spend)
        }
    }

    @Test("a player's answers show their own postings and what they did, never what support wrote", arguments: TestBackend.all)
    func playerView(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 4)
        _ = try await server.store.adjust(AdjustRequest(
            playerID: "p1", amount: -3, reasonCode: "abuse", note: "internal: suspected chargeback fraud", ticket: "SUP-77",
            idempotencyKey: "SUP-77-1", actor: "key-of-support"))
        /// Checks one transaction as a player sees it; answers its kind.
        @Sendable func checkPlayerView(_ transaction: [String: Any]?) -> String? {
            guard let transaction, let postings = transaction["postings"] as? [[String: Any]] else {
                Issue.record("no transaction with postings in the answer")
                return nil
            }
            for field in ["actor", "ticket", "reason_code", "prev_hash", "hash"] { #expect(transaction[field] == nil, "\(field) shown to the player") }
            #expect(postings.count == 1)
            #expect(postings.allSatisfy { $0["account"] as? String == "player:p1" })
            let kind = transaction["kind"] as? String
            if kind == "spend" {
                #expect(transaction["note"] as? String == "a sword")
                #expect(transaction["idempotency_key"] as? String == "k1")
                #expect((transaction["metadata"] as? [String: Any])?["item"] as? String == "sword")
            } else {
                #expect(transaction["note"] == nil && transaction["idempotency_key"] == nil, "support's note or key shown in a \(kind ?? "?")")
            }
            return kind
        }
        try await server.test { client in
            let player: HTTPFields = [.authorization: "Bearer \(playerToken("p1"))"]
            let spend = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: .jsonContent + player + [.idempotencyKey: "k1"],
                body: json(#"{"amount": 2, "reason": "a sword", "metadata": {"item": "sword"}}"#))
            #expect(spend.status == .created)
            #expect(checkPlayerView(try spend.object()["transaction"] as? [String: Any]) == "spend")
            #expect(try spend.object()["balance"] as? Int == 15)

            for uri in ["/v1/wallets/p1/transactions", "/v1/wallets/p1/statement"] {
                let response = try await client.execute(uri: uri, method: .get, headers: player)
                #expect(response.status == .ok)
                let object = try response.object()
                let transactions = (object["transactions"] as? [[String: Any]])
                    ?? ((object["currencies"] as? [[String: Any]])?.first?["transactions"] as? [[String: Any]]) ?? []
                #expect(transactions.map(checkPlayerView).sorted { ($0 ?? "") < ($1 ?? "") } == ["adjustment", "purchase", "spend"], "\(uri)")
            }

            // Staff see the whole record, support's words included.
            let staff = try await client.execute(uri: "/v1/wallets/p1/transactions?kind=adjustment", method: .get, headers: server.bearer(.support))
            let adjustment = try #require((try staff.object()["transactions"] as? [[String: Any]])?.first)
            #expect(adjustment["note"] as? String == "internal: suspected chargeback fraud")
            #expect(adjustment["ticket"] as? String == "SUP-77")
            #expect(adjustment["actor"] as? String == "key-of-support")
            #expect(adjustment["idempotency_key"] as? String == "SUP-77-1")
            #expect((adjustment["postings"] as? [Any])?.count == 2)
            #expect((adjustment["hash"] as? String)?.count == 64)
        }
    }

    @Test("a key revoked while the server runs is refused within a second", arguments: TestBackend.all)
    func revokedWhileRunning(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let created = try await server.store.createAPIKey(role: .admin, name: "soon gone")
        try await server.test { client in
            let headers: HTTPFields = [.authorization: "Bearer \(created.secret)"]
            #expect(try await client.execute(uri: "/v1/products", method: .get, headers: headers).status == .ok)
            _ = try await server.store.revokeAPIKey(id: created.key.id)
            try await Task.sleep(for: .milliseconds(1_100))
            let refused = try await client.execute(uri: "/v1/products", method: .get, headers: headers)
            #expect(refused.status == .unauthorized)
            #expect(try refused.problemCode() == "unauthorized")
        }
    }

    @Test("the key cache holds valid keys for its lifetime only, and no more than its capacity", arguments: TestBackend.all)
    func keyCache(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let key = try await server.store.createAPIKey(role: .service, name: "cached").key
        let cache = APIKeyCache(lifetime: .milliseconds(50))
        #expect(cache.key(for: "secret") == nil)
        cache.remember(key, for: "secret")
        #expect(cache.key(for: "secret") == key)
        #expect(cache.key(for: "another secret") == nil)
        try await Task.sleep(for: .milliseconds(80))
        #expect(cache.key(for: "secret") == nil)
        let full = APIKeyCache()
        for index in 0..<(APIKeyCache.capacity + 10) { full.remember(key, for: "secret \(index)") }
        #expect(full.count == APIKeyCache.capacity)
        #expect(full.key(for: "secret \(APIKeyCache.capacity + 5)") == nil)
    }

    @Test("secrets shorter than 32 bytes are refused")
    func shortSecret() {
        #expect(throws: APIError.self) { try PlayerTokenVerifier(secret: "short") }
    }
}

