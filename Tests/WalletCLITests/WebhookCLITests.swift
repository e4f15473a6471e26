import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import WalletCore
import WalletTestSupport

/// A game backend's webhook receiver on 127.0.0.1, on threads of its own (a receiver blocked on
/// a hung request must not hold one of the few cooperative threads the test awaits on). It
/// checks each delivery's `Wallet-Signature` with the endpoint's secret, records the events in
/// the order they arrive, answers 200, and can be told to hang on the next delivery (read it,
/// never answer) until released.
final class WebhookReceiver: Sendable {
    struct Arrival: Sendable, Equatable {
        var id: String
        var seq: Int64
        /// Whether it was answered 200 (false: the receiver hung on it).
        var answered: Bool
    }

    struct State {
        var secrets: [String] = []
        var arrivals: [Arrival] = []
        /// What was wrong with a delivery: a bad signature, a header that disagrees with the body.
        var problems: [String] = []
        var hangOnNext = false
        var hung: Arrival?
        var released = false
        var stopped = false
        var connections: Set<Int32> = []
    }

    let state = Mutex(State())
    let listener: Int32
    let port: Int

    init() throws {
        (listener, port) = try LoopbackSocket.listen()
        Thread.detachNewThread { self.acceptConnections() }
    }

    var url: String { "http://127.0.0.1:\(port)/wallet-events" }

    func setSecrets(_ secrets: [String]) { state.withLock { $0.secrets = secrets } }

    /// The next delivery is read and never answered, until `release()`.
    func hangOnNextDelivery() { state.withLock { $0.hangOnNext = true } }

    /// Ends the hang: the hung connection is closed unanswered; later deliveries are answered.
    func release() { state.withLock { $0.released = true } }

    var arrivals: [Arrival] { state.withLock { $0.arrivals } }
    var hung: Arrival? { state.withLock { $0.hung } }
    var problems: [String] { state.withLock { $0.problems } }

    /// The ids the receiver answered 200, without duplicates.
    var acceptedIDs: Set<String> { Set(arrivals.filter(\.answered).map(\.id)) }

    /// Stops listening and closes every connection.
    func stop() {
        let open = state.withLock { state in
            state.stopped = true
            return state.connections
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for descriptor in open { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    deinit { close(listener) }

    private func acceptConnections() {
        while true {
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 {
                if errno == EINTR { continue }
                return
            }
            let stopped = state.withLock { state in
                if !state.stopped { state.connections.insert(descriptor) }
                return state.stopped
            }
            if stopped {
                close(descriptor)
                return
            }
            Thread.detachNewThread { self.serve(descriptor) }
        }
    }

    /// Reads requests from one connection (the sender keeps it alive between events) until it closes.
    private func serve(_ descriptor: Int32) {
        defer {
            _ = state.withLock { $0.connections.remove(descriptor) }
            close(descriptor)
        }
        var pending: [UInt8] = []
        while let (head, body) = Self.readRequest(descriptor, &pending) {
            guard let answer = handle(head: head, body: body) else {
                // Hung: the sender waits for an answer that never comes, until the test releases it.
                while !state.withLock({ $0.released || $0.stopped }) { usleep(20_000) }
                return
            }
            let response = Array("HTTP/1.1 \(answer) \(answer == 200 ? "OK" : "Bad Request")\r\nContent-Length: 0\r\n\r\n".utf8)
            guard write(descriptor, response, response.count) == response.count else { return }
        }
    }

    /// The status to answer, or nil to hang.
    private func handle(head: [String: String], body: [UInt8]) -> Int? {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        guard let id = object?["id"] as? String, let seq = (object?["seq"] as? NSNumber)?.int64Value, let type = object?["type"] as? String else {
            state.withLock { $0.problems.append("a delivery without an event: \(String(decoding: body.prefix(200), as: UTF8.self))") }
            return 400
        }
        return state.withLock { state -> Int? in
            let signature = head["wallet-signature"] ?? ""
            guard state.secrets.contains(where: { WebhookSignature.verify(header: signature, body: body, secret: $0) }) else {
                state.problems.append("event \(seq): the signature \(signature) does not verify")
                return 400
            }
            if head["wallet-event-id"] != id || head["wallet-event-type"] != type || head[":method"] != "POST" {
                state.problems.append("event \(seq): the headers \(head) disagree with the body")
            }
            if state.hangOnNext && !state.released {
                state.hangOnNext = false
                state.hung = Arrival(id: id, seq: seq, answered: false)
                state.arrivals.append(Arrival(id: id, seq: seq, answered: false))
                return nil
            }
            state.arrivals.append(Arrival(id: id, seq: seq, answered: true))
            return 200
        }
    }

    /// One request framed by Content-Length: its head (lowercase names; `:method`) and body; nil
    /// when the connection closes first.
    private static func readRequest(_ descriptor: Int32, _ pending: inout [UInt8]) -> ([String: String], [UInt8])? {
        let separator = Array("\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let headEnd = pending.firstRange(of: separator) {
                let lines = String(decoding: pending[..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                var head: [String: String] = [":method": String(lines.first?.split(separator: " ").first ?? "")]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    head[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(head["content-length"] ?? "") ?? 0
                if pending.count >= headEnd.upperBound + length {
                    let body = Array(pending[headEnd.upperBound..<(headEnd.upperBound + length)])
                    pending.removeFirst(headEnd.upperBound + length)
                    return (head, body)
                }
            }
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { return nil }
            pending.append(contentsOf: buffer[0..<count])
        }
    }
}

/// Polls `condition` every 100 ms until it holds or `limit` passes; whether it held. A wait, not
/// a measurement: the limits are generous and nothing asserts how long it took.
func eventually(within limit: Duration, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return try condition()
}

extension CLI {
    /// The ledger's transactions as (seq, id), in seq order, from `wallet export --format jsonl`.
    func ledgerTransactions() async throws -> [(seq: Int64, id: String)] {
        let output = try await run("export", "--format", "jsonl")
        #expect(output.status == 0, "\(output.stderr)")
        var seen: [Int64: String] = [:]
        for line in output.stdout.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard object?["type"] as? String == "posting", let seq = (object?["seq"] as? NSNumber)?.int64Value, let id = object?["transaction_id"] as? String else {
                continue
            }
            seen[seq] = id
        }
        return seen.sorted { $0.key < $1.key }.map { (seq: $0.key, id: $0.value) }
    }
}

@Suite("wallet webhooks and the sender in wallet serve, as processes", .throttled)
struct WebhookCLITests {
    @Test("wallet serve killed (SIGKILL) while an endpoint hangs mid-delivery loses nothing: after a restart every event arrives, in seq order, signed")
    func serveKilledMidDeliveryLosesNothing() async throws {
        try await Self.killMidDelivery(try await CLI.withCatalog())
    }

    @Test(
        "on PostgreSQL too, wallet serve killed mid-delivery loses nothing",
        .enabled(if: TestBackend.all.contains(.postgres)))
    func serveKilledMidDeliveryLosesNothingOnPostgres() async throws {
        let cli = CLI(database: try await TestPostgres.freshDatabase())
        #expect(try await cli.run("products", "set", "com.example.consume5credits", "--credits", "5").status == 0)
        try await Self.killMidDelivery(cli)
    }

    @Test("add, list, disable, enable, rotate and replay print what they did, as text and as JSON; the secret only from add and rotate")
    func subcommandsSucceed() async throws {
        let cli = try await CLI.withCatalog()
        #expect(try await cli.run("webhooks", "list").stdout.contains("No webhook endpoints"))
        _ = try await cli.grant("p1", "T1")
        let text = try await cli.run("webhooks", "add", "--url", "https://game.example.com/wallet-events", "--types", "refund.applied, purchase.credited")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("Added webhook endpoint wh_") && text.stdout.contains("purchase.credited, refund.applied"), "\(text.stdout)")
        #expect(text.stdout.contains("after seq 1") && text.stdout.contains("shown only now:\nwhsec_"), "\(text.stdout)")
        let firstSecret = try #require(text.stdout.split(separator: "\n").last.map(String.init))

        let added = try await cli.json("webhooks", "add", "--url", "https://game.example.com/all", "--types", "*", "--description", "game backend")
        let endpoint = try #require(added["endpoint"] as? [String: Any])
        let id = try #require(endpoint["id"] as? String)
        let secret = try #require(added["secret"] as? String)
        #expect(id.hasPrefix("wh_") && id.utf8.count == 39 && secret.hasPrefix("whsec_") && secret != firstSecret)
        #expect(endpoint["types"] as? [String] == ["*"] && endpoint["status"] as? String == "active" && endpoint["description"] as? String == "game backend")
        #expect((endpoint["cursor_seq"] as? NSNumber)?.int64Value == 1, "an endpoint gets the events committed after it was added")
        #expect(endpoint["secret"] == nil)

        let listedText = try await cli.run("webhooks", "list")
        #expect(listedText.status == 0 && listedText.stdout.split(separator: "\n").count == 2, "\(listedText.stdout)")
        #expect(listedText.stdout.contains("\(id)\tactive\thttps://game.example.com/all\t*\tafter seq 1\tdelivered 0"), "\(listedText.stdout)")
        let listed = try await cli.run("webhooks", "list", "--json")
        #expect(!listed.stdout.contains(secret) && !listed.stdout.contains(firstSecret) && !listed.stdout.contains("whsec_"), "list never shows a secret")
        let endpoints = try #require(try listed.json()["webhooks"] as? [[String: Any]])
        #expect(endpoints.map { $0["types"] as? [String] ?? [] } == [["purchase.credited", "refund.applied"], ["*"]], "oldest first")

        let disabledText = try await cli.run("webhooks", "disable", id)
        #expect(disabledText.status == 0 && disabledText.stdout.hasPrefix("Disabled \(id); its events wait after seq 1."), "\(disabledText.stdout)")
        #expect(try await cli.json("webhooks", "disable", id)["status"] as? String == "disabled", "disabling twice is disabled")
        #expect(try await cli.run("webhooks", "list").stdout.contains("\(id)\tdisabled\t"))
        let enabledText = try await cli.run("webhooks", "enable", id)
        #expect(enabledText.status == 0 && enabledText.stdout.hasPrefix("Enabled \(id); delivery resumes after seq 1."), "\(enabledText.stdout)")
        #expect(try await cli.json("webhooks", "enable", id)["status"] as? String == "active")

        let rotatedText = try await cli.run("webhooks", "rotate", id)
        #expect(rotatedText.status == 0 && rotatedText.stdout.hasPrefix("Rotated the secret of \(id); the previous one signs too until 20"), "\(rotatedText.stdout)")
        let newSecret = try #require(rotatedText.stdout.split(separator: "\n").last.map(String.init))
        #expect(newSecret.hasPrefix("whsec_") && newSecret != secret)
        let rotated = try await cli.json("webhooks", "rotate", id)
        let newerSecret = try #require(rotated["secret"] as? String)
        #expect(newerSecret.hasPrefix("whsec_") && newerSecret != newSecret)
        let afterRotation = try #require((try await cli.json("webhooks", "list")["webhooks"] as? [[String: Any]])?.first { $0["id"] as? String == id })
        let rotatedAt = try #require((afterRotation["secret_rotated_at"] as? String).flatMap { try? Timestamp.date($0, field: "at") })
        let expiresAt = try #require((afterRotation["previous_secret_expires_at"] as? String).flatMap { try? Timestamp.date($0, field: "at") })
        #expect(expiresAt.timeIntervalSince(rotatedAt) == 24 * 3_600, "the previous secret signs for 24 hours")
        #expect((rotated["endpoint"] as? [String: Any])?["previous_secret_expires_at"] as? String == afterRotation["previous_secret_expires_at"] as? String)

        let replayedText = try await cli.run("webhooks", "replay", id, "--from-seq", "1")
        #expect(replayedText.status == 0 && replayedText.stdout.hasPrefix("\(id) gets every event of its types after seq 0 again."), "\(replayedText.stdout)")
        let replayed = try await cli.json("webhooks", "replay", id, "--from-seq", "1")
        #expect((replayed["cursor_seq"] as? NSNumber)?.int64Value == 0 && replayed["status"] as? String == "active")

        // Removed once disabled, and only then.
        let early = try await cli.run("webhooks", "remove", id)
        #expect(early.status != 0 && early.stderr.contains("disable the endpoint first"), "\(early.stderr)")
        _ = try await cli.run("webhooks", "disable", id)
        let removed = try await cli.run("webhooks", "remove", id)
        #expect(removed.status == 0 && removed.stdout.hasPrefix("Removed \(id)"), "\(removed.stdout)")
        #expect((try await cli.json("webhooks", "list")["webhooks"] as? [[String: Any]])?.contains { $0["id"] as? String == id } == false)
    }

    @Test("bad URLs, types, ids, replays and descriptions are refused with their code and a non-zero exit, and change nothing")
    func subcommandsRefuse() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let id = try #require((try await cli.json("webhooks", "add", "--url", "https://game.example.com/hook", "--types", "*")["endpoint"] as? [String: Any])?["id"] as? String)
        func refused(_ arguments: [String], _ code: String, containing text: String, status: Int32 = 1) async throws {
            let output = await CLI.finish(try cli.start(arguments + ["--json"]))
            #expect(output.status == status && output.errorCode() == code && output.stderr.contains(text), "\(arguments): \(output.status) \(output.stderr)")
            #expect(output.stdout.isEmpty, "\(arguments): \(output.stdout)")
        }
        let add = ["webhooks", "add", "--types", "*", "--url"]
        try await refused(add + ["file:///etc/passwd"], "invalid_request", containing: "starts with https://")
        try await refused(add + ["http://game.example.com/hook"], "invalid_request", containing: "plain http:// only to a host the operator allowed")
        try await refused(add + ["http://127.0.0.1:9/hook"], "invalid_request", containing: "plain http://")
        try await refused(add + ["https://10.0.0.1/"], "invalid_request", containing: "a private address")
        try await refused(add + ["https://169.254.169.254/latest/meta-data/"], "invalid_request", containing: "a link-local address")
        try await refused(add + ["https://[::ffff:127.0.0.1]/"], "invalid_request", containing: "a loopback address")
        try await refused(add + ["https://localhost/"], "invalid_request", containing: "a loopback name")
        try await refused(add + ["https://wallet.localhost:8443/"], "invalid_request", containing: "a loopback name")
        try await refused(add + ["https://2130706433/"], "invalid_request", containing: "not a host name or a dotted-decimal IPv4 address")
        try await refused(add + ["https://admin:hunter2@game.example.com/"], "invalid_request", containing: "no user name or password")
        try await refused(add + ["https://game.example.com/#frag"], "invalid_request", containing: "no fragment")
        try await refused(add + ["https://game.example.com/" + String(repeating: "a", count: 2_100)], "invalid_request", containing: "1 to 2048 bytes")
        let url = ["webhooks", "add", "--url", "https://game.example.com/hook"]
        try await refused(url + ["--types", "spend.created,refund.aplied"], "invalid_request", containing: "unknown event type 'refund.aplied'")
        try await refused(url + ["--types", "*,spend.created"], "invalid_request", containing: "unknown event type '*'")
        try await refused(url + ["--types", ""], "invalid_request", containing: "unknown event type ''")
        try await refused(url + ["--types", "*", "--description", String(repeating: "d", count: 201)], "invalid_request", containing: "at most 200 bytes")
        try await refused(url + ["--types", "*", "--description", String(repeating: "\u{e9}", count: 101)], "invalid_request", containing: "at most 200 bytes")
        try await refused(url + ["--types", "*", "--description", "\u{1b}[31mred"], "invalid_request", containing: "description must not contain control characters")
        try await refused(url + ["--types", "*", "--description", "game\u{202e}backend"], "invalid_request", containing: "description must not contain invisible format characters")
        try await refused(["webhooks", "add", "--types", "*"], "invalid_request", containing: "--url", status: 64)
        try await refused(["webhooks", "add", "--url", "https://game.example.com/hook"], "invalid_request", containing: "--types", status: 64)
        // At the limits: 200 bytes of description, and an allowed host over plain HTTP.
        #expect(try await cli.run("webhooks", "add", "--url", "https://game.example.com/a", "--types", "*", "--description", String(repeating: "\u{e9}", count: 100)).status == 0)
        #expect(try await cli.run("webhooks", "add", "--url", "http://127.0.0.1:9/hook", "--types", "*", "--webhook-allow-host", "127.0.0.1").status == 0)

        let unknown = "wh_" + UUID().uuidString.lowercased()
        for command in [["disable"], ["enable"], ["rotate"], ["replay", "--from-seq", "1"]] {
            for missing in [unknown, "wh_" + UUID().uuidString, "nope", id + "x", String(id.dropLast()) + "\u{ff10}"] {
                try await refused(["webhooks", command[0], missing] + command.dropFirst(), "not_found", containing: "no webhook endpoint")
            }
        }
        try await refused(["webhooks", "replay", id, "--from-seq", "3"], "invalid_request", containing: "at most 2")
        try await refused(["webhooks", "replay", id, "--from-seq", "0"], "invalid_request", containing: "1 or more")
        try await refused(["webhooks", "replay", id, "--from-seq=-5"], "invalid_request", containing: "1 or more")
        try await refused(["webhooks", "replay", id, "--from-seq", "9223372036854775807"], "invalid_request", containing: "at most 2")
        try await refused(["webhooks", "replay", id, "--from-seq", "9223372036854775808"], "invalid_request", containing: "from-seq", status: 64)
        try await refused(["webhooks", "replay", id], "invalid_request", containing: "--from-seq", status: 64)
        let human = try await cli.run("webhooks", "disable", "nope")
        #expect(human.status == 1 && human.stderr.hasPrefix("error: ") && human.stderr.contains("[not_found]"), "\(human.stderr)")

        let endpoints = try #require(try await cli.json("webhooks", "list")["webhooks"] as? [[String: Any]])
        #expect(endpoints.count == 3, "only the three accepted endpoints exist")
        let first = try #require(endpoints.first)
        #expect(first["id"] as? String == id && first["status"] as? String == "active" && (first["cursor_seq"] as? NSNumber)?.int64Value == 1, "\(first)")
        #expect(first["previous_secret_expires_at"] == nil)
    }

    @Test("wallet webhooks and each of its subcommands explain themselves with an example")
    func help() async throws {
        let cli = try CLI()
        let group = try await cli.run("webhooks", "--help")
        #expect(group.status == 0 && group.stdout.contains("wallet webhooks add --url https://"), "\(group.stdout)")
        for subcommand in ["add", "list", "disable", "enable", "rotate", "replay", "remove"] {
            let output = try await cli.run("webhooks", subcommand, "--help")
            #expect(output.status == 0 && output.stdout.contains("USAGE: wallet webhooks \(subcommand)"), "\(subcommand): \(output.stdout)")
            // The help is wrapped at the terminal's width: the example may run over two lines.
            let words = output.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(words.contains("Example: wallet webhooks \(subcommand)"), "\(subcommand) has no example: \(output.stdout)")
            #expect(output.stdout.contains("--db <path|url>") && output.stdout.contains("--json"), "\(subcommand)")
        }
        let add = try await cli.run("webhooks", "add", "--help").stdout
        #expect(EventType.allCases.allSatisfy { add.contains($0.rawValue) }, "add's help names every event type")
    }

    /// Adds an endpoint at a receiver, starts `wallet serve`, makes 30 transactions with the CLI
    /// beside it, lets the receiver hang on a delivery, kills serve with SIGKILL, makes 5 more,
    /// starts serve again and waits (the dead sender's claim lapses after 30 s): every transaction
    /// arrives, the first arrivals in seq order, the hung one again, and nothing else.
    static func killMidDelivery(_ cli: CLI) async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let added = try await cli.json("webhooks", "add", "--url", receiver.url, "--types", "*", "--webhook-allow-host", "127.0.0.1")
        let secret = try #require(added["secret"] as? String)
        let endpointID = try #require((added["endpoint"] as? [String: Any])?["id"] as? String)
        receiver.setSecrets([secret])
        let allowLoopback = ["--webhook-allow-host", "127.0.0.1"]
        var (server, _) = try await ServeTests.serve(cli, arguments: allowLoopback)
        defer {
            server.0.terminate()
            _ = CLI.finishBlocking(server)
        }

        // Thirty transactions of three kinds for three players, while serve delivers; the receiver
        // hangs on the first delivery after the fifteenth transaction, with more still to come.
        for index in 0..<30 {
            let player = "p\((index / 3) % 3)"
            switch index % 3 {
            case 0: _ = try await cli.grant(player, "T-\(index)")
            case 1: _ = try await cli.json("adjust", "--player", player, "--amount", "1", "--reason-code", "goodwill", "--note", "n", "--actor", "sam", "--key", "a-\(index)")
            default: _ = try await cli.json("spend", "--player", player, "--amount", "2", "--key", "s-\(index)")
            }
            if index == 14 { receiver.hangOnNextDelivery() }
        }
        #expect(await eventually(within: .seconds(90)) { receiver.hung != nil }, "no delivery came to hang on")
        let hung = try #require(receiver.hung)

        kill(server.0.processIdentifier, SIGKILL)
        #expect(await CLI.finish(server).status == SIGKILL)
        for index in 30..<35 {
            _ = try await cli.json("adjust", "--player", "p0", "--amount", "1", "--reason-code", "goodwill", "--note", "n", "--actor", "sam", "--key", "a-\(index)")
        }
        receiver.release()
        (server, _) = try await ServeTests.serve(cli, arguments: allowLoopback)

        let ledger = try await cli.ledgerTransactions()
        #expect(ledger.count == 35 && ledger.map(\.seq) == Array(Int64(1)...35), "\(ledger.map(\.seq))")
        let ledgerIDs = Set(ledger.map(\.id))
        // The killed sender's claim lapses after 30 s; then the restarted one sends the rest.
        let caughtUp = await eventually(within: .seconds(120)) { receiver.acceptedIDs == ledgerIDs }
        #expect(caughtUp, "the receiver has \(receiver.acceptedIDs.count) of the ledger's \(ledgerIDs.count) events")

        let arrivals = receiver.arrivals
        #expect(receiver.problems.isEmpty, "\(receiver.problems)")
        #expect(receiver.acceptedIDs == ledgerIDs, "deduplicated, the receiver has exactly the ledger's events")
        // In seq order: the first arrival of each event comes after the first arrivals of all before it.
        var firstArrivals: [Int64] = []
        for arrival in arrivals where !firstArrivals.contains(arrival.seq) { firstArrivals.append(arrival.seq) }
        #expect(firstArrivals == ledger.map(\.seq), "first arrivals in order \(firstArrivals)")
        #expect(arrivals.allSatisfy { arrival in ledger.first { $0.seq == arrival.seq }?.id == arrival.id }, "each event carries its transaction's id")
        // The event the receiver hung on was sent again and answered.
        #expect(arrivals.filter { $0.id == hung.id && $0.answered }.count >= 1, "the hung event \(hung.seq) was not delivered again")

        let listed = try #require((try await cli.json("webhooks", "list")["webhooks"] as? [[String: Any]])?.first)
        #expect(listed["id"] as? String == endpointID && listed["status"] as? String == "active")
        #expect((listed["cursor_seq"] as? NSNumber)?.int64Value == 35, "\(listed)")
        #expect(try await cli.json("verify")["ok"] as? Bool == true)
    }
}
