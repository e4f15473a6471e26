import Foundation
import Testing
import WalletTestSupport

/// `wallet serve` exporting traces over OTLP/HTTP (JSON) to a stand-in collector, as a separate
/// process: the tracer is bootstrapped once per process, and the last spans are sent when the
/// server stops.
@Suite("Traces", .throttled)
struct TracingTests {
    /// A player id that appears in request paths only: no span may carry it.
    static let player = "player-7f3a9c"

    /// A served ledger with `player`'s 20 credits and a service key.
    struct Served {
        var cli: CLI
        var key: String
        var server: (ChildProcess, ChildPipe, ChildPipe)
        var base: String

        func spend(_ idempotencyKey: String, requestID: String, headers: [String: String] = [:]) async -> Int? {
            await send(
                "POST", "\(base)/v1/wallets/\(TracingTests.player)/spend",
                headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json", "Idempotency-Key": idempotencyKey, "X-Request-Id": requestID]
                    .merging(headers) { $1 },
                body: #"{"amount": 3}"#)?.status
        }

        func balance(requestID: String, headers: [String: String] = [:]) async -> Int? {
            await send("GET", "\(base)/v1/wallets/\(TracingTests.player)", headers: ["Authorization": "Bearer \(key)", "X-Request-Id": requestID].merging(headers) { $1 })?
                .status
        }

        /// SIGTERM, then the exit: the exporter sends the last spans while the server drains.
        func stop() async -> CommandOutput {
            server.0.terminate()
            return await CLI.finish(server)
        }
    }

    static func serve(environment: [String: String] = [:], arguments: [String] = []) async throws -> Served {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant(player, "T1", quantity: 4)
        let key = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "traced")["key"] as? String)
        let (server, base) = try await ServeTests.serve(cli, environment: environment, arguments: arguments)
        return Served(cli: cli, key: key, server: server, base: base)
    }

    @Test("--otel-endpoint: a spend's request span (route, method, status, request id) and its group-commit batch's span (size, store) reach the collector")
    func exported() async throws {
        let collector = try await OTLPCollectorStandIn()
        defer { collector.stop() }
        let served = try await Self.serve(environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"], arguments: ["--otel-endpoint", collector.url])
        #expect(await served.spend("traced-1", requestID: "trace-spend-1") == 201)
        let output = await served.stop()
        #expect(output.status == 0, "\(output.stderr)")
        let spans = collector.received
        let request = try #require(spans.first { $0.attributes["wallet.request_id"] == "trace-spend-1" }, "\(spans.map(\.name))")
        #expect(request.name == "POST /v1/wallets/{player_id}/spend")
        #expect(request.attributes["http.route"] == "/v1/wallets/{player_id}/spend")
        #expect(request.attributes["http.request.method"] == "POST" && request.attributes["http.response.status_code"] == "201")
        #expect(request.kind == 2 && request.parentSpanID.isEmpty && request.traceID.count == 32 && request.spanID.count == 16)
        #expect(request.serviceName == "creditswallet")
        // The path is not recorded: it may carry a player id or an export link's token.
        #expect(!spans.contains { $0.name.contains(Self.player) || $0.attributes.values.contains { $0.contains(Self.player) } })
        let batches = spans.filter { $0.name == "group commit" }
        #expect(!batches.isEmpty)
        #expect(batches.allSatisfy { $0.attributes["wallet.store"] == "sqlite" && (Int($0.attributes["wallet.batch.size"] ?? "") ?? 0) >= 1 })
        #expect(batches.allSatisfy { $0.kind == 1 && $0.parentSpanID.isEmpty }, "a batch serves many requests: its span is a root")
        // The spend waited for its batch: the batch's span started within the request's. (It may
        // end a moment after it: the writer answers the batch's callers before it ends its span.)
        let (start, end) = (UInt64(request.startTimeUnixNano) ?? 0, UInt64(request.endTimeUnixNano) ?? 0)
        #expect(batches.contains { (start...end).contains(UInt64($0.startTimeUnixNano) ?? 0) }, "\(start)...\(end): \(batches.map(\.startTimeUnixNano))")
        #expect(!collector.exports.isEmpty && collector.exports.allSatisfy { $0.path == "/v1/traces" && $0.contentType == "application/json" })
    }

    @Test("OTEL_EXPORTER_OTLP_ENDPOINT (a trailing slash and a path kept) turns traces on, and OTEL_SERVICE_NAME names the service")
    func environment() async throws {
        let collector = try await OTLPCollectorStandIn()
        defer { collector.stop() }
        let served = try await Self.serve(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/otlp/", "OTEL_SERVICE_NAME": "wallet-eu-1"])
        #expect(await served.spend("traced-1", requestID: "trace-env-1") == 201)
        let output = await served.stop()
        #expect(output.status == 0, "\(output.stderr)")
        let request = try #require(collector.received.first { $0.attributes["wallet.request_id"] == "trace-env-1" })
        #expect(request.serviceName == "wallet-eu-1")
        #expect(!collector.exports.isEmpty && collector.exports.allSatisfy { $0.path == "/otlp/v1/traces" })
    }

    @Test("a caller's traceparent continues its trace; a malformed one starts a new trace and the request is served")
    func callerTraceContext() async throws {
        let collector = try await OTLPCollectorStandIn()
        defer { collector.stop() }
        let served = try await Self.serve(arguments: ["--otel-endpoint", collector.url])
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        let span = "00f067aa0ba902b7"
        let continued = [
            "tp-valid": "00-\(trace)-\(span)-01",
            // A later version is read by its first four fields.
            "tp-later-version": "cc-\(trace)-\(span)-01-what-comes-next",
        ]
        let malformed = [
            "00-\(trace.uppercased())-\(span)-01", "00-00000000000000000000000000000000-\(span)-01", "00-\(trace)-0000000000000000-01",
            "ff-\(trace)-\(span)-01", "00-\(trace)-\(span)-1", "00-\(trace)-\(span)-01-", "00-\(trace)-\(span)", "00_\(trace)_\(span)_01",
            "0-\(trace)-\(span)-01", "00-\(trace.dropLast())-\(span)-01", "00-\(trace)-\(span)-0g", "hello", "",
        ]
        for (requestID, header) in continued {
            #expect(await served.balance(requestID: requestID, headers: ["traceparent": header]) == 200)
        }
        for (index, header) in malformed.enumerated() {
            #expect(await served.balance(requestID: "tp-bad-\(index)", headers: ["traceparent": header]) == 200, "\(header)")
        }
        // A caller that did not sample its span: ours is not recorded either.
        #expect(await served.balance(requestID: "tp-unsampled", headers: ["traceparent": "00-\(trace)-\(span)-00"]) == 200)
        let output = await served.stop()
        #expect(output.status == 0, "\(output.stderr)")
        let spans = collector.received
        for requestID in continued.keys {
            let request = try #require(spans.first { $0.attributes["wallet.request_id"] == requestID }, "\(requestID)")
            #expect(request.traceID == trace && request.parentSpanID == span && request.spanID != span, "\(requestID)")
        }
        var newTraces: Set<String> = []
        for (index, header) in malformed.enumerated() {
            let request = try #require(spans.first { $0.attributes["wallet.request_id"] == "tp-bad-\(index)" }, "\(header)")
            #expect(request.parentSpanID.isEmpty && request.traceID.lowercased() != trace && request.traceID.count == 32, "\(header)")
            newTraces.insert(request.traceID)
        }
        #expect(newTraces.count == malformed.count, "each new trace has an id of its own")
        #expect(!spans.contains { $0.attributes["wallet.request_id"] == "tp-unsampled" })
    }

    @Test("a collector that is down or hangs never fails a spend: it answers 201, the server keeps serving and stops within its drain, and logs that traces were lost")
    func collectorUnavailable() async throws {
        let hanging = try HangingListener()
        let down = "http://127.0.0.1:\(try LoopbackSocket.freePort())"
        // A minute's timeout: were an export awaited on a request's path, the spend would wait for it.
        for endpoint in [down, hanging.url] {
            let served = try await Self.serve(environment: ["OTEL_EXPORTER_OTLP_TIMEOUT": "60000"], arguments: ["--otel-endpoint", endpoint])
            for index in 0..<3 {
                #expect(await served.spend("unavailable-\(index)", requestID: "unavailable-\(index)") == 201, "\(endpoint)")
            }
            #expect(await send("GET", "\(served.base)/healthz")?.status == 200)
            let balance = await send("GET", "\(served.base)/v1/wallets/\(Self.player)", headers: ["Authorization": "Bearer \(served.key)"])
            let balances = (try? JSONSerialization.jsonObject(with: Data((balance?.body ?? "").utf8)) as? [String: Any])?["balances"] as? [String: Any]
            #expect(balance?.status == 200 && balances?["credits"] as? Int == 11, "\(balance?.body ?? "")")
            // The last export gives up within the drain: the server exits 0, not at the drain's deadline.
            let output = await served.stop()
            #expect(output.status == 0, "\(endpoint): \(output.stderr)")
            #expect(output.stderr.contains("traces not exported"), "\(endpoint): \(output.stderr)")
        }
    }

    @Test("serve refuses OTLP encodings it cannot send (http/protobuf, grpc) and bad trace settings, with status 64")
    func refusedSettings() async throws {
        let cli = try CLI()
        for (arguments, environment, message) in [
            (["--otel-endpoint", "http://127.0.0.1:4318"], ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "only http/json is"),
            ([], ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"], "only http/json is"),
            ([], ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"], "only http/json is"),
            (["--otel-endpoint", "http://127.0.0.1:4318"], ["OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"], "must be http/json"),
            (["--otel-endpoint", "ftp://127.0.0.1:4318"], [:], "http:// or https://"),
            (["--otel-endpoint", "127.0.0.1:4318"], [:], "http:// or https://"),
            // A refused endpoint is quoted without its credentials.
            (["--otel-endpoint", "https://collector:s3cret@127.0.0.1:4318/?x=1"], [:], "https://127.0.0.1:4318/?x=1"),
            (["--otel-endpoint", "http://127.0.0.1:4318"], ["OTEL_EXPORTER_OTLP_TIMEOUT": "0"], "milliseconds"),
            (["--otel-endpoint", "http://127.0.0.1:4318"], ["OTEL_SERVICE_NAME": String(repeating: "s", count: 256)], "OTEL_SERVICE_NAME"),
        ] {
            let output = await CLI.finish(try cli.start(["serve", "--port", "\(try freeLoopbackPort())"] + arguments, environment: environment))
            #expect(output.status == 64, "\(arguments) \(environment): \(output.stderr)")
            #expect(output.stderr.contains(message), "\(arguments) \(environment): \(output.stderr)")
            #expect(!output.stderr.contains("s3cret"), "\(output.stderr)")
        }
    }
}
