import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in OpenTelemetry collector on 127.0.0.1: it takes OTLP/HTTP exports of traces in JSON
/// (`POST /v1/traces`, `application/json`) and keeps their spans, as a collector's OTLP/HTTP
/// receiver would.
public final class OTLPCollectorStandIn: Sendable {
    /// A span as exported, with its resource's `service.name`; attribute values as text.
    public struct ExportedSpan: Sendable {
        public var name: String
        public var traceID: String
        public var spanID: String
        /// Empty for the first span of a trace.
        public var parentSpanID: String
        /// OTLP's number: 1 internal, 2 server, 3 client.
        public var kind: Int
        public var startTimeUnixNano: String
        public var endTimeUnixNano: String
        public var attributes: [String: String]
        public var serviceName: String
    }

    /// One export as it was posted.
    public struct Export: Sendable {
        public var path: String
        public var contentType: String
    }

    /// What the router's handler records, shared with the stand-in.
    private final class Received: Sendable {
        let spans = Mutex<[ExportedSpan]>([])
        let exports = Mutex<[Export]>([])
    }

    private let store: Received
    private let server: Task<Void, any Error>
    /// The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
    public let url: String

    public var received: [ExportedSpan] { store.spans.withLock { $0 } }
    public var exports: [Export] { store.exports.withLock { $0 } }

    public init() async throws {
        let router = Router()
        let store = Received()
        self.store = store
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        router.post("**") { request, context -> Response in
            let buffer = try await request.body.collect(upTo: 16 << 20)
            store.exports.withLock { $0.append(Export(path: request.uri.path, contentType: request.headers[.contentType] ?? "")) }
            let exported = Self.spans(in: Data(buffer.readableBytesView))
            store.spans.withLock { $0 += exported }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        var logger = Logger(label: "otlp-collector-stand-in")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        server = Task {
            defer { continuation.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        var port = 0
        for await value in stream { port = value }
        url = "http://127.0.0.1:\(port)"
    }

    public func stop() { server.cancel() }

    /// The spans of an `ExportTraceServiceRequest` in OTLP's JSON encoding.
    static func spans(in body: Data) -> [ExportedSpan] {
        guard let root = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return [] }
        var found: [ExportedSpan] = []
        for resource in root["resourceSpans"] as? [[String: Any]] ?? [] {
            let resourceAttributes = attributes((resource["resource"] as? [String: Any])?["attributes"])
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    found.append(
                        ExportedSpan(
                            name: span["name"] as? String ?? "", traceID: span["traceId"] as? String ?? "", spanID: span["spanId"] as? String ?? "",
                            parentSpanID: span["parentSpanId"] as? String ?? "", kind: span["kind"] as? Int ?? 0,
                            startTimeUnixNano: span["startTimeUnixNano"] as? String ?? "", endTimeUnixNano: span["endTimeUnixNano"] as? String ?? "",
                            attributes: attributes(span["attributes"]), serviceName: resourceAttributes["service.name"] ?? ""))
                }
            }
        }
        return found
    }

    /// OTLP `KeyValue`s as text: `{"stringValue": "x"}` as `x`, `{"intValue": "201"}` as `201`.
    private static func attributes(_ list: Any?) -> [String: String] {
        var attributes: [String: String] = [:]
        for attribute in list as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any], let first = value.values.first else { continue }
            attributes[key] = "\(first)"
        }
        return attributes
    }
}

/// A collector that hangs: a socket on 127.0.0.1 that listens and never accepts, so a client's
/// connection is made (by the kernel's backlog) and its request is never answered.
public final class HangingListener: Sendable {
    private let descriptor: Int32
    public let url: String

    public init() throws {
        let (descriptor, port) = try LoopbackSocket.listen()
        self.descriptor = descriptor
        url = "http://127.0.0.1:\(port)"
    }

    deinit { close(descriptor) }
}
