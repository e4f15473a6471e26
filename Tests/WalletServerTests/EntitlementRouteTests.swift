import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import WalletCore
@testable import WalletSQLite
@testable import WalletServer
import WalletTestSupport

@Suite("Entitlement routes", .throttled)
struct EntitlementRouteTests {
    /// A pass (`vip` for 30 days, no credits) and a non-consumable (`level_pack_2`, 5 credits).
    static func addEntitlementProducts(_ server: TestServer) async throws {
        _ = try await server.store.setProduct(
            ProductUpdate(productID: "com.example.vip30", credits: 0, type: .nonRenewing, entitlement: try EntitlementName("vip"), duration: try PassDuration("P30D")))
        _ = try await server.store.setProduct(
            ProductUpdate(productID: "com.example.levels2", credits: 5, type: .nonConsumable, entitlement: try EntitlementName("level_pack_2")))
    }

    @Test("the catalog takes type, entitlement and duration, lists them, and refuses each bad value naming its field", arguments: TestBackend.all)
    func catalog(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let admin = server.bearer(.admin) + .jsonContent
            let pass = try await client.execute(
                uri: "/v1/products/com.example.vip30", method: .put, headers: admin,
                body: json(#"{"credits": 0, "type": "non_renewing", "entitlement": "vip", "duration": "P30D"}"#))
            #expect(pass.status == .ok)
            let stored = try pass.object()
            #expect(stored["type"] as? String == "non_renewing" && stored["entitlement"] as? String == "vip" && stored["duration"] as? String == "P30D")
            #expect(stored["credits"] as? Int == 0)
            let plain = try await client.execute(uri: "/v1/products/com.example.plain", method: .put, headers: admin, body: json(#"{"credits": 3}"#))
            #expect(try plain.status == .ok && plain.object()["type"] as? String == "consumable" && plain.object()["entitlement"] == nil)
            let list = try await client.execute(uri: "/v1/products", method: .get, headers: server.bearer(.service))
            let products = try #require(try list.object()["products"] as? [[String: Any]])
            let listed = try #require(products.first { $0["product_id"] as? String == "com.example.vip30" })
            #expect(listed["type"] as? String == "non_renewing" && listed["entitlement"] as? String == "vip" && listed["duration"] as? String == "P30D")
            #expect(products.filter { $0["type"] as? String == "consumable" }.count == products.count - 1)

            let bad: [(body: String, detail: String)] = [
                (#"{"credits": 0, "type": "subscription", "entitlement": "vip"}"#, "type must be one of consumable, non_consumable, non_renewing"),
                (#"{"credits": 0, "type": "non_consumable", "entitlement": "VIP"}"#, "'entitlement' is invalid"),
                (#"{"credits": 0, "type": "non_renewing", "entitlement": "vip", "duration": "30 days"}"#, "duration '30 days'"),
                (#"{"credits": 0, "type": "non_renewing", "entitlement": "vip", "duration": "P11Y"}"#, "duration 'P11Y'"),
                (#"{"credits": 0, "type": "non_renewing", "entitlement": "vip"}"#, "needs an entitlement and a duration"),
                (#"{"credits": 0, "type": "non_consumable", "entitlement": "vip", "duration": "P30D"}"#, "takes no duration"),
                (#"{"credits": 5, "entitlement": "vip"}"#, "a consumable grants credits only"),
                (#"{"credits": 0}"#, "credits must be between 1"),
                (#"{"credits": 0, "type": null, "entitlement": "vip"}"#, "'type' must not be null"),
                (#"{"credits": 0, "type": "non_consumable", "entitlement": "vip", "entitlement": "gold"}"#, "entitlement"),
                (#"{"credits": 0, "type": 1, "entitlement": "vip"}"#, "'type' must be a string"),
            ]
            for (body, detail) in bad {
                let response = try await client.execute(uri: "/v1/products/com.example.bad", method: .put, headers: admin, body: json(body))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(body)")
                let said = try response.object()["detail"] as? String ?? ""
                #expect(said.contains(detail), "\(body): \(said)")
            }
        }
        #expect(try await server.store.products().contains { $0.productID == "com.example.bad" } == false)
    }

    @Test("store purchases of a pass and a non-consumable answer their entitlement; purchased_at starts the period, in the ledger's spelling", arguments: TestBackend.all)
    func purchases(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await Self.addEntitlementProducts(server)
        let yesterday = Timestamp.format(Date().addingTimeInterval(-86_400))
        try await server.test { client in
            let service = server.bearer(.service) + .jsonContent
            let pass = #"{"player_id": "p1", "store": "steam", "store_transaction_id": "S1", "product_id": "com.example.vip30", "purchased_at": "\#(yesterday)"}"#
            let first = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(pass))
            #expect(first.status == .created)
            let entitlement = try #require(try first.object()["entitlement"] as? [String: Any])
            let end = try #require(try PassDuration("P30D").end(from: yesterday))
            #expect(entitlement["name"] as? String == "vip" && entitlement["active"] as? Bool == true && entitlement["forever"] as? Bool == false)
            #expect(entitlement["expires_at"] as? String == end)
            #expect(try first.object()["balance"] as? Int == 0)
            let replay = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(pass))
            #expect(replay.status == .created && replay.headers[.idempotentReplayed] == "true")
            #expect(try (replay.object()["entitlement"] as? [String: Any])?["expires_at"] as? String == end)

            // A second pass bought at the same moment starts where the first ends.
            let second = pass.replacingOccurrences(of: "S1", with: "S2")
            let extended = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(second))
            #expect(try (extended.object()["entitlement"] as? [String: Any])?["expires_at"] as? String == PassDuration("P30D").end(from: end))

            // An offset is the same instant, kept in the ledger's UTC spelling.
            let offset = #"{"player_id": "p2", "store": "steam", "store_transaction_id": "S3", "product_id": "com.example.vip30", "purchased_at": "2026-01-01T02:00:00+02:00"}"#
            let shifted = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(offset))
            #expect(try shifted.status == .created && (shifted.object()["entitlement"] as? [String: Any])?["expires_at"] as? String == "2026-01-31T00:00:00.000Z")
            let p2 = try await client.execute(uri: "/v1/wallets/p2/entitlements", method: .get, headers: server.bearer(.support))
            let items = try #require(((try p2.object()["entitlements"] as? [[String: Any]])?.first?["items"] as? [[String: Any]]))
            #expect(items.map { $0["starts_at"] as? String } == ["2026-01-01T00:00:00.000Z"])
            #expect(items.first?["store_transaction_id"] as? String == "S3" && items.first?["product_id"] as? String == "com.example.vip30")

            for (date, status) in [("yesterday", 400), ("2026-02-30T00:00:00Z", 400)] {
                let bad = pass.replacingOccurrences(of: yesterday, with: date).replacingOccurrences(of: "S1", with: "S9")
                let response = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(bad))
                let said = try response.object()["detail"] as? String ?? ""
                #expect(Int(response.status.code) == status && said.contains("purchased_at"), "\(date): \(said)")
            }

            let levels = #"{"player_id": "p1", "store": "steam", "store_transaction_id": "S4", "product_id": "com.example.levels2"}"#
            let owned = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(levels))
            let forever = try #require(try owned.object()["entitlement"] as? [String: Any])
            #expect(forever["name"] as? String == "level_pack_2" && forever["active"] as? Bool == true && forever["forever"] as? Bool == true)
            #expect(forever["expires_at"] is NSNull, "expires_at is present, and null")
            #expect(try owned.object()["balance"] as? Int == 5)

            // A consumable's answer carries none.
            let credits = #"{"player_id": "p1", "store": "steam", "store_transaction_id": "S5", "product_id": "com.example.consume5credits"}"#
            let plain = try await client.execute(uri: "/v1/purchases", method: .post, headers: service, body: json(credits))
            #expect(try plain.status == .created && plain.object()["entitlement"] == nil)
        }
        let list = try await server.store.entitlements(playerID: "p1")
        #expect(list.entitlements.map(\.name).sorted() == ["level_pack_2", "vip"])
        #expect(try await server.store.verify().ok)
    }

    @Test("support grants, extends and revokes: 201 with the entry and the entitlement after it; replays, reused keys; readers see the result", arguments: TestBackend.all)
    func supportChanges(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            func change(_ body: String, key: String, role: KeyRole = .support) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/wallets/p1/entitlements", method: .post, headers: server.bearer(role) + .jsonContent + [.idempotencyKey: key], body: json(body))
            }
            let before = Timestamp.format(Date())
            let grantBody = #"{"action": "grant", "entitlement": "vip", "duration": "P7D", "reason_code": "goodwill", "note": "outage", "ticket": "SUP-1"}"#
            let granted = try await change(grantBody, key: "SUP-1-1")
            #expect(granted.status == .created && granted.headers[.idempotentReplayed] == nil)
            let transaction = try #require(try granted.object()["transaction"] as? [String: Any])
            #expect(transaction["kind"] as? String == "entitlement" && transaction["amount"] as? Int == 0 && transaction["ticket"] as? String == "SUP-1")
            #expect(granted.headers[.contentType] == "application/json")
            #expect((transaction["metadata"] as? [String: Any])?["reason_code"] as? String == "goodwill")
            let vip = try #require(try granted.object()["entitlement"] as? [String: Any])
            let expiresAt = try #require(vip["expires_at"] as? String)
            #expect(vip["active"] as? Bool == true && vip["forever"] as? Bool == false && vip["items"] == nil)
            let after = Timestamp.format(Date())
            #expect(try expiresAt >= #require(PassDuration("P7D").end(from: before)) && expiresAt <= #require(PassDuration("P7D").end(from: after)))

            let replay = try await change(grantBody, key: "SUP-1-1")
            #expect(replay.status == .created && replay.headers[.idempotentReplayed] == "true")
            #expect(try (replay.object()["transaction"] as? [String: Any])?["seq"] as? Int == transaction["seq"] as? Int)
            let reused = try await change(grantBody.replacingOccurrences(of: "P7D", with: "P8D"), key: "SUP-1-1")
            #expect(try reused.status == .conflict && reused.problemCode() == "idempotency_key_reused")

            let extended = try await change(#"{"action": "extend", "entitlement": "vip", "days": 3, "reason_code": "goodwill", "note": "three more"}"#, key: "SUP-1-2")
            #expect(extended.status == .created)
            let extendedTo = try (extended.object()["entitlement"] as? [String: Any])?["expires_at"] as? String
            #expect(try extendedTo == PassDuration("P3D").end(from: expiresAt))

            let show = try await client.execute(uri: "/v1/wallets/p1/entitlements/vip", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(show.status == .ok)
            #expect(try show.object()["active"] as? Bool == true && show.object()["expires_at"] as? String == extendedTo && show.object()["items"] == nil)

            let revoked = try await change(#"{"action": "revoke", "entitlement": "vip", "reason_code": "chargeback", "note": "bank chargeback"}"#, key: "SUP-1-3", role: .admin)
            #expect(revoked.status == .created)
            let gone = try #require(try revoked.object()["entitlement"] as? [String: Any])
            #expect(gone["active"] as? Bool == false && gone["forever"] as? Bool == false)
            #expect(gone["expires_at"] is NSNull, "a revocation ends what the player held: nothing is left")
            let afterRevoke = try await client.execute(uri: "/v1/wallets/p1/entitlements/vip", method: .get, headers: server.bearer(.service))
            #expect(try afterRevoke.object()["active"] as? Bool == false)

            let forever = try await change(#"{"action": "grant", "entitlement": "level_pack_2", "reason_code": "goodwill", "note": "for ever"}"#, key: "SUP-1-4")
            #expect(try (forever.object()["entitlement"] as? [String: Any])?["forever"] as? Bool == true)

            let never = try await client.execute(uri: "/v1/wallets/p1/entitlements/gold", method: .get, headers: server.bearer(.auditor))
            #expect(try never.status == .ok && never.object()["active"] as? Bool == false && never.object()["expires_at"] is NSNull)

            let list = try await client.execute(uri: "/v1/wallets/p1/entitlements", method: .get, headers: server.bearer(.auditor))
            let entitlements = try #require(try list.object()["entitlements"] as? [[String: Any]])
            #expect(try list.object()["player_id"] as? String == "p1")
            let vipItems = entitlements.first { $0["name"] as? String == "vip" }?["items"] as? [[String: Any]]
            #expect(vipItems?.map { $0["change"] as? String } == ["grant", "extend", "revoke"])
            #expect(vipItems?.map { $0["period"] as? String } == ["P7D", "P3D", nil])
            #expect(entitlements.first { $0["name"] as? String == "level_pack_2" }?["active"] as? Bool == true)

            // The player sees the entries in their history, but not support's reason code.
            let history = try await client.execute(uri: "/v1/wallets/p1/transactions?kind=entitlement", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            let seen = try #require(try history.object()["transactions"] as? [[String: Any]])
            #expect(seen.count == 4)
            #expect(seen.allSatisfy { ($0["metadata"] as? [String: Any])?["reason_code"] == nil && ($0["metadata"] as? [String: Any])?["entitlement"] != nil })
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 0)
        let report = try await server.store.verify()
        #expect(report.ok && report.transactions == 4)
    }

    @Test("only support and admin keys change entitlements; readers read only their own wallet", arguments: TestBackend.all)
    func roles(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let body = #"{"action": "grant", "entitlement": "vip", "reason_code": "goodwill", "note": "n"}"#
        try await server.test { client in
            for headers in [server.bearer(.service), server.bearer(.auditor), [.authorization: "Bearer \(playerToken("p1"))"]] as [HTTPFields] {
                let response = try await client.execute(
                    uri: "/v1/wallets/p1/entitlements", method: .post, headers: headers + .jsonContent + [.idempotencyKey: "k"], body: json(body))
                #expect(try response.status == .forbidden && response.problemCode() == "forbidden")
            }
            for uri in ["/v1/wallets/p1/entitlements", "/v1/wallets/p1/entitlements/vip"] {
                let other = try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(playerToken("p2"))"])
                #expect(try other.status == .forbidden && other.problemCode() == "forbidden", "\(uri)")
                let admin = try await client.execute(uri: uri, method: .get, headers: server.bearer(.admin))
                #expect(admin.status == .forbidden, "\(uri)")
            }
        }
        #expect(try await server.store.verify().transactions == 0)
    }

    struct BadChange: Sendable, CustomTestStringConvertible {
        var body: String
        var key: String? = "k"
        var detail: String
        var testDescription: String { "\(body.prefix(80)) → \(detail)" }
    }

    static let rest = #""reason_code": "goodwill", "note": "n""#

    @Test("bad changes are 400 invalid_request naming what is wrong, and write nothing", arguments: TestBackend.all, [
        BadChange(body: #"{"action": "give", "entitlement": "vip", \#(rest)}"#, detail: "action must be one of grant, revoke, extend"),
        BadChange(body: #"{"action": "GRANT", "entitlement": "vip", \#(rest)}"#, detail: "action must be one of"),
        BadChange(body: #"{"entitlement": "vip", \#(rest)}"#, detail: "'action' is required"),
        BadChange(body: #"{"action": "grant", "entitlement": "VIP", \#(rest)}"#, detail: "'entitlement' is invalid"),
        BadChange(body: #"{"action": "grant", "entitlement": "", \#(rest)}"#, detail: "'entitlement' is invalid"),
        BadChange(body: #"{"action": "grant", "entitlement": "\#(String(repeating: "v", count: 65))", \#(rest)}"#, detail: "at most 64"),
        BadChange(body: #"{"action": "grant", "entitlement": "v\u0131p", \#(rest)}"#, detail: "'entitlement' is invalid"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "duration": "P0D", \#(rest)}"#, detail: "duration 'P0D'"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "duration": "30D", \#(rest)}"#, detail: "duration '30D'"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "duration": "P11Y", \#(rest)}"#, detail: "duration 'P11Y'"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "duration": null, \#(rest)}"#, detail: "must not be null"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "days": 3, \#(rest)}"#, detail: "days belongs to the extend action"),
        BadChange(body: #"{"action": "revoke", "entitlement": "vip", "duration": "P7D", \#(rest)}"#, detail: "a revoke takes neither duration nor days"),
        BadChange(body: #"{"action": "revoke", "entitlement": "vip", "days": 1, \#(rest)}"#, detail: "a revoke takes neither duration nor days"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "duration": "P7D", "days": 1, \#(rest)}"#, detail: "duration belongs to the grant action"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", \#(rest)}"#, detail: "'days' is required"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": 0, \#(rest)}"#, detail: "days must be between 1 and 3660"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": 3661, \#(rest)}"#, detail: "days must be between 1 and 3660"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": -1, \#(rest)}"#, detail: "days must be between 1 and 3660"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": 1.5, \#(rest)}"#, detail: "whole numbers"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": "3", \#(rest)}"#, detail: "'days' must be an integer"),
        BadChange(body: #"{"action": "extend", "entitlement": "vip", "days": 9223372036854775808, \#(rest)}"#, detail: "not a 64-bit integer"),
        BadChange(body: #"{"action": "grant", "action": "revoke", "entitlement": "vip", \#(rest)}"#, detail: "the member 'action' appears twice"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "until": "2030-01-01T00:00:00Z", \#(rest)}"#, detail: "unknown field 'until'"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "reason_code": "Goodwill", "note": "n"}"#, detail: "reason code"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", "reason_code": "goodwill"}"#, detail: "'note' is required"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", \#(rest)}"#, key: nil, detail: "Idempotency-Key header"),
        BadChange(body: #"{"action": "grant", "entitlement": "vip", \#(rest)}"#, key: String(repeating: "k", count: 256), detail: "idempotency key"),
    ])
    func badChanges(_ backend: TestBackend, _ bad: BadChange) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            var headers = server.bearer(.support) + .jsonContent
            if let key = bad.key { headers[.idempotencyKey] = key }
            let response = try await client.execute(uri: "/v1/wallets/p1/entitlements", method: .post, headers: headers, body: json(bad.body))
            #expect(try response.status == .badRequest && response.problemCode() == "invalid_request")
            let detail = try response.object()["detail"] as? String ?? ""
            #expect(detail.contains(bad.detail), "\(detail)")
        }
        #expect(try await server.store.verify().transactions == 0)
    }

    @Test("a bad entitlement name in the path is a 400", arguments: TestBackend.all)
    func badNames(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            for name in ["VIP", "v%C4%B1p", "vip%00", "%2E%2E", "_vip", "vip%20", "%FF", String(repeating: "v", count: 65)] {
                let response = try await client.execute(uri: "/v1/wallets/p1/entitlements/\(name)", method: .get, headers: server.bearer(.support))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(name)")
            }
            let encoded = try await client.execute(uri: "/v1/wallets/p1/entitlements/%76ip", method: .get, headers: server.bearer(.support))
            #expect(try encoded.status == .ok && encoded.object()["name"] as? String == "vip")
        }
    }
}
