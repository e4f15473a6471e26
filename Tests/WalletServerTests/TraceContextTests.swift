import Foundation
import Synchronization
import Testing
import Tracing
@testable import WalletServer
import WalletTestSupport

/// The tracer's pieces without a process or a collector: W3C `traceparent`, parent and child
/// spans, sampling, and the OTLP/JSON body (the served whole is `TracingTests`).
@Suite("Trace context and OTLP/JSON", .throttled)
struct TraceContextTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let span = "00f067aa0ba902b7"

    /// Spans a sink received.
    final class Received: Sendable {
        let spans = Mutex<[FinishedSpan]>([])
        var all: [FinishedSpan] { spans.withLock { $0 } }
        func tracer() -> WalletTracer { WalletTracer(sink: { span in self.spans.withLock { $0.append(span) } }) }
    }

    struct Headers: Extractor, Injector {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }

    @Test("traceparent: version 00 of 55 characters and later versions are read; anything malformed is not")
    func parsing() throws {
        let read = try #require(SpanIdentity(traceparent: "00-\(Self.trace)-\(Self.span)-01"))
        #expect(read.traceIDHex == Self.trace && read.spanIDHex == Self.span && read.sampled)
        #expect(read.traceparent == "00-\(Self.trace)-\(Self.span)-01")
        #expect(SpanIdentity(traceparent: "00-\(Self.trace)-\(Self.span)-00")?.sampled == false)
        #expect(SpanIdentity(traceparent: "00-\(Self.trace)-\(Self.span)-03")?.sampled == true, "other flags are ignored")
        #expect(SpanIdentity(traceparent: "cc-\(Self.trace)-\(Self.span)-01-more")?.traceIDHex == Self.trace)
        #expect(SpanIdentity(traceparent: "cc-\(Self.trace)-\(Self.span)-01")?.spanIDHex == Self.span)
        for malformed in [
            "00-\(Self.trace.uppercased())-\(Self.span)-01", "00-\(Self.trace)-\(Self.span.uppercased())-01", "00-\(Self.trace)-\(Self.span)-0A",
            "00-00000000000000000000000000000000-\(Self.span)-01", "00-\(Self.trace)-0000000000000000-01", "ff-\(Self.trace)-\(Self.span)-01",
            "00-\(Self.trace)-\(Self.span)-01-", "00-\(Self.trace)-\(Self.span)-01-more", "cc-\(Self.trace)-\(Self.span)-01more",
            "00-\(Self.trace)-\(Self.span)-1", "00-\(Self.trace)-\(Self.span)", "00-\(Self.trace)\(Self.span)-01-0", " 00-\(Self.trace)-\(Self.span)-01",
            "00-\(Self.trace)-\(Self.span)-01 ", "00-\(Self.trace.dropLast())0-\(Self.span.dropLast())-01", "0x-\(Self.trace)-\(Self.span)-01",
            "00-\(Self.trace)-\(Self.span)-+1", "00-+\(Self.trace.dropFirst())-\(Self.span)-01", "", "00",
            "cc-\(Self.trace)-\(Self.span)-01-" + String(repeating: "x", count: 600),
        ] {
            #expect(SpanIdentity(traceparent: malformed) == nil, "\(malformed)")
        }
    }

    @Test("a span under an extracted traceparent continues the trace; without one, or under a malformed one, a new trace starts")
    func continuation() throws {
        let received = Received()
        let tracer = received.tracer()
        var context = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "00-\(Self.trace)-\(Self.span)-01"], into: &context, using: Headers())
        let child = tracer.startSpan("child", context: context, ofKind: .server)
        let grandchild = tracer.startSpan("grandchild", context: child.context)
        grandchild.end()
        child.end()
        var malformedContext = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "00-\(Self.trace.uppercased())-\(Self.span)-01"], into: &malformedContext, using: Headers())
        tracer.startSpan("fresh", context: malformedContext).end()
        tracer.startSpan("fresh too", context: .topLevel).end()
        let spans = Dictionary(uniqueKeysWithValues: received.all.map { ($0.name, $0) })
        let continued = try #require(spans["child"])
        #expect(continued.identity.traceIDHex == Self.trace && continued.parentSpanID.map(SpanIdentity.hex) == Self.span && continued.kind == .server)
        #expect(spans["grandchild"]?.identity.traceIDHex == Self.trace && spans["grandchild"]?.parentSpanID == continued.identity.spanID)
        let fresh = try #require(spans["fresh"])
        let freshToo = try #require(spans["fresh too"])
        #expect(fresh.parentSpanID == nil && fresh.identity.traceIDHex != Self.trace && freshToo.parentSpanID == nil)
        #expect(fresh.identity.traceIDHex != freshToo.identity.traceIDHex && fresh.identity.spanID != 0)
        // What we inject is what a service we call reads back.
        var outgoing: [String: String] = [:]
        tracer.inject(child.context, into: &outgoing, using: Headers())
        #expect(outgoing["traceparent"] == "00-\(Self.trace)-\(continued.identity.spanIDHex)-01")
    }

    @Test("a span is handed over once, when it ends; an unsampled caller's trace is carried on but not recorded")
    func recording() {
        let received = Received()
        let tracer = received.tracer()
        let span = tracer.startSpan("once")
        span.attributes["wallet.batch.size"] = 3
        span.end()
        span.attributes["late"] = true
        span.end()
        #expect(received.all.count == 1 && received.all.first?.attributes.get("late") == nil && !span.isRecording)
        var context = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "00-\(Self.trace)-\(Self.span)-00"], into: &context, using: Headers())
        let unsampled = tracer.startSpan("unsampled", context: context)
        #expect(!unsampled.isRecording)
        var outgoing: [String: String] = [:]
        tracer.inject(unsampled.context, into: &outgoing, using: Headers())
        #expect(outgoing["traceparent"]?.hasPrefix("00-\(Self.trace)-") == true && outgoing["traceparent"]?.hasSuffix("-00") == true)
        unsampled.end()
        #expect(received.all.count == 1)
    }

    @Test("the OTLP/JSON body: hex ids, nanoseconds and 64-bit integers as strings, kinds and status codes as numbers")
    func encoding() throws {
        let identity = try #require(SpanIdentity(traceparent: "00-\(Self.trace)-\(Self.span)-01"))
        let span = FinishedSpan(
            name: "POST /v1/wallets/{player_id}/spend", kind: .server, identity: identity, parentSpanID: nil, startNanoseconds: 1_700_000_000_123_456_789,
            endNanoseconds: 1_700_000_000_223_456_789,
            attributes: ["http.response.status_code": 201, "wallet.request_id": "r-1", "ratio": .double(.nan), "cached": true],
            status: SpanStatus(code: .error), events: [])
        let body = try OTLPJSON.exportRequest([span], serviceName: "wallet-eu-1", scopeName: "creditswallet")
        let root = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let resource = try #require((root["resourceSpans"] as? [[String: Any]])?.first)
        let serviceName = ((resource["resource"] as? [String: Any])?["attributes"] as? [[String: Any]])?.first
        #expect(serviceName?["key"] as? String == "service.name" && (serviceName?["value"] as? [String: Any])?["stringValue"] as? String == "wallet-eu-1")
        let scope = try #require((resource["scopeSpans"] as? [[String: Any]])?.first)
        #expect((scope["scope"] as? [String: Any])?["name"] as? String == "creditswallet")
        let encoded = try #require((scope["spans"] as? [[String: Any]])?.first)
        #expect(encoded["traceId"] as? String == Self.trace && encoded["spanId"] as? String == Self.span && encoded["parentSpanId"] == nil)
        #expect(encoded["startTimeUnixNano"] as? String == "1700000000123456789" && encoded["endTimeUnixNano"] as? String == "1700000000223456789")
        #expect(encoded["kind"] as? Int == 2 && (encoded["status"] as? [String: Any])?["code"] as? Int == 2)
        let attributes = Dictionary(
            uniqueKeysWithValues: (encoded["attributes"] as? [[String: Any]] ?? []).compactMap { pair in
                (pair["key"] as? String).map { ($0, pair["value"] as? [String: Any] ?? [:]) }
            })
        #expect(attributes["http.response.status_code"]?["intValue"] as? String == "201")
        #expect(attributes["wallet.request_id"]?["stringValue"] as? String == "r-1")
        #expect(attributes["ratio"]?["doubleValue"] as? String == "NaN" && attributes["cached"]?["boolValue"] as? Bool == true)
    }
}
