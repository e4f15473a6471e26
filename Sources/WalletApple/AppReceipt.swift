import Foundation
import SwiftASN1
import WalletCore

/// What a StoreKit 1 app receipt (base64 PKCS#7, as `Bundle.main.appStoreReceiptURL` holds it)
/// names, read WITHOUT trusting it: nothing here checks a signature, and nothing read here may be
/// credited. The transaction id it yields is only a key for asking Apple's App Store Server API,
/// whose signed answers are verified before anything is credited.
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
    static let transactionIDType: Int64 = 1703
    static let originalTransactionIDType: Int64 = 1705

    /// What a game sends as its receipt: the base64 app receipt itself, or Unity IAP's wrapper
    /// `{"Store": "AppleAppStore", "TransactionID": ..., "Payload": "<base64 app receipt>"}`,
    /// whose `TransactionID` is not trusted either: the receipt inside is read.
    public static func transactionID(receipt text: String) throws(WalletError) -> String? {
        try transactionIDs(receipt: text).first
    }

    /// Every in-app purchase's transaction id (or original transaction id) the receipt names,
    /// in its order, from a base64 receipt or Unity IAP's wrapper.
    public static func transactionIDs(receipt text: String) throws(WalletError) -> [String] {
        guard text.utf8.first == UInt8(ascii: "{") else { return try transactionIDs(base64: text) }
        guard text.utf8.count <= base64BytesMax + 1_024 else {
            throw .invalidRequest("the receipt is longer than \(base64BytesMax) bytes of base64")
        }
        guard let wrapper = WalletJSON.decodeStrictly(UnityReceipt.self, from: Data(text.utf8)) else {
            throw .invalidRequest("the receipt is JSON but not Unity IAP's {\"Store\", \"TransactionID\", \"Payload\"}, each once")
        }
        guard ["AppleAppStore", "MacAppStore"].contains(wrapper.store) else {
            throw .invalidRequest("the Unity IAP receipt is from \(wrapper.store.prefix(40)), not the App Store")
        }
        return try transactionIDs(base64: wrapper.payload)
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

    /// The first in-app purchase's transaction id (or its original transaction id); nil for a
    /// receipt without in-app purchases.
    /// - Throws: `invalidRequest` for text that is not a base64 app receipt.
    public static func transactionID(base64 text: String) throws(WalletError) -> String? {
        try transactionIDs(base64: text).first
    }

    /// Every in-app purchase's transaction id (or original transaction id), in order.
    public static func transactionIDs(base64 text: String) throws(WalletError) -> [String] {
        guard text.utf8.count <= base64BytesMax else {
            throw .invalidRequest("the receipt is longer than \(base64BytesMax) bytes of base64")
        }
        guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
            throw .invalidRequest("the receipt is not base64")
        }
        do {
            return try transactionIDs(der: Array(bytes))
        } catch let error as WalletError {
            throw error
        } catch {
            throw .invalidRequest("the receipt is not a PKCS#7 app receipt")
        }
    }

    private static func transactionIDs(der bytes: [UInt8]) throws -> [String] {
        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT SignedData }
        let receipt: ASN1OctetString = try BER.sequence(try BER.parse(bytes), identifier: .sequence) { nodes in
            _ = try ASN1ObjectIdentifier(berEncoded: &nodes)
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { signedData in
                // SignedData ::= SEQUENCE { version, digestAlgorithms, encapContentInfo, ... }
                try BER.sequence(signedData, identifier: .sequence) { nodes in
                    guard nodes.next() != nil, nodes.next() != nil, let encapsulated = nodes.next() else {
                        throw WalletError.invalidRequest("the receipt's signed data is incomplete")
                    }
                    // Certificates, CRLs and signer infos: passed over, since nothing here is trusted.
                    while nodes.next() != nil {}
                    // EncapsulatedContentInfo ::= SEQUENCE { eContentType OID, eContent [0] EXPLICIT OCTET STRING }
                    return try BER.sequence(encapsulated, identifier: .sequence) { nodes in
                        _ = try ASN1ObjectIdentifier(berEncoded: &nodes)
                        return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { content in
                            try ASN1OctetString(berEncoded: content)
                        }
                    }
                }
            }
        }
        var found: [String] = []
        for inApp in try attributes(of: receipt.bytes) where inApp.type == inAppType {
            let fields = try attributes(of: inApp.value)
            let id = try (fields.first { $0.type == transactionIDType } ?? fields.first { $0.type == originalTransactionIDType })
                .map { field in String(try ASN1UTF8String(berEncoded: try BER.parse(field.value), withIdentifier: .utf8String)) }
            if let id {
                // An id that is not one (invalid UTF-8, spaces, control characters) asks Apple nothing.
                try Validate.asciiIdentifier(id, field: "the receipt's transaction id")
                found.append(id)
            }
        }
        return found
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
