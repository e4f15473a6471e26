import Crypto
import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// The one compact JWS reader that player tokens and App Store signed data go through.
@Suite("Compact JWS", .throttled)
struct CompactJWSTests {
    struct Header: Decodable {
        var alg: String
    }

    @Test("splits and checks ES256 and HS256 signatures; a changed byte, another key or another algorithm's key fails")
    func signatures() throws {
        let key = P256.Signing.PrivateKey()
        let token = try TestJWS.sign(header: #"{"alg":"ES256"}"#, payload: #"{"sub":"p1"}"#, key: .es256(key))
        let jws = try CompactJWS<Header>(token, bytesMax: 4_096)
        #expect(jws.header.alg == "ES256" && jws.isSigned(by: key.publicKey))
        #expect(!jws.isSigned(by: P256.Signing.PrivateKey().publicKey))
        #expect(!jws.isSigned(by: SymmetricKey(data: Data(repeating: 1, count: 32))))
        // A changed payload, still well formed, no longer carries the signature.
        let parts = token.split(separator: ".")
        let otherPayload = "\(parts[0]).\(Base64URL.encode(Data(#"{"sub":"p2"}"#.utf8))).\(parts[2])"
        #expect(try !CompactJWS<Header>(otherPayload, bytesMax: 4_096).isSigned(by: key.publicKey))

        let secret = "a-secret-of-at-least-thirty-two-bytes"
        let hs = try CompactJWS<Header>(try TestJWS.sign(header: #"{"alg":"HS256"}"#, payload: "{}", key: .hs256(secret: secret)), bytesMax: 4_096)
        #expect(hs.isSigned(by: SymmetricKey(data: Data(secret.utf8))) && !hs.isSigned(by: SymmetricKey(data: Data("another-secret-of-thirty-two-bytes!".utf8))))
    }

    @Test("refuses what is too long, not three base64url parts, or a header with a member twice")
    func refusals() throws {
        let good = try TestJWS.sign(header: #"{"alg":"ES256"}"#, payload: "{}", key: .es256(P256.Signing.PrivateKey()))
        #expect(throws: CompactJWS<Header>.Failure.tooLong) { try CompactJWS<Header>(good, bytesMax: good.utf8.count - 1) }
        for malformed in ["a.b", "a.b.c.d", "e30.e30.!!", ""] {
            #expect(throws: CompactJWS<Header>.Failure.malformed, "\(malformed)") { try CompactJWS<Header>(malformed, bytesMax: 4_096) }
        }
        let twice = try TestJWS.sign(header: #"{"alg":"ES256","alg":"none"}"#, payload: "{}", key: .es256(P256.Signing.PrivateKey()))
        #expect(throws: CompactJWS<Header>.Failure.header) { try CompactJWS<Header>(twice, bytesMax: 4_096) }
        let noAlg = try TestJWS.sign(header: #"{"typ":"JWT"}"#, payload: "{}", key: .es256(P256.Signing.PrivateKey()))
        #expect(throws: CompactJWS<Header>.Failure.header) { try CompactJWS<Header>(noAlg, bytesMax: 4_096) }
    }
}
