import Crypto
import Foundation
import SwiftASN1
import WalletApple
import WalletCore
import X509

/// A certificate authority shaped like Apple's (root, WWDR-like intermediate with Apple's
/// marker, App Store leaf with Apple's marker), for signing test transactions and
/// notifications. Tests trust its root through `AppleConfiguration(extraRootsPEM:)`.
public struct AppleTestAuthority: Sendable {
    public let rootPEM: String
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey

    public struct Options: Sendable {
        public var leafOID = true
        public var intermediateOID = true
        /// The leaf's validity ends this long after the authority's creation (negative: already over).
        public var leafValidFor: TimeInterval = 3_600 * 24 * 365
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
        rootPEM = try root.serializeAsPEM().pemString
    }

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
