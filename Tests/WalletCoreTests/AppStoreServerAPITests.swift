import Crypto
import Foundation
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

/// The wallet's own App Store Server API tokens, written through the one JWS type.
@Suite("App Store Server API credentials", .throttled)
struct AppStoreServerAPITests {
    typealias Token = AppStoreServerAPICredentials.Token

    @Test("a token is ES256 with kid, and carries iss, iat, exp five minutes on, aud and bid; Apple's key verifies it")
    func token() throws {
        let key = P256.Signing.PrivateKey()
        let credentials = try AppStoreServerAPICredentials(
            issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", privateKeyPEM: key.pemRepresentation, bundleID: "com.example.game")
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let jws = try CompactJWS<Token.Header>(try credentials.token(at: now), bytesMax: 4_096)
        #expect(jws.header == Token.Header(alg: "ES256", kid: "2X9R4HXF34", typ: "JWT"))
        #expect(jws.isSigned(by: key.publicKey) && !jws.isSigned(by: P256.Signing.PrivateKey().publicKey))
        let claims = try #require(jws.payload(as: Token.Claims.self))
        #expect(claims == Token.Claims(iss: "57246542-96fe-1a63-e053-0824d011072a", iat: 1_790_000_000, exp: 1_790_000_300, aud: "appstoreconnect-v1", bid: "com.example.game"))
        // A fresh token per request: another time, another token.
        #expect(try credentials.token(at: now.addingTimeInterval(1)) != credentials.token(at: now))
    }

    @Test("empty or spaced ids and a key that is not a P-256 PEM are refused with what is wrong")
    func refusals() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        let cases: [(String, String, String, String, String)] = [
            ("", "K", pem, "com.example.game", "issuer id"),
            ("I", "", pem, "com.example.game", "key id"),
            ("I", "K", pem, "com example", "bundle id"),
            ("I", "K", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "com.example.game", "P-256"),
            ("I", "K", Curve25519.Signing.PrivateKey().rawRepresentation.base64EncodedString(), "com.example.game", "P-256"),
        ]
        for (issuer, keyID, key, bundle, named) in cases {
            let error = #expect(throws: WalletError.self) {
                try AppStoreServerAPICredentials(issuerID: issuer, keyID: keyID, privateKeyPEM: key, bundleID: bundle)
            }
            #expect(error?.code == "invalid_request" && error?.detail.contains(named) == true, "\(String(describing: error))")
        }
    }
}
