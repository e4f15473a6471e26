import Crypto
import Foundation
import WalletCore

/// Verifies player tokens: JWTs signed by the game's auth service, either with a shared secret
/// (HS256) or with a P-256 private key whose public key the wallet holds (ES256). The server
/// accepts the one algorithm it is configured with, never the one a token's header asks for.
/// `sub` is the player id; `exp` is required and enforced, `nbf` when present.
public struct PlayerTokenVerifier: Sendable {
    /// Shorter secrets are refused: HS256 wants at least as many bytes as its hash.
    public static let secretBytesMin = 32
    /// Longest token accepted, to bound the work done on a hostile header.
    static let tokenBytesMax = 4_096

    private enum Key: Sendable {
        case hs256(SymmetricKey)
        case es256(P256.Signing.PublicKey)

        var algorithm: String {
            switch self {
            case .hs256: "HS256"
            case .es256: "ES256"
            }
        }

        func signed(_ token: CompactJWS<Header>) -> Bool {
            switch self {
            case .hs256(let key): token.isSigned(by: key)
            case .es256(let key): token.isSigned(by: key)
            }
        }
    }

    private let key: Key
    private let clock: @Sendable () -> Date

    /// HS256 with a shared secret of at least `secretBytesMin` bytes.
    public init(secret: String, clock: @escaping @Sendable () -> Date = { Date() }) throws(APIError) {
        guard secret.utf8.count >= Self.secretBytesMin else {
            throw .invalidRequest("the player JWT secret must be at least \(Self.secretBytesMin) bytes")
        }
        key = .hs256(SymmetricKey(data: Data(secret.utf8)))
        self.clock = clock
    }

    /// ES256 with the game's P-256 public key, PEM-encoded (`-----BEGIN PUBLIC KEY-----`).
    public init(publicKeyPEM: String, clock: @escaping @Sendable () -> Date = { Date() }) throws(APIError) {
        do {
            key = .es256(try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM))
        } catch {
            throw .invalidRequest("the player JWT public key is not a PEM-encoded P-256 public key")
        }
        self.clock = clock
    }

    /// The algorithm tokens must be signed with: HS256 or ES256.
    public var algorithm: String { key.algorithm }

    /// The player id the token names, once its signature, algorithm and times check out.
    func verify(_ token: String) throws(APIError) -> PlayerID {
        let jws: CompactJWS<Header>
        do {
            jws = try CompactJWS(token, bytesMax: Self.tokenBytesMax)
        } catch .tooLong {
            throw .unauthorized("the player token is too long")
        } catch .malformed {
            throw .unauthorized("the player token is not a well-formed JWT")
        } catch {
            throw .unauthorized("the player token must be signed with \(key.algorithm)")
        }
        guard jws.header.alg == key.algorithm else { throw .unauthorized("the player token must be signed with \(key.algorithm)") }
        guard key.signed(jws) else { throw .unauthorized("the player token's signature is invalid") }
        // Strictly: a member named twice (two `sub`s) is read differently by other parsers.
        guard let claims = jws.payload(as: Claims.self) else {
            throw .unauthorized("the player token needs a string 'sub' and a numeric 'exp', each once")
        }
        let now = clock().timeIntervalSince1970
        guard claims.exp > now else { throw .unauthorized("the player token has expired") }
        if let notBefore = claims.nbf, notBefore > now { throw .unauthorized("the player token is not valid yet") }
        do {
            return try PlayerID(claims.sub)
        } catch {
            throw .unauthorized("the player token's subject is not a valid player id")
        }
    }

    struct Header: Decodable {
        var alg: String
    }

    private struct Claims: Decodable {
        var sub: String
        var exp: Double
        var nbf: Double?
    }
}
