import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// Issue 28: the answers sent most are written straight into bytes (`JSONWriter`), and those
/// bytes are exactly `JSONEncoder`'s (`WalletJSON.data`), for staff and for players, whatever
/// the strings hold: quotes, backslashes, every control character, U+2028, non-BMP characters.
@Suite("JSON answers written as bytes", .throttled)
struct JSONWriterTests {
    static func expectSameBytes<Value: Encodable>(_ value: Value, _ comment: Comment? = nil) throws {
        for audience in [Audience.staff, .player] {
            let written = try WalletJSON.bytes(value, for: audience)
            let encoded = Array(try WalletJSON.data(value, for: audience))
            #expect(written == encoded, "\(audience): \(String(decoding: written, as: UTF8.self)) ≠ \(String(decoding: encoded, as: UTF8.self))")
        }
    }

    @Test("every kind of transaction, hostile strings in every field, both audiences: the bytes JSONEncoder writes")
    func transactions() throws {
        #expect(HostileAnswers.transactions.count == TransactionKind.allCases.count * HostileAnswers.strings.count)
        for transaction in HostileAnswers.transactions { try Self.expectSameBytes(transaction) }
    }

    @Test("a history page, with and without a next page")
    func history() throws {
        try Self.expectSameBytes(HistoryPage(transactions: Array(HostileAnswers.transactions.prefix(12)), next: 42))
        try Self.expectSameBytes(HistoryPage(transactions: [], next: nil))
    }

    @Test("balances: currencies in JSONEncoder's key order, empty maps, extreme amounts")
    func balances() throws {
        let player: PlayerID = "player-1"
        try Self.expectSameBytes(
            WalletBalances(
                playerID: player, balances: ["credits": 5, "gems": Int64.min, "a_b": 1, "ab": 2, "a1": 3, "a": Int64.max, "z9_": 0],
                expiringWithin7Days: ["credits": 3], held: [:]))
        try Self.expectSameBytes(WalletBalances(playerID: player, balances: [:]))
    }

    @Test("the writer is used: a writable value does not go through JSONEncoder")
    func writerIsUsed() throws {
        // A value whose Encodable conformance would write something else shows which path ran.
        struct Marked: JSONWritable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode("encoder")
            }
            func write(to writer: inout JSONWriter) { writer.string("writer") }
        }
        #expect(try WalletJSON.bytes(Marked()) == Array(#""writer""#.utf8))
    }
}
