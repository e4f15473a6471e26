import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WalletCore
import WalletTestSupport
@testable import WalletServer

/// What an attacker sends through the HTTP door: look-alike ids, JSON that parsers read
/// differently, out-of-range dates and signed data. Each is a 4xx problem, nothing moves, and
/// the ledger verifies afterwards.
@Suite("Hostile requests", .throttled)
struct HostileRequestTests {
    @Test("a player token for a look-alike of another player's id opens no wallet", arguments: TestBackend.all)
    func lookAlikeTokens(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("Kate", quantity: 2)
        try await server.test { client in
            for alike in ["\\u212Aate", "\\u004Bate\\u200B", "K\\u0430te"] {
                let token = playerToken(alike)
                let read = try await client.execute(uri: "/v1/wallets/Kate", method: .get, headers: [.authorization: "Bearer \(token)"])
                #expect(try read.status == .unauthorized && read.problemCode() == "unauthorized")
                let spend = try await client.execute(
                    uri: "/v1/wallets/Kate/spend", method: .post, headers: .jsonContent + [.authorization: "Bearer \(token)", .idempotencyKey: "k1"],
                    body: json(#"{"amount": 1}"#))
                #expect(spend.status == .unauthorized)
            }
            // The path spelled with a look-alike is not a valid id either.
            for path in [
                "/v1/wallets/%E2%84%AAate", "/v1/wallets/caf%C3%A9", "/v1/wallets/cafe%CC%81", "/v1/wallets/a%E2%80%AEb", "/v1/wallets/%EF%BB%BFKate",
                "/v1/wallets/Ka%zzte", "/v1/wallets/Kate%", "/v1/wallets/Ka%00te", "/v1/wallets/%2E%2E", "/v1/wallets/Ka%2574e",
            ] {
                let response = try await client.execute(uri: path, method: .get, headers: server.bearer(.support))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(path)")
            }
        }
        #expect(try await server.store.balances(playerID: "Kate").balances["credits"] == 10)
        #expect(try await server.store.verify().ok)
    }

    @Test("every id in a path is decoded byte for byte: a byte order mark or a broken escape before a product, key, entitlement or hold id names no real one", arguments: TestBackend.all)
    func pathIDsDecodedByteForByte(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2)
        try await server.test { client in
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: server.bearer(.support))
            let supportKey = try #require(try me.object()["id"] as? String)
            let hold = try await client.execute(
                uri: "/v1/wallets/p1/holds", method: .post, headers: .jsonContent + server.bearer(.service) + [.idempotencyKey: "h1"],
                body: json(#"{"amount": 3, "expires_in_seconds": 600}"#))
            let holdID = try #require(try (hold.object()["hold"] as? [String: Any])?["id"] as? String, "\(String(buffer: hold.body))")
            // Foundation's decoder drops a leading byte order mark: each of these named the real id.
            let requests: [(String, HTTPRequest.Method, KeyRole, String?)] = [
                ("/v1/products/%EF%BB%BFcom.example.consume5credits", .put, .admin, #"{"credits": 500}"#),
                ("/v1/keys/%EF%BB%BF\(supportKey)/revoke", .post, .admin, nil),
                ("/v1/keys/\(supportKey)%2/revoke", .post, .admin, nil),
                ("/v1/holds/%EF%BB%BF\(holdID)/release", .post, .service, "{}"),
                ("/v1/wallets/p1/entitlements/%EF%BB%BFvip", .get, .support, nil),
            ]
            for (uri, method, role, body) in requests {
                var headers = server.bearer(role) + [.idempotencyKey: "bom-\(uri.count)"]
                if body != nil { headers = headers + .jsonContent }
                let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map(json))
                #expect([.badRequest, .notFound].contains(response.status), "\(uri): \(response.status)")
            }
            // Nothing moved: the price, the key, the hold.
            // The product's credits read from the answer: its text may hold "500" elsewhere (a
            // timestamp's milliseconds), as a run once found.
            let products = try await client.execute(uri: "/v1/products", method: .get, headers: server.bearer(.support))
            let listed = try #require(try products.object()["products"] as? [[String: Any]], "the support key still works")
            let credits = listed.first { $0["product_id"] as? String == "com.example.consume5credits" }?["credits"] as? Int
            #expect(products.status == .ok && credits == 5, "the price is unchanged: \(String(buffer: products.body))")
            let holds = try await client.execute(uri: "/v1/wallets/p1/holds", method: .get, headers: server.bearer(.support))
            #expect(String(buffer: holds.body).contains(#""status":"open""#), "\(String(buffer: holds.body))")
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 7)
        #expect(try await server.store.verify().ok)
    }

    @Test("a player id in a body or a query follows the id syntax: each bad one is a 400 in the rule's words, and nothing is written", arguments: TestBackend.all)
    func badPlayerIDsInBodies(backend: TestBackend) async throws {
        let server = try await TestServer(backend, google: InMemoryGooglePlay())
        let jws = try TestServer.apple.transaction("T-bad-player")
        let onlyASCII = "player id may hold only ASCII letters, digits and - _ . : @ + = | ~"
        // Each id as JSON text, and the detail it is answered with (a JSON escape decodes to
        // the look-alike itself).
        let ids: [(json: String, detail: String)] = [
            (#""""#, "player id must not be empty"), (#""\u212Aate""#, onlyASCII), (#""p 1""#, onlyASCII), (#"".""#, "player id must not be '.' or '..'"),
            ("\"\(String(repeating: "p", count: Limits.identifierBytesMax + 1))\"", "player id must be at most \(Limits.identifierBytesMax) bytes"),
        ]
        try await server.test { client in
            for (id, detail) in ids + [("42", "'player_id' must be a string")] {
                for (uri, role, body) in [
                    ("/v1/purchases", KeyRole.service, #"{"player_id": \#(id), "store": "apple", "store_transaction_id": "T1", "product_id": "com.example.consume5credits"}"#),
                    ("/v1/purchases/apple", .service, #"{"player_id": \#(id), "signed_transaction": "\#(jws)"}"#),
                    ("/v1/purchases/apple/receipt", .service, #"{"player_id": \#(id), "receipt": "x"}"#),
                    ("/v1/apple/orders/MQH2JBHVNX/credit", .support, #"{"player_id": \#(id)}"#),
                    ("/v1/purchases/google", .service, #"{"player_id": \#(id), "product_id": "com.example.consume5credits", "purchase_token": "tok-1"}"#),
                ] {
                    let response = try await client.execute(uri: uri, method: .post, headers: server.bearer(role) + .jsonContent, body: json(body))
                    #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(uri) \(id)")
                    #expect(try response.object()["detail"] as? String == detail, "\(uri) \(id)")
                }
            }
            for (id, detail) in ids {
                let link = try await client.execute(
                    uri: "/v1/ledger/export/links", method: .post, headers: server.bearer(.auditor) + .jsonContent, body: json(#"{"player": \#(id)}"#))
                #expect(try link.status == .badRequest && link.object()["detail"] as? String == detail, "\(id)")
            }
            for (query, detail) in [("%E2%84%AAate", onlyASCII), ("p%201", onlyASCII), ("", "player id must not be empty")] {
                let export = try await client.execute(uri: "/v1/ledger/export?player=\(query)", method: .get, headers: server.bearer(.auditor))
                #expect(try export.status == .badRequest && export.problemCode() == "invalid_request" && export.object()["detail"] as? String == detail, "\(query)")
            }
        }
        #expect(try await server.store.verify().transactions == 0)
    }

    @Test("the entitlement routes: look-alike wallets and names, tokens for look-alikes and strict bodies are refused; nothing is written", arguments: TestBackend.all)
    func entitlementRoutes(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        _ = try await server.store.changeEntitlement(
            EntitlementChangeRequest(playerID: "Kate", entitlement: try EntitlementName("vip"), action: .grant(nil), reasonCode: "goodwill", note: "n", idempotencyKey: "k0", actor: "test"))
        try await server.test { client in
            for alike in ["\\u212Aate", "K\\u0430te"] {
                let read = try await client.execute(uri: "/v1/wallets/Kate/entitlements/vip", method: .get, headers: [.authorization: "Bearer \(playerToken(alike))"])
                #expect(try read.status == .unauthorized && read.problemCode() == "unauthorized")
            }
            for path in ["%E2%84%AAate", "cafe%CC%81", "Ka%00te", "%2E%2E", "Ka%2574e"] {
                for uri in ["/v1/wallets/\(path)/entitlements", "/v1/wallets/\(path)/entitlements/vip"] {
                    let response = try await client.execute(uri: uri, method: .get, headers: server.bearer(.support))
                    #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(uri)")
                }
                let post = try await client.execute(
                    uri: "/v1/wallets/\(path)/entitlements", method: .post, headers: server.bearer(.support) + .jsonContent + [.idempotencyKey: "k1"],
                    body: json(#"{"action": "revoke", "entitlement": "vip", "reason_code": "abuse", "note": "n"}"#))
                #expect(try post.status == .badRequest && post.problemCode() == "invalid_request", "\(path)")
            }
            // A name that only looks like `vip`, in the path or the body.
            for name in ["v%C4%B1p", "%EF%BD%96ip", "vip%E2%80%8B", "VIP"] {
                let response = try await client.execute(uri: "/v1/wallets/Kate/entitlements/\(name)", method: .get, headers: server.bearer(.support))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(name)")
            }
            let rest = #""entitlement": "vip", "reason_code": "abuse", "note": "n""#
            let deep = String(repeating: #"{"a":"#, count: 64) + "{}" + String(repeating: "}", count: 64)
            let bodies: [String] = [
                #"{"action": "revoke", "action": "grant", \#(rest)}"#, #"{"\u0061ction": "revoke", "action": "grant", \#(rest)}"#,
                #"{"action": "revoke", "entitlement": "v\u0131p", "reason_code": "abuse", "note": "n"}"#,
                #"{"action": "revoke", "entitlement": "vip\u200B", "reason_code": "abuse", "note": "n"}"#,
                #"{"action": "extend", "days": 1.0, \#(rest)}"#, #"{"action": "extend", "days": 1e3, \#(rest)}"#, #"{"action": "extend", "days": -0, \#(rest)}"#,
                #"{"action": "revoke", "entitlement": "vip", "reason_code": "abuse", "note": "\ud800"}"#, #"{"action": "revoke", "ticket": \#(deep), \#(rest)}"#,
                #"{"action": "revoke\u0000", \#(rest)}"#, String(repeating: "[", count: 60_000),
            ]
            for (index, body) in bodies.enumerated() {
                let response = try await client.execute(
                    uri: "/v1/wallets/Kate/entitlements", method: .post, headers: server.bearer(.support) + .jsonContent + [.idempotencyKey: "h\(index)"], body: json(body))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(body.prefix(60))")
            }
            let still = try await client.execute(uri: "/v1/wallets/Kate/entitlements/vip", method: .get, headers: server.bearer(.service))
            #expect(try still.object()["forever"] as? Bool == true && still.object()["active"] as? Bool == true)
        }
        let report = try await server.store.verify()
        #expect(report.ok && report.transactions == 1)
    }

    @Test("a percent-encoded id that is valid reaches its wallet: %7C is |", arguments: TestBackend.all)
    func percentEncodedValidID(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("auth0|42")
        try await server.test { client in
            let response = try await client.execute(uri: "/v1/wallets/auth0%7C42", method: .get, headers: server.bearer(.support))
            #expect(response.status == .ok)
            #expect(try response.object()["player_id"] as? String == "auth0|42")
        }
    }

    @Test("a player token naming `sub` twice is refused, whichever one a parser would pick", arguments: TestBackend.all)
    func duplicateClaims(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("victim")
        try await server.test { client in
            let token = playerToken("attacker", extraClaims: #","sub":"victim""#)
            let response = try await client.execute(uri: "/v1/wallets/victim", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(response.status == .unauthorized)
        }
    }

    @Test("bodies: a member twice, fractions for amounts, -0, huge numbers, deep nesting, bad UTF-8 and lone surrogates are 400s", arguments: TestBackend.all)
    func strictBodies(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 100)
        let deep = String(repeating: #"{"a":"#, count: 64) + "{}" + String(repeating: "}", count: 64)
        let bodies: [String] = [
            #"{"amount":1000,"amount":1}"#, #"{"amount":1.0}"#, #"{"amount":1e3}"#, #"{"amount":999999999.99999999}"#, #"{"amount":-0}"#,
            #"{"amount":9223372036854775808}"#, #"{"amount":1,"metadata":\#(deep)}"#, #"{"amount":1,"reason":"\ud800"}"#,
            #"{"amount":1,"metadata":{"n":12345678901234567890}}"#, #"{"amount":1,"\u0061mount":2}"#,
            String(repeating: "[", count: 60_000),
        ]
        try await server.test { client in
            for (index, body) in bodies.enumerated() {
                let response = try await client.execute(
                    uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "k\(index)"], body: json(body))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(body.prefix(60))")
            }
            var invalidUTF8 = ByteBuffer(string: #"{"amount":1,"reason":""#)
            invalidUTF8.writeBytes([0xC3, 0x28])
            invalidUTF8.writeString(#""}"#)
            let response = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "utf8"], body: invalidUTF8)
            #expect(response.status == .badRequest)
            #expect(String(decoding: response.body.readableBytesView, as: UTF8.self).contains("UTF-8"))
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 500)
        #expect(try await server.store.verify().ok)
    }

    @Test("metadata nested as deep as the limit is stored and read back by every reader; one level more is a 400", arguments: TestBackend.all)
    func metadataDepth(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        // 63 levels of metadata inside the body's object: 64, the parser's limit.
        let deepest = String(repeating: #"{"a":"#, count: 62) + "{}" + String(repeating: "}", count: 62)
        try await server.test { client in
            let spend = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "deep"],
                body: json(#"{"amount":1,"metadata":\#(deepest)}"#))
            #expect(spend.status == .created)
            let replay = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "deep"],
                body: json(#"{"amount":1,"metadata":\#(deepest)}"#))
            #expect(replay.status == .created && replay.headers[.idempotentReplayed] == "true")
            let history = try await client.execute(uri: "/v1/wallets/p1/transactions", method: .get, headers: server.bearer(.support))
            #expect(history.status == .ok)
            let statement = try await client.execute(uri: "/v1/wallets/p1/statement", method: .get, headers: server.bearer(.support))
            #expect(statement.status == .ok)
            let export = try await client.execute(uri: "/v1/ledger/export?format=jsonl", method: .get, headers: server.bearer(.auditor))
            #expect(export.status == .ok)
            let tooDeep = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "deeper"],
                body: json(#"{"amount":1,"metadata":{"b":\#(deepest)}}"#))
            #expect(tooDeep.status == .badRequest)
        }
    }

    @Test("query timestamps out of range are 400s, not wrapped around", arguments: TestBackend.all, [
        "from=10000-01-01T00:00:00Z", "from=2026-02-30T00:00:00Z", "to=2026-01-01T24:00:00Z", "from=2026-01-01T00:00:60Z",
    ])
    func queryTimestamps(_ backend: TestBackend, _ query: String) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let history = try await client.execute(uri: "/v1/wallets/p1/transactions?\(query)", method: .get, headers: server.bearer(.support))
            #expect(try history.status == .badRequest && history.problemCode() == "invalid_request")
            let export = try await client.execute(uri: "/v1/ledger/export?\(query)", method: .get, headers: server.bearer(.auditor))
            #expect(export.status == .badRequest)
        }
    }

    @Test("an unauthenticated notification signed for year 10000 is a 422, and the server keeps answering", arguments: TestBackend.all)
    func notificationFromYear10000(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let payload = try TestServer.apple.sign([
            "notificationType": "TEST", "notificationUUID": "n-10000", "signedDate": 253_402_300_800_000, "data": ["bundleId": "com.example.game"],
        ])
        try await server.test { client in
            let response = try await client.execute(
                uri: "/v1/notifications/apple", method: .post, headers: .jsonContent, body: json(#"{"signedPayload":"\#(payload)"}"#))
            #expect(try response.status == .unprocessableContent && response.problemCode() == "purchase_invalid")
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
        }
    }

    @Test("a support adjustment's key is not taken by a player's spend with the same key", arguments: TestBackend.all)
    func keyScopes(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2)
        try await server.test { client in
            let spend = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p1"))", .idempotencyKey: "SUP-1240-1"],
                body: json(#"{"amount": 1}"#))
            #expect(spend.status == .created)
            let adjustment = try await client.execute(
                uri: "/v1/wallets/p1/adjustments", method: .post, headers: server.bearer(.support) + .jsonContent + [.idempotencyKey: "SUP-1240-1"],
                body: json(#"{"amount": 5, "reason_code": "goodwill", "note": "outage", "ticket": "SUP-1240"}"#))
            #expect(adjustment.status == .created && adjustment.headers[.idempotentReplayed] == nil)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 14)
    }
}
