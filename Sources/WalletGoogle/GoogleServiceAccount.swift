import Foundation
import WalletCore
import _CryptoExtras

/// A Google Cloud service account's key, read from the JSON key file exactly as Google Cloud
/// issues it (`type` `service_account`, `client_email`, `private_key` as a PKCS#8 RSA PEM,
/// `private_key_id`, `token_uri`). The wallet signs its OAuth assertions with it. The private
/// key is never printed: not by `description`, not by `debugDescription`, not in any error.
public struct GoogleServiceAccount: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The service account's email: the assertion's issuer.
    public let clientEmail: String
    /// The key's id: the assertion's `kid`.
    public let privateKeyID: String
    /// Where assertions are exchanged for access tokens (`https://oauth2.googleapis.com/token`).
    public let tokenURI: String
    let privateKey: _RSA.Signing.PrivateKey

    /// The longest key file read. Google's are about 2.4 KiB.
    public static let fileBytesMax = 64 * 1024

    /// Reads a key file's JSON.
    /// - Throws: `invalidRequest` naming what is wrong (not JSON, a missing or empty field, a key
    ///   that is not an RSA private key, a token URI that is not http(s)), never quoting the key.
    public init(json: String) throws(WalletError) {
        guard json.utf8.count <= Self.fileBytesMax else {
            throw .invalidRequest("the Google service account key file is longer than \(Self.fileBytesMax) bytes; it is not one Google Cloud issues")
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.strict(Array(json.utf8), what: "the Google service account key file", keepsNumbersExactly: false)
        } catch {
            // The parser's words name positions and member names, never the text itself.
            throw .invalidRequest("\(error.detail) (expected the JSON key file Google Cloud issues for a service account)")
        }
        guard case .object(let members) = parsed else { throw .invalidRequest("the Google service account key file is not a JSON object") }
        func field(_ name: String) throws(WalletError) -> String {
            guard let value = members[name] else { throw .invalidRequest("the Google service account key file has no '\(name)'") }
            guard case .string(let text) = value, !text.isEmpty else {
                throw .invalidRequest("the Google service account key file's '\(name)' is not a non-empty string")
            }
            return text
        }
        guard try field("type") == "service_account" else {
            throw .invalidRequest("the Google key file's 'type' is not 'service_account': create a key for a service account in Google Cloud (IAM, Service accounts, Keys)")
        }
        let clientEmail = try field("client_email")
        guard clientEmail.utf8.count <= 320, clientEmail.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), clientEmail.contains("@") else {
            throw .invalidRequest("the Google service account's 'client_email' is not an email address")
        }
        let privateKeyID = try field("private_key_id")
        try Validate.asciiIdentifier(privateKeyID, field: "the Google service account's 'private_key_id'")
        let tokenURI = try field("token_uri")
        guard GoogleHTTP.isPlainHTTPURL(tokenURI, pathAllowed: true) else {
            throw .invalidRequest("the Google service account's 'token_uri' must be an http(s) URL without query or credentials")
        }
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        privateKey = try Self.privateKey(try field("private_key"))
    }

    private static func privateKey(_ pem: String) throws(WalletError) -> _RSA.Signing.PrivateKey {
        // An encrypted key would ask for a passphrase; Google Cloud never issues one.
        guard pem.contains("-----BEGIN PRIVATE KEY-----") || pem.contains("-----BEGIN RSA PRIVATE KEY-----") else {
            throw .invalidRequest("the Google service account's 'private_key' is not an unencrypted PKCS#8 PEM private key, as Google Cloud issues it")
        }
        do {
            return try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw .invalidRequest("the Google service account's 'private_key' is not an RSA private key of at least 2048 bits")
        }
    }

    /// Reads the key file: `pathOrJSON` starting with `{` (after white space) is the JSON itself
    /// (as an environment variable may hold it); anything else is a file path.
    public static func load(_ pathOrJSON: String) throws(WalletError) -> GoogleServiceAccount {
        let trimmed = pathOrJSON.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") { return try GoogleServiceAccount(json: trimmed) }
        // A value that is not a path (a PEM pasted alone, say) is not echoed.
        let shown = trimmed.utf8.count <= 1_024 && !trimmed.contains("\n") && !trimmed.contains("PRIVATE KEY") ? "'\(trimmed)'" : "the value given"
        guard !trimmed.isEmpty else { throw .invalidRequest("the Google service account is empty: give the key file's path or its JSON") }
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: trimmed))
            defer { try? handle.close() }
            data = try handle.read(upToCount: fileBytesMax + 1) ?? Data()
        } catch {
            throw .invalidRequest("the Google service account key file \(shown) could not be read; give the key file's path or its JSON")
        }
        guard data.count <= fileBytesMax else {
            throw .invalidRequest("the Google service account key file \(shown) is longer than \(fileBytesMax) bytes; it is not one Google Cloud issues")
        }
        guard let json = String(data: data, encoding: .utf8) else {
            throw .invalidRequest("the Google service account key file \(shown) is not UTF-8 text")
        }
        return try GoogleServiceAccount(json: json)
    }

    public var description: String { "Google service account \(clientEmail) (key \(privateKeyID))" }
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: everything but the key.
    public var customMirror: Mirror {
        Mirror(self, children: ["clientEmail": clientEmail, "privateKeyID": privateKeyID, "tokenURI": tokenURI], displayStyle: .struct)
    }
}
