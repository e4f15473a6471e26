import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// The wallet's JSON parser (request bodies at the door, metadata text, export lines) reads what
/// JSONDecoder reads, the same way, refuses what is not JSON, and refuses numbers that would not
/// be kept exactly as written (unless told it only reads, as for a store's signed payload).
@Suite("JSON Lines parser", .throttled)
struct JSONParserTests {
    static func parse(_ text: String) -> JSONValue? {
        JSONParser.value(of: Array(text.utf8))
    }

    @Test("valid JSON parses to the value JSONDecoder gives", arguments: [
        #"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#, #"  [ ]  "#, #"{}"#, #""plain""#,
        #""esc \" \\ \/ \b \f \n \r \t""#, #""\u00e9\u65E5 \ud83c\udfae""#, "\"é 日本 🎮\"",
        "0", "42", "-9223372036854775808", "9223372036854775807", "1.5", "-0.25", "1e+300",
    ])
    func valid(_ text: String) throws {
        let expected = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(Self.parse(text) == expected, "\(text)")
    }

    @Test("numbers that would come back changed are refused; a read-only parse takes them as JSONDecoder does", arguments: [
        "-0", "9223372036854775808", "1.0", "-2.25e3", "1E2", "1e300", "2.50", "0.1000",
    ])
    func inexactNumbers(_ text: String) throws {
        #expect(Self.parse(text) == nil, "\(text)")
        let readOnly = try JSONParser.checkedValue(of: Array(text.utf8), keepsNumbersExactly: false)
        #expect(readOnly == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))), "\(text)")
    }

    @Test("anything that is not one JSON value is refused", arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[1 2]", "01", "1.", ".5", "-", "+1", "1e", "--1",
        "tru", "nul", "True", "\"open", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud83c\"", "\"\\udfae\"", "\"raw \u{01} control\"",
        "{} {}", "1 2", "\"a\" x", String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
    ])
    func invalid(_ text: String) {
        #expect(Self.parse(text) == nil, "\(text)")
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        let bytes: [UInt8] = [0x22, 0x61, 0xC3, 0x28, 0x22]
        let value = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            return try? parser.value()
        }
        #expect(value == nil)
    }

    @Test("an export line keeps metadata as its text, and refuses duplicate members")
    func exportLine() throws {
        let fields = try ExportJSONLine.fields(Array(#"{"type":"posting","seq":3,"metadata":{"b":1,"a":[2]},"note":null}"#.utf8))
        guard case .jsonText(let metadata)? = fields["metadata"], case .json(.integer(3))? = fields["seq"], case .json(.null)? = fields["note"] else {
            Issue.record("unexpected fields \(fields)")
            return
        }
        #expect(metadata == #"{"b":1,"a":[2]}"#)
        #expect(throws: WalletError.self) { try ExportJSONLine.fields(Array(#"{"seq":1,"seq":2}"#.utf8)) }
        #expect(throws: WalletError.self) { try ExportJSONLine.fields(Array(#"[1]"#.utf8)) }
        #expect(throws: WalletError.self) { try ExportJSONLine.fields(Array(#"{"seq":1} trailing"#.utf8)) }
    }
}
