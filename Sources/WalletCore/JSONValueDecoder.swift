/// Decodes a `Decodable` value from a `JSONValue` that the strict parser has already read, so text
/// received from outside is parsed once, not a second time by `JSONDecoder`. For what the wallet
/// decodes (strings, booleans, integers, doubles, arrays, optionals, objects, `JSONValue` and types
/// built on them) it reads values as `JSONDecoder` does (an integer is also a `Double`; a fraction
/// is no integer; `null` is absent for an optional) and fails with the `DecodingError`s
/// `JSONDecoder` gives, with the same coding paths and types, so an answer names the field as it
/// did. `JSONDecoder`'s special cases (`Date`, `Data`, `URL`, `Decimal`) are not made here: such a
/// type decodes through its own `init(from:)`, so a body field of one would need a case below.
public enum JSONValueDecoder {
    public static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws -> Value {
        try ValueDecoder(value: value, codingPath: []).decode(type)
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self, "an object") }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Any].self, "an array") }
        return UnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    /// `value` as `Type`: scalars read directly, a `JSONValue` returned as it is, anything else
    /// through its own `init(from:)`.
    func decode<Type: Decodable>(_ type: Type.Type) throws -> Type {
        switch type {
        case is JSONValue.Type: return value as! Type
        case is String.Type: return try string() as! Type
        case is Bool.Type: return try bool() as! Type
        case is Int64.Type: return try integer(Int64.self) as! Type
        case is Int.Type: return try integer(Int.self) as! Type
        case is Double.Type: return try double() as! Type
        default: return try Type(from: self)
        }
    }

    func string() throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, "a string") }
        return string
    }

    func bool() throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, "a boolean") }
        return bool
    }

    func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        switch value {
        case .integer(let integer):
            guard let exact = Integer(exactly: integer) else { throw corrupted("the number \(integer) does not fit in \(type)") }
            return exact
        case .number(let number):
            guard let exact = Integer(exactly: number) else { throw corrupted("the number \(number) does not fit in \(type)") }
            return exact
        default:
            throw mismatch(type, "a number")
        }
    }

    func double() throws -> Double {
        switch value {
        case .integer(let integer): return Double(integer)
        case .number(let number): return number
        default: throw mismatch(Double.self, "a number")
        }
    }

    func context(_ description: String) -> DecodingError.Context {
        DecodingError.Context(codingPath: codingPath, debugDescription: description)
    }

    /// `null` where a value is needed is a missing value, anything else the wrong type.
    private func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        if case .null = value { return .valueNotFound(type, context("expected \(expected) but found null")) }
        return .typeMismatch(type, context("expected \(expected) but found \(value.kindName)"))
    }

    private func corrupted(_ description: String) -> DecodingError {
        .dataCorrupted(context(description))
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        if case .null = decoder.value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try decoder.decode(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.decode(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.decode(type) }
    func decode(_ type: Float.Type) throws -> Float {
        let double = try decoder.decode(Double.self)
        guard double.magnitude <= Double(Float.greatestFiniteMagnitude) else {
            throw DecodingError.dataCorrupted(decoder.context("the number \(double) does not fit in Float"))
        }
        return Float(double)
    }
    func decode(_ type: Int.Type) throws -> Int { try decoder.decode(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decode(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
    func decode<Type: Decodable>(_ type: Type.Type) throws -> Type { try decoder.decode(type) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }

    func decode<Type: Decodable>(_ type: Type.Type, forKey key: Key) throws -> Type {
        try decoder(for: key).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [IndexKey(stringValue: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value associated with key \(key.stringValue)"))
        }
        return value
    }

    private func decoder(for key: Key) throws -> ValueDecoder {
        ValueDecoder(value: try member(key), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try next(Never.self).value else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<Type: Decodable>(_ type: Type.Type) throws -> Type {
        let decoded = try next(type).decode(type)
        currentIndex += 1
        return decoded
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try next(type).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try next([Any].self).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = try next(JSONValue.self)
        currentIndex += 1
        return decoder
    }

    /// The decoder of the item at `currentIndex`; each caller moves past it once it succeeded,
    /// as `JSONDecoder` does.
    private func next(_ type: Any.Type) throws -> ValueDecoder {
        let path = codingPath + [IndexKey(index: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: path, debugDescription: "the array has no more items"))
        }
        return ValueDecoder(value: items[currentIndex], codingPath: path)
    }
}

/// An array item's place in a coding path (`types.0`), or `super`.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init?(intValue: Int) { self.init(index: intValue) }
}

extension JSONValue {
    /// What kind of value this is, for an error message.
    fileprivate var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
