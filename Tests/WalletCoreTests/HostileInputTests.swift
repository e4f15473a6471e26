import Foundation
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

/// Input an attacker or a careless operator sends: out-of-range dates and numbers, JSON that
/// parsers read differently, records deeper than a reader accepts. None may trap, and what is
/// accepted must read back exactly.
@Suite("Hostile input is refused at the door, never trapped on", .throttled)
struct HostileInputTests {
    @Test("RFC 3339: strict fields, years 0001 to 9999 in UTC, nothing wrapped around")
    func timestamps() throws {
        let accepted: [(String, String)] = [
            ("2026-11-01T00:00:00Z", "2026-11-01T00:00:00.000Z"),
            ("2026-11-01t01:00:00.5+01:00", "2026-11-01T00:00:00.500Z"),
            ("2024-02-29T23:59:59.123456789-00:30", "2024-03-01T00:29:59.123Z"),
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
            ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
            ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
        ]
        for (text, stored) in accepted { #expect(try Timestamp.parse(text, field: "from") == stored, "\(text)") }
        let refused = [
            "10000-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z",
            "2026-01-01T23:59:60Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z",
            "9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+01:00", "0000-01-01T00:00:00Z", "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00+24:00", "+2026-01-01T00:00:00Z", "2026-1-01T00:00:00Z", "",
            String(repeating: "9", count: 1_000),
        ]
        for text in refused {
            #expect(throws: WalletError.self, "\(text.prefix(40))") { try Timestamp.parse(text, field: "from") }
        }
    }

    @Test("JSON: a member twice, -0, non-shortest numbers, integers beyond Int64, lone surrogates and bad UTF-8 are refused with a reason")
    func strictJSON() throws {
        let refused: [(String, String)] = [
            (#"{"amount":1000,"amount":1}"#, "appears twice"),
            (#"{"a":{"K":1,"\u212A":2}}"#, "appears twice"),
            (#"{"a":-0}"#, "-0"),
            (#"{"a":1.0}"#, "kept exactly"),
            (#"{"a":1e3}"#, "kept exactly"),
            (#"{"a":999999999.99999999}"#, "kept exactly"),
            (#"{"a":9223372036854775808}"#, "64-bit"),
            (#"{"a":"\ud800"}"#, "surrogate"),
            (#"{"a":"\udc00x"}"#, "surrogate"),
        ]
        for (text, reason) in refused {
            let error = #expect(throws: WalletError.self) { try JSONValue.strict(Array(text.utf8), what: "the body") }
            #expect(error?.detail.contains(reason) == true, "\(text): \(error?.detail ?? "")")
        }
        let invalidUTF8: [UInt8] = Array(#"{"a":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        let utf8Error = #expect(throws: WalletError.self) { try JSONValue.strict(invalidUTF8, what: "the body") }
        #expect(utf8Error?.detail.contains("UTF-8") == true)
        #expect(try JSONValue.strict(Array(#"{"a":1.5,"b":-3,"c":9223372036854775807,"d":0.001}"#.utf8), what: "x")
            == .object(["a": .number(1.5), "b": .integer(-3), "c": .integer(.max), "d": .number(0.001)]))
    }

    static func nested(_ levels: Int) -> String {
        String(repeating: #"{"a":"#, count: levels - 1) + "{}" + String(repeating: "}", count: levels - 1)
    }

    @Test("metadata: one depth limit at the door, equal to what every reader accepts; stored metadata reads back exactly", arguments: TestBackend.all)
    func metadataDepthAndExactness(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "t1", quantity: 10)
        let deepest = try JSONValue.parse(Self.nested(Limits.metadataDepthMax))
        let spend = try await ledger.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "deep", metadata: try Metadata(deepest), actor: "t"))
        #expect(throws: Never.self) { _ = try WalletJSON.data(spend) }
        // An export of it verifies offline: the export line holds metadata one level deeper.
        for format in ExportFormat.allCases {
            let path = ledger.directory.appendingPathComponent("deep.\(format.rawValue)").path
            var bytes: [UInt8] = []
            _ = try await ledger.store.export(ExportQuery(), format: format).write { bytes += $0 }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let report = try ExportFileVerifier.verify(path: path, head: try await ledger.store.head().hash)
            #expect(report.ok, "\(format): \(report.problem ?? "")")
        }
        let tooDeep = #expect(throws: WalletError.self) { _ = try Metadata(JSONValue.parse(Self.nested(Limits.metadataDepthMax + 1))) }
        #expect(tooDeep?.detail.contains("deeper") == true)
        // Built in Swift, not parsed: the door still refuses what a reader could not read back.
        var value = JSONValue.object([:])
        for _ in 0..<Limits.metadataDepthMax { value = .object(["a": value]) }
        #expect(throws: WalletError.self) { _ = try Metadata(value) }
        // What is accepted comes back as it was sent.
        let exact = #"{"big":9223372036854775807,"fraction":0.1,"negative":-12,"text":"caf\u00e9"}"#
        let stored = try await ledger.store.spend(
            SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "exact", metadata: try Metadata(JSONValue.parse(exact)), actor: "t"))
        let history = try await ledger.store.history(HistoryQuery(playerID: "p1", limit: 1))
        #expect(history.transactions.first?.metadata == stored.transaction.metadata)
        #expect(try WalletJSON.text(history.transactions.first?.metadata) == #"{"big":9223372036854775807,"fraction":0.1,"negative":-12,"text":"café"}"#)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("a stored metadata text no reader accepts (an older version's row) is answered as a string, never a trap")
    func unreadableStoredMetadata() throws {
        let metadata = Metadata(canonicalText: Self.nested(JSONParser.depthMax + 1))
        #expect(try WalletJSON.text(["metadata": metadata]) == WalletJSON.text(["metadata": Self.nested(JSONParser.depthMax + 1)]))
    }

    @Test("an Apple signedDate outside 2008…9999 is refused before the certificate library sees it", arguments: TestBackend.all)
    func appleSignedDateRange(backend: TestBackend) async throws {
        let authority = try AppleTestAuthority()
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        let purchases = ApplePurchases(configuration: try authority.configuration(), ledger: ledger.store)
        for signedDate: Int64 in [253_402_300_800_000, 9_000_000_000_000_000, .max, -1, 0, .min] {
            let jws = try authority.transaction("t\(signedDate)", changes: ["signedDate": signedDate])
            let error = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: jws, actor: "t") }
            #expect(error?.code == "purchase_invalid" && error?.detail.contains("signedDate") == true)
            let notification = try authority.sign([
                "notificationType": "TEST", "notificationUUID": "n\(signedDate)", "signedDate": signedDate, "data": ["bundleId": "com.example.game"],
            ])
            let notificationError = await walletError { _ = try await purchases.handleNotification(signedPayload: notification) }
            #expect(notificationError?.code == "purchase_invalid")
        }
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("a JWS whose header or payload names a member twice is refused", arguments: TestBackend.all)
    func appleDuplicateMembers(backend: TestBackend) async throws {
        let authority = try AppleTestAuthority()
        let ledger = try await TestLedger(backend)
        let purchases = ApplePurchases(configuration: try authority.configuration(), ledger: ledger.store)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        let now = AppleTestAuthority.milliseconds(Date())
        let fields = #""transactionId":"dup","bundleId":"com.example.game","type":"Consumable","quantity":1,"environment":"Production","signedDate":\#(now)"#
        let single = try authority.sign(payloadJSON: #"{"productId":"com.example.game.consume5credits",\#(fields)}"#)
        #expect(try await purchases.redeem(playerID: "p1", signedTransaction: single, actor: "t").balance == 5, "the hand-made payload is valid")
        let doubled = try authority.sign(payloadJSON: #"{"productId":"com.example.game.consume5credits","productId":"com.example.game.other",\#(fields)}"#)
        let error = await walletError { _ = try await purchases.redeem(playerID: "p2", signedTransaction: doubled, actor: "t") }
        #expect(error?.code == "purchase_invalid" && error?.detail.contains("malformed") == true)
    }
}
