import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// `JSONValueDecoder` (request bodies, store payloads) decodes what `JSONDecoder` decodes from the
/// same text, to the same value, and refuses what it refuses with the same kind of error at the
/// same coding path (or, where `JSONDecoder` loses the path of a number out of range, with the
/// field's): answers name the same field as before.
@Suite("JSONValue decoder", .throttled)
struct JSONValueDecoderTests {
    struct Role: Decodable, Equatable {
        let name: String
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            name = try container.decode(String.self)
            guard ["admin", "support"].contains(name) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown role \(name)")
            }
        }
    }

    struct Inner: Decodable, Equatable {
        var code: Int32
        var tags: [String]?
    }

    struct Body: Decodable, Equatable {
        var amount: Int64
        var note: String?
        var active: Bool?
        var ratio: Double?
        var count: Int?
        var small: UInt8?
        var types: [String]?
        var matrix: [[Int64]]?
        var role: Role?
        var inner: Inner?
        var metadata: JSONValue?
        var maybe: [String?]?

        enum CodingKeys: String, CodingKey {
            case amount, note, active, ratio, count, small, types, matrix, role, inner, metadata, maybe
        }
    }

    /// What each decoder made of `text`: the value, or the error's kind and coding path.
    enum Outcome: Equatable {
        case value(Body)
        case error(kind: String, path: String)

        init(_ decode: () throws -> Body) {
            do {
                self = .value(try decode())
            } catch let error as DecodingError {
                let (kind, context): (String, DecodingError.Context) =
                    switch error {
                    case .keyNotFound(let key, let context): ("keyNotFound \(key.stringValue)", context)
                    case .typeMismatch(let type, let context): ("typeMismatch \(type)", context)
                    case .valueNotFound(let type, let context): ("valueNotFound \(type)", context)
                    case .dataCorrupted(let context): ("dataCorrupted", context)
                    @unknown default: ("unknown", DecodingError.Context(codingPath: [], debugDescription: ""))
                    }
                self = .error(kind: kind, path: context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "."))
            } catch {
                self = .error(kind: "other \(error)", path: "")
            }
        }
    }

    @Test("the same value or the same error as JSONDecoder", arguments: [
        #"{"amount": 5}"#,
        #"{"amount": -9223372036854775808, "note": "é 🎮", "active": false, "ratio": 2, "count": 7, "small": 255}"#,
        #"{"amount": 1, "ratio": 0.25, "types": [], "matrix": [[1, 2], [], [3]]}"#,
        #"{"amount": 1, "role": "support", "inner": {"code": 2147483647, "tags": ["a"]}}"#,
        #"{"amount": 1, "metadata": {"a": [1, 2.5, null, {"b": true}], "c": "d"}}"#,
        #"{"amount": 1, "metadata": null, "note": null, "maybe": ["x", null]}"#,
        #"{"amount": 1, "unknown": {"deep": [1]}}"#,
        // refused
        #"{}"#, #"{"note": "x"}"#, #"[]"#, #""text""#, "null", "7",
        #"{"amount": "5"}"#, #"{"amount": null}"#, #"{"amount": true}"#, #"{"amount": 2.5}"#,
        #"{"amount": 1, "note": 5}"#, #"{"amount": 1, "active": 1}"#, #"{"amount": 1, "ratio": "x"}"#,
        #"{"amount": 1, "small": 256}"#, #"{"amount": 1, "small": -1}"#, #"{"amount": 1, "count": 1.5}"#,
        #"{"amount": 1, "types": ["a", 2]}"#, #"{"amount": 1, "types": ["a", null]}"#, #"{"amount": 1, "types": "a"}"#,
        #"{"amount": 1, "matrix": [[1], ["x"]]}"#, #"{"amount": 1, "role": "owner"}"#, #"{"amount": 1, "role": 3}"#,
        #"{"amount": 1, "inner": {}}"#, #"{"amount": 1, "inner": {"code": 2147483648}}"#, #"{"amount": 1, "inner": []}"#,
        #"{"amount": 1, "inner": {"code": 1, "tags": [true]}}"#,
    ])
    func sameAsJSONDecoder(_ text: String) throws {
        let value = try JSONParser.checkedValue(of: Array(text.utf8))
        let ours = Outcome { try JSONValueDecoder.decode(Body.self, from: value) }
        let foundation = Outcome { try JSONDecoder().decode(Body.self, from: Data(text.utf8)) }
        if case .error("dataCorrupted", "") = foundation, let field = Self.outOfRange[text] {
            // A number out of the field's range: JSONDecoder loses the path there; ours names the field.
            #expect(ours == .error(kind: "dataCorrupted", path: field), "\(text)")
        } else {
            #expect(ours == foundation, "\(text)")
        }
    }

    /// The bodies whose number does not fit its field, and that field.
    static let outOfRange = [
        #"{"amount": 2.5}"#: "amount", #"{"amount": 1, "small": 256}"#: "small", #"{"amount": 1, "small": -1}"#: "small",
        #"{"amount": 1, "count": 1.5}"#: "count", #"{"amount": 1, "inner": {"code": 2147483648}}"#: "inner.code",
    ]

    @Test("a document read only (a store's payload) takes numbers as JSONDecoder does: 1e3 and 1.0 are integers")
    func readOnlyNumbers() throws {
        let text = #"{"amount": 1e3, "count": 1.0, "ratio": 2.5E-1, "inner": {"code": -2E1}}"#
        let ours = try #require(WalletJSON.decodeStrictly(Body.self, from: Data(text.utf8)))
        #expect(ours == (try JSONDecoder().decode(Body.self, from: Data(text.utf8))))
        #expect(ours.amount == 1_000 && ours.count == 1 && ours.ratio == 0.25 && ours.inner?.code == -20)
        #expect(WalletJSON.decodeStrictly(Body.self, from: Data(#"{"amount": 1, "amount": 2}"#.utf8)) == nil, "a member twice")
    }

    /// A type that reads itself through the containers' less common calls.
    struct Grid: Decodable, Equatable {
        var rows: [[Int64]]
        var scale: Float
        var base: String

        enum CodingKeys: String, CodingKey { case rows, scale, base }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            var outer = try container.nestedUnkeyedContainer(forKey: .rows)
            rows = []
            while !outer.isAtEnd {
                var inner = try outer.nestedUnkeyedContainer()
                var row: [Int64] = []
                while !inner.isAtEnd { row.append(try inner.decode(Int64.self)) }
                rows.append(row)
            }
            scale = try container.decode(Float.self, forKey: .scale)
            base = try String(from: try container.superDecoder(forKey: .base))
        }
    }

    @Test("nested unkeyed containers, Float and superDecoder: the same values and errors as JSONDecoder", arguments: [
        #"{"rows": [[1, 2], [], [3]], "scale": 0.5, "base": "b"}"#,
        #"{"rows": [[1], "x"], "scale": 1, "base": "b"}"#,
        #"{"rows": [[1, "x"]], "scale": 1, "base": "b"}"#,
        #"{"rows": [], "scale": 1e300, "base": "b"}"#,
        #"{"rows": [], "scale": 1, "base": 5}"#,
        #"{"rows": {}, "scale": 1, "base": "b"}"#,
    ])
    func lessCommonCalls(_ text: String) throws {
        func outcome(_ decode: () throws -> Grid) -> String {
            do {
                return "\(try decode())"
            } catch let error as DecodingError {
                switch error {
                case .typeMismatch(let type, let context): return "typeMismatch \(type) \(context.codingPath.map(\.stringValue))"
                case .valueNotFound(let type, let context): return "valueNotFound \(type) \(context.codingPath.map(\.stringValue))"
                case .keyNotFound(let key, _): return "keyNotFound \(key.stringValue)"
                case .dataCorrupted: return "dataCorrupted"
                @unknown default: return "unknown"
                }
            } catch {
                return "other"
            }
        }
        let value = try JSONParser.checkedValue(of: Array(text.utf8), keepsNumbersExactly: false)
        let ours = outcome { try JSONValueDecoder.decode(Grid.self, from: value) }
        #expect(ours == outcome { try JSONDecoder().decode(Grid.self, from: Data(text.utf8)) }, "\(text)")
        if text.contains("1e300") { #expect(ours == "dataCorrupted", "a Float out of range is refused, not infinity") }
    }

    @Test("a body decoded from its parsed value keeps metadata as parsed, not re-read")
    func metadataIsTheParsedValue() throws {
        let value = try JSONParser.checkedValue(of: Array(#"{"amount": 1, "metadata": {"level": 3, "tags": ["a"]}}"#.utf8))
        let body = try JSONValueDecoder.decode(Body.self, from: value)
        #expect(body.metadata == .object(["level": .integer(3), "tags": .array([.string("a")])]))
        #expect(body.amount == 1 && body.note == nil)
    }
}
