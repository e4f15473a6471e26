import Crypto
import Foundation
import WalletCore

/// The App Store Connect API key the wallet signs its App Store Server API requests with: the
/// issuer id, the key id, the `.p8` private key (P-256, PEM) and the app's bundle id. Each
/// request carries a fresh token (`token(at:)`), as Apple asks.
public struct AppStoreServerAPICredentials: Sendable {
    public let issuerID: String
    public let keyID: String
    public let bundleID: String
    private let privateKey: P256.Signing.PrivateKey

    /// The audience Apple's API expects in every token.
    static let audience = "appstoreconnect-v1"
    /// How long a token is valid: Apple refuses tokens that live longer than 60 minutes; the
    /// wallet makes one per request and lets it live 5.
    static let tokenLifetimeSeconds: Int64 = 300

    /// - Throws: `invalidRequest` naming what is wrong (an empty id, a key that is not a P-256 PEM).
    public init(issuerID: String, keyID: String, privateKeyPEM: String, bundleID: String) throws(WalletError) {
        for (value, name) in [(issuerID, "Apple issuer id"), (keyID, "Apple key id"), (bundleID, "Apple bundle id")] {
            try Validate.asciiIdentifier(value, field: "the \(name)")
        }
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw .invalidRequest("the Apple private key is not a PEM-encoded P-256 private key (the .p8 file App Store Connect gives)")
        }
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
    }

    /// A request token issued at `now`: ES256, `kid` in the header; `iss`, `iat`, `exp` (5
    /// minutes on), `aud` and `bid` in the payload.
    public func token(at now: Date = Date()) throws(WalletError) -> String {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let header = Token.Header(alg: "ES256", kid: keyID, typ: "JWT")
        let claims = Token.Claims(iss: issuerID, iat: issuedAt, exp: issuedAt + Self.tokenLifetimeSeconds, aud: Self.audience, bid: bundleID)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try CompactJWSWriter.signed(header: encoder.encode(header), payload: encoder.encode(claims), by: privateKey)
        } catch {
            throw .notConfigured("the Apple private key could not sign the App Store Server API token: \(error)")
        }
    }

    /// The token's parts, as they are written (and as tests read them back).
    enum Token {
        struct Header: Codable, Equatable {
            var alg: String
            var kid: String
            var typ: String
        }

        struct Claims: Codable, Equatable {
            var iss: String
            var iat: Int64
            var exp: Int64
            var aud: String
            var bid: String
        }
    }
}
