import Crypto
import _CryptoExtras
import Foundation
import SwiftASN1
import WalletApple
import WalletCore
import X509

/// A certificate authority shaped like Apple's (root, WWDR-like intermediate with Apple's
/// marker, App Store leaf with Apple's marker), for signing test transactions and
/// notifications, and an RSA receipt-signing leaf under the same intermediate, for signing
/// StoreKit 1 receipts as Apple does. Tests trust its root through
/// `AppleConfiguration(extraRootsPEM:)`, the path `--apple-root-certs` feeds.
public struct AppleTestAuthority: Sendable {
    public let rootPEM: String
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey
    /// The receipt-signing certificate (RSA, with Apple's receipt-signing marker unless told).
    public let receiptLeaf: Certificate
    let receiptKey: _RSA.Signing.PrivateKey

    public struct Options: Sendable {
        public var leafOID = true
        public var intermediateOID = true
        /// The leaf's validity ends this long after the authority's creation (negative: already over).
        public var leafValidFor: TimeInterval = 3_600 * 24 * 365
        /// Apple's marker on the receipt-signing certificate.
        public var receiptLeafOID = true
        public init() {}
    }

    public init(_ options: Options = Options(), name: String = "Test") throws {
        let now = Date()
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("\(name) Root CA") }
        let intermediateName = try DistinguishedName { CommonName("\(name) WWDR CA") }
        let leafName = try DistinguishedName { CommonName("\(name) App Store Signing") }
        let caExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 3_600 * 24 * 365 * 5,
            notValidAfter: now + 3_600 * 24 * 365 * 20, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: caExtensions, issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = caExtensions
        if options.intermediateOID {
            try intermediateExtensions.append(Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00]))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: now - 3_600 * 24 * 365 * 4,
            notValidAfter: now + 3_600 * 24 * 365 * 10, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions { Critical(BasicConstraints.notCertificateAuthority) }
        if options.leafOID {
            try leafExtensions.append(Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00]))
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: now - 3_600 * 24 * 365 * 2,
            notValidAfter: now + options.leafValidFor, issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey))
        receiptKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var receiptExtensions = try Certificate.Extensions { Critical(BasicConstraints.notCertificateAuthority) }
        if options.receiptLeafOID {
            try receiptExtensions.append(Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00]))
        }
        receiptLeaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(receiptKey.publicKey), notValidBefore: now - 3_600 * 24 * 365 * 2,
            notValidAfter: now + options.leafValidFor, issuer: intermediateName, subject: try DistinguishedName { CommonName("\(name) Receipt Signing") },
            signatureAlgorithm: .ecdsaWithSHA256, extensions: receiptExtensions, issuerPrivateKey: .init(intermediateKey))
        rootPEM = try root.serializeAsPEM().pemString
    }

    /// How a test receipt is signed: Apple's way by default (RSA over SHA-256, the signature
    /// algorithm named `rsaEncryption`, no signed attributes).
    public struct ReceiptSignature: Sendable {
        public enum Digest: Sendable { case sha1, sha256 }
        public var digest = Digest.sha256
        /// Name the signature algorithm `sha256WithRSAEncryption` (or SHA-1's) instead of `rsaEncryption`.
        public var combinedAlgorithm = false
        /// Sign RFC 5652 signed attributes (content type, message digest) rather than the content.
        public var signedAttributes = false
        /// The signature algorithm OID to write instead, whatever was signed.
        public var algorithmOID: ASN1ObjectIdentifier?
        public init() {}
    }

    /// A PKCS#7 signedData around `content`, signed by the receipt leaf, carrying
    /// `certificates` (the leaf, intermediate and root, as Apple's receipts carry them).
    public func signReceipt(_ content: [UInt8], _ signature: ReceiptSignature = .init(), certificates: [Certificate]? = nil) throws -> [UInt8] {
        let digestOID: ASN1ObjectIdentifier = signature.digest == .sha256 ? [2, 16, 840, 1, 101, 3, 4, 2, 1] : [1, 3, 14, 3, 2, 26]
        let algorithm: Certificate.SignatureAlgorithm = signature.digest == .sha256 ? .sha256WithRSAEncryption : .sha1WithRSAEncryption
        let algorithmOID: ASN1ObjectIdentifier =
            signature.algorithmOID
            ?? (signature.combinedAlgorithm
                ? (signature.digest == .sha256 ? [1, 2, 840, 113549, 1, 1, 11] : [1, 2, 840, 113549, 1, 1, 5]) : [1, 2, 840, 113549, 1, 1, 1])
        let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        var signedAttributes: [UInt8]?
        if signature.signedAttributes {
            let digest: [UInt8] = signature.digest == .sha256 ? Array(SHA256.hash(data: content)) : Array(Insecure.SHA1.hash(data: content))
            var serializer = DER.Serializer()
            try serializer.appendConstructedNode(identifier: .set) { set in
                try set.appendConstructedNode(identifier: .sequence) { attribute in
                    try attribute.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.9.3"))
                    try attribute.appendConstructedNode(identifier: .set) { try $0.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.7.1")) }
                }
                try set.appendConstructedNode(identifier: .sequence) { attribute in
                    try attribute.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.9.4"))
                    try attribute.appendConstructedNode(identifier: .set) { try $0.serialize(ASN1OctetString(contentBytes: digest[...])) }
                }
            }
            signedAttributes = serializer.serializedBytes
        }
        let signatureBytes = try Certificate.PrivateKey(receiptKey).sign(bytes: signedAttributes ?? content, signatureAlgorithm: algorithm).rawRepresentation
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { contentInfo in
            try contentInfo.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.7.2"))
            try contentInfo.appendConstructedNode(identifier: explicitZero) { tagged in
                try tagged.appendConstructedNode(identifier: .sequence) { signedData in
                    try signedData.serialize(Int64(1))
                    try signedData.appendConstructedNode(identifier: .set) { try Self.algorithm(digestOID, into: &$0) }
                    try signedData.appendConstructedNode(identifier: .sequence) { encapsulated in
                        try encapsulated.serialize(ASN1ObjectIdentifier("1.2.840.113549.1.7.1"))
                        try encapsulated.appendConstructedNode(identifier: explicitZero) { try $0.serialize(ASN1OctetString(contentBytes: content[...])) }
                    }
                    try signedData.appendConstructedNode(identifier: explicitZero) { list in
                        for certificate in certificates ?? [receiptLeaf, intermediate, root] { try list.serialize(certificate) }
                    }
                    try signedData.appendConstructedNode(identifier: .set) { signerInfos in
                        try signerInfos.appendConstructedNode(identifier: .sequence) { signer in
                            try signer.serialize(Int64(1))
                            try signer.appendConstructedNode(identifier: .sequence) { sid in
                                try sid.serialize(receiptLeaf.issuer)
                                try sid.serialize(receiptLeaf.serialNumber.bytes)
                            }
                            try Self.algorithm(digestOID, into: &signer)
                            if let signedAttributes {
                                // The same SET, tagged [0] IMPLICIT in place of SET.
                                signer.serializeRawBytes([0xA0] + signedAttributes.dropFirst())
                            }
                            try Self.algorithm(algorithmOID, into: &signer)
                            try signer.serialize(ASN1OctetString(contentBytes: signatureBytes[...]))
                        }
                    }
                }
            }
        }
        return serializer.serializedBytes
    }

    private static func algorithm(_ oid: ASN1ObjectIdentifier, into serializer: inout DER.Serializer) throws {
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.serialize(oid)
            try sequence.serialize(ASN1Null())
        }
    }

    /// The receipt chain's certificates, for tests that carry other ones.
    public var receiptChain: [Certificate] { [receiptLeaf, intermediate, root] }

    /// The x5c chain as Apple sends it: leaf, intermediate, root.
    public var chain: [String] {
        get throws {
            try [leaf, intermediate, root].map { certificate in
                var serializer = DER.Serializer()
                try serializer.serialize(certificate)
                return Data(serializer.serializedBytes).base64EncodedString()
            }
        }
    }

    /// A compact JWS of `payload` (a JSON object), signed by the leaf; `header` may be replaced.
    public func sign(_ payload: [String: Any], alg: String = "ES256", x5c: [String]? = nil) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": try x5c ?? chain])
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try TestJWS.sign(header: header, payload: body, key: .es256(leafKey))
    }

    /// A compact JWS of `payloadJSON` exactly as given (say, with a member named twice), signed
    /// by the leaf with the usual header.
    public func sign(payloadJSON: String) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": try chain])
        return try TestJWS.sign(header: header, payload: Data(payloadJSON.utf8), key: .es256(leafKey))
    }

    /// A StoreKit 2 consumable transaction payload, signed now; `changes` override fields (NSNull removes one).
    public func transaction(_ transactionID: String, product: String = "com.example.game.consume5credits", quantity: Int = 1, changes: [String: Any] = [:]) throws -> String {
        var payload: [String: Any] = [
            "transactionId": transactionID, "originalTransactionId": transactionID, "bundleId": "com.example.game", "productId": product,
            "type": "Consumable", "quantity": quantity, "environment": "Production", "purchaseDate": Self.milliseconds(Date()),
            "signedDate": Self.milliseconds(Date()), "inAppOwnershipType": "PURCHASED", "storefront": "USA",
        ]
        for (key, value) in changes { payload[key] = value is NSNull ? nil : value }
        return try sign(payload)
    }

    /// An App Store Server Notification V2 `signedPayload` about `signedTransaction`.
    public func notification(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signedTransaction: String?, bundleID: String = "com.example.game",
        signedDate: Int64 = milliseconds(Date())
    ) throws -> String {
        var data: [String: Any] = ["bundleId": bundleID, "environment": "Production", "appAppleId": 1234, "bundleVersion": "1.0"]
        if let signedTransaction { data["signedTransactionInfo"] = signedTransaction }
        var payload: [String: Any] = ["notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate, "data": data]
        if let subtype { payload["subtype"] = subtype }
        return try sign(payload)
    }

    public static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1_000) }

    /// The wallet's configuration for `com.example.game`, trusting this authority.
    public func configuration(environments: Set<AppleConfiguration.Environment> = [.production]) throws -> AppleConfiguration {
        try AppleConfiguration(bundleID: "com.example.game", environments: environments, extraRootsPEM: [rootPEM])
    }
}
