import WalletCore
import Crypto
import Foundation
@_spi(FixedExpiryValidationTime) import X509
import SwiftASN1

/// Which App Store signatures the wallet accepts: the app's bundle id, the environments it
/// takes purchases from, and the roots a signing chain must end at.
public struct AppleConfiguration: Sendable {
    public enum Environment: String, Sendable, CaseIterable {
        case production = "Production"
        case sandbox = "Sandbox"
    }

    public var bundleID: String
    public var environments: Set<Environment>
    /// Apple Root CA - G3, plus any roots added by configuration (tests use their own CA): the
    /// roots of App Store JWS.
    public var trustedRoots: [Certificate]
    /// Apple Root CA (the RSA root that StoreKit 1 receipts chain to), Apple Root CA - G3 (for
    /// chains Apple may move receipts to), plus the same added roots: the roots of app receipts.
    public var receiptRoots: [Certificate]
    /// How purchases' `appAccountToken`s tie them to players: bound on first use unless the
    /// operator configures a namespace for tokens derived from player ids.
    public var accountTokenBinding: AccountTokenBinding = .firstUse
    /// How `REFUND` notifications take back credits the player already spent.
    public var refundPolicy: RefundPolicy
    /// What to answer Apple's `CONSUMPTION_REQUEST`s with; nil when the operator does not answer
    /// (answering states that the customer consented to sharing consumption data).
    public var consumptionReplies: ConsumptionReplyPolicy?

    /// - Parameter extraRootsPEM: PEM texts of further trusted roots.
    public init(
        bundleID: String, environments: Set<Environment> = [.production], extraRootsPEM: [String] = [], refundPolicy: RefundPolicy = .debt
    ) throws(WalletError) {
        guard !bundleID.isEmpty, bundleID.utf8.count <= Limits.identifierBytesMax else {
            throw .invalidRequest("the Apple bundle id must be 1 to \(Limits.identifierBytesMax) characters")
        }
        guard !environments.isEmpty else { throw .invalidRequest("at least one Apple environment must be allowed") }
        self.bundleID = bundleID
        self.environments = environments
        self.refundPolicy = refundPolicy
        let extraRoots = try extraRootsPEM.enumerated().map { index, pem throws(WalletError) in try Self.certificate(pem: pem, name: "extra root \(index + 1)") }
        let g3 = try Self.certificate(pem: AppleRootCertificate.pem, name: "Apple Root CA - G3")
        trustedRoots = [g3] + extraRoots
        receiptRoots = [try Self.certificate(pem: AppleRootCertificate.incRootPEM, name: "Apple Root CA"), g3] + extraRoots
    }

    /// Apple Root CA - G3 as bundled.
    public static func appleRootCertificate() throws(WalletError) -> Certificate {
        try certificate(pem: AppleRootCertificate.pem, name: "Apple Root CA - G3")
    }

    /// Apple Root CA (Apple Inc.'s RSA root) as bundled.
    public static func appleIncRootCertificate() throws(WalletError) -> Certificate {
        try certificate(pem: AppleRootCertificate.incRootPEM, name: "Apple Root CA")
    }

    static func certificate(pem: String, name: String) throws(WalletError) -> Certificate {
        do {
            return try Certificate(pemEncoded: pem)
        } catch {
            throw .invalidRequest("\(name) is not a PEM certificate")
        }
    }
}

/// The operator's part of every consumption answer (Send Consumption Information V2).
public struct ConsumptionReplyPolicy: Sendable, Equatable {
    /// Whether the game provides a free sample or trial of its content.
    public var sampleContentProvided: Bool
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`; nil states no preference.
    public var refundPreference: String?
    /// How long after Apple asks it still takes an answer.
    public static let deadline: TimeInterval = 12 * 3_600

    public init(sampleContentProvided: Bool, refundPreference: String?) throws(WalletError) {
        if let refundPreference, !ConsumptionReplyRequest.refundPreferences.contains(refundPreference) {
            throw .invalidRequest("the refund preference is DECLINE, GRANT_FULL or GRANT_PRORATED, not '\(refundPreference.prefix(40))'")
        }
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }
}

/// A StoreKit 2 transaction as Apple signs it (`JWSTransactionDecodedPayload`), the fields the
/// wallet uses.
public struct AppleTransaction: Decodable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var bundleId: String
    public var productId: String
    public var type: String
    public var quantity: Int64
    public var environment: String
    /// Milliseconds since 1970, like every Apple date.
    public var signedDate: Int64
    /// When the customer bought it (a pass's period starts then).
    public var purchaseDate: Int64?
    public var revocationDate: Int64?
    /// Thousandths of a percent refunded, e.g. 50000 for half.
    public var revocationPercentage: Int64?
    public var appAccountToken: String?
}

/// Verifies App Store JWS offline, as Apple's own libraries do when they do not check
/// revocation online: ES256 over `header.payload` by the leaf of an `x5c` chain of exactly three
/// certificates, the chain valid at the payload's `signedDate` up to a trusted root, with Apple's
/// marker extensions on the leaf and the intermediate. Every refusal is `purchase_invalid` with
/// the reason.
public struct AppleSignedDataVerifier: Sendable {
    /// Apple's marker extension on the certificate that signs App Store data.
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Apple's marker extension on the Worldwide Developer Relations intermediate.
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// The `signedDate`s accepted, in milliseconds since 1970: from the App Store's opening year
    /// (2008) to the end of year 9999, the last a certificate's time can express.
    static let signedDateRange: ClosedRange<Int64> = 1_199_145_600_000...Timestamp.millisecondsRange.upperBound
    /// The longest JWS accepted, to bound the work done on hostile input.
    static let jwsBytesMax = 16 * 1024

    public let configuration: AppleConfiguration

    public init(configuration: AppleConfiguration) {
        self.configuration = configuration
    }

    /// The verified payload of a JWS, decoded as `Payload`; `signedDate` (ms) is read from it
    /// to validate the chain at the time Apple signed.
    func verify<Payload: Decodable>(_ jws: String, as type: Payload.Type, signedDate: (Payload) -> Int64) async throws(WalletError) -> Payload {
        let signed: CompactJWS<Header>
        do {
            signed = try CompactJWS(jws, bytesMax: Self.jwsBytesMax)
        } catch .tooLong {
            throw Self.invalid("the signed data is too long")
        } catch .malformed {
            throw Self.invalid("the signed data is not a compact JWS")
        } catch {
            throw Self.invalid("the JWS header is malformed")
        }
        let header = signed.header
        guard header.alg == "ES256" else { throw Self.invalid("the JWS algorithm must be ES256, not \(header.alg)") }
        guard let chain = header.x5c, chain.count == 3 else {
            throw Self.invalid("the x5c chain must hold exactly three certificates, not \(header.x5c?.count ?? 0)")
        }
        let certificates = try chain.map { encoded throws(WalletError) in
            guard let der = Data(base64Encoded: encoded), let certificate = try? Certificate(derEncoded: Array(der)) else {
                throw Self.invalid("an x5c certificate is not valid DER")
            }
            return certificate
        }
        guard let leafKey = P256.Signing.PublicKey(certificates[0].publicKey) else { throw Self.invalid("the signing certificate has no P-256 key") }
        guard signed.isSigned(by: leafKey) else { throw Self.invalid("the JWS signature does not verify") }
        guard let payload = signed.payload(as: Payload.self) else { throw Self.invalid("the signed payload is malformed") }
        // Checked before any library sees it: swift-certificates traps on years past 9999.
        let signedMilliseconds = signedDate(payload)
        guard Self.signedDateRange.contains(signedMilliseconds) else {
            throw Self.invalid("signedDate \(signedMilliseconds) is not a time between 2008 and 9999")
        }
        try await verifyChain(certificates, at: Date(timeIntervalSince1970: Double(signedMilliseconds) / 1_000))
        return payload
    }

    private func verifyChain(_ certificates: [Certificate], at signedDate: Date) async throws(WalletError) {
        // The chain's own root must be one of ours, byte for byte.
        guard configuration.trustedRoots.contains(certificates[2]) else { throw Self.invalid("the certificate chain does not end at a trusted root") }
        guard certificates[0].extensions[oid: Self.leafOID] != nil else { throw Self.invalid("the signing certificate lacks Apple's App Store marker") }
        guard certificates[1].extensions[oid: Self.intermediateOID] != nil else {
            throw Self.invalid("the intermediate certificate lacks Apple's WWDR marker")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(configuration.trustedRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: signedDate)
        }
        let result = await verifier.validate(leaf: certificates[0], intermediates: CertificateStore([certificates[1]]))
        guard case .validCertificate(let chain) = result, Array(chain) == certificates else {
            throw Self.invalid("the certificate chain is not valid at the signing date \(Timestamp.format(signedDate))")
        }
    }

    static func invalid(_ reason: String) -> WalletError {
        .purchaseInvalid(reason)
    }

    private struct Header: Decodable {
        var alg: String
        var x5c: [String]?
    }
}
