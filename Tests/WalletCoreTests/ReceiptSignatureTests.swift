import Crypto
import Foundation
import SwiftASN1
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport
import X509

/// A StoreKit 1 receipt counts only once Apple's signature on it verifies, with a chain to a
/// trusted root through Apple's receipt-signing certificate: what the wallet reads is what Apple
/// signed.
@Suite("App receipt signatures", .throttled)
struct ReceiptSignatureTests {
    static let authority = AppleTests.authority

    static func verified(_ receipt: String, authority: AppleTestAuthority = Self.authority) async throws -> [String] {
        try await AppReceipt.verifiedTransactionIDs(receipt: receipt, trustedRoots: try authority.configuration().receiptRoots)
    }

    static func refusal(_ receipt: String, authority: AppleTestAuthority = Self.authority) async -> WalletError? {
        do {
            _ = try await verified(receipt, authority: authority)
            return nil
        } catch {
            return error as? WalletError
        }
    }

    @Test("Apple Root CA is bundled as Apple publishes it (SHA-256 fingerprint), and trusted for receipts only; G3 for both")
    func appleIncRoot() throws {
        let root = try AppleConfiguration.appleIncRootCertificate()
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(fingerprint == "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24")
        let configuration = try AppleConfiguration(bundleID: "com.example.game")
        let g3 = try AppleConfiguration.appleRootCertificate()
        #expect(configuration.receiptRoots == [root, g3])
        #expect(configuration.trustedRoots == [g3], "a JWS chain never ends at the RSA root")
    }

    @Test("a receipt Apple's way verifies: RSA over SHA-256 or SHA-1, the algorithm named rsaEncryption or combined, with or without signed attributes")
    func verifies() async throws {
        let attributes = try TestReceipt.attributes(transactionIDs: ["2000000111", "2000000222"])
        var variants: [AppleTestAuthority.ReceiptSignature] = []
        for digest in [AppleTestAuthority.ReceiptSignature.Digest.sha256, .sha1] {
            for combined in [false, true] {
                for signedAttributes in [false, true] {
                    var signature = AppleTestAuthority.ReceiptSignature()
                    signature.digest = digest
                    signature.combinedAlgorithm = combined
                    signature.signedAttributes = signedAttributes
                    variants.append(signature)
                }
            }
        }
        for signature in variants {
            let receipt = try TestReceipt.signed(attributes, by: Self.authority, signature)
            #expect(try await Self.verified(receipt) == ["2000000111", "2000000222"], "\(signature)")
            let wrapped = #"{"Store":"AppleAppStore","TransactionID":"9","Payload":"\#(receipt)"}"#
            #expect(try await Self.verified(wrapped) == ["2000000111", "2000000222"], "Unity's wrapper: \(signature)")
        }
    }

    @Test("unsigned, self-made, altered, foreign-rooted and unmarked receipts are refused as invalid_request, naming why")
    func refusals() async throws {
        let attributes = try TestReceipt.attributes(transactionIDs: ["2000000111"])
        let genuine = try #require(Data(base64Encoded: try TestReceipt.signed(attributes, by: Self.authority)))
        // The receipt's content altered after signing: another transaction id of the same length.
        var altered = Array(genuine)
        let idBytes = Array("2000000111".utf8)
        let at = try #require(altered.indices.first { altered[$0...].starts(with: idBytes) })
        altered[at + 9] = UInt8(ascii: "2")
        var alteredWithAttributes = Array(try #require(Data(base64Encoded: try TestReceipt.signed(attributes, by: Self.authority, {
            var signature = AppleTestAuthority.ReceiptSignature()
            signature.signedAttributes = true
            return signature
        }()))))
        let attributesAt = try #require(alteredWithAttributes.indices.first { alteredWithAttributes[$0...].starts(with: idBytes) })
        alteredWithAttributes[attributesAt + 9] = UInt8(ascii: "2")
        var unmarkedOptions = AppleTestAuthority.Options()
        unmarkedOptions.receiptLeafOID = false
        let unmarked = try AppleTestAuthority(unmarkedOptions, name: "Unmarked")
        let other = try AppleTestAuthority(name: "Other")
        var ecdsa = AppleTestAuthority.ReceiptSignature()
        ecdsa.algorithmOID = [1, 2, 840, 10045, 4, 3, 2]
        var mismatched = AppleTestAuthority.ReceiptSignature()
        mismatched.digest = .sha1
        mismatched.algorithmOID = [1, 2, 840, 113549, 1, 1, 11]
        let cases: [(String, String, String)] = [
            ("unsigned", try TestReceipt.receipt(attributes), "exactly one signature"),
            ("altered", Data(altered).base64EncodedString(), "does not verify"),
            ("altered under signed attributes", Data(alteredWithAttributes).base64EncodedString(), "altered after signing"),
            ("another root", try TestReceipt.signed(attributes, by: other), "trusted Apple root"),
            ("no receipt-signing marker", try TestReceipt.signed(attributes, by: unmarked), "receipt-signing certificate"),
            ("ECDSA", try TestReceipt.signed(attributes, by: Self.authority, ecdsa), "RSA over SHA-256 or SHA-1 only"),
            ("digest and algorithm disagree", try TestReceipt.signed(attributes, by: Self.authority, mismatched), "RSA over SHA-256 or SHA-1 only"),
            ("no certificates", Data(try Self.authority.signReceipt(try TestReceipt.receiptSet(attributes), certificates: [])).base64EncodedString(), "signing certificates"),
            ("another's certificate", Data(try Self.authority.signReceipt(try TestReceipt.receiptSet(attributes), certificates: other.receiptChain)).base64EncodedString(), "does not carry the certificate"),
            ("Xcode, empty", XcodeReceipts.empty, "trusted Apple root"),
            ("Xcode, with a purchase", XcodeReceipts.withTransaction, "trusted Apple root"),
        ]
        for (name, receipt, detail) in cases {
            let error = await Self.refusal(receipt, authority: name == "no receipt-signing marker" ? unmarked : Self.authority)
            #expect(error?.code == "invalid_request" && error?.detail.contains(detail) == true, "\(name): \(error?.detail ?? "verified")")
        }
        // Both authorities' roots trusted: a chain to a trusted root still needs Apple's marker on its leaf.
        let both = try AppleConfiguration(bundleID: "com.example.game", extraRootsPEM: [Self.authority.rootPEM, unmarked.rootPEM])
        let error = await #expect(throws: WalletError.self) {
            try await AppReceipt.verifiedTransactionIDs(receipt: try TestReceipt.signed(attributes, by: unmarked), trustedRoots: both.receiptRoots)
        }
        #expect(error?.detail.contains("receipt-signing certificate") == true)
    }

    @Test("the chain is checked when the receipt was made: a signing certificate that has expired since still stands behind it, one expired then does not")
    func validityAtCreation() async throws {
        var options = AppleTestAuthority.Options()
        options.leafValidFor = -3_600 * 24 * 30
        let expired = try AppleTestAuthority(options, name: "Expired")
        let before = Date().addingTimeInterval(-3_600 * 24 * 60)
        let old = try TestReceipt.signed(try TestReceipt.attributes(transactionIDs: ["2000000111"], createdAt: before), by: expired)
        #expect(try await Self.verified(old, authority: expired) == ["2000000111"])
        let recent = try TestReceipt.signed(try TestReceipt.attributes(transactionIDs: ["2000000111"]), by: expired)
        #expect(await Self.refusal(recent, authority: expired)?.detail.contains("trusted Apple root") == true)
        // A receipt claiming to be made in the future is checked now; one without a date, now too.
        let future = try TestReceipt.signed(try TestReceipt.attributes(transactionIDs: ["2000000111"], createdAt: Date().addingTimeInterval(3_600 * 24 * 365 * 50)), by: expired)
        #expect(await Self.refusal(future, authority: expired)?.code == "invalid_request")
        let undated = try TestReceipt.signed([try TestReceipt.inApp([(1703, try TestReceipt.utf8("2000000111"))])], by: expired)
        #expect(await Self.refusal(undated, authority: expired)?.code == "invalid_request")
        #expect(try await Self.verified(try TestReceipt.signed([try TestReceipt.inApp([(1703, try TestReceipt.utf8("7"))])], by: Self.authority)) == ["7"])
        let badDate = try TestReceipt.signed([(12, try TestReceipt.ia5("yesterday"))], by: Self.authority)
        #expect(await Self.refusal(badDate)?.detail.contains("creation date") == true)
    }
}
