import Foundation

/// Text that is equal, ordered and hashed by its UTF-8 bytes, never by Unicode canonical
/// equivalence.
///
/// Swift's `String ==` says `"\u{212A}ate" == "Kate"` (KELVIN SIGN is canonically a K) and
/// merges composed and decomposed `café`, while SQLite and PostgreSQL compare bytes: the same
/// two ids would be one wallet in Swift and two rows in the database. Every place the wallet
/// compares or hashes an identifier (access checks, caches, dictionaries, the verifier) goes
/// through this type, so an id means the same thing in Swift as in storage.
public struct Identifier: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    public static func == (left: Identifier, right: Identifier) -> Bool {
        same(left.text, right.text)
    }

    public static func < (left: Identifier, right: Identifier) -> Bool {
        left.text.utf8.lexicographicallyPrecedes(right.text.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        // One call over the contiguous bytes (native strings always have them), not one per byte:
        // identifiers are hashed on every request (key cache) and every batch (account cache).
        var text = text
        text.withUTF8 { bytes in hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
        hasher.combine(text.utf8.count)
    }

    public var description: String { text }

    /// True when `left` and `right` are the same bytes: their lengths, then their bytes in
    /// place in one `memcmp` (every native string has them contiguous; a bridged one is
    /// compared byte by byte). Batches compare ids on every operation (account and key caches).
    public static func same(_ left: String, _ right: String) -> Bool {
        guard left.utf8.count == right.utf8.count else { return false }
        let compared = left.utf8.withContiguousStorageIfAvailable { leftBytes in
            right.utf8.withContiguousStorageIfAvailable { rightBytes in
                guard let leftStart = leftBytes.baseAddress, let rightStart = rightBytes.baseAddress else { return leftBytes.isEmpty }
                return memcmp(leftStart, rightStart, leftBytes.count) == 0
            }
        }
        return compared.flatMap { $0 } ?? left.utf8.elementsEqual(right.utf8)
    }

    /// Decodes a percent-encoded path segment byte for byte (`%7C` is `|`), without the
    /// clean-ups a general decoder makes (Foundation drops a leading byte order mark, so
    /// `%EF%BB%BFKate` would become `Kate`). Nil for a malformed escape. Every id read from a path
    /// (player ids, store transaction ids) is decoded here, so an escape cannot make one id look like another.
    public static func percentDecoded(_ segment: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.value), let low = iterator.next().flatMap(Hex.value) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

}

/// A player id, checked against the documented syntax and compared by its bytes.
///
/// Syntax: 1 to `Limits.identifierBytesMax` bytes of ASCII letters, digits and
/// `- _ . : @ + = | ~`. Anything else is refused: spaces, control and format characters
/// (zero-width, bidi overrides), and every non-ASCII character, so that no two distinct ids
/// can look alike in a support tool or be canonically equivalent (`Kate` and `\u{212A}ate`).
public struct PlayerID: Hashable, Sendable, CustomStringConvertible {
    public let identifier: Identifier

    public init(_ text: String) throws(WalletError) {
        try Self.validate(text)
        identifier = Identifier(text)
    }

    public var text: String { identifier.text }
    public var description: String { identifier.text }

    /// The punctuation a player id may hold besides ASCII letters and digits.
    public static let punctuation: Set<UInt8> = Set("-_.:@+=|~".utf8)

    /// Throws `invalidRequest` unless `text` follows the player id syntax.
    public static func validate(_ text: String) throws(WalletError) {
        guard !text.isEmpty else { throw RequestField.playerID.invalid("player id must not be empty") }
        guard text.utf8.count <= Limits.identifierBytesMax else {
            throw RequestField.playerID.invalid("player id must be at most \(Limits.identifierBytesMax) bytes")
        }
        guard text.utf8.allSatisfy(isAllowed) else {
            throw RequestField.playerID.invalid("player id may hold only ASCII letters, digits and - _ . : @ + = | ~")
        }
        // Clients resolve `.` and `..` path segments before sending: such an id names no wallet.
        guard text != ".", text != ".." else { throw RequestField.playerID.invalid("player id must not be '.' or '..'") }
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: punctuation.contains(byte)
        }
    }
}

extension PlayerID: Decodable {
    /// Decodes a JSON string and checks it as `init(_:)` does. An id that breaks the syntax
    /// throws that `WalletError.invalidRequest` itself (the decoder passes it on unchanged), so
    /// a request body with one is answered 400 `invalid_request` with the same words as when
    /// the request was checked after decoding; a value that is not a string stays a
    /// `DecodingError`.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch {
            // Named as the body names it (`player_id`, or an export link's `player`).
            throw WalletError.invalidRequest(error.detail, field: decoder.codingPath.first?.stringValue ?? error.field)
        }
    }
}
