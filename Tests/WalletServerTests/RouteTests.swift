import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import WalletApple
@testable import WalletCore
@testable import WalletSQLite
@testable import WalletServer
import WalletTestSupport

@Suite("Ledger routes", .throttled)
struct LedgerRouteTests {
    @Test("a purchase grant is created once; a replay answers the same body with the replay header", arguments: TestBackend.all)
    func grant(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let body = #"{"player_id": "p1", "store": "apple", "store_transaction_id": "T1", "product_id": "com.example.consume5credits", "quantity": 2}"#
            let first = try await client.execute(uri: "/v1/purchases", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(body))
            #expect(first.status == .created)
            #expect(first.headers[.idempotentReplayed] == nil)
            let object = try first.object()
            #expect(object["balance"] as? Int == 10)
            let transaction = object["transaction"] as? [String: Any]
            #expect(transaction?["kind"] as? String == "purchase" && transaction?["store_transaction_id"] as? String == "T1")
            #expect((transaction?["actor"] as? String)?.hasPrefix("key_") == true)
            #expect(object["replayed"] == nil)
            let again = try await client.execute(uri: "/v1/purchases", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(body))
            #expect(again.status == .created && again.headers[.idempotentReplayed] == "true")
            #expect(again.body == first.body)
            let otherPlayer = body.replacingOccurrences(of: "\"p1\"", with: "\"p2\"")
            let conflict = try await client.execute(uri: "/v1/purchases", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(otherPlayer))
            #expect(try conflict.status == .conflict && (conflict.problemCode()) == "idempotency_key_reused")
            let unknown = body.replacingOccurrences(of: "com.example.consume5credits", with: "nope").replacingOccurrences(of: "T1", with: "T2")
            let unprocessable = try await client.execute(uri: "/v1/purchases", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(unknown))
            #expect(try unprocessable.status == .unprocessableContent && (unprocessable.problemCode()) == "unknown_product")
        }
        #expect(try await server.store.balances(playerID: "p2").balances["credits"] == 0)
    }

    @Test("spend: created, replayed, reused, overdrawn", arguments: TestBackend.all)
    func spend(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            let headers = server.bearer(.service) + .jsonContent + [.idempotencyKey: "order-1"]
            let first = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: headers, body: json(#"{"amount": 3, "reason": "sword", "metadata": {"item": "sword", "level": 3}}"#))
            #expect(first.status == .created)
            let object = try first.object()
            #expect(object["balance"] as? Int == 2)
            #expect(((object["transaction"] as? [String: Any])?["metadata"] as? [String: Any])?["level"] as? Int == 3)
            let replay = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: headers, body: json(#"{"metadata": {"level": 3, "item": "sword"}, "reason": "sword", "amount": 3}"#))
            #expect(replay.status == .created && replay.headers[.idempotentReplayed] == "true" && replay.body == first.body)
            let reused = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: headers, body: json(#"{"amount": 1}"#))
            #expect(try reused.status == .conflict && (reused.problemCode()) == "idempotency_key_reused")
            let overdraft = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(#"{"amount": 3, "idempotency_key": "order-2"}"#))
            #expect(try overdraft.status == .conflict && (overdraft.problemCode()) == "insufficient_funds")
            #expect(try (overdraft.object()["detail"] as? String)?.contains("2 credits") == true)
            let unknownCurrency = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(#"{"amount": 1, "currency": "gold", "idempotency_key": "order-3"}"#))
            #expect(try unknownCurrency.status == .unprocessableContent && (unknownCurrency.problemCode()) == "unknown_currency")
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 2)
    }

    struct BadSpend: Sendable, CustomTestStringConvertible {
        var body: String
        var headers: [HTTPField.Name: String]
        var status: Int
        var testDescription: String { "\(body.prefix(60)) \(headers.keys.map(\.rawName)) → \(status)" }
    }

    @Test("bad spend requests are 4xx problems that change nothing", arguments: TestBackend.all, [
        BadSpend(body: #"{"amount": 0}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": -5}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1.5}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": "1"}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 9223372036854775808}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1000000001}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": null}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1, "currency": null}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1}"#, headers: [:], status: 400),
        BadSpend(body: #"{"amount": 1, "idempotency_key": "a"}"#, headers: [.idempotencyKey: "b"], status: 400),
        BadSpend(body: #"{"amount": 1, "amout": 2}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1, "metadata": [1]}"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1}"#, headers: [.idempotencyKey: String(repeating: "k", count: 256)], status: 400),
        BadSpend(body: #"{"amount": 1"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"[1]"#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #""#, headers: [.idempotencyKey: "k"], status: 400),
        BadSpend(body: #"{"amount": 1}"#, headers: [.idempotencyKey: "k", .contentType: "text/plain"], status: 415),
    ])
    func badSpend(_ backend: TestBackend, _ bad: BadSpend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            var allHeaders = server.bearer(.service) + .jsonContent
            for (name, value) in bad.headers { allHeaders[name] = value }
            let response = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: allHeaders, body: json(bad.body))
            #expect(Int(response.status.code) == bad.status)
            #expect(try response.problemCode() == (bad.status == 415 ? "unsupported_media_type" : "invalid_request"), "\(bad.body)")
        }
        #expect(try await server.store.verify().transactions == 1)
    }

    @Test("a body over 64 KiB is 413 payload_too_large", arguments: TestBackend.all)
    func bodyLimit(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let huge = #"{"amount": 1, "reason": ""# + String(repeating: "x", count: ServerLimits.bodyBytesMax) + #""}"#
            let response = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "k"], body: json(huge))
            #expect(try response.status == .contentTooLarge && (response.problemCode()) == "payload_too_large")
        }
    }

    @Test("bad path parameters are 400", arguments: TestBackend.all)
    func badPath(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            for path in ["/v1/wallets/p%201", "/v1/wallets/%FF", "/v1/wallets/" + String(repeating: "p", count: 256)] {
                let response = try await client.execute(uri: path, method: .get, headers: server.bearer(.service))
                #expect(response.status == .badRequest, "\(path)")
                #expect(try response.problemCode() == "invalid_request")
            }
            let encoded = try await client.execute(uri: "/v1/wallets/user%40example.com", method: .get, headers: server.bearer(.service))
            #expect(try encoded.status == .ok && (encoded.object()["player_id"] as? String) == "user@example.com")
        }
    }

    @Test("adjustments record the support key as actor and require their fields", arguments: TestBackend.all)
    func adjust(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let supportKeyID = try await server.store.apiKeys().first { $0.role == .support }!.id
        try await server.test { client in
            let headers = server.bearer(.support) + .jsonContent + [.idempotencyKey: "SUP-1-1"]
            let response = try await client.execute(
                uri: "/v1/wallets/p1/adjustments", method: .post, headers: headers,
                body: json(#"{"amount": 50, "reason_code": "goodwill", "note": "outage, \"sorry\"", "ticket": "SUP-1"}"#))
            #expect(response.status == .created)
            let transaction = try response.object()["transaction"] as? [String: Any]
            #expect(transaction?["actor"] as? String == supportKeyID && transaction?["ticket"] as? String == "SUP-1")
            let debit = try await client.execute(
                uri: "/v1/wallets/p1/adjustments", method: .post, headers: server.bearer(.admin) + .jsonContent + [.idempotencyKey: "SUP-1-2"],
                body: json(#"{"amount": -60, "reason_code": "chargeback", "note": "n"}"#))
            #expect(try debit.status == .conflict && (debit.problemCode()) == "insufficient_funds")
            let allowed = try await client.execute(
                uri: "/v1/wallets/p1/adjustments", method: .post, headers: server.bearer(.admin) + .jsonContent + [.idempotencyKey: "SUP-1-2"],
                body: json(#"{"amount": -60, "reason_code": "chargeback", "note": "n", "allow_negative": true}"#))
            #expect(try allowed.status == .created && (allowed.object()["balance"] as? Int) == -10)
            for body in [#"{"amount": 5, "reason_code": "goodwill"}"#, #"{"amount": 5, "note": "n"}"#, #"{"amount": 0, "reason_code": "goodwill", "note": "n"}"#] {
                let missing = try await client.execute(uri: "/v1/wallets/p1/adjustments", method: .post, headers: headers + [.idempotencyKey: "x"], body: json(body))
                #expect(try missing.status == .badRequest && (missing.problemCode()) == "invalid_request", "\(body)")
            }
        }
    }

    @Test("refunds: created, replayed, unknown purchase, bad policy", arguments: TestBackend.all)
    func refund(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", transactionID: "T1")
        try await server.test { client in
            let headers = server.bearer(.support) + .jsonContent
            let first = try await client.execute(uri: "/v1/refunds", method: .post, headers: headers, body: json(#"{"store": "apple", "store_transaction_id": "T1", "percentage": 40, "policy": "floor"}"#))
            #expect(try first.status == .created && (first.object()["balance"] as? Int) == 3)
            let again = try await client.execute(uri: "/v1/refunds", method: .post, headers: headers, body: json(#"{"store": "apple", "store_transaction_id": "T1", "percentage": 40, "policy": "floor"}"#))
            #expect(again.headers[.idempotentReplayed] == "true" && again.body == first.body)
            let unknown = try await client.execute(uri: "/v1/refunds", method: .post, headers: headers, body: json(#"{"store": "apple", "store_transaction_id": "T9"}"#))
            #expect(try unknown.status == .notFound && (unknown.problemCode()) == "not_found")
            let policy = try await client.execute(uri: "/v1/refunds", method: .post, headers: headers, body: json(#"{"store": "apple", "store_transaction_id": "T1", "policy": "forgive"}"#))
            #expect(try policy.status == .badRequest && (policy.problemCode()) == "invalid_request")
            let percentage = try await client.execute(uri: "/v1/refunds", method: .post, headers: headers, body: json(#"{"store": "apple", "store_transaction_id": "T1", "percentage": 0}"#))
            #expect(percentage.status == .badRequest)
        }
    }

    @Test("balances and history pages with cursors", arguments: TestBackend.all)
    func reads(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 4)
        for index in 1...4 { _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k\(index)", actor: "t")) }
        try await server.test { client in
            let balance = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: server.bearer(.auditor))
            #expect(balance.status == .ok)
            #expect(try balance.object()["balances"] as? [String: Int] == ["credits": 16])
            var seqs: [Int] = []
            var uri = "/v1/wallets/p1/transactions?limit=2"
            while true {
                let page = try await client.execute(uri: uri, method: .get, headers: server.bearer(.support))
                #expect(page.status == .ok)
                let object = try page.object()
                seqs += (object["transactions"] as? [[String: Any]] ?? []).compactMap { $0["seq"] as? Int }
                guard let next = object["next"] as? Int else { break }
                uri = "/v1/wallets/p1/transactions?limit=2&after=\(next)"
            }
            #expect(seqs == [5, 4, 3, 2, 1])
            let purchases = try await client.execute(uri: "/v1/wallets/p1/transactions?kind=purchase", method: .get, headers: server.bearer(.support))
            #expect(try (purchases.object()["transactions"] as? [Any])?.count == 1)
            let recent = try await client.execute(uri: "/v1/wallets/p1/transactions?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z", method: .get, headers: server.bearer(.support))
            #expect((try recent.object()["transactions"] as? [Any])?.count == 5)
            for query in ["limit=0", "limit=501", "limit=abc", "after=0", "after=x", "kind=gift", "from=yesterday", "to=2000-13-01T00:00:00Z"] {
                let bad = try await client.execute(uri: "/v1/wallets/p1/transactions?\(query)", method: .get, headers: server.bearer(.support))
                #expect(bad.status == .badRequest, "\(query)")
            }
        }
    }

    @Test("the catalog: admin sets, any key lists, bad products are 400", arguments: TestBackend.all)
    func products(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let set = try await client.execute(uri: "/v1/products/com.example.pack", method: .put, headers: server.bearer(.admin) + .jsonContent, body: json(#"{"credits": 50, "currency": "gems", "active": false}"#))
            #expect(try set.status == .ok && (set.object()["credits"] as? Int) == 50)
            let list = try await client.execute(uri: "/v1/products", method: .get, headers: server.bearer(.auditor))
            let products = try list.object()["products"] as? [[String: Any]]
            #expect(products?.map { $0["product_id"] as? String } == ["com.example.consume5credits", "com.example.game.consume5credits", "com.example.gems10", "com.example.pack"])
            for body in [#"{"credits": 0}"#, #"{"credits": 5, "currency": "Gems"}"#, #"{"credits": 5, "store": "App Store"}"#, #"{"credits": 5, "price": 1}"#] {
                let bad = try await client.execute(uri: "/v1/products/x", method: .put, headers: server.bearer(.admin) + .jsonContent, body: json(body))
                #expect(bad.status == .badRequest, "\(body)")
            }
        }
    }
}

@Suite("Operations routes and error handling", .throttled)
struct OperationsRouteTests {
    @Test("health, readiness and metrics are open; every response carries X-Request-Id", arguments: TestBackend.all)
    func operations(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(try health.status == .ok && (health.object()["status"] as? String) == "ok")
            #expect(health.headers[.requestID]?.count == 36)
            let echoed = try await client.execute(uri: "/readyz", method: .get, headers: [.requestID: "trace-123"])
            #expect(echoed.status == .ok && echoed.headers[.requestID] == "trace-123")
            let replaced = try await client.execute(uri: "/readyz", method: .get, headers: [.requestID: String(repeating: "r", count: 129)])
            #expect(replaced.headers[.requestID]?.count == 36)
            let problem = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.requestID: "trace-401"])
            #expect(problem.status == .unauthorized && problem.headers[.requestID] == "trace-401")
            _ = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "m1"], body: json(#"{"amount": 1}"#))
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            let text = String(buffer: metrics.body)
            #expect(metrics.status == .ok && metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            #expect(text.contains(#"wallet_http_requests_total{route="/healthz",method="GET",status="200"}"#))
            #expect(text.contains(#"wallet_ledger_transactions_total{kind="spend"}"#))
            #expect(text.contains("wallet_http_request_duration_seconds_bucket"))
            #expect(!text.contains("p1"), "metrics must not expose player data")
        }
    }

    @Test("unknown paths are 404 and wrong methods 405, as problems", arguments: TestBackend.all)
    func unknownRoutes(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let missing = try await client.execute(uri: "/v2/nothing", method: .get)
            #expect(try missing.status == .notFound && (missing.problemCode()) == "not_found")
            let method = try await client.execute(uri: "/v1/wallets/p1", method: .delete, headers: server.bearer(.admin))
            #expect(method.status == .methodNotAllowed && method.headers[.allow] == "GET")
            #expect(try method.problemCode() == "method_not_allowed")
        }
    }

    @Test("an unexpected error is a logged internal_error problem, never an empty 500", arguments: TestBackend.all)
    func unexpectedError(backend: TestBackend) async throws {
        struct Surprise: Error {}
        let server = try await TestServer(backend)
        server.router.get("/boom") { _, _ -> Response in throw Surprise() }
        // The error is logged, with the request id, where this test reads it (not on the test run's output).
        let logs = LogRecorder()
        try await Application(router: server.router, logger: logs.logger(label: "test-server")).test(.router) { client in
            let response = try await client.execute(uri: "/boom", method: .get, headers: [.requestID: "trace-500"])
            #expect(response.status == .internalServerError)
            #expect(try response.problemCode() == "internal_error")
            #expect(try (response.object()["detail"] as? String)?.contains("trace-500") == true)
        }
        let logged = logs.recorded.filter { $0.message == "unexpected error" }
        #expect(logged.count == 1 && logged.first?.level == .error && logged.first?.metadata["request_id"] == "trace-500")
        #expect(logged.first?.metadata["error"]?.contains("Surprise") == true)
    }

    // SQLite only: what a request's lines carry does not depend on the store.
    @Test("a line a handler logs carries the request id and the authenticated caller as actor, and so does the request line, refused or not; a request without credentials has no actor")
    func loggedWithRequest() async throws {
        let server = try await TestServer(.sqlite)
        let logs = LogRecorder()
        try await Application(router: server.router, logger: logs.logger(label: "test-server", level: .info)).test(.router) { client in
            let created = try await client.execute(
                uri: "/v1/keys", method: .post, headers: server.bearer(.admin) + .jsonContent + [.requestID: "log-actor"],
                body: json(#"{"role": "support", "name": "desk"}"#))
            #expect(created.status == .created)
            let refused = try await client.execute(uri: "/v1/keys", method: .get, headers: [.requestID: "log-anonymous"])
            #expect(refused.status == .unauthorized)
            let forbidden = try await client.execute(uri: "/v1/keys", method: .get, headers: server.bearer(.support) + [.requestID: "log-support"])
            #expect(forbidden.status == .forbidden)
            // A player's token on look-alikes of its own wallet: another player's ("P1", refused)
            // and one that is no player id (a fullwidth "１", invalid); either line names the player.
            let player: HTTPFields = [.authorization: "Bearer \(playerToken("p1"))"]
            let otherCase = try await client.execute(uri: "/v1/wallets/P1", method: .get, headers: player + [.requestID: "log-other-case"])
            #expect(otherCase.status == .forbidden)
            let fullwidth = try await client.execute(uri: "/v1/wallets/p%EF%BC%91", method: .get, headers: player + [.requestID: "log-fullwidth"])
            #expect(fullwidth.status == .badRequest)
        }
        let line = try #require(logs.recorded.first { $0.message == "api key created" })
        let admin = try #require(line.metadata["by"])
        #expect(line.metadata["request_id"] == "log-actor" && line.metadata["actor"] == admin && admin.hasPrefix("key_"))
        let requests = logs.recorded.filter { $0.message == "request" }
        #expect(requests.map { $0.metadata["request_id"] } == ["log-actor", "log-anonymous", "log-support", "log-other-case", "log-fullwidth"])
        #expect(requests.map { $0.metadata["status"] } == ["201", "401", "403", "403", "400"])
        // The support key the route refused, by its id, and the player by the token's subject.
        let support = try #require(try await server.store.apiKeys().first { $0.role == .support }).id
        #expect(requests.map { $0.metadata["actor"] } == [admin, nil, support, "player:p1", "player:p1"])
    }

    @Test("the server's code logs a request's lines with context.log, which adds the request id and actor, never with context.logger")
    func requestLinesCarryTheRequest() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/WalletServer")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var files = 0
        var found: [String] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            files += 1
            for (index, line) in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("context.logger") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                found.append("\(url.lastPathComponent):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(files >= 20, "the server's sources were read (\(files) files)")
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("repeated headers and faulty bodies: a spend is refused naming the same fault whatever the order, and nothing is written", arguments: TestBackend.all)
    func repeatedHeadersAndFaultOrder(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        let before = try await server.store.balances(playerID: "p1").balances["credits"]
        try await server.test { client in
            func spend(_ body: String, key: String? = "k-order", extra: [HTTPField] = []) async throws -> (status: HTTPResponse.Status, field: String?, detail: String, requestID: String?) {
                var headers = server.bearer(.service) + .jsonContent
                if let key { headers[.idempotencyKey] = key }
                for field in extra { headers.append(field) }
                let response = try await client.execute(uri: "/v1/wallets/p1/spend", method: .post, headers: headers, body: json(body))
                let object = try response.object()
                let field = ((object["errors"] as? [[String: Any]])?.first)?["field"] as? String
                return (response.status, field, object["detail"] as? String ?? "", response.headers[.requestID])
            }
            // Several faults: the first by the names' bytes is named, in whichever order they came.
            for body in [#"{"zeta": 1, "amount": null}"#, #"{"amount": null, "zeta": 1}"#] {
                let refused = try await spend(body)
                #expect(refused.status == .badRequest && refused.field == "amount" && refused.detail.contains("must not be null"), "\(body)")
            }
            for body in [#"{"amount": 1, "zeta": 1.5, "beta": 2}"#, #"{"beta": 2, "zeta": 1.5, "amount": 1}"#] {
                let refused = try await spend(body)
                #expect(refused.field == "beta" && refused.detail == "unknown field 'beta'; this route accepts amount, currency, idempotency_key, metadata, reason", "\(body)")
            }
            // A look-alike of a field's name (Cyrillic а, or a decomposed é-style spelling) is another name.
            for name in ["\u{0430}mount", "amount\u{0301}"] {
                #expect(try await spend(#"{"\#(name)": 1}"#).field == name)
            }
            // Two Idempotency-Key headers read as one joined value, which no key may be.
            let twoKeys = try await spend(#"{"amount": 1}"#, key: nil, extra: [HTTPField(name: .idempotencyKey, value: "k1"), HTTPField(name: .idempotencyKey, value: "k2")])
            #expect(twoKeys.status == .badRequest && twoKeys.field == "idempotency_key")
            // Two request ids are no usable id: the answer carries a fresh one.
            let twoIDs = try await spend(#"{"amount": 0}"#, extra: [HTTPField(name: .requestID, value: "r1"), HTTPField(name: .requestID, value: "r2")])
            #expect(twoIDs.status == .badRequest && twoIDs.requestID?.count == 36 && twoIDs.requestID?.contains("r1") == false)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == before)
    }

    @Test("a header is read as HTTPFields' subscript reads it: absent, one value as sent, an empty one, repeated ones joined")
    func headerValues() {
        var fields: HTTPFields = [.contentType: "application/json", .requestID: "a", .idempotencyKey: "k", .retryAfter: ""]
        fields.append(HTTPField(name: HTTPField.Name("X-REQUEST-ID")!, value: "b"))
        fields.append(HTTPField(name: .cookie, value: "c=1"))
        fields.append(HTTPField(name: .cookie, value: "d=2"))
        let names: [HTTPField.Name] = [.contentType, .requestID, .idempotencyKey, .retryAfter, .cookie, .authorization, HTTPField.Name("x-request-Id")!]
        for name in names {
            #expect(fields.value(name) == fields[name], "\(name)")
        }
        #expect(fields.value(.requestID) == "a, b" && fields.value(.cookie) == "c=1; d=2")
        #expect(fields.value(.idempotencyKey) == "k" && fields.value(.retryAfter) == "" && fields.value(.authorization) == nil)
    }

    @Test("every ledger error maps to its status and code", arguments: [
        (WalletError.invalidRequest("x"), 400), (.insufficientFunds(balance: 1, currency: "credits"), 409), (.idempotencyKeyReused("x"), 409),
        (.unknownProduct("x"), 422), (.unknownCurrency("x"), 422), (.notFound("x"), 404), (.unsupportedDatabase("x"), 500), (.storage("x"), 503), (.corrupt("x"), 500), (.overloaded("x"), 503), (.purchaseInvalid("x"), 422), (.notConfigured("x"), 501), (.alreadyRefunded("x"), 409), (.storeUnavailable("x"), 503), (.forbidden("x"), 403), (.tooManyLots("x"), 409),
    ])
    func errorMapping(_ error: WalletError, _ status: Int) {
        let apiError = error.apiError
        #expect(Int(apiError.status.code) == status)
        #expect(apiError.code == error.code && apiError.detail == error.detail)
        #expect((apiError.headers[.retryAfter] != nil) == (status == 503))
    }

    // SQLite only: the database file is overwritten; PostgresStoreTests takes a PostgreSQL server away.
    @Test("readiness fails with 503 when the database is gone")
    func notReady() async throws {
        let directory = try Scratch.directory("gone")
        let path = directory.appendingPathComponent("wallet.sqlite").path
        let store = try SQLiteEngine.open(path: path)
        let (router, _) = buildRouter(store: store, configuration: ServerConfiguration())
        try "garbage".write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: path + "-wal")
        try await Application(router: router, logger: TestServer.quietLogger).test(.router) { client in
            let response = try await client.execute(uri: "/readyz", method: .get)
            #expect(response.status.code >= 500)
            #expect(response.headers[.contentType] == "application/problem+json")
        }
    }
}

@Suite("A live server", .throttled)
struct LiveServerTests {
    @Test("serves a spend over a real socket on 127.0.0.1", arguments: TestBackend.all)
    func live(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.application.test(.live) { client in
            #expect(client.port != nil)
            let response = try await client.execute(
                uri: "/v1/wallets/p1/spend", method: .post, headers: server.bearer(.service) + .jsonContent + [.idempotencyKey: "live-1"], body: json(#"{"amount": 5}"#))
            #expect(try response.status == .created && (response.object()["balance"] as? Int) == 0)
        }
    }
}

@Suite("Auditors' routes", .throttled)
struct AuditRouteTests {
    @Test("the export streams CSV or JSON Lines that verify offline against the head", arguments: TestBackend.all)
    func export(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 3, transactionID: "T1")
        _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 4, idempotencyKey: "k1", reason: "=cmd, \"quoted\"", actor: "t"))
        try await server.credit("p2", transactionID: "T2")
        try await server.test { client in
            let head = try await client.execute(uri: "/v1/ledger/head", method: .get, headers: server.bearer(.auditor))
            #expect(head.status == .ok)
            let headHash = try #require(try head.object()["hash"] as? String)
            #expect(try head.object()["seq"] as? Int == 3)
            for (format, contentType) in [("csv", "text/csv; charset=utf-8"), ("jsonl", "application/jsonl")] {
                let response = try await client.execute(uri: "/v1/ledger/export?format=\(format)", method: .get, headers: server.bearer(.auditor))
                #expect(response.status == .ok && response.headers[.contentType] == contentType)
                let path = Scratch.file("api-export", suffix: ".\(format)")
                try Data(buffer: response.body).write(to: URL(fileURLWithPath: path))
                let report = try ExportFileVerifier.verify(path: path, head: headHash)
                #expect(report.ok && report.transactions == 3, "\(report.problem ?? "")")
            }
            let filtered = try await client.execute(uri: "/v1/ledger/export?format=jsonl&player=p2", method: .get, headers: server.bearer(.admin))
            #expect(String(buffer: filtered.body).hasPrefix(#"{"type":"checkpoint_filtered""#))
            for query in ["format=xml", "from=yesterday", "from=2026-10-02T00:00:00Z&to=2026-10-01T00:00:00Z", "player=a%20b", "currency=Gold"] {
                let bad = try await client.execute(uri: "/v1/ledger/export?\(query)", method: .get, headers: server.bearer(.auditor))
                #expect(bad.status == .badRequest, "\(query)")
                #expect(try bad.problemCode() == "invalid_request")
            }
        }
    }

    // SQLite only: the tamper goes through SQLite's writer, its append-only trigger dropped.
    @Test("verify reports ok with the head hash, and the first bad seq after tampering")
    func verify() async throws {
        let server = try await TestServer(.sqlite)
        try await server.credit("p1", transactionID: "T1")
        try await server.credit("p1", transactionID: "T2")
        try await server.test { client in
            let ok = try await client.execute(uri: "/v1/ledger/verify", method: .get, headers: server.bearer(.auditor))
            let report = try ok.object()
            #expect(report["ok"] as? Bool == true && report["transactions"] as? Int == 2 && report.keys.contains("first_bad_seq"))
        }
        try await server.store.sqliteWriter!.write { db in
            try db.execute(sql: "DROP TRIGGER postings_append_only_update; UPDATE postings SET amount = 6 WHERE seq = 2 AND amount = 5")
        }
        try await server.test { client in
            let bad = try await client.execute(uri: "/v1/ledger/verify", method: .get, headers: server.bearer(.admin))
            #expect(bad.status == .ok)
            let report = try bad.object()
            #expect(report["ok"] as? Bool == false && report["first_bad_seq"] as? Int == 2)
        }
    }

    @Test("a statement adds up, for support and for the player themself", arguments: TestBackend.all)
    func statement(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2, transactionID: "T1")
        _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "k1", actor: "t"))
        try await server.test { client in
            for authorization in ["Bearer \(server.keys[.support]!)", "Bearer \(playerToken("p1"))"] {
                let response = try await client.execute(uri: "/v1/wallets/p1/statement?from=2000-01-01T00:00:00Z", method: .get, headers: [.authorization: authorization])
                #expect(response.status == .ok)
                let currencies = try response.object()["currencies"] as? [[String: Any]]
                let credits = try #require(currencies?.first)
                #expect(credits["opening_balance"] as? Int == 0 && credits["closing_balance"] as? Int == 7)
                #expect((credits["transactions"] as? [Any])?.count == 2)
            }
            let bad = try await client.execute(uri: "/v1/wallets/p1/statement?to=soon", method: .get, headers: server.bearer(.support))
            #expect(bad.status == .badRequest)
        }
    }
}

@Suite("Apple purchases over HTTP", .throttled)
struct ApplePurchaseRouteTests {
    @Test("a StoreKit 2 transaction is verified and credited once; replays, other players and bad tokens are refused", arguments: TestBackend.all)
    func redeem(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let jws = try TestServer.apple.transaction("2000000000000042", quantity: 2)
        try await server.test { client in
            let body = json(#"{"player_id": "p1", "signed_transaction": "\#(jws)"}"#)
            let first = try await client.execute(uri: "/v1/purchases/apple", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p1"))"], body: body)
            #expect(try first.status == .created && (first.object()["balance"] as? Int) == 10)
            let again = try await client.execute(uri: "/v1/purchases/apple", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p1"))"], body: body)
            #expect(again.status == .created && again.headers[.idempotentReplayed] == "true" && again.body == first.body)
            // The game's backend replays it too, and sees the whole record of the same transaction.
            let byService = try await client.execute(uri: "/v1/purchases/apple", method: .post, headers: server.bearer(.service) + .jsonContent, body: body)
            let transaction = try #require(try byService.object()["transaction"] as? [String: Any])
            #expect(byService.headers[.idempotentReplayed] == "true")
            #expect(transaction["id"] as? String == (try first.object()["transaction"] as? [String: Any])?["id"] as? String)
            #expect(transaction["actor"] as? String == "player:p1" && (transaction["postings"] as? [Any])?.count == 2)
            let other = try await client.execute(
                uri: "/v1/purchases/apple", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: json(#"{"player_id": "p2", "signed_transaction": "\#(jws)"}"#))
            #expect(try other.status == .conflict && (other.problemCode()) == "idempotency_key_reused")
            let forged = try await client.execute(
                uri: "/v1/purchases/apple", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: json(#"{"player_id": "p1", "signed_transaction": "\#(try TestServer.apple.transaction("T9", changes: ["bundleId": "com.evil"]))"}"#))
            #expect(try forged.status == .unprocessableContent && (forged.problemCode()) == "purchase_invalid")
            #expect(try (forged.object()["detail"] as? String)?.contains("bundle id mismatch") == true)
            let notJWS = try await client.execute(
                uri: "/v1/purchases/apple", method: .post, headers: server.bearer(.service) + .jsonContent, body: json(#"{"player_id": "p1", "signed_transaction": "x"}"#))
            #expect(notJWS.status == .unprocessableContent)
        }
        #expect(try await server.store.balances(playerID: "p2").balances["credits"] == 0)
    }

    @Test("a restore grants a non-consumable once, whatever transaction id of the purchase comes back; another player is refused; the body takes one of its two members", arguments: TestBackend.all)
    func restore(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        _ = try await server.store.setProduct(
            ProductUpdate(productID: "com.example.game.noads", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        let bought = try TestServer.apple.transaction("7001", product: "com.example.game.noads", changes: ["type": "Non-Consumable"])
        let restored = try TestServer.apple.transaction(
            "7002", product: "com.example.game.noads", changes: ["type": "Non-Consumable", "originalTransactionId": "7001"])
        let own: HTTPFields = .jsonContent + [.authorization: "Bearer \(playerToken("p1"))"]
        try await server.test { client in
            let first = try await client.execute(
                uri: "/v1/wallets/p1/restore", method: .post, headers: own, body: json(#"{"signed_transactions": ["\#(bought)"]}"#))
            #expect(first.status == .created, "\(String(buffer: first.body))")
            let granted = try #require(try first.object()["granted"] as? [[String: Any]])
            #expect(granted.count == 1 && granted.first?["store_transaction_id"] as? String == "7001")
            #expect((granted.first?["entitlement"] as? [String: Any])?["forever"] as? Bool == true)
            let again = try await client.execute(
                uri: "/v1/wallets/p1/restore", method: .post, headers: own, body: json(#"{"signed_transactions": ["\#(restored)"]}"#))
            #expect(again.status == .ok)
            #expect(try (again.object()["already_granted"] as? [Any])?.count == 1 && (again.object()["granted"] as? [Any])?.isEmpty == true)
            let other = try await client.execute(
                uri: "/v1/wallets/p2/restore", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: json(#"{"signed_transactions": ["\#(restored)"]}"#))
            #expect(other.status == .ok)
            #expect(try (other.object()["refused"] as? [[String: Any]])?.first?["code"] as? String == "already_credited_elsewhere")
            let notOwn = try await client.execute(
                uri: "/v1/wallets/p2/restore", method: .post, headers: own, body: json(#"{"signed_transactions": ["\#(bought)"]}"#))
            #expect(try notOwn.status == .forbidden && notOwn.problemCode() == "forbidden")
            for body in [#"{}"#, #"{"signed_transactions": [], "receipt": "x"}"#, #"{"signed_transactions": []}"#, #"{"signed_transactions": ["a"], "signed_transactions": ["b"]}"#] {
                let refused = try await client.execute(uri: "/v1/wallets/p1/restore", method: .post, headers: own, body: json(body))
                #expect(try refused.status == .badRequest && refused.problemCode() == "invalid_request", "\(body)")
            }
            let access = try await client.execute(uri: "/v1/wallets/p1/entitlements/no_ads", method: .get, headers: own)
            #expect(try access.status == .ok && access.object()["active"] as? Bool == true)
        }
        #expect(try await server.store.entitlements(playerID: "p2").entitlements.isEmpty)
        #expect(try await server.store.verify().ok)
    }

    @Test("without a bundle id the route answers not_configured", arguments: TestBackend.all)
    func notConfigured(backend: TestBackend) async throws {
        let server = try await TestServer(backend, apple: false)
        try await server.test { client in
            let response = try await client.execute(
                uri: "/v1/purchases/apple", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: json(#"{"player_id": "p1", "signed_transaction": "\#(try TestServer.apple.transaction("T1"))"}"#))
            #expect(try response.status == .notImplemented && (response.problemCode()) == "not_configured")
        }
    }
}

@Suite("App Store Server API routes over HTTP", .throttled)
struct AppleServerAPIRouteTests {
    @Test("a StoreKit 1 receipt is credited once for its player; other players, bad receipts and a failing Apple are refused with nothing credited", arguments: TestBackend.all)
    func receipt(_ backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.addCustomer([try TestServer.apple.transaction("8001"), try TestServer.apple.transaction("8002", quantity: 2)])
        let server = try await TestServer(backend, appleAPI: try apple.apiConfiguration())
        let receipt = try TestReceipt.with(transactionIDs: ["8001", "8002"], signedBy: TestServer.apple)
        let own: HTTPFields = .jsonContent + [.authorization: "Bearer \(playerToken("p1"))"]
        try await server.test { client in
            let body = json(#"{"player_id": "p1", "receipt": "\#(receipt)"}"#)
            let first = try await client.execute(uri: "/v1/purchases/apple/receipt", method: .post, headers: own, body: body)
            #expect(first.status == .created)
            #expect(try (first.object()["credited"] as? [[String: Any]])?.compactMap { $0["store_transaction_id"] as? String }.sorted() == ["8001", "8002"])
            let again = try await client.execute(uri: "/v1/purchases/apple/receipt", method: .post, headers: own, body: body)
            #expect(again.status == .ok)
            #expect(try (again.object()["already_credited"] as? [Any])?.count == 2 && (again.object()["credited"] as? [Any])?.isEmpty == true)
            let otherPlayer = try await client.execute(
                uri: "/v1/purchases/apple/receipt", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p2"))"], body: body)
            #expect(try otherPlayer.status == .forbidden && otherPlayer.problemCode() == "forbidden")
            let notReceipt = try await client.execute(
                uri: "/v1/purchases/apple/receipt", method: .post, headers: own, body: json(#"{"player_id": "p1", "receipt": "\#(String(repeating: "A", count: 200_000))"}"#))
            #expect(try notReceipt.status == .badRequest && notReceipt.problemCode() == "invalid_request", "a long receipt is read, not refused for its size")
            let tooLong = try await client.execute(
                uri: "/v1/purchases/apple/receipt", method: .post, headers: own,
                body: json(#"{"player_id": "p1", "receipt": "\#(String(repeating: "A", count: ServerLimits.receiptBodyBytesMax))"}"#))
            #expect(try tooLong.status == .contentTooLarge && tooLong.problemCode() == "payload_too_large")
            let asked = apple.seen.count
            apple.script(.failure(status: 500), .failure(status: 500), .failure(status: 500), .failure(status: 500))
            let down = try await client.execute(
                uri: "/v1/purchases/apple/receipt", method: .post, headers: server.bearer(.service) + .jsonContent,
                body: json(#"{"player_id": "p3", "receipt": "\#(receipt)"}"#))
            #expect(try down.status == .serviceUnavailable && down.problemCode() == "store_unavailable" && down.headers[.retryAfter] != nil)
            #expect(apple.seen.count == asked + 4)
            // A trusted service key neither spends nor is stopped by a player's allowance.
            for _ in 1...11 {
                let response = try await client.execute(
                    uri: "/v1/purchases/apple/receipt", method: .post, headers: server.bearer(.service) + .jsonContent,
                    body: json(#"{"player_id": "p4", "receipt": "x"}"#))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request")
            }
            // A player's own receipts cost the app Apple's allowance: at most 10 a minute per player.
            var statuses: [TestResponse] = []
            for _ in 1...11 {
                statuses.append(
                    try await client.execute(
                        uri: "/v1/purchases/apple/receipt", method: .post, headers: .jsonContent + [.authorization: "Bearer \(playerToken("p4"))"],
                        body: json(#"{"player_id": "p4", "receipt": "x"}"#)))
            }
            #expect(statuses.prefix(10).allSatisfy { $0.status == .badRequest })
            let limited = try #require(statuses.last)
            #expect(try limited.status == .tooManyRequests && limited.problemCode() == "rate_limited" && limited.headers[.retryAfter] != nil)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 15)
        #expect(try await server.store.balances(playerID: "p3").balances["credits"] == 0)
        #expect(try await server.store.verify().ok)
    }

    @Test("support looks an order up and credits what it holds once; look-alike order ids never reach Apple", arguments: TestBackend.all)
    func orders(_ backend: TestBackend) async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        apple.addOrder("MQH2JBHVNX", signedTransactions: [try TestServer.apple.transaction("9001")])
        let server = try await TestServer(backend, appleAPI: try apple.apiConfiguration())
        try await server.test { client in
            let looked = try await client.execute(uri: "/v1/apple/orders/MQH2JBHVNX", method: .get, headers: server.bearer(.support))
            #expect(looked.status == .ok)
            #expect(try (looked.object()["transactions"] as? [[String: Any]])?.map { $0["status"] as? String } == ["not_credited"])
            let credit = try await client.execute(
                uri: "/v1/apple/orders/MQH2JBHVNX/credit", method: .post, headers: server.bearer(.support) + .jsonContent, body: json(#"{"player_id": "p1"}"#))
            let entry = try #require((try credit.object()["transactions"] as? [[String: Any]])?.first)
            #expect(credit.status == .ok && entry["status"] as? String == "credited_now" && (entry["credit"] as? [String: Any])?["player_id"] as? String == "p1")
            let twice = try await client.execute(
                uri: "/v1/apple/orders/MQH2JBHVNX/credit", method: .post, headers: server.bearer(.admin) + .jsonContent, body: json(#"{"player_id": "p2"}"#))
            #expect(try (twice.object()["transactions"] as? [[String: Any]])?.first?["status"] as? String == "credited")
            let unknown = try await client.execute(uri: "/v1/apple/orders/NOSUCHORDER", method: .get, headers: server.bearer(.support))
            #expect(try unknown.status == .notFound && unknown.problemCode() == "not_found")
            let asked = apple.seen.count
            for lookAlike in ["..%2Fhistory%2F1", "MQH2JBHVNX%3Fx%3D1", "MQH2%20JBHVNX", String(repeating: "A", count: 65)] {
                let response = try await client.execute(uri: "/v1/apple/orders/\(lookAlike)", method: .get, headers: server.bearer(.support))
                #expect(try response.status == .badRequest && response.problemCode() == "invalid_request", "\(lookAlike)")
            }
            #expect(apple.seen.count == asked)
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 5)
        #expect(try await server.store.balances(playerID: "p2").balances["credits"] == 0)
    }
}

@Suite("Apple notifications over HTTP", .throttled)
struct AppleNotificationRouteTests {
    @Test("a signed REFUND is applied once without credentials; a forged one is a 4xx that records nothing", arguments: TestBackend.all)
    func notification(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let transaction = try TestServer.apple.transaction("2000000000000099")
        _ = try await server.store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "2000000000000099", productID: "com.example.game.consume5credits", actor: "t"))
        let revoked = try TestServer.apple.transaction("2000000000000099", changes: ["revocationDate": AppleTestAuthority.milliseconds(Date())])
        let refund = try TestServer.apple.notification("REFUND", uuid: "n-http-1", signedTransaction: revoked)
        try await server.test { client in
            let forged = try await client.execute(
                uri: "/v1/notifications/apple", method: .post, headers: .jsonContent,
                body: json(#"{"signedPayload": "\#(String(refund.dropLast(4)) + "AAAA")"}"#))
            #expect(try forged.status == .unprocessableContent && forged.problemCode() == "purchase_invalid")
            let applied = try await client.execute(uri: "/v1/notifications/apple", method: .post, headers: .jsonContent, body: json(#"{"signedPayload": "\#(refund)"}"#))
            #expect(applied.status == .ok)
            #expect(try applied.object()["outcome"] as? String == "refunded" && applied.object()["replayed"] as? Bool == false)
            let again = try await client.execute(uri: "/v1/notifications/apple", method: .post, headers: .jsonContent, body: json(#"{"signedPayload": "\#(refund)"}"#))
            #expect(try again.status == .ok && again.object()["replayed"] as? Bool == true)
            let test = try await client.execute(
                uri: "/v1/notifications/apple", method: .post, headers: .jsonContent,
                body: json(#"{"signedPayload": "\#(try TestServer.apple.notification("TEST", signedTransaction: nil))"}"#))
            #expect(try test.object()["outcome"] as? String == "recorded")
            let consumption = try await client.execute(
                uri: "/v1/notifications/apple", method: .post, headers: .jsonContent,
                body: json(#"{"signedPayload": "\#(try TestServer.apple.notification("CONSUMPTION_REQUEST", signedTransaction: transaction))"}"#))
            #expect(try consumption.object()["outcome"] as? String == "consumption_recorded")
        }
        #expect(try await server.store.balances(playerID: "p1").balances["credits"] == 0)
    }
}

@Suite("Keys and the console over HTTP", .throttled)
struct KeyAndConsoleRouteTests {
    @Test("/v1/me names the calling key; an admin creates a key (secret shown once), lists keys without secrets, and revokes one", arguments: TestBackend.all)
    func keys(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: server.bearer(.support))
            #expect(try me.status == .ok && me.object()["role"] as? String == "support" && me.object()["secret"] == nil)
            let player = try await client.execute(uri: "/v1/me", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(player.status == .forbidden)

            let created = try await client.execute(
                uri: "/v1/keys", method: .post, headers: server.bearer(.admin) + .jsonContent, body: json(#"{"role": "auditor", "name": "Ann"}"#))
            #expect(created.status == .created && created.headers[.cacheControl] == "no-store")
            let secret = try #require(try created.object()["secret"] as? String)
            let id = try #require((try created.object()["key"] as? [String: Any])?["id"] as? String)

            let listed = try await client.execute(uri: "/v1/keys", method: .get, headers: server.bearer(.admin))
            let keys = try #require(try listed.object()["keys"] as? [[String: Any]])
            #expect(keys.contains { $0["id"] as? String == id && $0["role"] as? String == "auditor" })
            #expect(!String(buffer: listed.body).contains(secret) && keys.allSatisfy { $0["secret"] == nil && $0["key_hash"] == nil })

            let revoked = try await client.execute(uri: "/v1/keys/\(id)/revoke", method: .post, headers: server.bearer(.admin))
            #expect(try revoked.status == .ok && revoked.object()["revoked_at"] is String)
            let refused = try await client.execute(uri: "/v1/me", method: .get, headers: [.authorization: "Bearer \(secret)"])
            #expect(refused.status == .unauthorized, "a key revoked before its first use is refused at once")
            let unknown = try await client.execute(uri: "/v1/keys/key_0000000000000000/revoke", method: .post, headers: server.bearer(.admin))
            #expect(try unknown.status == .notFound && unknown.problemCode() == "not_found")
            for body in [#"{"role": "root", "name": "x"}"#, #"{"role": "support", "name": ""}"#, #"{"role": "support"}"#, #"{"role": "support", "name": "x", "secret": "mine"}"#] {
                let bad = try await client.execute(uri: "/v1/keys", method: .post, headers: server.bearer(.admin) + .jsonContent, body: json(body))
                #expect(try bad.status == .badRequest && bad.problemCode() == "invalid_request", "\(body)")
            }
        }
        #expect(try await server.store.apiKeys().count == KeyRole.allCases.count + 1)
    }

    @Test("the console's files are served from the binary with a strict policy, and hold no inline script or style", arguments: TestBackend.all)
    func console(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            for (path, type) in [("/console/", "text/html"), ("/console", "text/html"), ("/console/console.js", "text/javascript"), ("/console/console.css", "text/css")] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok && response.headers[.contentType]?.hasPrefix(type) == true, "\(path)")
                let policy = try #require(response.headers[.contentSecurityPolicy])
                #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe"))
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
            for path in ["/console/nope.js", "/console/..%2Fopenapi.json", "/console/index.html"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .notFound, "\(path)")
            }
            let page = String(buffer: try await client.execute(uri: "/console/", method: .get).body)
            #expect(page.range(of: #"<script(?![^>]*\bsrc=)"#, options: .regularExpression) == nil, "every script is a file")
            #expect(!page.contains(" style=") && !page.contains("<style") && page.range(of: #" on[a-z]+="#, options: .regularExpression) == nil)
            #expect(!page.contains(" name="), "no field is ever submitted by the browser itself")
            #expect(page.contains(#"<label for="api-key">API key</label>"#))
        }
    }
}

@Suite("Export download links", .throttled)
struct ExportLinkRouteTests {
    @Test("an auditor's link downloads the export once without a key; bad periods are refused when the link is made", arguments: TestBackend.all)
    func links(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        try await server.test { client in
            let made = try await client.execute(
                uri: "/v1/ledger/export/links", method: .post, headers: server.bearer(.auditor) + .jsonContent, body: json(#"{"format": "csv"}"#))
            #expect(made.status == .created && made.headers[.cacheControl] == "no-store")
            let url = try #require(try made.object()["url"] as? String)
            #expect(try url.hasPrefix("/v1/ledger/export/links/") && made.object()["expires_in_seconds"] as? Int == 60)

            let direct = try await client.execute(uri: "/v1/ledger/export?format=csv", method: .get, headers: server.bearer(.auditor))
            let followed = try await client.execute(uri: url, method: .get)
            #expect(followed.status == .ok && followed.headers[.contentType]?.hasPrefix("text/csv") == true)
            #expect(followed.body == direct.body, "the link's export is the export")
            let again = try await client.execute(uri: url, method: .get)
            #expect(try again.status == .notFound && again.problemCode() == "not_found", "a link is used once")
            let guessed = try await client.execute(uri: "/v1/ledger/export/links/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", method: .get)
            #expect(guessed.status == .notFound)

            for body in [#"{"from": "2026-13-01T00:00:00Z"}"#, #"{"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}"#, #"{"format": "xml"}"#, #"{"player": "bad id"}"#] {
                let bad = try await client.execute(uri: "/v1/ledger/export/links", method: .post, headers: server.bearer(.auditor) + .jsonContent, body: json(body))
                #expect(try bad.status == .badRequest && bad.problemCode() == "invalid_request", "\(body)")
            }
            let support = try await client.execute(uri: "/v1/ledger/export/links", method: .post, headers: server.bearer(.support) + .jsonContent, body: json("{}"))
            #expect(support.status == .forbidden)
        }
    }
}

@Suite("Daily volume", .throttled)
struct VolumeRouteTests {
    @Test("transactions per UTC day, kind and currency, counted and summed by magnitude; periods are bounded", arguments: TestBackend.all)
    func volume(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2)
        try await server.credit("p2")
        _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "v1", actor: "t"))
        let today = try #require(try await server.store.head().at?.prefix(10))
        let from = Timestamp.format(Date().addingTimeInterval(-86_400)), to = Timestamp.format(Date().addingTimeInterval(86_400))
        try await server.test { client in
            let response = try await client.execute(uri: "/v1/ledger/volume?from=\(from)&to=\(to)", method: .get, headers: server.bearer(.auditor))
            #expect(response.status == .ok)
            let days = try #require(try response.object()["days"] as? [[String: Any]])
            let summary = days.map { "\($0["day"] as? String ?? "") \($0["kind"] as? String ?? "") \($0["currency"] as? String ?? "") \($0["count"] as? Int ?? -1) \($0["amount"] as? Int ?? -1)" }
            #expect(summary == ["\(today) purchase credits 2 15", "\(today) spend credits 1 3"])
            let empty = try await client.execute(uri: "/v1/ledger/volume?from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z", method: .get, headers: server.bearer(.admin))
            #expect(try (empty.object()["days"] as? [Any])?.isEmpty == true)
            for query in ["from=2026-01-01T00:00:00Z", "from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from=x&to=y"] {
                let bad = try await client.execute(uri: "/v1/ledger/volume?\(query)", method: .get, headers: server.bearer(.auditor))
                #expect(try bad.status == .badRequest && bad.problemCode() == "invalid_request", "\(query)")
            }
        }
    }
}

@Suite("Export links", .throttled)
struct ExportLinksTests {
    @Test("a link expires, is taken once, and one caller cannot hold more than its share")
    func lifetimeAndShares() throws {
        let expiring = ExportLinks(lifetime: .zero)
        let token = try expiring.make(ExportQuery(), format: .csv, createdBy: "a")
        #expect(expiring.take(token) == nil, "expired")
        let links = ExportLinks()
        let kept = try links.make(ExportQuery(), format: .jsonl, createdBy: "a")
        #expect(links.take(kept)?.format == .jsonl && links.take(kept) == nil)
        for _ in 0..<ExportLinks.perCreatorMax { _ = try links.make(ExportQuery(), format: .csv, createdBy: "greedy") }
        let refused = #expect(throws: APIError.self) { try links.make(ExportQuery(), format: .csv, createdBy: "greedy") }
        #expect(refused?.status == .tooManyRequests && refused?.code == "rate_limited")
        #expect(try links.make(ExportQuery(), format: .csv, createdBy: "other").count >= 43, "others still get links")
    }
}

@Suite("Bonuses and lots over HTTP", .throttled)
struct BonusRouteTests {
    @Test("the lot list is paged: limit and after, next only when another page follows; a bad limit or a lot of another wallet is a 400", arguments: TestBackend.all)
    func lotPages(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        for index in 0..<3 { try await server.credit("p1", transactionID: "T\(index)") }
        try await server.credit("p2", transactionID: "Q")
        try await server.test { client in
            let headers = server.bearer(.service)
            var ids: [Int] = []
            var after = ""
            var pages = 0
            while true {
                let page = try await client.execute(uri: "/v1/wallets/p1/lots?limit=2\(after)", method: .get, headers: headers)
                #expect(page.status == .ok)
                let object = try page.object()
                ids += (object["lots"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
                pages += 1
                guard let next = object["next"] as? Int else {
                    #expect(!String(buffer: page.body).contains("next"), "no next member on the last page")
                    break
                }
                #expect(next == ids.last)
                after = "&after=\(next)"
            }
            #expect(pages == 2 && ids.count == 3 && ids == ids.sorted(), "three purchase lots, oldest first, over two pages")
            let other = try await client.execute(uri: "/v1/wallets/p2/lots", method: .get, headers: headers)
            let otherID = try #require((try other.object()["lots"] as? [[String: Any]])?.first?["id"] as? Int)
            for query in ["limit=0", "limit=501", "after=0", "after=\(otherID)", "limit=two"] {
                let refused = try await client.execute(uri: "/v1/wallets/p1/lots?\(query)", method: .get, headers: headers)
                #expect(try refused.status == .badRequest && refused.problemCode() == "invalid_request", "\(query)")
            }
        }
    }

    @Test("a bonus is created once and shows as a lot, with what expires within 7 days on the balance; a past expiry is a 400", arguments: TestBackend.all)
    func bonus(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1")
        let soon = Timestamp.format(Date().addingTimeInterval(86_400))
        try await server.test { client in
            let headers = server.bearer(.service) + .jsonContent + [.idempotencyKey: "b1"]
            let body = json(#"{"amount": 3, "expires_at": "\#(soon)", "reason_code": "daily_login", "campaign": "november"}"#)
            let first = try await client.execute(uri: "/v1/wallets/p1/bonuses", method: .post, headers: headers, body: body)
            #expect(try first.status == .created && first.object()["balance"] as? Int == 8)
            let again = try await client.execute(uri: "/v1/wallets/p1/bonuses", method: .post, headers: headers, body: body)
            #expect(again.headers[.idempotentReplayed] == "true" && again.body == first.body)
            let balance = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(try (balance.object()["expiring_within_7_days"] as? [String: Int]) == ["credits": 3])
            let lots = try await client.execute(uri: "/v1/wallets/p1/lots", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            let listed = try #require(try lots.object()["lots"] as? [[String: Any]])
            #expect(listed.map { "\($0["category"] as? String ?? "") \($0["remaining"] as? Int ?? -1)" } == ["bonus 3", "paid 5"], "burn order: the expiring bonus first")
            let past = try await client.execute(
                uri: "/v1/wallets/p1/bonuses", method: .post, headers: server.bearer(.support) + .jsonContent + [.idempotencyKey: "b2"],
                body: json(#"{"amount": 3, "expires_at": "2020-01-01T00:00:00Z", "reason_code": "event"}"#))
            #expect(try past.status == .badRequest && past.problemCode() == "invalid_request")
            for (index, bad) in [
                #"{"amount": 1, "expires_at": "2026-02-30T00:00:00Z", "reason_code": "event"}"#, #"{"amount": 1, "expires_at": "10000-01-01T00:00:00Z", "reason_code": "event"}"#,
                #"{"amount": 1, "expires_at": "tomorrow", "reason_code": "event"}"#, #"{"amount": 0, "reason_code": "event"}"#,
                #"{"amount": 1, "reason_code": "Not A Code"}"#, #"{"amount": 1, "reason_code": "event", "reason_code": "other"}"#,
                #"{"amount": 1, "reason_code": "event", "campaign": "with space"}"#, #"{"amount": 1, "reason_code": "event", "currency": "nope"}"#,
            ].enumerated() {
                let refused = try await client.execute(
                    uri: "/v1/wallets/p1/bonuses", method: .post, headers: server.bearer(.support) + .jsonContent + [.idempotencyKey: "bad\(index)"], body: json(bad))
                #expect(refused.status == .badRequest || refused.status == .unprocessableContent, "\(bad) → \(refused.status)")
            }
            let player = try await client.execute(
                uri: "/v1/wallets/p1/bonuses", method: .post, headers: [.authorization: "Bearer \(playerToken("p1"))", .contentType: "application/json", .idempotencyKey: "b3"],
                body: json(#"{"amount": 1000, "reason_code": "free_money"}"#))
            #expect(player.status == .forbidden, "players cannot give themselves bonuses")
        }
        #expect(try await server.store.verify().ok)
    }
}


@Suite("Holds over HTTP", .throttled)
struct HoldRouteTests {
    @Test("a player holds from their own wallet, the game captures part once, and the balance reports what is held", arguments: TestBackend.all)
    func holds(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2)
        try await server.test { client in
            let own: HTTPFields = [.authorization: "Bearer \(playerToken("p1"))", .contentType: "application/json", .idempotencyKey: "h1"]
            let body = json(#"{"amount": 6, "expires_in_seconds": 600, "reason": "match fee"}"#)
            let created = try await client.execute(uri: "/v1/wallets/p1/holds", method: .post, headers: own, body: body)
            #expect(created.status == .created)
            let hold = try #require(try created.object()["hold"] as? [String: Any])
            let id = try #require(hold["id"] as? String)
            #expect(try hold["status"] as? String == "open" && hold["expires_at"] is String && created.object()["balance"] as? Int == 4)
            let replay = try await client.execute(uri: "/v1/wallets/p1/holds", method: .post, headers: own, body: body)
            #expect(replay.headers[.idempotentReplayed] == "true" && replay.body == created.body)
            let balance = try await client.execute(uri: "/v1/wallets/p1", method: .get, headers: server.bearer(.service))
            #expect(try balance.object()["held"] as? [String: Int] == ["credits": 6] && balance.object()["balances"] as? [String: Int] == ["credits": 4])

            let other: HTTPFields = [.authorization: "Bearer \(playerToken("p2"))", .contentType: "application/json", .idempotencyKey: "c"]
            let stolen = try await client.execute(uri: "/v1/holds/\(id)/capture", method: .post, headers: other, body: json("{}"))
            #expect(try stolen.status == .notFound && stolen.problemCode() == "not_found", "another player's hold is unknown to them")
            let service = server.bearer(.service) + .jsonContent
            let exceeding = try await client.execute(uri: "/v1/holds/\(id)/capture", method: .post, headers: service + [.idempotencyKey: "c0"], body: json(#"{"amount": 7}"#))
            #expect(try exceeding.status == .unprocessableContent && exceeding.problemCode() == "capture_exceeds_hold")
            let captured = try await client.execute(uri: "/v1/holds/\(id)/capture", method: .post, headers: service + [.idempotencyKey: "c1"], body: json(#"{"amount": 2}"#))
            #expect(try captured.status == .created && (captured.object()["hold"] as? [String: Any])?["status"] as? String == "captured")
            #expect(try captured.object()["balance"] as? Int == 8)
            let released = try await client.execute(uri: "/v1/holds/\(id)/release", method: .post, headers: service + [.idempotencyKey: "r1"], body: json("{}"))
            #expect(try released.status == .conflict && released.problemCode() == "hold_captured")
            let listed = try await client.execute(uri: "/v1/wallets/p1/holds", method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
            #expect(try (listed.object()["holds"] as? [[String: Any]])?.map { $0["status"] as? String } == ["captured"])
            // Out-of-range numbers, a member named twice, fractions: 400s that hold nothing.
            for (index, bad) in [
                #"{"amount": 1, "expires_in_seconds": 604801}"#, #"{"amount": 1, "expires_in_seconds": 0}"#, #"{"amount": 1, "expires_in_seconds": -5}"#,
                #"{"amount": 0, "expires_in_seconds": 60}"#, #"{"amount": 1000000001, "expires_in_seconds": 60}"#, #"{"amount": 1.5, "expires_in_seconds": 60}"#,
                #"{"amount": 1, "amount": 2, "expires_in_seconds": 60}"#, #"{"amount": 1, "expires_in_seconds": 9223372036854775808}"#,
            ].enumerated() {
                let refused = try await client.execute(uri: "/v1/wallets/p1/holds", method: .post, headers: service + [.idempotencyKey: "bad\(index)"], body: json(bad))
                #expect(try refused.status == .badRequest && refused.problemCode() == "invalid_request", "\(bad)")
            }
            for bad in [#"{"amount": 0}"#, #"{"amount": -1}"#, #"{"amount": 1, "amount": 2}"#] {
                let refused = try await client.execute(uri: "/v1/holds/\(id)/capture", method: .post, headers: service + [.idempotencyKey: "bad-c"], body: json(bad))
                #expect(try refused.status == .badRequest && refused.problemCode() == "invalid_request", "\(bad)")
            }
            // Look-alike hold ids: another case, padding, encoding tricks, the wrong length.
            for lookAlike in [id.uppercased(), " \(id)", "\(id)%00", String(id.dropLast()), id + "0", "..%2F..%2Fv1%2Fkeys", String(repeating: "a", count: 5_000)] {
                let response = try await client.execute(uri: "/v1/holds/\(lookAlike)/release", method: .post, headers: service + [.idempotencyKey: "look"], body: json("{}"))
                #expect(response.status == .notFound || response.status == .badRequest, "\(lookAlike.prefix(60)) → \(response.status)")
            }
        }
        #expect(try await server.store.verify().ok)
    }

    @Test("support sees a player's holds and releases an open one once, with its reason in the ledger; support never captures, auditors only read", arguments: TestBackend.all)
    func supportReleases(_ backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", quantity: 2)
        try await server.test { client in
            let own: HTTPFields = [.authorization: "Bearer \(playerToken("p1"))", .contentType: "application/json", .idempotencyKey: "h1"]
            let created = try await client.execute(
                uri: "/v1/wallets/p1/holds", method: .post, headers: own, body: json(#"{"amount": 6, "expires_in_seconds": 600}"#))
            let id = try #require((try created.object()["hold"] as? [String: Any])?["id"] as? String)
            for role in [KeyRole.support, .auditor] {
                let listed = try await client.execute(uri: "/v1/wallets/p1/holds", method: .get, headers: server.bearer(role))
                #expect(try (listed.object()["holds"] as? [[String: Any]])?.map { $0["status"] as? String } == ["open"], "\(role)")
            }
            let support = server.bearer(.support) + .jsonContent
            let capture = try await client.execute(uri: "/v1/holds/\(id)/capture", method: .post, headers: support + [.idempotencyKey: "s0"], body: json("{}"))
            #expect(try capture.status == .forbidden && capture.problemCode() == "forbidden")
            let auditor = try await client.execute(
                uri: "/v1/holds/\(id)/release", method: .post, headers: server.bearer(.auditor) + .jsonContent + [.idempotencyKey: "a0"], body: json("{}"))
            #expect(try auditor.status == .forbidden && auditor.problemCode() == "forbidden")
            let tooLong = String(repeating: "x", count: 5_000)
            let refused = try await client.execute(
                uri: "/v1/holds/\(id)/release", method: .post, headers: support + [.idempotencyKey: "s1"], body: json(#"{"reason": "\#(tooLong)"}"#))
            #expect(try refused.status == .badRequest && refused.problemCode() == "invalid_request")
            let body = json(#"{"reason": "SUP-77: the match never started"}"#)
            let released = try await client.execute(uri: "/v1/holds/\(id)/release", method: .post, headers: support + [.idempotencyKey: "s2"], body: body)
            #expect(released.status == .created)
            #expect(try released.object()["balance"] as? Int == 10)
            let transaction = try #require(try released.object()["transaction"] as? [String: Any])
            #expect(transaction["kind"] as? String == "release" && transaction["note"] as? String == "SUP-77: the match never started")
            let replay = try await client.execute(uri: "/v1/holds/\(id)/release", method: .post, headers: support + [.idempotencyKey: "s2"], body: body)
            #expect(replay.headers[.idempotentReplayed] == "true" && replay.body == released.body)
            let otherReason = try await client.execute(
                uri: "/v1/holds/\(id)/release", method: .post, headers: support + [.idempotencyKey: "s2"], body: json(#"{"reason": "another"}"#))
            #expect(try otherReason.status == .conflict && otherReason.problemCode() == "idempotency_key_reused")
            let again = try await client.execute(uri: "/v1/holds/\(id)/release", method: .post, headers: support + [.idempotencyKey: "s3"], body: body)
            #expect(try again.status == .conflict && again.problemCode() == "hold_released")
        }
        #expect(try await server.store.verify().ok)
    }
}
