import Foundation
import Tracing

/// An `ExportTraceServiceRequest` in OTLP's JSON encoding (OTLP/HTTP, `application/json`): ids
/// as lowercase hex, times and 64-bit integers as decimal strings, enums as numbers, and one
/// resource (`service.name`) with one scope holding every span.
enum OTLPJSON {
    static func exportRequest(_ spans: [FinishedSpan], serviceName: String, scopeName: String) throws -> Data {
        let request = ExportRequest(resourceSpans: [
            ResourceSpans(
                resource: Resource(attributes: [KeyValue(key: "service.name", value: .string(serviceName))]),
                scopeSpans: [ScopeSpans(scope: Scope(name: scopeName), spans: spans.map(Span.init))])
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return try encoder.encode(request)
    }

    struct ExportRequest: Encodable {
        var resourceSpans: [ResourceSpans]
    }

    struct ResourceSpans: Encodable {
        var resource: Resource
        var scopeSpans: [ScopeSpans]
    }

    struct Resource: Encodable {
        var attributes: [KeyValue]
    }

    struct ScopeSpans: Encodable {
        var scope: Scope
        var spans: [Span]
    }

    struct Scope: Encodable {
        var name: String
    }

    struct Span: Encodable {
        var traceId: String
        var spanId: String
        var parentSpanId: String?
        var name: String
        var kind: Int
        var startTimeUnixNano: String
        var endTimeUnixNano: String
        var attributes: [KeyValue]
        var events: [Event]
        var status: Status

        init(_ span: FinishedSpan) {
            traceId = span.identity.traceIDHex
            spanId = span.identity.spanIDHex
            parentSpanId = span.parentSpanID.map(SpanIdentity.hex)
            name = span.name
            kind = OTLPJSON.kind(span.kind)
            startTimeUnixNano = String(span.startNanoseconds)
            endTimeUnixNano = String(span.endNanoseconds)
            attributes = OTLPJSON.keyValues(span.attributes)
            events = span.events.map { Event(timeUnixNano: String($0.nanosecondsSinceEpoch), name: $0.name, attributes: OTLPJSON.keyValues($0.attributes)) }
            switch span.status?.code {
            case .ok: status = Status(code: 1, message: span.status?.message)
            case .error: status = Status(code: 2, message: span.status?.message)
            case nil: status = Status(code: 0, message: nil)
            }
        }
    }

    struct Event: Encodable {
        var timeUnixNano: String
        var name: String
        var attributes: [KeyValue]
    }

    /// `STATUS_CODE_UNSET` 0, `OK` 1, `ERROR` 2.
    struct Status: Encodable {
        var code: Int
        var message: String?
    }

    struct KeyValue: Encodable {
        var key: String
        var value: AnyValue
    }

    /// OTLP's `AnyValue`: one member named by the value's type.
    enum AnyValue: Encodable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case array([AnyValue])

        private enum CodingKeys: String, CodingKey {
            case stringValue, intValue, doubleValue, boolValue, arrayValue
        }

        private struct ArrayValue: Encodable {
            var values: [AnyValue]
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .string(let text): try container.encode(text, forKey: .stringValue)
            // 64-bit integers are strings in protobuf's JSON mapping: a reader's doubles would round them.
            case .int(let number): try container.encode(String(number), forKey: .intValue)
            // JSON has no NaN or infinity; protobuf's JSON mapping writes them as these strings.
            case .double(let number) where number.isNaN: try container.encode("NaN", forKey: .doubleValue)
            case .double(let number) where number.isInfinite: try container.encode(number > 0 ? "Infinity" : "-Infinity", forKey: .doubleValue)
            case .double(let number): try container.encode(number, forKey: .doubleValue)
            case .bool(let flag): try container.encode(flag, forKey: .boolValue)
            case .array(let values): try container.encode(ArrayValue(values: values), forKey: .arrayValue)
            }
        }
    }

    /// `SPAN_KIND_INTERNAL` 1, `SERVER` 2, `CLIENT` 3, `PRODUCER` 4, `CONSUMER` 5.
    static func kind(_ kind: SpanKind) -> Int {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    /// Attributes sorted by key: the same span always encodes to the same bytes.
    static func keyValues(_ attributes: SpanAttributes) -> [KeyValue] {
        var pairs: [KeyValue] = []
        attributes.forEach { key, value in pairs.append(KeyValue(key: key, value: anyValue(value))) }
        return pairs.sorted { $0.key < $1.key }
    }

    static func anyValue(_ attribute: SpanAttribute) -> AnyValue {
        switch attribute {
        case .int32(let number): .int(Int64(number))
        case .int64(let number): .int(number)
        case .int32Array(let numbers): .array(numbers.map { .int(Int64($0)) })
        case .int64Array(let numbers): .array(numbers.map { .int($0) })
        case .double(let number): .double(number)
        case .doubleArray(let numbers): .array(numbers.map { .double($0) })
        case .bool(let flag): .bool(flag)
        case .boolArray(let flags): .array(flags.map { .bool($0) })
        case .string(let text): .string(text)
        case .stringArray(let texts): .array(texts.map { .string($0) })
        case .stringConvertible(let value): .string(value.description)
        case .stringConvertibleArray(let values): .array(values.map { .string($0.description) })
        default: .string("")
        }
    }
}
