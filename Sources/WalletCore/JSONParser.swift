/// A strict JSON parser (RFC 8259) over UTF-8 bytes, into `JSONValue`: what request bodies
/// are checked with at the door, and what `JSONValue.parse` (CLI metadata, stored metadata) and
/// the export verifier read JSON text with — one parser, so whatever the door accepts every
/// reader reads back. Nesting is bounded by `depthMax`, strings must be valid UTF-8 without
/// lone surrogates, an object may not name a member twice (compared by bytes), and a number
/// must be kept exactly as written: an integer that fits `Int64` written without `-0`, or a
/// fraction in the shortest form the wallet's own JSON encoder writes it (`1.5`, not `1.50`
/// or `15e-1`), so stored metadata is returned as it was accepted.
package struct JSONParser {
    /// Why the text is refused, for a person.
    package struct Invalid: Error {
        package var reason = "it is not valid JSON"
    }

    package let bytes: UnsafeBufferPointer<UInt8>
    /// When false, numbers are read as `JSONDecoder` reads them (`1.0` is the integer 1), for
    /// documents the wallet only reads, never stores: a store's signed payload, a token's claims.
    package var keepsNumbersExactly = true
    private(set) var index = 0
    private var depth = 0
    /// Metadata's depth plus the object it is a member of (a request body, an export line).
    package static let depthMax = Limits.metadataDepthMax + 1

    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The one JSON value `text` holds (whitespace around it allowed); nil if it is not JSON.
    package static func value(of text: [UInt8]) -> JSONValue? {
        try? checkedValue(of: text)
    }

    /// The one JSON value `text` holds (whitespace around it allowed), or why it is refused.
    package static func checkedValue(of text: [UInt8], keepsNumbersExactly: Bool = true) throws(Invalid) -> JSONValue {
        try text.withUnsafeBufferPointer { bytes throws(Invalid) in
            var parser = JSONParser(bytes)
            parser.keepsNumbersExactly = keepsNumbersExactly
            let value = try parser.value()
            guard parser.atEnd() else { throw Invalid(reason: "there is text after the JSON value") }
            return value
        }
    }

    /// True when only whitespace is left.
    package mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    package mutating func value() throws(Invalid) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw Invalid() }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            var object: [String: JSONValue] = [:]
            try members { (parser: inout JSONParser, name: String) throws(Invalid) in
                // `String` keys merge canonically equal names, so a name twice by its bytes is
                // caught here, and so are two spellings Swift finds equal (`K` and KELVIN SIGN).
                guard object.updateValue(try parser.value(), forKey: name) == nil else {
                    throw Invalid(reason: "the member '\(name.prefix(64))' appears twice")
                }
            }
            return .object(object)
        case UInt8(ascii: "["):
            return .array(try elements())
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            return try number()
        }
    }

    /// `{ "name": value, ... }`, calling `member` with the parser on each value.
    package mutating func members(_ member: (inout JSONParser, String) throws(Invalid) -> Void) throws(Invalid) {
        try enter(UInt8(ascii: "{"))
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return leave() }
        repeat {
            skipWhitespace()
            let name = try string()
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { throw Invalid() }
            try member(&self, name)
            skipWhitespace()
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { throw Invalid() }
        leave()
    }

    private mutating func elements() throws(Invalid) -> [JSONValue] {
        try enter(UInt8(ascii: "["))
        var items: [JSONValue] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) {
            leave()
            return items
        }
        repeat {
            items.append(try value())
            skipWhitespace()
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "]")) else { throw Invalid() }
        leave()
        return items
    }

    private mutating func enter(_ opening: UInt8) throws(Invalid) {
        guard take(opening) else { throw Invalid() }
        guard depth < Self.depthMax else { throw Invalid(reason: "it nests objects and arrays deeper than \(Self.depthMax) levels") }
        depth += 1
    }

    private mutating func leave() {
        depth -= 1
    }

    private mutating func string() throws(Invalid) -> String {
        guard take(UInt8(ascii: "\"")) else { throw Invalid() }
        let start = index
        // Most strings hold no escape: they are taken as they are.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 {
            index += 1
        }
        guard index < bytes.count else { throw Invalid() }
        if bytes[index] == UInt8(ascii: "\"") {
            defer { index += 1 }
            return try text(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        }
        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try unescaped.withUnsafeBufferPointer { buffer throws(Invalid) in try text(buffer) }
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw Invalid() }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): unescaped.append(escape)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"): unescaped.append(contentsOf: String(try unicodeEscape()).utf8)
                default: throw Invalid()
                }
            case ..<0x20:
                throw Invalid()
            default:
                unescaped.append(byte)
            }
        }
        throw Invalid()
    }

    /// The scalar of `\uXXXX` (the `\u` already read), joining a surrogate pair.
    private mutating func unicodeEscape() throws(Invalid) -> Unicode.Scalar {
        let unit = try hexUnit()
        switch unit {
        case 0xD800..<0xDC00:
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw Invalid(reason: "a \\u escape is a lone surrogate") }
            let low = try hexUnit()
            guard (0xDC00..<0xE000).contains(low), let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) else {
                throw Invalid(reason: "a \\u escape is a lone surrogate")
            }
            return scalar
        case 0xDC00..<0xE000:
            throw Invalid(reason: "a \\u escape is a lone surrogate")
        default:
            guard let scalar = Unicode.Scalar(unit) else { throw Invalid() }
            return scalar
        }
    }

    private mutating func hexUnit() throws(Invalid) -> UInt32 {
        guard index + 4 <= bytes.count else { throw Invalid() }
        var unit: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8 =
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
                default: throw Invalid()
                }
            unit = unit << 4 | UInt32(digit)
        }
        return unit
    }

    private func text(_ utf8: UnsafeBufferPointer<UInt8>) throws(Invalid) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else { throw Invalid(reason: "a string is not valid UTF-8") }
        return text
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept exactly: an integer that
    /// fits `Int64` (not `-0`), or a fraction that the wallet's encoder writes back as the same
    /// text. Anything else (`1.0`, `1e3`, `2.50`, 2^63) would come back changed, so it is refused.
    private mutating func number() throws(Invalid) -> JSONValue {
        let start = index
        _ = take(UInt8(ascii: "-"))
        guard take(UInt8(ascii: "0")) || digits() > 0 else { throw Invalid() }
        var integral = true
        if take(UInt8(ascii: ".")) {
            integral = false
            guard digits() > 0 else { throw Invalid() }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            integral = false
            _ = take(UInt8(ascii: "+")) || take(UInt8(ascii: "-"))
            guard digits() > 0 else { throw Invalid() }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if !keepsNumbersExactly {
            if integral, let integer = Int64(text) { return .integer(integer) }
            guard let number = Double(text), number.isFinite else { throw Invalid(reason: "the number \(text.prefix(40)) is out of range") }
            return Int64(exactly: number).map(JSONValue.integer) ?? .number(number)
        }
        if integral {
            guard let integer = Int64(text), text != "-0" else {
                throw Invalid(reason: "the number \(text.prefix(40)) is not a 64-bit integer (-0 and integers beyond ±9223372036854775807 cannot be kept exactly)")
            }
            return .integer(integer)
        }
        guard let number = Double(text), number.isFinite, Int64(exactly: number) == nil, (try? WalletJSON.text(number)) == text else {
            throw Invalid(reason: "the number \(text.prefix(40)) cannot be kept exactly as written; send whole numbers as integers and fractions in shortest form, or send the value as a string")
        }
        return .number(number)
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }

    private mutating func literal(_ word: StaticString) throws(Invalid) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Invalid() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Invalid() }
        index += count
    }

    /// Consumes `byte` if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    package mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }
}
