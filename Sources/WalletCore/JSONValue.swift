import Foundation

/// A JSON value of any shape, for caller-supplied metadata. Numbers that fit `Int64` stay
/// integers; metadata is never money, so other numbers may be `Double`.
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The canonical text of this value: sorted keys, no insignificant whitespace. Two requests
    /// with the same metadata in another key order have the same canonical text.
    public func canonicalText() -> String {
        WalletJSON.text(self)
    }

    /// Parses JSON text such as a CLI argument, or stored canonical text.
    public static func parse(_ text: String) throws(WalletError) -> JSONValue {
        guard let value = JSONParser.value(of: Array(text.utf8)) else { throw .invalidRequest("metadata is not valid JSON") }
        return value
    }
}

/// Caller metadata as stored in the ledger: a JSON object in canonical text. It encodes as the
/// JSON object itself, not as a string.
public struct Metadata: Codable, Sendable, Equatable {
    public let canonicalText: String

    init(canonicalText: String) {
        self.canonicalText = canonicalText
    }

    /// Checks that `value` is an object within `Limits.metadataBytesMax` once canonical.
    public init(_ value: JSONValue) throws(WalletError) {
        guard case .object = value else {
            throw .invalidRequest("metadata must be a JSON object")
        }
        let text = value.canonicalText()
        guard text.utf8.count <= Limits.metadataBytesMax else {
            throw .invalidRequest("metadata must be at most \(Limits.metadataBytesMax) bytes of JSON")
        }
        self.canonicalText = text
    }

    public init(from decoder: any Decoder) throws {
        self = try Metadata(JSONValue(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONValue.parse(canonicalText).encode(to: encoder)
    }
}

/// The one JSON encoding of the wallet's output (API bodies, CLI output, canonical metadata):
/// sorted keys, unescaped slashes, no insignificant whitespace.
public enum WalletJSON {
    /// The JSON bytes of `value`. The values encoded here — the wallet's own result types and
    /// JSON values — hold only strings, integers, booleans, finite numbers and containers, so
    /// encoding cannot fail.
    public static func data<Value: Encodable>(_ value: Value) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try! encoder.encode(value)
    }

    public static func text<Value: Encodable>(_ value: Value) -> String {
        String(decoding: data(value), as: UTF8.self)
    }
}
