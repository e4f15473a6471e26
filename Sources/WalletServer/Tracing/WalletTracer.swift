import Synchronization
import Tracing

/// The tracer `wallet serve --otel-endpoint` bootstraps: spans with W3C Trace Context ids,
/// handed when they end to a sink (`OTLPExporter.enqueue`, which never blocks). A span under a
/// caller's `traceparent` (`extract`) continues that trace; one under a caller that did not
/// sample its span is not recorded either, as OpenTelemetry's default sampler does.
public struct WalletTracer: Tracer {
    public typealias Span = WalletSpan

    private let sink: @Sendable (FinishedSpan) -> Void

    /// `sink` receives each recorded span once, when it ends, on the ending task: it must not block.
    public init(sink: @escaping @Sendable (FinishedSpan) -> Void) {
        self.sink = sink
    }

    public init(exporter: OTLPExporter) {
        self.init(sink: { exporter.enqueue($0) })
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> WalletSpan {
        var context = context()
        let parent = context.spanIdentity
        let identity = parent?.child() ?? .newTrace()
        context.spanIdentity = identity
        return WalletSpan(
            name: operationName, kind: kind, context: context, identity: identity, parentSpanID: parent?.spanID,
            startNanoseconds: instant().nanosecondsSinceEpoch, sink: identity.sampled ? sink : nil)
    }

    /// Spans are exported within a second of ending, or at shutdown: nothing to force.
    public func forceFlush() {}

    /// The caller's span, from a valid `traceparent`; anything else leaves `context` as it was,
    /// so the span started under it begins a new trace.
    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: Self.traceparentHeader, from: carrier), let identity = SpanIdentity(traceparent: header) else { return }
        context.spanIdentity = identity
    }

    /// Writes `traceparent` for the context's span, so that a service we call continues our trace.
    public func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let identity = context.spanIdentity else { return }
        injector.inject(identity.traceparent, forKey: Self.traceparentHeader, into: &carrier)
    }

    public static let traceparentHeader = "traceparent"
}

/// A span as it is exported: what `WalletSpan` recorded, fixed when it ended.
public struct FinishedSpan: Sendable {
    public var name: String
    public var kind: SpanKind
    public var identity: SpanIdentity
    /// The span this one is under, ours or a caller's; nil for the first span of a trace.
    public var parentSpanID: UInt64?
    public var startNanoseconds: UInt64
    public var endNanoseconds: UInt64
    public var attributes: SpanAttributes
    public var status: SpanStatus?
    public var events: [SpanEvent]
}

/// A span of `WalletTracer`: its name, attributes, status and events may change until it ends;
/// then it is handed to the sink once, and later changes are ignored.
public final class WalletSpan: Tracing.Span, Sendable {
    public let context: InstrumentationContext
    let kind: SpanKind
    let identity: SpanIdentity
    let parentSpanID: UInt64?
    let startNanoseconds: UInt64
    /// Nil when the span is not sampled: it carries its identity to the spans under it and is
    /// never exported.
    private let sink: (@Sendable (FinishedSpan) -> Void)?
    private let state: Mutex<State>

    /// A span holds at most this many events: a loop that records an error each turn must not
    /// grow one span without bound.
    static let eventsMax = 32

    private struct State {
        var name: String
        var attributes: SpanAttributes = [:]
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var ended = false
    }

    init(
        name: String, kind: SpanKind, context: InstrumentationContext, identity: SpanIdentity, parentSpanID: UInt64?, startNanoseconds: UInt64,
        sink: (@Sendable (FinishedSpan) -> Void)?
    ) {
        self.context = context
        self.kind = kind
        self.identity = identity
        self.parentSpanID = parentSpanID
        self.startNanoseconds = startNanoseconds
        self.sink = sink
        self.state = Mutex(State(name: name, ended: sink == nil))
    }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { if !$0.ended { $0.name = newValue } } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { if !$0.ended { $0.attributes = newValue } } }
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public func setStatus(_ status: SpanStatus) {
        state.withLock { if !$0.ended { $0.status = status } }
    }

    public func addEvent(_ event: SpanEvent) {
        state.withLock { if !$0.ended && $0.events.count < Self.eventsMax { $0.events.append(event) } }
    }

    /// Records the error's type only: an error's message may quote a player id, a key or a
    /// statement, which traces must not carry off the machine.
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var eventAttributes = attributes
        eventAttributes["exception.type"] = String(describing: type(of: error))
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: eventAttributes))
    }

    /// Links are not exported (nothing of ours makes them).
    public func addLink(_ link: SpanLink) {}

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let recorded: State? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return state
        }
        guard let recorded, let sink else { return }
        sink(
            FinishedSpan(
                name: recorded.name, kind: kind, identity: identity, parentSpanID: parentSpanID, startNanoseconds: startNanoseconds,
                endNanoseconds: max(instant().nanosecondsSinceEpoch, startNanoseconds), attributes: recorded.attributes, status: recorded.status,
                events: recorded.events))
    }
}
