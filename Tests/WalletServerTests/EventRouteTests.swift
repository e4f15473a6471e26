import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import WalletCore
@testable import WalletServer
import WalletTestSupport

@Suite("Event feed and webhook routes", .throttled)
struct EventRouteTests {
    @Test("the feed: service, auditor and admin read it; players, support and no key do not; bad parameters are 400s", arguments: TestBackend.all)
    func feedAccess(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            for role in [KeyRole.service, .auditor, .admin] {
                let page = try await client.execute(uri: "/v1/events?after=0", method: .get, headers: server.bearer(role))
                #expect(page.status == .ok, "\(role)")
                let events = try #require(try page.object()["events"] as? [[String: Any]])
                #expect(events.count == 1 && events[0]["type"] as? String == "purchase.credited" && events[0]["balance"] as? Int == 5)
                #expect(try page.object()["next"] as? Int == 1 && page.headers[.cacheControl] == "no-store")
            }
            #expect(try await client.execute(uri: "/v1/events", method: .get, headers: server.bearer(.support)).status == .forbidden)
            #expect(try await client.execute(uri: "/v1/events", method: .get).status == .unauthorized)
            let player = try await client.execute(uri: "/v1/events", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(player.status == .forbidden)
            for query in [
                "after=-1", "after=x", "after=99999999999999999999", "limit=0", "limit=501", "wait=31", "wait=-1", "types=refund", "types=",
                "types=*,refund.applied", "types=" + String(repeating: "refund.applied,", count: 80),
            ] {
                let answer = try await client.execute(uri: "/v1/events?\(query)", method: .get, headers: server.bearer(.service))
                #expect(answer.status == .badRequest, "\(query.prefix(40))")
                #expect(try answer.problemCode() == "invalid_request")
            }
            let filtered = try await client.execute(uri: "/v1/events?types=spend.created,refund.applied&limit=5", method: .get, headers: server.bearer(.service))
            #expect(try filtered.status == .ok && (filtered.object()["events"] as? [Any])?.isEmpty == true && filtered.object()["next"] as? Int == 1)
        }
    }

    @Test("a long poll answers as soon as a transaction commits, or empty with the same cursor when the wait ends", arguments: TestBackend.all)
    func longPoll(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let empty = try await client.execute(uri: "/v1/events?after=0&wait=1", method: .get, headers: server.bearer(.service))
            #expect(try empty.status == .ok && (empty.object()["events"] as? [Any])?.isEmpty == true && empty.object()["next"] as? Int == 0)
            let credit = Task {
                try await Task.sleep(for: .milliseconds(500))
                try await server.credit("p9")
            }
            let started = ContinuousClock.now
            let woken = try await client.execute(uri: "/v1/events?after=0&wait=30", method: .get, headers: server.bearer(.service))
            try await credit.value
            let events = try #require(try woken.object()["events"] as? [[String: Any]])
            #expect(events.count == 1 && events[0]["player_id"] as? String == "p9")
            // Woken by the commit, not by the end of the wait (30 s; the whole test stays far below it).
            #expect(ContinuousClock.now - started < .seconds(29))

            // With types, other transactions do not end the wait: the answer is the refund.
            let commits = Task {
                try await Task.sleep(for: .milliseconds(300))
                _ = try await server.store.spend(SpendRequest(playerID: "p9", amount: 1, idempotencyKey: "poll", actor: "t"))
                try await Task.sleep(for: .milliseconds(700))
                let purchase = try #require(try await server.store.history(HistoryQuery(playerID: "p9", kind: .purchase)).transactions.first)
                _ = try await server.store.refund(RefundRequest(store: "apple", storeTransactionID: purchase.storeTransactionID ?? "", actor: "t"))
            }
            let refund = try await client.execute(uri: "/v1/events?after=1&wait=30&types=refund.applied", method: .get, headers: server.bearer(.service))
            try await commits.value
            let refunds = try #require(try refund.object()["events"] as? [[String: Any]])
            let next = try refund.object()["next"] as? Int
            #expect(refunds.map { $0["type"] as? String } == ["refund.applied"] && next == 3)
        }
    }

    @Test("webhook endpoints over the API: admins add (secret once, no-store), list, show, disable, enable, rotate and replay; others may not", arguments: TestBackend.all)
    func endpointRoutes(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.credit("p1")
        try await server.test { client in
            let admin = server.bearer(.admin) + .jsonContent
            let created = try await client.execute(
                uri: "/v1/webhooks", method: .post, headers: admin,
                body: json(#"{"url": "https://game.example.com/wallet-events", "types": ["refund.applied", "purchase.credited"], "description": "game backend"}"#))
            #expect(created.status == .created && created.headers[.cacheControl] == "no-store", "\(String(buffer: created.body))")
            let body = try created.object()
            let secret = try #require(body["secret"] as? String)
            let endpoint = try #require(body["endpoint"] as? [String: Any])
            let id = try #require(endpoint["id"] as? String)
            #expect(secret.hasPrefix("whsec_") && endpoint["cursor_seq"] as? Int == 2 && endpoint["status"] as? String == "active")
            #expect(endpoint["types"] as? [String] == ["purchase.credited", "refund.applied"] && endpoint["secret"] == nil)

            let list = try await client.execute(uri: "/v1/webhooks", method: .get, headers: server.bearer(.admin))
            let listed = try #require(try list.object()["webhooks"] as? [[String: Any]])
            #expect(listed.count == 1 && listed[0]["id"] as? String == id && !(String(buffer: list.body).contains(secret)))
            #expect(try await client.execute(uri: "/v1/webhooks/\(id)", method: .get, headers: server.bearer(.admin)).object()["url"] as? String == "https://game.example.com/wallet-events")
            let disabled = try await client.execute(uri: "/v1/webhooks/\(id)/disable", method: .post, headers: server.bearer(.admin))
            #expect(try disabled.status == .ok && disabled.object()["status"] as? String == "disabled")
            let enabled = try await client.execute(uri: "/v1/webhooks/\(id)/enable", method: .post, headers: server.bearer(.admin))
            #expect(try enabled.object()["status"] as? String == "active")
            let rotated = try await client.execute(uri: "/v1/webhooks/\(id)/rotate-secret", method: .post, headers: server.bearer(.admin))
            let newSecret = try #require(try rotated.object()["secret"] as? String)
            #expect(newSecret != secret && rotated.headers[.cacheControl] == "no-store")
            #expect(try (rotated.object()["endpoint"] as? [String: Any])?["previous_secret_expires_at"] is String)
            let replayed = try await client.execute(uri: "/v1/webhooks/\(id)/replay", method: .post, headers: admin, body: json(#"{"from_seq": 1}"#))
            #expect(try replayed.status == .ok && replayed.object()["cursor_seq"] as? Int == 0)
            let forward = try await client.execute(uri: "/v1/webhooks/\(id)/replay", method: .post, headers: admin, body: json(#"{"from_seq": 5}"#))
            #expect(try forward.status == .badRequest && forward.problemCode() == "invalid_request")

            // Refusals: each with its code, nothing created.
            let refusals: [(String, HTTPResponse.Status)] = [
                (#"{"url": "file:///etc/passwd", "types": ["*"]}"#, .badRequest),
                (#"{"url": "http://game.example.com/", "types": ["*"]}"#, .badRequest),
                (#"{"url": "https://169.254.169.254/latest", "types": ["*"]}"#, .badRequest),
                (#"{"url": "https://localhost/", "types": ["*"]}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": ["refund"]}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": []}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": ["*"], "url": "https://127.0.0.1/"}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": ["*"], "secret": "mine"}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": "*"}"#, .badRequest),
                (#"{"url": "https://game.example.com/"}"#, .badRequest),
                (#"{"url": "https://game.example.com/", "types": ["*"], "description": ""# + String(repeating: "d", count: 201) + #""}"#, .badRequest),
            ]
            for (request, status) in refusals {
                let answer = try await client.execute(uri: "/v1/webhooks", method: .post, headers: admin, body: json(request))
                #expect(answer.status == status, "\(request.prefix(80))")
            }
            #expect(try await server.store.webhooks().count == 1)
            for role in [KeyRole.service, .support, .auditor] {
                #expect(try await client.execute(uri: "/v1/webhooks", method: .get, headers: server.bearer(role)).status == .forbidden)
                let add = try await client.execute(
                    uri: "/v1/webhooks", method: .post, headers: server.bearer(role) + .jsonContent, body: json(#"{"url": "https://a.example/", "types": ["*"]}"#))
                #expect(add.status == .forbidden)
            }
            for path in ["/v1/webhooks/wh_\(UUID().uuidString.lowercased())", "/v1/webhooks/\(id.uppercased())", "/v1/webhooks/%00", "/v1/webhooks/\(id)x"] {
                #expect(try await client.execute(uri: path, method: .get, headers: server.bearer(.admin)).status == .notFound, "\(path)")
            }
            #expect(try await client.execute(uri: "/v1/webhooks/\(id.uppercased())/disable", method: .post, headers: server.bearer(.admin)).status == .notFound)
            // Removal: refused while active, then done once disabled.
            let active = try await client.execute(uri: "/v1/webhooks/\(id)", method: .delete, headers: server.bearer(.admin))
            #expect(try active.status == .badRequest && active.problemCode() == "invalid_request")
            _ = try await client.execute(uri: "/v1/webhooks/\(id)/disable", method: .post, headers: server.bearer(.admin))
            #expect(try await client.execute(uri: "/v1/webhooks/\(id)", method: .delete, headers: server.bearer(.support)).status == .forbidden)
            let removed = try await client.execute(uri: "/v1/webhooks/\(id)", method: .delete, headers: server.bearer(.admin))
            #expect(try removed.status == .ok && removed.object()["id"] as? String == id)
            #expect(try await client.execute(uri: "/v1/webhooks/\(id)", method: .get, headers: server.bearer(.admin)).status == .notFound)
            #expect(try await server.store.webhooks().isEmpty)
        }
    }
}
