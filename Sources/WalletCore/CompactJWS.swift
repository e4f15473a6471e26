import Crypto
import Foundation

/// A compact JWS (RFC 7515) as the wallet reads and writes one, in one place: three base64url
/// parts, a header decoded strictly (a member named twice is refused, since other parsers would
/// read it differently), the signing input, and the signature bytes, with ES256 (r ‖ s, RFC 7518
/// 3.4) and HS256 checks. Player tokens and App Store signed data are read through it; what a
/// header or payload must hold, and what a refusal is called, stays with each caller.
package struct CompactJWS<Header: Decodable> {
    package let header: Header
    /// The payload's bytes, decoded from base64url, not yet parsed.
    package let payload: Data
    package let signature: Data
    /// `header.payload` as sent: what the signature covers.
    package let signingInput: Data

    package enum Failure: Error, Equatable {
        /// Longer than the caller allows.
        case tooLong
        /// Not three base64url parts.
        case malformed
        /// The header is not a JSON object of the expected shape, each member once.
        case header
    }

    /// Splits and decodes `text`; nothing is verified yet.
    package init(_ text: String, bytesMax: Int) throws(Failure) {
        guard text.utf8.count <= bytesMax else { throw .tooLong }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard let header = WalletJSON.decodeStrictly(Header.self, from: headerData) else { throw .header }
        self.header = header
        self.payload = payload
        self.signature = signature
        signingInput = Data(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }

    /// The payload decoded strictly as `Payload`; nil if it is not one.
    package func payload<Payload: Decodable>(as type: Payload.Type) -> Payload? {
        WalletJSON.decodeStrictly(type, from: payload)
    }

    /// Whether the signature is `key`'s ES256 signature of the signing input.
    package func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(signature, for: signingInput)
    }

    /// Whether the signature is the HS256 code of the signing input under `key`.
    package func isSigned(by key: SymmetricKey) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signingInput, using: key)
    }
}

/// Writes compact JWS: the one place the wallet signs one (the App Store Server API's request
/// tokens), beside the one place it reads them.
package enum CompactJWSWriter {
    /// `header` and `payload` (JSON bytes, as given), signed ES256 by `key` (r ‖ s).
    package static func signed(header: Data, payload: Data, by key: P256.Signing.PrivateKey) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
