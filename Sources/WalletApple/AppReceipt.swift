import Foundation
import SwiftASN1
import WalletCore
import X509

/// What a StoreKit 1 app receipt (base64 PKCS#7, as `Bundle.main.appStoreReceiptURL` holds it)
/// names. `verifiedTransactionIDs` is the only way a receipt reaches a credit: it checks Apple's
/// signature and certificate chain first (`AppReceipt+Signature.swift`), and reads the ids from
/// the bytes that signature covers. The ids are then only keys for asking Apple's App Store
/// Server API, whose signed answers are verified again before anything is credited.
///
/// The path is Apple's (its `ReceiptUtility`): PKCS#7 `ContentInfo` → `SignedData` → the
/// encapsulated content's OCTET STRING (constructed, in pieces, in Xcode's receipts) → the
/// receipt's SET of attributes → each in-app purchase (attribute type 17), itself a SET → its
/// transaction id (type 1703) or, failing that, its original transaction id (1705), as UTF8String.
public enum AppReceipt {
    /// The longest receipt accepted, base64 text: a game's receipt with thousands of
    /// purchases stays well under it.
    public static let base64BytesMax = 1024 * 1024

    static let inAppType: Int64 = 17
    static let creationDateType: Int64 = 12
    static let transactionIDType: Int64 = 1703
    static let originalTransactionIDType: Int64 = 1705

    /// Every in-app purchase's transaction id (or original transaction id) the receipt names, in
    /// its order, once its signature verifies with a chain to one of `trustedRoots`; from a base64
    /// receipt or Unity IAP's wrapper `{"Store": "AppleAppStore", "TransactionID": ...,
    /// "Payload": "<base64 app receipt>"}`, whose `TransactionID` is not trusted: the receipt
    /// inside is read.
    /// - Throws: `invalidRequest` for anything that is not an app receipt signed by Apple (or a
    ///   configured root), naming what failed.
    public static func verifiedTransactionIDs(receipt text: String, trustedRoots: [Certificate], now: Date = Date()) async throws(WalletError) -> [String] {
        let signed = try SignedReceipt(parsing: try der(receipt: text))
        try await signed.verify(trustedRoots: trustedRoots, now: now)
        return try read(signed.content).transactionIDs
    }

    /// The transaction ids of a receipt or Unity wrapper, its signature NOT checked: for tests of
    /// the parser only (Xcode's receipts are signed by a local certificate).
    static func unverifiedTransactionIDs(receipt text: String) throws(WalletError) -> [String] {
        try read(try SignedReceipt(parsing: try der(receipt: text)).content).transactionIDs
    }

    /// The first transaction id of a base64 receipt, its signature NOT checked (parser tests).
    static func unverifiedTransactionID(base64 text: String) throws(WalletError) -> String? {
        try read(try SignedReceipt(parsing: try der(base64: text)).content).transactionIDs.first
    }

    /// The receipt's DER (or BER) bytes, from base64 or Unity IAP's wrapper.
    static func der(receipt text: String) throws(WalletError) -> [UInt8] {
        guard text.utf8.first == UInt8(ascii: "{") else { return try der(base64: text) }
        guard text.utf8.count <= base64BytesMax + 1_024 else {
            throw .invalidRequest("the receipt is longer than \(base64BytesMax) bytes of base64")
        }
        guard let wrapper = WalletJSON.decodeStrictly(UnityReceipt.self, from: Data(text.utf8)) else {
            throw .invalidRequest("the receipt is JSON but not Unity IAP's {\"Store\", \"TransactionID\", \"Payload\"}, each once")
        }
        guard ["AppleAppStore", "MacAppStore"].contains(wrapper.store) else {
            throw .invalidRequest("the Unity IAP receipt is from \(wrapper.store.prefix(40)), not the App Store")
        }
        return try der(base64: wrapper.payload)
    }

    private struct UnityReceipt: Decodable {
        var store: String
        var transactionID: String?
        var payload: String

        enum CodingKeys: String, CodingKey {
            case store = "Store"
            case transactionID = "TransactionID"
            case payload = "Payload"
        }
    }

    static func der(base64 text: String) throws(WalletError) -> [UInt8] {
        guard text.utf8.count <= base64BytesMax else {
            throw .invalidRequest("the receipt is longer than \(base64BytesMax) bytes of base64")
        }
        guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
            throw .invalidRequest("the receipt is not base64")
        }
        return Array(bytes)
    }

    /// What the receipt's content names: its purchases' transaction ids, and when Apple made it
    /// (type 12, RFC 3339), if it says.
    static func read(_ content: ArraySlice<UInt8>) throws(WalletError) -> (transactionIDs: [String], creationDate: String?) {
        do {
            return try readContent(content)
        } catch let error as WalletError {
            throw error
        } catch {
            throw .invalidRequest("the receipt is not a PKCS#7 app receipt")
        }
    }

    private static func readContent(_ content: ArraySlice<UInt8>) throws -> (transactionIDs: [String], creationDate: String?) {
        var found: [String] = []
        var creationDate: String?
        for attribute in try attributes(of: content) {
            if attribute.type == creationDateType {
                creationDate = String(try ASN1IA5String(berEncoded: try BER.parse(attribute.value), withIdentifier: .ia5String))
            }
            guard attribute.type == inAppType else { continue }
            let fields = try attributes(of: attribute.value)
            let id = try (fields.first { $0.type == transactionIDType } ?? fields.first { $0.type == originalTransactionIDType })
                .map { field in String(try ASN1UTF8String(berEncoded: try BER.parse(field.value), withIdentifier: .utf8String)) }
            if let id {
                // An id that is not one (invalid UTF-8, spaces, control characters) asks Apple nothing.
                try Validate.asciiIdentifier(id, field: "the receipt's transaction id")
                found.append(id)
            }
        }
        return (found, creationDate)
    }

    /// The attributes of a receipt or of an in-app purchase: `SET OF SEQUENCE { type INTEGER,
    /// version INTEGER, value OCTET STRING }`.
    private static func attributes(of bytes: ArraySlice<UInt8>) throws -> [(type: Int64, value: ArraySlice<UInt8>)] {
        try BER.sequence(try BER.parse(bytes), identifier: .set) { nodes in
            var attributes: [(type: Int64, value: ArraySlice<UInt8>)] = []
            while let node = nodes.next() {
                attributes.append(
                    try BER.sequence(node, identifier: .sequence) { fields in
                        let type = try Int64(berEncoded: &fields)
                        _ = try Int64(berEncoded: &fields)
                        return (type, try ASN1OctetString(berEncoded: &fields).bytes)
                    })
            }
            return attributes
        }
    }
}
