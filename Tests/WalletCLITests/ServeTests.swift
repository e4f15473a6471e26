import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import WalletCore
import WalletTestSupport

/// A TCP port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() throws -> Int {
    try LoopbackSocket.freePort()
}

/// One HTTP request; nil when the connection failed.
func send(
    _ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil, timeout: TimeInterval = 60
) async -> (status: Int, body: String)? {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    // Generous: under the whole suite on two cores a first answer (a token exchange, a store call, a
    // commit) can take seconds; a client that gives up early makes a retry look like a second request.
    request.timeoutInterval = timeout
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body.map { Data($0.utf8) }
    guard let (data, response) = try? await URLSession.shared.data(for: request), let http = response as? HTTPURLResponse else { return nil }
    return (http.statusCode, String(decoding: data, as: UTF8.self))
}

@Suite("wallet serve and wallet keys, as processes", .throttled)
struct ServeTests {
    @Test("a server that exits before it answers fails `serve` at once, with its exit status and what it printed")
    func serveReportsAnEarlyExit() async throws {
        let cli = try CLI()
        do {
            _ = try await Self.serve(cli, arguments: ["--no-such-option"])
            Issue.record("serve returned for a server that cannot start")
        } catch let failure as ServerDidNotStart {
            // "exited with": the helper saw the exit instead of waiting out its 60 s for /healthz.
            #expect(failure.description.contains("exited with 64") && failure.description.contains("no-such-option"), "\(failure)")
        }
    }

    @Test("keys are created with their secret once, listed without it, and revoked")
    func keys() async throws {
        let cli = try CLI()
        let created = try await cli.json("keys", "create", "--role", "support", "--name", "Alice (support)")
        let id = try #require(created["id"] as? String)
        let secret = try #require(created["key"] as? String)
        #expect(created["role"] as? String == "support" && secret.hasPrefix("cwk_") && secret.count > 40)
        let listed = try await cli.run("keys", "list", "--json")
        #expect(!listed.stdout.contains(secret))
        let keys = try listed.json()["keys"] as? [[String: Any]]
        #expect(keys?.count == 1 && keys?.first?["id"] as? String == id && keys?.first?["revoked_at"] == nil)
        let revoked = try await cli.json("keys", "revoke", id)
        #expect(revoked["revoked_at"] as? String != nil)
        let again = try await cli.json("keys", "revoke", id)
        #expect(again["revoked_at"] as? String == revoked["revoked_at"] as? String, "revoking twice answers the first revocation")
        #expect(try await cli.run("keys", "revoke", "key_missing", "--json").errorCode() == "not_found")
        #expect(try await cli.run("keys", "create", "--role", "owner", "--name", "x", "--json").status == 64)
        #expect(try await cli.run("keys", "create", "--role", "admin", "--name", " ", "--json").errorCode() == "invalid_request")
        let human = try await cli.run("keys", "create", "--role", "auditor", "--name", "Audit firm")
        #expect(human.stdout.contains("shown only now") && human.stdout.contains("cwk_"))
    }

    @Test("serve refuses bad settings with a clear error")
    func badSettings() async throws {
        let cli = try CLI()
        let notAKey = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("not-a-key.pem").path
        try "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n".write(toFile: notAKey, atomically: true, encoding: .utf8)
        let shortSecret = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("short-secret").path
        try "short\n".write(toFile: shortSecret, atomically: true, encoding: .utf8)
        for (arguments, environment) in [
            (["serve", "--port", "0"], [String: String]()), (["serve", "--port", "70000"], [:]), (["serve"], ["WALLET_PORT": "http"]),
            (["serve", "--player-jwt-secret", "short"], [:]), (["serve", "--log-level", "loud"], [:]), (["serve", "--host", ""], [:]),
            (["serve", "--player-jwt-public-key", "/nonexistent/key.pem"], [:]), (["serve", "--player-jwt-public-key", notAKey], [:]),
            (["serve", "--player-jwt-secret", String(repeating: "s", count: 40)], ["WALLET_PLAYER_JWT_PUBLIC_KEY": notAKey]),
            (["serve", "--idle-timeout", "0"], [:]), (["serve"], ["WALLET_IDLE_TIMEOUT": "3601"]), (["serve"], ["WALLET_IDLE_TIMEOUT": "soon"]),
            (["serve", "--max-connections", "0"], [:]), (["serve"], ["WALLET_MAX_CONNECTIONS": "100001"]),
            (["serve", "--max-connections-per-address", "0"], [:]), (["serve"], ["WALLET_MAX_CONNECTIONS_PER_ADDRESS": "100001"]),
            (["serve", "--request-head-timeout", "0"], [:]), (["serve"], ["WALLET_REQUEST_HEAD_TIMEOUT": "soon"]),
            (["serve", "--drain-seconds", "0"], [:]), (["serve"], ["WALLET_DRAIN_SECONDS": "601"]),
            (["serve", "--account-token-namespace", "not-a-uuid"], [:]), (["serve"], ["WALLET_ACCOUNT_TOKEN_NAMESPACE": "0f6c2d52"]),
            (["serve", "--player-jwt-secret-file", "/dev/zero"], [:]), (["serve", "--player-jwt-secret-file", "/nonexistent"], [:]),
            (["serve", "--player-jwt-secret-file", shortSecret], [:]),
            (["serve", "--db-pool-size", "0"], [:]), (["balance", "--player", "p1", "--db-pool-size", "1001"], [:]),
            (["verify"], ["WALLET_DB_POOL_SIZE": "many"]), (["copy", "--to", "x.sqlite"], [:]), (["copy", "--from", "a", "--to", "a"], [:]),
        ] {
            let output = await CLI.finish(try cli.start(arguments, environment: environment))
            #expect(output.status == 64, "\(arguments) \(environment)")
            #expect(output.stderr.hasPrefix("Error: "), "\(output.stderr)")
        }
    }

    @Test("serve takes an ES256 public key file: the player's token, signed with the private key, spends from their wallet only")
    func es256PlayerTokens() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let gameKey = P256.Signing.PrivateKey()
        let keyPath = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("game-public.pem").path
        try gameKey.publicKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        func token(_ subject: String) throws -> String {
            let header = Base64URL.encode(Data(#"{"alg":"ES256","typ":"JWT"}"#.utf8))
            let claims = Base64URL.encode(Data(#"{"sub":"\#(subject)","exp":\#(Int(Date().timeIntervalSince1970) + 300)}"#.utf8))
            let signature = try gameKey.signature(for: Data("\(header).\(claims)".utf8))
            return "\(header).\(claims).\(Base64URL.encode(signature.rawRepresentation))"
        }
        let (server, base) = try await Self.serve(cli, environment: ["WALLET_PLAYER_JWT_PUBLIC_KEY": keyPath])
        defer {
            server.0.terminate()
            _ = CLI.finishBlocking(server)
        }
        let spend = { (subject: String) async throws -> Int? in
            await send(
                "POST", "\(base)/v1/wallets/p1/spend",
                headers: ["Authorization": "Bearer \(try token(subject))", "Content-Type": "application/json", "Idempotency-Key": "k-\(subject)"],
                body: #"{"amount": 2}"#)?.status
        }
        #expect(try await spend("p1") == 201)
        #expect(try await spend("p2") == 403)
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 3])
    }

    @Test("the HS256 secret from a file (one trailing newline ignored) verifies player tokens")
    func secretFromFile() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let secret = String(repeating: "f", count: 40)
        let path = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("secret").path
        try (secret + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (server, base) = try await Self.serve(cli, environment: ["WALLET_PLAYER_JWT_SECRET_FILE": path])
        defer {
            server.0.terminate()
            _ = CLI.finishBlocking(server)
        }
        func balance(signedWith key: String) async -> Int? {
            let header = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
            let claims = Base64URL.encode(Data(#"{"sub":"p1","exp":\#(Int(Date().timeIntervalSince1970) + 300)}"#.utf8))
            let signature = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(claims)".utf8), using: SymmetricKey(data: Data(key.utf8)))
            return await send("GET", "\(base)/v1/wallets/p1", headers: ["Authorization": "Bearer \(header).\(claims).\(Base64URL.encode(Data(signature)))"])?.status
        }
        #expect(await balance(signedWith: secret) == 200)
        #expect(await balance(signedWith: secret + "\n") == 401)
    }

    @Test("a connection that stalls mid-request is closed after the idle timeout; the server keeps answering others")
    func idleTimeout() async throws {
        let cli = try CLI()
        let (server, base) = try await Self.serve(cli, environment: ["WALLET_IDLE_TIMEOUT": "1"])
        defer {
            server.0.terminate()
            _ = CLI.finishBlocking(server)
        }
        let socket = try LoopbackSocket(port: try #require(URL(string: base)?.port))
        #expect(socket.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "))
        let (received, closed) = await socket.readToEnd()
        #expect(received.isEmpty)
        #expect(closed, "the server closed the stalled connection")
        #expect(await send("GET", "\(base)/healthz")?.status == 200)
    }

    @Test("SIGTERM finishes in-flight requests and loses no acknowledged spend")
    func gracefulShutdown() async throws {
        let (exit, acknowledged, cli) = try await Self.spendUnderLoad(until: SIGTERM)
        #expect(exit.status == 0, "\(exit.stderr)")
        try await Self.expectStored(acknowledged, cli)
    }

    @Test("on SIGTERM, a request still arriving is answered, with Connection: close, and the server exits")
    func connectionCloseOnShutdown() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 2)
        let key = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "slow")["key"] as? String)
        // A drain and connection timeouts long enough for a machine starved by the whole suite
        // (the test has taken 80 to 94 s there, and once a 30 s idle timeout closed the half-sent
        // request before its body came): what is under test is that the request is answered, not
        // how fast. The timeouts have tests of their own.
        let (server, base) = try await Self.serve(
            cli, arguments: ["--drain-seconds", "120", "--idle-timeout", "300", "--request-head-timeout", "300"])
        let socket = try LoopbackSocket(port: try #require(URL(string: base)?.port))
        let body = #"{"amount": 3}"#
        #expect(socket.send(
            "POST /v1/wallets/p1/spend HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\nIdempotency-Key: slow-1\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body.prefix(5))"))
        // Time for the head to reach the server and the request to be in flight when SIGTERM comes:
        // 300 ms was once too little under the whole suite in CI (the server then saw no request).
        try await Task.sleep(for: .seconds(3))
        kill(server.0.processIdentifier, SIGTERM)
        try await Task.sleep(for: .milliseconds(300))
        #expect(socket.send(String(body.dropFirst(5))))
        let (received, closed) = await socket.readToEnd()
        let head = String(decoding: received, as: UTF8.self).lowercased()
        #expect(head.hasPrefix("http/1.1 201"), "\(head.prefix(200))")
        #expect(head.contains("\r\nconnection: close\r\n"), "\(head.prefix(400))")
        #expect(closed)
        let exit = await CLI.finish(server)
        #expect(exit.status == 0, "\(exit.stderr)")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 7])
    }

    @Test("a crash (SIGKILL) mid-load loses no acknowledged spend")
    func crash() async throws {
        let (exit, acknowledged, cli) = try await Self.spendUnderLoad(until: SIGKILL)
        #expect(exit.status == SIGKILL)
        try await Self.expectStored(acknowledged, cli)
    }

    /// Starts `wallet serve` on a free loopback port and waits until it answers; returns the
    /// process and the base URL.
    /// A server that exits because another program took its port between `freeLoopbackPort` and
    /// its bind starts again on another port, twice at most (this process never hands out one
    /// port twice); any other early exit fails at once with what the server printed (a failure
    /// once said only "the server did not start").
    static func serve(_ cli: CLI, environment: [String: String]? = nil, arguments: [String] = []) async throws -> ((ChildProcess, ChildPipe, ChildPipe), String) {
        var failure = ""
        for _ in 1...3 {
            let port = try freeLoopbackPort()
            let server = try cli.start(["serve", "--port", "\(port)", "--log-level", "warning"] + arguments, environment: environment)
            let base = "http://127.0.0.1:\(port)"
            // A bound in time, not in tries: a debug build starting beside the whole suite on two
            // cores once took longer than the ten seconds a hundred tries gave it. Each try is
            // short, so that one connection that hangs does not use the whole bound.
            var up = false
            let deadline = ContinuousClock.now + .seconds(60)
            while !up, !server.0.hasExited, ContinuousClock.now < deadline {
                up = await send("GET", "\(base)/healthz", timeout: 5)?.status == 200
                if !up { try await Task.sleep(for: .milliseconds(100)) }
            }
            if up { return (server, base) }
            let exited = server.0.hasExited
            if !exited { server.0.terminate() }
            let output = await CLI.finish(server)
            failure = exited
                ? "the server exited with \(output.status) before it answered: \(output.stderr.suffix(2_000))"
                : "the server did not answer /healthz within 60 s: \(output.stderr.suffix(2_000))"
            guard exited, output.stderr.localizedCaseInsensitiveContains("address already in use") else { break }
        }
        throw ServerDidNotStart(description: failure)
    }

    /// Why `serve` gave up, as the test's failure shows it.
    struct ServerDidNotStart: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `wallet serve`, sends 60 concurrent spends, and sends `signal` once some were
    /// answered while the others are in flight. Returns the server's exit and the keys of the
    /// spends it answered 201.
    static func spendUnderLoad(until signal: Int32) async throws -> (CommandOutput, [String], CLI) {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 100)
        let key = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "load")["key"] as? String)
        let (server, base) = try await Self.serve(cli)
        let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
        let answered = Counter()
        let pid = server.0.processIdentifier
        let acknowledged = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                for _ in 0..<2_000 where answered.value < 5 { try? await Task.sleep(for: .milliseconds(5)) }
                kill(pid, signal)
                return nil
            }
            for index in 0..<60 {
                group.addTask {
                    let response = await send("POST", "\(base)/v1/wallets/p1/spend", headers: headers.merging(["Idempotency-Key": "spend-\(index)"]) { $1 }, body: #"{"amount": 1}"#)
                    guard response?.status == 201 else { return nil }
                    answered.increment()
                    return "spend-\(index)"
                }
            }
            return await group.reduce(into: [String]()) { if let key = $1 { $0.append(key) } }
        }
        return (await CLI.finish(server), acknowledged, cli)
    }

    /// Every acknowledged spend is in the ledger, which verifies.
    static func expectStored(_ acknowledged: [String], _ cli: CLI) async throws {
        #expect(acknowledged.count >= 5)
        let balance = try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int]
        // Spends answered by nobody (the connection died) may or may not have committed.
        #expect((balance?["credits"] ?? 0) <= 500 - acknowledged.count)
        for spendKey in acknowledged {
            let replay = try await cli.json("spend", "--player", "p1", "--amount", "1", "--key", spendKey)
            #expect(replay["replayed"] as? Bool == true, "\(spendKey) was acknowledged but not stored")
        }
        #expect(try await cli.json("verify")["ok"] as? Bool == true)
    }
}
