import Crypto
import Foundation
import SwiftASN1
import WalletCore
@_spi(FixedExpiryValidationTime) import X509

/// An app receipt's PKCS#7 `SignedData`, as read (nothing here is trusted until `verify` passes):
/// the encapsulated content, and the certificates and signer infos beside it.
///
/// swift-certificates' `CMS.isValidSignature` cannot check Apple's receipts: it requires the
/// signer's signature algorithm to be a combined one (`sha256WithRSAEncryption`), while Apple's
/// receipts name `rsaEncryption` beside the digest algorithm, as PKCS#7 signers long did. So
/// the signature is checked here, with swift-certificates' RSA verification and its chain
/// `Verifier`.
struct SignedReceipt {
    var contentType: ASN1ObjectIdentifier
    var encapsulatedContentType: ASN1ObjectIdentifier
    /// The receipt's attributes, the bytes the signature covers.
    var content: ArraySlice<UInt8>
    var certificates: [ASN1Node]
    var signerInfos: [ASN1Node]

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    /// The most certificates a receipt may carry (Apple's carry three).
    static let certificatesMax = 8

    private static func parse(_ bytes: [UInt8]) throws -> SignedReceipt {
        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT SignedData }
        try BER.sequence(try BER.parse(bytes), identifier: .sequence) { (nodes: inout ASN1NodeCollection.Iterator) throws -> SignedReceipt in
            let contentType = try ASN1ObjectIdentifier(berEncoded: &nodes)
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { (signedData: ASN1Node) throws -> SignedReceipt in
                try parseSignedData(signedData, contentType: contentType)
            }
        }
    }

    /// SignedData ::= SEQUENCE { version, digestAlgorithms, encapContentInfo, certificates [0]
    /// IMPLICIT OPTIONAL, crls [1] IMPLICIT OPTIONAL, signerInfos SET }
    private static func parseSignedData(_ node: ASN1Node, contentType: ASN1ObjectIdentifier) throws -> SignedReceipt {
        try BER.sequence(node, identifier: .sequence) { (nodes: inout ASN1NodeCollection.Iterator) throws -> SignedReceipt in
            guard nodes.next() != nil, nodes.next() != nil, let encapsulated = nodes.next() else {
                throw WalletError.invalidRequest("the receipt's signed data is incomplete")
            }
            var certificates: [ASN1Node] = []
            var signerInfos: [ASN1Node] = []
            let certificatesTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
            while let node = nodes.next() {
                guard case .constructed(let children) = node.content else { continue }
                if node.identifier == certificatesTag {
                    certificates = Array(children)
                } else if node.identifier == .set {
                    signerInfos = Array(children)
                }
                // CRLs are passed over: the chain is checked against the configured roots only.
            }
            let (encapsulatedType, content) = try parseEncapsulated(encapsulated)
            return SignedReceipt(
                contentType: contentType, encapsulatedContentType: encapsulatedType, content: content, certificates: certificates,
                signerInfos: signerInfos)
        }
    }

    /// EncapsulatedContentInfo ::= SEQUENCE { eContentType OID, eContent [0] EXPLICIT OCTET STRING }
    private static func parseEncapsulated(_ node: ASN1Node) throws -> (ASN1ObjectIdentifier, ArraySlice<UInt8>) {
        try BER.sequence(node, identifier: .sequence) { (nodes: inout ASN1NodeCollection.Iterator) throws -> (ASN1ObjectIdentifier, ArraySlice<UInt8>) in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            let octets = try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { (content: ASN1Node) throws -> ASN1OctetString in
                try ASN1OctetString(berEncoded: content)
            }
            return (type, octets.bytes)
        }
    }

    /// Checks that the content was signed by a certificate that chains to one of `trustedRoots`
    /// and carries Apple's receipt-signing marker, under an intermediate with Apple's WWDR marker.
    /// The markers matter: Apple's root also certifies every developer's own certificates (under
    /// the same WWDR intermediate), and a developer's key must not be able to sign a receipt.
    ///
    /// The chain is checked at the receipt's creation date (attribute 12, read from the content
    /// once its signature verifies), or now when the receipt names none or a later one. Apple's
    /// receipt chains expire (the WWDR intermediate of 2013 on 7 February 2023, with the signing
    /// certificate under it), and Apple documents that a receipt stays valid when its chain was
    /// valid at its creation; checking at "now" would refuse every older receipt still on a
    /// device. The cost is that a signing key leaked after its certificate expired could sign
    /// back-dated receipts, which the App Store Server API's own verified answers still stand
    /// behind: a receipt only names transaction ids to ask Apple about.
    func verify(trustedRoots: [Certificate], now: Date) async throws(WalletError) {
        guard contentType == Self.signedDataOID, encapsulatedContentType == Self.dataOID else {
            throw Self.invalid("the receipt is not PKCS#7 signed data")
        }
        guard signerInfos.count == 1 else { throw Self.invalid("the receipt must carry exactly one signature, not \(signerInfos.count)") }
        guard !certificates.isEmpty, certificates.count <= Self.certificatesMax else {
            throw Self.invalid("the receipt must carry its signing certificates (1 to \(Self.certificatesMax), not \(certificates.count))")
        }
        let certificates = try certificates.map { node throws(WalletError) in
            guard let certificate = try? Certificate(derEncoded: Array(node.encodedBytes)) else {
                throw Self.invalid("a certificate in the receipt is not valid DER")
            }
            return certificate
        }
        let signer = try ReceiptSignerInfo(signerInfos[0])
        guard let signingCertificate = certificates.first(where: { $0.issuer == signer.issuer && $0.serialNumber == signer.serialNumber }) else {
            throw Self.invalid("the receipt does not carry the certificate that signed it")
        }
        let algorithm = try signer.signatureAlgorithm()
        let signedBytes = try signer.signedBytes(content: content, algorithm: algorithm)
        guard signingCertificate.publicKey.isValidSignature(signer.signature, for: signedBytes, signatureAlgorithm: algorithm) else {
            throw Self.invalid("the receipt's signature does not verify: it was not signed by its certificate, or was altered after signing")
        }
        let validationTime = try validationTime(now: now)
        var verifier = Verifier(rootCertificates: CertificateStore(trustedRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
        }
        let others = certificates.filter { $0 != signingCertificate }
        let result = await verifier.validate(leaf: signingCertificate, intermediates: CertificateStore(others))
        guard case .validCertificate(let chain) = result else {
            throw Self.invalid("the receipt's certificate chain does not lead to a trusted Apple root, valid at \(Timestamp.format(validationTime))")
        }
        guard chain.count == 3, chain[0].extensions[oid: AppleSignedDataVerifier.leafOID] != nil,
            chain[1].extensions[oid: AppleSignedDataVerifier.intermediateOID] != nil
        else {
            throw Self.invalid("the receipt was not signed by Apple's receipt-signing certificate under its WWDR intermediate")
        }
    }

    /// The receipt's creation date when it is earlier than `now`, else `now`.
    private func validationTime(now: Date) throws(WalletError) -> Date {
        guard let text = try AppReceipt.read(content).creationDate else { return now }
        let created = try Timestamp.date(text, field: "the receipt's creation date")
        // Before the App Store opened, the date cannot be Apple's.
        guard created.timeIntervalSince1970 * 1_000 >= Double(AppleSignedDataVerifier.signedDateRange.lowerBound) else {
            throw Self.invalid("the receipt's creation date \(text.prefix(40)) is before the App Store opened")
        }
        return min(created, now)
    }

    static func invalid(_ reason: String) -> WalletError {
        .invalidRequest(reason)
    }
}

extension SignedReceipt {
    init(parsing bytes: [UInt8]) throws(WalletError) {
        do {
            self = try Self.parse(bytes)
        } catch let error as WalletError {
            throw error
        } catch {
            throw .invalidRequest("the receipt is not a PKCS#7 app receipt")
        }
    }
}

/// A PKCS#7 `SignerInfo`: `SEQUENCE { version, sid IssuerAndSerialNumber, digestAlgorithm,
/// signedAttrs [0] IMPLICIT OPTIONAL, signatureAlgorithm, signature OCTET STRING, unsignedAttrs
/// [1] IMPLICIT OPTIONAL }`.
struct ReceiptSignerInfo {
    var issuer: DistinguishedName
    var serialNumber: Certificate.SerialNumber
    var digestAlgorithm: ASN1ObjectIdentifier
    var signedAttributes: ASN1Node?
    var signatureAlgorithmOID: ASN1ObjectIdentifier
    var signature: ArraySlice<UInt8>

    static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let sha1WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 5]
    static let sha256WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]
    static let contentTypeAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 3]
    static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]

    private static func parse(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ReceiptSignerInfo {
        _ = try Int64(berEncoded: &nodes)
        guard let sid = nodes.next(), sid.identifier == .sequence else {
            throw SignedReceipt.invalid("the receipt's signer must be named by issuer and serial number, as Apple's are")
        }
        let (issuer, serial) = try issuerAndSerialNumber(sid)
        let digest = try algorithm(&nodes)
        var signedAttributes: ASN1Node?
        var next = nodes.next()
        if let node = next, node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            signedAttributes = node
            next = nodes.next()
        }
        guard let signatureAlgorithmNode = next else { throw SignedReceipt.invalid("the receipt's signature names no algorithm") }
        let signatureAlgorithm = try algorithm(signatureAlgorithmNode)
        let signature = try ASN1OctetString(berEncoded: &nodes).bytes
        while nodes.next() != nil {}  // Unsigned attributes: not covered by the signature, not read.
        return ReceiptSignerInfo(
            issuer: issuer, serialNumber: Certificate.SerialNumber(bytes: serial), digestAlgorithm: digest, signedAttributes: signedAttributes,
            signatureAlgorithmOID: signatureAlgorithm, signature: signature)
    }

    /// IssuerAndSerialNumber ::= SEQUENCE { issuer Name, serialNumber INTEGER }
    private static func issuerAndSerialNumber(_ node: ASN1Node) throws -> (DistinguishedName, ArraySlice<UInt8>) {
        try BER.sequence(node, identifier: .sequence) { (fields: inout ASN1NodeCollection.Iterator) throws -> (DistinguishedName, ArraySlice<UInt8>) in
            guard let name = fields.next() else { throw SignedReceipt.invalid("the receipt's signer names no issuer") }
            let issuer = try DistinguishedName(derEncoded: name)
            let serial = try ArraySlice<UInt8>(berEncoded: &fields)
            return (issuer, serial)
        }
    }

    private static func algorithm(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ASN1ObjectIdentifier {
        guard let node = nodes.next() else { throw SignedReceipt.invalid("the receipt's signer info is incomplete") }
        return try algorithm(node)
    }

    /// AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL }: the OID.
    private static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        try BER.sequence(node, identifier: .sequence) { (fields: inout ASN1NodeCollection.Iterator) throws -> ASN1ObjectIdentifier in
            let oid = try ASN1ObjectIdentifier(berEncoded: &fields)
            while fields.next() != nil {}
            return oid
        }
    }

    /// RSA PKCS#1 v1.5 over SHA-256, or over SHA-1: Apple signed receipts with SHA-1 until 2023,
    /// and those receipts stay on devices. SHA-1 is accepted deliberately: forging one needs a
    /// collision with content Apple chose to sign, not a free choice of content. Anything else
    /// (ECDSA, other digests, a digest that disagrees with the algorithm) is refused by name.
    func signatureAlgorithm() throws(WalletError) -> Certificate.SignatureAlgorithm {
        switch (digestAlgorithm, signatureAlgorithmOID) {
        case (Self.sha256, Self.rsaEncryption), (Self.sha256, Self.sha256WithRSA): return .sha256WithRSAEncryption
        case (Self.sha1, Self.rsaEncryption), (Self.sha1, Self.sha1WithRSA): return .sha1WithRSAEncryption
        default:
            throw SignedReceipt.invalid(
                "the receipt is signed with algorithm \(signatureAlgorithmOID) over digest \(digestAlgorithm); the wallet accepts App Store receipts' RSA over SHA-256 or SHA-1 only"
            )
        }
    }

    /// The bytes the signature covers: the content itself, or, when the signer added signed
    /// attributes, their DER with the SET tag (RFC 5652 section 5.4) — and then the attributes'
    /// message digest must be the content's, and their content type id-data.
    func signedBytes(content: ArraySlice<UInt8>, algorithm: Certificate.SignatureAlgorithm) throws(WalletError) -> [UInt8] {
        guard let signedAttributes else { return Array(content) }
        let digest: [UInt8] = algorithm == .sha256WithRSAEncryption ? Array(SHA256.hash(data: content)) : Array(Insecure.SHA1.hash(data: content))
        let attributes: [ASN1ObjectIdentifier: [ASN1Node]]
        do {
            attributes = try Self.attributes(signedAttributes)
        } catch {
            throw SignedReceipt.invalid("the receipt's signed attributes are malformed")
        }
        guard let digests = attributes[Self.messageDigestAttribute], digests.count == 1,
            let signedDigest = try? ASN1OctetString(berEncoded: digests[0]), Array(signedDigest.bytes) == digest
        else {
            throw SignedReceipt.invalid("the receipt's signed message digest does not match its content: it was altered after signing")
        }
        guard let types = attributes[Self.contentTypeAttribute], types.count == 1, (try? ASN1ObjectIdentifier(berEncoded: types[0])) == SignedReceipt.dataOID else {
            throw SignedReceipt.invalid("the receipt's signed attributes do not name its content type as data")
        }
        return [0x31] + signedAttributes.encodedBytes.dropFirst()
    }

    /// `SET OF Attribute ::= SEQUENCE { attrType OID, attrValues SET OF ANY }`, each type once.
    private static func attributes(_ node: ASN1Node) throws -> [ASN1ObjectIdentifier: [ASN1Node]] {
        guard case .constructed(let children) = node.content else { throw SignedReceipt.invalid("the receipt's signed attributes are malformed") }
        var attributes: [ASN1ObjectIdentifier: [ASN1Node]] = [:]
        for child in children {
            let (type, values) = try BER.sequence(child, identifier: .sequence) {
                (fields: inout ASN1NodeCollection.Iterator) throws -> (ASN1ObjectIdentifier, [ASN1Node]) in
                let type = try ASN1ObjectIdentifier(berEncoded: &fields)
                guard let set = fields.next(), case .constructed(let values) = set.content, fields.next() == nil else {
                    throw SignedReceipt.invalid("the receipt's signed attributes are malformed")
                }
                return (type, Array(values))
            }
            guard attributes[type] == nil else { throw SignedReceipt.invalid("the receipt's signed attribute \(type) appears twice") }
            attributes[type] = values
        }
        return attributes
    }
}

extension ReceiptSignerInfo {
    init(_ node: ASN1Node) throws(WalletError) {
        do {
            self = try BER.sequence(node, identifier: .sequence) { (nodes: inout ASN1NodeCollection.Iterator) throws -> ReceiptSignerInfo in
                try Self.parse(&nodes)
            }
        } catch let error as WalletError {
            throw error
        } catch {
            throw SignedReceipt.invalid("the receipt's signer info is malformed")
        }
    }
}
