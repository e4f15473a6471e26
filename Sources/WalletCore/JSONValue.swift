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

    /// Levels of objects and arrays: 0 for a scalar, 1 for `{}`.
    public var depth: Int {
        switch self {
        case .array(let items): 1 + (items.map(\.depth).max() ?? 0)
        case .object(let members): 1 + (members.values.map(\.depth).max() ?? 0)
        default: 0
        }
    }

    /// The canonical text of this value: sorted keys, no insignificant whitespace. Two requests
    /// with the same metadata in another key order have the same canonical text.
    public func canonicalText() throws(WalletError) -> String {
        try WalletJSON.text(self)
    }

    /// Parses JSON bytes received from outside (a request body, a token's claims, a signed
    /// payload) with the strict parser: no member twice, bounded nesting, valid UTF-8, numbers
    /// kept exactly. `what` names the text in the error (`the body`).
    /// With `keepsNumbersExactly` false, numbers are read as `JSONDecoder` reads them: for what
    /// is read and never stored.
    public static func strict(_ bytes: [UInt8], what: String, keepsNumbersExactly: Bool = true) throws(WalletError) -> JSONValue {
        do {
            return try JSONParser.checkedValue(of: bytes, keepsNumbersExactly: keepsNumbersExactly)
        } catch {
            throw .invalidRequest("\(what) is refused: \(error.reason)")
        }
    }

    /// Parses JSON text such as a CLI argument, or stored canonical text, with the strict parser
    /// every reader uses (`JSONParser`).
    public static func parse(_ text: String) throws(WalletError) -> JSONValue {
        try strict(Array(text.utf8), what: "metadata")
    }
}

/// Caller metadata as stored in the ledger: a JSON object in canonical text. It encodes as the
/// JSON object itself, not as a string.
public struct Metadata: Codable, Sendable, Equatable {
    public let canonicalText: String

    package init(canonicalText: String) {
        self.canonicalText = canonicalText
    }

    /// Checks that `value` is an object within `Limits.metadataBytesMax` once canonical, and
    /// that its canonical text reads back, with the parser every reader uses, as the same
    /// value: what is accepted here is what history, statements, replays and exports return.
    public init(_ value: JSONValue) throws(WalletError) {
        guard case .object = value else {
            throw .invalidRequest("metadata must be a JSON object", field: "metadata")
        }
        guard value.depth <= Limits.metadataDepthMax else {
            throw .invalidRequest("metadata nests objects and arrays deeper than \(Limits.metadataDepthMax) levels", field: "metadata")
        }
        let text = try value.canonicalText()
        guard text.utf8.count <= Limits.metadataBytesMax else {
            throw .invalidRequest("metadata must be at most \(Limits.metadataBytesMax) bytes of JSON", field: "metadata")
        }
        guard try JSONValue.parse(text) == value else {
            throw .invalidRequest("metadata holds a value that cannot be kept exactly as sent", field: "metadata")
        }
        self.canonicalText = text
    }

    public init(from decoder: any Decoder) throws {
        self = try Metadata(JSONValue(from: decoder))
    }

    /// The object's members; nil for a stored text that no longer parses as an object.
    package var members: [String: JSONValue]? {
        guard case .object(let members)? = try? JSONValue.parse(canonicalText) else { return nil }
        return members
    }

    /// The same object without the members named `names`, for an audience that may not see
    /// them; nil when nothing is left. A stored text that no longer parses is kept as it is.
    package func removing(_ names: Set<String>) -> Metadata? {
        guard case .object(var members)? = try? JSONValue.parse(canonicalText), members.keys.contains(where: names.contains) else { return self }
        for name in names { members[name] = nil }
        guard !members.isEmpty, let text = try? JSONValue.object(members).canonicalText() else { return nil }
        return Metadata(canonicalText: text)
    }

    /// Encodes the object itself. A stored text that no longer parses (written by an older
    /// version with other limits) is returned as a JSON string of that text: a reader never
    /// fails, let alone traps, on a stored row.
    public func encode(to encoder: any Encoder) throws {
        if let value = try? JSONValue.parse(canonicalText) {
            try value.encode(to: encoder)
        } else {
            var container = encoder.singleValueContainer()
            try container.encode(canonicalText)
        }
    }
}

/// The one JSON encoding of the wallet's output (API bodies, CLI output, canonical metadata):
/// sorted keys, unescaped slashes, no insignificant whitespace.
public enum WalletJSON {
    /// The JSON bytes of `value`. The wallet's own values hold only strings, integers, booleans,
    /// finite numbers and containers; should encoding fail all the same, the caller gets an
    /// error to answer, never a trap.
    public static func data<Value: Encodable>(_ value: Value, for audience: Audience = .staff) throws(WalletError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let key = Audience.key { encoder.userInfo[key] = audience }
        do {
            return try encoder.encode(value)
        } catch {
            throw .storage("a value could not be encoded as JSON: \(error)")
        }
    }

    /// Decodes `Value` from JSON received from outside (a token's claims, a store's signed
    /// payload) as the strict parser (`JSONValue.strict`) reads it: a member named twice,
    /// which `JSONDecoder` would read as one of the two, is refused. Nil when either step fails.
    public static func decodeStrictly<Value: Decodable>(_ type: Value.Type, from bytes: Data) -> Value? {
        guard let value = try? JSONValue.strict(Array(bytes), what: "the document", keepsNumbersExactly: false) else { return nil }
        return try? JSONValueDecoder.decode(type, from: value)
    }

    public static func text<Value: Encodable>(_ value: Value, for audience: Audience = .staff) throws(WalletError) -> String {
        String(decoding: try data(value, for: audience), as: UTF8.self)
    }
}
