import Foundation
import SwiftASN1
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

/// A StoreKit 1 app receipt is read without being trusted, only for a transaction id to ask
/// Apple about; whatever it holds, reading it never crashes and never yields a made-up id.
@Suite("App receipts (StoreKit 1)", .throttled)
struct AppReceiptTests {
    typealias Attribute = TestReceipt.Attribute

    @Test("Xcode's receipts, in BER with indefinite lengths: none without purchases, \"0\" with one")
    func xcodeReceipts() throws {
        #expect(try AppReceipt.unverifiedTransactionID(base64: XcodeReceipts.empty) == nil)
        #expect(try AppReceipt.unverifiedTransactionID(base64: XcodeReceipts.withTransaction) == "0")
    }

    @Test("the first in-app purchase's transaction id, else its original transaction id; other attributes are passed over")
    func transactionIDs() throws {
        let bundle: Attribute = (2, try TestReceipt.utf8("com.example.game"))
        let first = try TestReceipt.inApp([(1702, try TestReceipt.utf8("com.example.game.consume5credits")), (1703, try TestReceipt.utf8("2000000111")), (1705, try TestReceipt.utf8("2000000100"))])
        let second = try TestReceipt.inApp([(1703, try TestReceipt.utf8("2000000222"))])
        #expect(try AppReceipt.unverifiedTransactionID(base64: TestReceipt.receipt([bundle, first, second])) == "2000000111")
        let originalOnly = try TestReceipt.inApp([(1705, try TestReceipt.utf8("2000000100"))])
        #expect(try AppReceipt.unverifiedTransactionID(base64: TestReceipt.receipt([originalOnly])) == "2000000100")
        #expect(try AppReceipt.unverifiedTransactionID(base64: TestReceipt.receipt([bundle])) == nil)
    }

    @Test("anything else is a 400 naming the problem, never a crash or a guessed id")
    func hostileReceipts() throws {
        let valid = try TestReceipt.receipt([try TestReceipt.inApp([(1703, try TestReceipt.utf8("2000000111"))])])
        let bytes = try #require(Data(base64Encoded: valid))
        let refused: [(String, String)] = [
            ("", "not base64"), ("not base64 at all!", "not base64"), (Data("hello".utf8).base64EncodedString(), "not a PKCS#7"),
            (bytes.prefix(bytes.count / 2).base64EncodedString(), "not a PKCS#7"),  // truncated
            (Data(repeating: 0x30, count: 4_096).base64EncodedString(), "not a PKCS#7"),  // SEQUENCE headers nested past any depth
            (String(repeating: "A", count: AppReceipt.base64BytesMax + 4), "longer than"),
            (try TestReceipt.receipt([try TestReceipt.inApp([(1703, [0x02, 0x01, 0x05])])]), "not a PKCS#7"),  // an INTEGER id, not a UTF8String
            (try TestReceipt.receipt([try TestReceipt.inApp([(1703, try TestReceipt.utf8("2000 0111"))])]), "visible ASCII"),
            (try TestReceipt.receipt([try TestReceipt.inApp([(1703, try TestReceipt.utf8(""))])]), "must not be empty"),
        ]
        for (text, detail) in refused {
            let error = #expect(throws: WalletError.self, "\(text.prefix(60))") { try AppReceipt.unverifiedTransactionID(base64: text) }
            #expect(error?.code == "invalid_request" && error?.detail.contains(detail) == true, "\(text.prefix(60)): \(error?.detail ?? "")")
        }
        // Every 7th byte flipped: refused, or read as no purchase or as a visible-ASCII id of the
        // same length (a flipped digit) — never a crash.
        var flipped = Array(bytes)
        for index in stride(from: 0, to: flipped.count, by: 7) {
            flipped[index] ^= 0xFF
            do {
                let found = try AppReceipt.unverifiedTransactionID(base64: Data(flipped).base64EncodedString())
                #expect(found == nil || found?.utf8.count == 10 && found?.utf8.allSatisfy { (0x21...0x7E).contains($0) } == true, "byte \(index) → \(found ?? "")")
            } catch {
                #expect(error.code == "invalid_request", "byte \(index)")
            }
            flipped[index] ^= 0xFF
        }
    }

    @Test("Unity IAP's receipt wrapper: the App Store receipt inside is read, its TransactionID is not trusted; other stores and other JSON are 400s")
    func unityReceipts() throws {
        let receipt = try TestReceipt.receipt([try TestReceipt.inApp([(1703, try TestReceipt.utf8("2000000111"))])])
        let wrapped = #"{"Store":"AppleAppStore","TransactionID":"9999999999","Payload":"\#(receipt)"}"#
        #expect(try AppReceipt.unverifiedTransactionIDs(receipt: wrapped).first == "2000000111")
        #expect(try AppReceipt.unverifiedTransactionIDs(receipt: receipt).first == "2000000111")
        for refused in [
            #"{"Store":"GooglePlay","TransactionID":"x","Payload":"\#(receipt)"}"#,
            #"{"Store":"AppleAppStore","Store":"GooglePlay","Payload":"\#(receipt)"}"#,
            #"{"Store":"AppleAppStore"}"#, "{", #"{"Store":"AppleAppStore","Payload":"not base64!"}"#,
        ] {
            let error = #expect(throws: WalletError.self, "\(refused.prefix(60))") { try AppReceipt.unverifiedTransactionIDs(receipt: refused) }
            #expect(error?.code == "invalid_request")
        }
    }
}
