import Crypto
import Foundation
import WalletCore

/// Compact JWS for tests, written once: the header and payload bytes exactly as given (so a
/// test can send a member twice or an odd `alg`), signed with ES256 (r ‖ s, as JWS has it) or
/// HS256. Player tokens and App Store signed data both come from here.
public enum TestJWS {
    public enum Key {
        case es256(P256.Signing.PrivateKey)
        case hs256(secret: String)
    }

    public static func sign(header: Data, payload: Data, key: Key) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let signature: Data
        switch key {
        case .es256(let privateKey):
            signature = try privateKey.signature(for: Data(signingInput.utf8)).rawRepresentation
        case .hs256(let secret):
            signature = Data(HMAC<SHA256>.authenticationCode(for: Data(signingInput.utf8), using: SymmetricKey(data: Data(secret.utf8))))
        }
        return signingInput + "." + Base64URL.encode(signature)
    }

    public static func sign(header: String, payload: String, key: Key) throws -> String {
        try sign(header: Data(header.utf8), payload: Data(payload.utf8), key: key)
    }
}
