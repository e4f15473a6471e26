import Crypto
import Foundation
import Testing
import WalletCore
import WalletTestSupport

@Suite("wallet serve's logs, as a process", .throttled)
struct LogTests {
    /// The first `"secret": "..."` of an answer.
    static func secret(in body: String?) -> String? {
        guard let body, let match = body.firstMatch(of: /"secret"\s*:\s*"([^"]+)"/) else { return nil }
        return String(match.1)
    }

    static func playerToken(_ subject: String, secret: String) -> String {
        let header = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = Base64URL.encode(Data(#"{"sub":"\#(subject)","exp":\#(Int(Date().timeIntervalSince1970) + 300)}"#.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(claims)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(claims).\(Base64URL.encode(Data(signature)))"
    }

    @Test("--log-format json: one JSON object a line, with the request id, the actor, durations to the microsecond, and no secret")
    func json() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let adminKey = try await cli.json("keys", "create", "--role", "admin", "--name", "ops")
        let admin = try #require(adminKey["key"] as? String)
        let adminID = try #require(adminKey["id"] as? String)
        let jwtSecret = String(repeating: "j", count: 40)
        let (server, base) = try await ServeTests.serve(
            cli, environment: ["WALLET_PLAYER_JWT_SECRET": jwtSecret, "WALLET_LOG_FORMAT": "json"],
            arguments: ["--log-level", "info", "--webhook-allow-host", "127.0.0.1"])
        let bearer = ["Authorization": "Bearer \(admin)", "Content-Type": "application/json"]
        let created = await send("POST", "\(base)/v1/keys", headers: bearer.merging(["X-Request-Id": "log-key"]) { $1 }, body: #"{"role": "service", "name": "backend"}"#)
        let webhook = await send(
            "POST", "\(base)/v1/webhooks", headers: bearer, body: #"{"url": "http://127.0.0.1:9/hook", "types": ["purchase.credited"]}"#)
        let guessed = "cwk_not-a-key-but-a-guess-0123456789"
        #expect(await send("GET", "\(base)/v1/products", headers: ["Authorization": "Bearer \(guessed)"])?.status == 401)
        let token = Self.playerToken("p1", secret: jwtSecret)
        #expect(await send("GET", "\(base)/v1/wallets/p1", headers: ["Authorization": "Bearer \(token)", "X-Request-Id": "log-player"])?.status == 200)
        server.0.terminate()
        let output = await CLI.finish(server)
        #expect(created?.status == 201 && webhook?.status == 201)
        let secrets = [admin, jwtSecret, token, guessed, try #require(Self.secret(in: created?.body)), try #require(Self.secret(in: webhook?.body))]

        let lines = output.stderr.split(separator: "\n")
        #expect(lines.count >= 6, "\(output.stderr)")
        var entries: [[String: Any]] = []
        for line in lines {
            guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                Issue.record("not one JSON object: \(line)")
                continue
            }
            #expect(entry["timestamp"] is String && entry["level"] is String && entry["label"] is String && entry["message"] is String)
            #expect(entry["metadata"] is [String: Any], "\(line)")
            entries.append(entry)
        }
        let requests = entries.filter { $0["message"] as? String == "request" }.compactMap { $0["metadata"] as? [String: Any] }
        let player = try #require(requests.first { $0["request_id"] as? String == "log-player" })
        #expect(player["status"] as? String == "200" && player["route"] as? String == "/v1/wallets/{player_id}")
        // The request line, logged around the route, names whom the access check found.
        #expect(player["actor"] as? String == "player:p1")
        let keyRequest = try #require(requests.first { $0["request_id"] as? String == "log-key" })
        #expect(keyRequest["status"] as? String == "201" && keyRequest["actor"] as? String == adminID)
        // A caller refused at the door is no actor.
        #expect(requests.contains { $0["status"] as? String == "401" && $0["actor"] == nil })
        for request in requests {
            let duration = try #require(request["duration_ms"] as? String)
            #expect(duration.wholeMatch(of: /[0-9]+\.[0-9]{3}/) != nil, "duration_ms \(duration)")
        }
        #expect((entries.first?["timestamp"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil)
        for secret in secrets {
            #expect(!output.stderr.contains(secret), "a secret reached the logs: \(secret.prefix(8))…")
        }
    }

    @Test("text logs round durations to the microsecond too, and a bad WALLET_LOG_FORMAT is refused")
    func text() async throws {
        let cli = try await CLI.withCatalog()
        let (server, base) = try await ServeTests.serve(cli, arguments: ["--log-level", "info"])
        #expect(await send("GET", "\(base)/v1/products", headers: ["X-Request-Id": "log-text"])?.status == 401)
        server.0.terminate()
        let output = await CLI.finish(server)
        let line = try #require(output.stderr.split(separator: "\n").first { $0.contains("request_id=log-text") })
        #expect(line.contains(#/duration_ms=[0-9]+\.[0-9]{3} /#), "\(line)")
        // swift-log's StreamLogHandler layout, the logger's metadata (Hummingbird's request id)
        // and the line's own (the wallet's request id, method, status, ...) merged, sorted by key.
        let layout = #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info wallet: duration_ms=[0-9.]+ hb\.request\.id=[0-9a-f]+ method=GET request_id=log-text route=/v1/products status=401 \[WalletServer\] request/#
        #expect(line.wholeMatch(of: layout) != nil, "\(line)")
        #expect(await CLI.finish(try cli.start(["serve"], environment: ["WALLET_LOG_FORMAT": "xml"])).status == 64)
        #expect(await CLI.finish(try cli.start(["serve", "--log-format", "yaml"])).status == 64)
    }
}
