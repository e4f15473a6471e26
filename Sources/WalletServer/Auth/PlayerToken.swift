import Crypto
import Foundation
import WalletCore

/// Verifies player tokens: HS256 JWTs signed by the game's auth service with a shared secret.
/// `sub` is the player id; `exp` is required and enforced, `nbf` when present.
public struct PlayerTokenVerifier: Sendable {
    /// Shorter secrets are refused: HS256 wants at least as many bytes as its hash.
    public static let secretBytesMin = 32
    /// Longest token accepted, to bound the work done on a hostile header.
    static let tokenBytesMax = 4_096

    private let key: SymmetricKey
    private let clock: @Sendable () -> Date

    public init(secret: String, clock: @escaping @Sendable () -> Date = { Date() }) throws(APIError) {
        guard secret.utf8.count >= Self.secretBytesMin else {
            throw .invalidRequest("the player JWT secret must be at least \(Self.secretBytesMin) bytes")
        }
        key = SymmetricKey(data: Data(secret.utf8))
        self.clock = clock
    }

    /// The player id the token names, once its signature, algorithm and times check out.
    func verify(_ token: String) throws(APIError) -> String {
        guard token.utf8.count <= Self.tokenBytesMax else { throw .unauthorized("the player token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .unauthorized("the player token is not a well-formed JWT") }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData), header.alg == "HS256" else {
            throw .unauthorized("the player token must be signed with HS256")
        }
        let signedPart = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signedPart, using: key) else {
            throw .unauthorized("the player token's signature is invalid")
        }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: claimsData) else {
            throw .unauthorized("the player token needs a string 'sub' and a numeric 'exp'")
        }
        let now = clock().timeIntervalSince1970
        guard claims.exp > now else { throw .unauthorized("the player token has expired") }
        if let notBefore = claims.nbf, notBefore > now { throw .unauthorized("the player token is not valid yet") }
        do {
            try PlayerID.validate(claims.sub)
        } catch {
            throw .unauthorized("the player token's subject is not a valid player id")
        }
        return claims.sub
    }

    private struct Header: Decodable {
        var alg: String
    }

    private struct Claims: Decodable {
        var sub: String
        var exp: Double
        var nbf: Double?
    }
}
