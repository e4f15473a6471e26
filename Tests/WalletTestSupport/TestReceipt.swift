import Foundation
import SwiftASN1

/// StoreKit 1 app receipts built in tests: PKCS#7 signedData around the ASN.1 receipt set,
/// unsigned (`receipt`, for the parser alone) or signed by a test authority (`signed`, `with`).
public enum TestReceipt {
    public typealias Attribute = (type: Int64, value: [UInt8])

    /// A PKCS#7 app receipt in DER holding `attributes` (each in-app purchase's attributes
    /// nested as the value of a type 17 attribute, as Apple's receipts have them).
    public static func receipt(_ attributes: [Attribute]) throws -> String {
        let content = try receiptSet(attributes)
        var serializer = DER.Serializer()
        let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        try serializer.appendConstructedNode(identifier: .sequence) { contentInfo in
            try contentInfo.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.7.2"))
            try contentInfo.appendConstructedNode(identifier: explicitZero) { tagged in
                try tagged.appendConstructedNode(identifier: .sequence) { signedData in
                    try signedData.serialize(Int64(1))
                    signedData.appendConstructedNode(identifier: .set) { _ in }
                    try signedData.appendConstructedNode(identifier: .sequence) { encapsulated in
                        try encapsulated.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.7.1"))
                        try encapsulated.appendConstructedNode(identifier: explicitZero) { eContent in
                            try eContent.serialize(ASN1OctetString(contentBytes: content[...]))
                        }
                    }
                    signedData.appendConstructedNode(identifier: .set) { _ in }
                }
            }
        }
        return Data(serializer.serializedBytes).base64EncodedString()
    }

    public static func utf8(_ text: String) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(ASN1UTF8String(text))
        return serializer.serializedBytes
    }

    public static func inApp(_ fields: [Attribute]) throws -> Attribute {
        (17, try receiptSet(fields))
    }

    /// A SET of attributes: a receipt's, or an in-app purchase's.
    public static func receiptSet(_ attributes: [Attribute]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .set) { set in
            for attribute in attributes {
                try set.appendConstructedNode(identifier: .sequence) { sequence in
                    try sequence.serialize(attribute.type)
                    try sequence.serialize(Int64(1))
                    try sequence.serialize(ASN1OctetString(contentBytes: attribute.value[...]))
                }
            }
        }
        return serializer.serializedBytes
    }

    public static func ia5(_ text: String) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(ASN1IA5String(text))
        return serializer.serializedBytes
    }

    /// A receipt holding `attributes`, signed by `authority`'s receipt-signing certificate, base64.
    public static func signed(
        _ attributes: [Attribute], by authority: AppleTestAuthority, _ signature: AppleTestAuthority.ReceiptSignature = .init()
    ) throws -> String {
        Data(try authority.signReceipt(try receiptSet(attributes), signature)).base64EncodedString()
    }

    /// The attributes of a receipt made now whose in-app purchases are `transactionIDs`.
    public static func attributes(transactionIDs: [String], createdAt: Date = Date()) throws -> [Attribute] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return [(2, try utf8("com.example.game")), (12, try ia5(formatter.string(from: createdAt)))]
            + (try transactionIDs.map { id in try inApp([(1703, try utf8(id))]) })
    }

    /// A receipt whose one in-app purchase is `transactionID`, signed by `authority`, base64.
    public static func with(transactionID: String, signedBy authority: AppleTestAuthority) throws -> String {
        try with(transactionIDs: [transactionID], signedBy: authority)
    }

    /// A receipt with one in-app purchase per transaction id, signed by `authority`, base64.
    public static func with(transactionIDs: [String], signedBy authority: AppleTestAuthority) throws -> String {
        try signed(try attributes(transactionIDs: transactionIDs), by: authority)
    }
}
