import Crypto
import Foundation
import WalletCore

/// Compact JWS for tests: the header and payload bytes exactly as given (so a test can send a
/// member twice or an odd `alg`), signed ES256 by the wallet's own writer (`CompactJWSWriter`)
/// or HS256. Player tokens and App Store signed data both come from here.
public enum TestJWS {
    public enum Key {
        case es256(P256.Signing.PrivateKey)
        case hs256(secret: String)
    }

    public static func sign(header: Data, payload: Data, key: Key) throws -> String {
        switch key {
        case .es256(let privateKey):
            return try CompactJWSWriter.signed(header: header, payload: payload, by: privateKey)
        case .hs256(let secret):
            // The wallet never signs HS256 (it only checks game servers' tokens): tests do it here.
            let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
            let code = HMAC<SHA256>.authenticationCode(for: Data(signingInput.utf8), using: SymmetricKey(data: Data(secret.utf8)))
            return signingInput + "." + Base64URL.encode(Data(code))
        }
    }

    public static func sign(header: String, payload: String, key: Key) throws -> String {
        try sign(header: Data(header.utf8), payload: Data(payload.utf8), key: key)
    }
}
