import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Tracing
import WalletGoogle

/// Sends ended spans to an OpenTelemetry collector over OTLP/HTTP in JSON, as a service of
/// `wallet serve`. A span that ends goes into a bounded buffer and the request goes on: beyond
/// `bufferedSpansMax` spans are dropped and counted (`wallet_trace_spans_dropped_total`), so a
/// collector that is slow, down or hung costs traces, never a request's time. The buffer is sent
/// every `flushInterval`, or as soon as it holds `exportSpansMax` spans, at most that many a
/// request; a request the collector answers 429, 502, 503 or 504 is tried once more, and failures
/// are logged at most once a minute. At graceful shutdown (after the application has drained) the
/// last spans are sent within `drainLimit`.
public final class OTLPExporter: Service, Sendable {
    public let settings: TraceExportSettings
    private let logger: Logger
    private let buffer = Mutex(Buffer())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let droppedCounter: CoreMetrics.Counter

    public static let bufferedSpansMax = 2_048
    public static let exportSpansMax = 512
    static let flushInterval = Duration.seconds(1)
    static let failureWarningInterval = Duration.seconds(60)
    static let bufferFull = "more spans ended between two exports than the buffer holds (\(bufferedSpansMax))"
    /// The longest a collector's answer is read: an OTLP answer is a few bytes, or a partial
    /// success's message.
    static let answerBytesMax = 64 * 1024

    private struct Buffer {
        var spans: [FinishedSpan] = []
        /// Spans dropped since the last warning: beyond the buffer, or in a failed request.
        var droppedSinceWarning = 0
        /// Why the latest spans were dropped.
        var dropReason = ""
        var lastWarning: ContinuousClock.Instant?
    }

    /// `drainSeconds` is `wallet serve`'s whole drain: the last export takes at most half of it,
    /// and never more than five seconds, so a hung collector cannot make the drain overrun.
    public init(settings: TraceExportSettings, drainSeconds: Int, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.drainLimit = .seconds(min(5, max(1, drainSeconds / 2)))
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        _ = WalletMetrics.registry
        droppedCounter = CoreMetrics.Counter(label: "wallet_trace_spans_dropped_total")
    }

    let drainLimit: Duration

    /// Takes an ended span; never waits. Past `bufferedSpansMax` buffered spans it is dropped.
    public func enqueue(_ span: FinishedSpan) {
        let buffered = buffer.withLock { buffer -> Int? in
            guard buffer.spans.count < Self.bufferedSpansMax else {
                buffer.droppedSinceWarning += 1
                buffer.dropReason = Self.bufferFull
                return nil
            }
            buffer.spans.append(span)
            return buffer.spans.count
        }
        guard let buffered else {
            droppedCounter.increment()
            return
        }
        if buffered >= Self.exportSpansMax { wake.yield() }
    }

    public func run() async throws {
        let timeout = GoogleHTTP.timeAmount(settings.timeout)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: timeout, read: timeout))
        // The exporter's own requests are not traced: each would be a span exported by the next.
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.tick() }
            group.addTask { await self.exportUntilShutdown(client) }
            group.addTask { await self.drainDeadline() }
            // The exports end after the last one (or the deadline first): the other tasks stop then.
            _ = await group.next()
            group.cancelAll()
        }
        let left = buffer.withLock { buffer in
            defer { buffer.spans.removeAll() }
            return buffer.spans.count
        }
        drop(left, reason: "not sent within the drain (\(drainLimit))")
        warnOfDropped(force: true)
        try? await client.shutdown()
    }

    /// Wakes the exports every `flushInterval` until cancelled.
    private func tick() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.flushInterval)
            wake.yield()
        }
    }

    /// Sends the buffer at each wake-up until a graceful shutdown, then the last spans.
    private func exportUntilShutdown(_ client: HTTPClient) async {
        await withGracefulShutdownHandler {
            for await _ in wakeups { await exportBuffered(client, draining: false) }
        } onGracefulShutdown: {
            self.wake.finish()
        }
        await exportBuffered(client, draining: true)
    }

    /// Returns `drainLimit` after a graceful shutdown began (or when cancelled): the exports
    /// still under way are then cancelled and their spans lost.
    private func drainDeadline() async {
        do {
            try await gracefulShutdown()
            try await Task.sleep(for: drainLimit)
        } catch {}
    }

    /// Sends the buffer, `exportSpansMax` spans a request. After a failure the rest waits for
    /// the next wake-up, or, when `draining`, is dropped: the collector is not answering.
    private func exportBuffered(_ client: HTTPClient, draining: Bool) async {
        while !Task.isCancelled {
            let spans = buffer.withLock { buffer -> [FinishedSpan] in
                let count = min(buffer.spans.count, Self.exportSpansMax)
                defer { buffer.spans.removeFirst(count) }
                return Array(buffer.spans.prefix(count))
            }
            if spans.isEmpty {
                warnOfDropped(force: false)
                return
            }
            if let failure = await send(spans, client: client) {
                drop(spans.count, reason: failure)
                if draining {
                    let rest = buffer.withLock { buffer in
                        defer { buffer.spans.removeAll() }
                        return buffer.spans.count
                    }
                    drop(rest, reason: failure)
                }
                return
            }
        }
    }

    /// Posts `spans` once, and once more when the collector answers 429, 502, 503 or 504. Nil
    /// when the collector took them.
    private func send(_ spans: [FinishedSpan], client: HTTPClient) async -> String? {
        let body: Data
        do {
            body = try OTLPJSON.exportRequest(spans, serviceName: settings.serviceName, scopeName: TraceExportSettings.scopeName)
        } catch {
            return "spans not encodable: \(error)"
        }
        var failure = await post(body, client: client)
        if let attempt = failure, attempt.retryable, !Task.isCancelled {
            // A collector that asked to be called again soon.
            try? await Task.sleep(for: .milliseconds(200))
            failure = await post(body, client: client)
        }
        return failure?.reason
    }

    private struct Failure {
        var reason: String
        var retryable: Bool
    }

    private func post(_ body: Data, client: HTTPClient) async -> Failure? {
        var request = HTTPClientRequest(url: settings.tracesURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "CreditsWallet")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: GoogleHTTP.timeAmount(settings.timeout))
            // The answer is read (and discarded) within the same timeout, so the connection can be reused.
            _ = try await response.body.collect(upTo: Self.answerBytesMax)
            let status = Int(response.status.code)
            if (200..<300).contains(status) { return nil }
            return Failure(reason: "the collector answered \(status)", retryable: [429, 502, 503, 504].contains(status))
        } catch let error as HTTPClientError where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
            return Failure(reason: "no answer within \(settings.timeout)", retryable: false)
        } catch let error as HTTPClientError where error == .cancelled {
            return Failure(reason: "cancelled at the drain's end", retryable: false)
        } catch is CancellationError {
            return Failure(reason: "cancelled at the drain's end", retryable: false)
        } catch {
            // Not tried again: AsyncHTTPClient has already tried to connect again until the timeout.
            return Failure(reason: "\(error)", retryable: false)
        }
    }

    private func drop(_ count: Int, reason: String) {
        guard count > 0 else { return }
        droppedCounter.increment(by: count)
        buffer.withLock { buffer in
            buffer.droppedSinceWarning += count
            buffer.dropReason = reason
        }
        warnOfDropped(force: false)
    }

    /// Logs the spans dropped since the last warning, at most once a minute (or now, when `force`).
    private func warnOfDropped(force: Bool) {
        let now = ContinuousClock.now
        let dropped = buffer.withLock { buffer -> (count: Int, reason: String)? in
            guard buffer.droppedSinceWarning > 0 else { return nil }
            if !force, let last = buffer.lastWarning, now - last < Self.failureWarningInterval { return nil }
            defer {
                buffer.droppedSinceWarning = 0
                buffer.lastWarning = now
            }
            return (buffer.droppedSinceWarning, buffer.dropReason)
        }
        guard let dropped else { return }
        logger.warning(
            "traces not exported",
            metadata: ["otel_endpoint": .string(settings.endpointForLogs), "reason": .string(dropped.reason), "spans_dropped": "\(dropped.count)"])
    }
}
