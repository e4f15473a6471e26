import Tracing
import WalletCore

/// A span's place in its trace, as W3C Trace Context (`traceparent`) writes it: a 16-byte trace
/// id and an 8-byte span id, neither all zeros, and whether the trace is sampled (recorded).
public struct SpanIdentity: Sendable, Hashable {
    /// The trace id's first and last eight bytes, big-endian.
    public var traceIDHigh: UInt64
    public var traceIDLow: UInt64
    public var spanID: UInt64
    /// The `sampled` flag: a caller that did not record its span asks us not to record ours.
    public var sampled: Bool

    public init(traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, sampled: Bool) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanID = spanID
        self.sampled = sampled
    }

    /// The first span of a new trace: random ids from the system's generator.
    static func newTrace() -> SpanIdentity {
        var generator = SystemRandomNumberGenerator()
        var high: UInt64 = 0
        var low: UInt64 = 0
        // All zeros is not a trace id; the loop runs again once in 2^128 draws.
        while high == 0 && low == 0 {
            high = generator.next()
            low = generator.next()
        }
        return SpanIdentity(traceIDHigh: high, traceIDLow: low, spanID: randomSpanID(), sampled: true)
    }

    /// A span under this one: the same trace and sampling, a span id of its own.
    func child() -> SpanIdentity {
        SpanIdentity(traceIDHigh: traceIDHigh, traceIDLow: traceIDLow, spanID: Self.randomSpanID(), sampled: sampled)
    }

    static func randomSpanID() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        var id: UInt64 = 0
        while id == 0 { id = generator.next() }
        return id
    }

    /// The trace id as 32 lowercase hex digits, as `traceparent` and OTLP/JSON write it.
    public var traceIDHex: String { Self.hex(traceIDHigh) + Self.hex(traceIDLow) }
    /// The span id as 16 lowercase hex digits.
    public var spanIDHex: String { Self.hex(spanID) }

    /// The `traceparent` header that continues this span's trace: version 00.
    public var traceparent: String { "00-\(traceIDHex)-\(spanIDHex)-\(sampled ? "01" : "00")" }

    /// Reads a `traceparent` header. Nil for anything W3C Trace Context calls invalid: a version
    /// of `ff` or not two lowercase hex digits, a version 00 header of any length but 55, ids of
    /// the wrong length, in uppercase or all zeros, missing dashes or flags. A caller's bad header
    /// then starts a new trace, never an error. A later version is read by its first four fields,
    /// as the specification asks.
    public init?(traceparent: String) {
        let bytes = Array(traceparent.utf8.prefix(Self.traceparentBytesMax + 1))
        guard bytes.count >= 55, bytes.count <= Self.traceparentBytesMax,
            let version = Self.parseHex(bytes[0..<2]), version != 0xFF,
            bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let high = Self.parseHex(bytes[3..<19]), let low = Self.parseHex(bytes[19..<35]),
            let span = Self.parseHex(bytes[36..<52]), let flags = Self.parseHex(bytes[53..<55]),
            high != 0 || low != 0, span != 0
        else { return nil }
        // Version 00 is exactly 55 characters; a later one may add fields after a dash.
        let endsWell = bytes.count == 55 || (version != 0 && bytes[55] == UInt8(ascii: "-"))
        guard endsWell else { return nil }
        self.init(traceIDHigh: high, traceIDLow: low, spanID: span, sampled: flags & 1 == 1)
    }

    /// Longer headers are not read: the specification's later versions stay short, and a bound
    /// keeps a hostile header from costing more than a glance.
    static let traceparentBytesMax = 512

    /// `value`'s eight bytes, big-endian, as 16 lowercase hex digits.
    static func hex(_ value: UInt64) -> String {
        withUnsafeBytes(of: value.bigEndian) { Hex.encode($0) }
    }

    /// Up to 16 lowercase hex digits as a number; nil for anything else (uppercase included,
    /// which W3C Trace Context does not allow).
    private static func parseHex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard !(UInt8(ascii: "A")...UInt8(ascii: "F")).contains(digit), let nibble = Hex.value(digit) else { return nil }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}

/// Where a span's identity travels in an `InstrumentationContext`: set by `WalletTracer` for
/// its spans, and by its `extract` for a caller's span, which a server span then continues.
enum SpanIdentityKey: InstrumentationContextKey {
    typealias Value = SpanIdentity
    static var nameOverride: String? { "wallet-span-identity" }
}

extension InstrumentationContext {
    /// The identity of the span this context belongs to, ours or a caller's; nil at the top level.
    public var spanIdentity: SpanIdentity? {
        get { self[SpanIdentityKey.self] }
        set { self[SpanIdentityKey.self] = newValue }
    }
}
