import Crypto
import Foundation

/// What an API key may do. Players authenticate with tokens instead, and only for their wallet.
public enum KeyRole: String, Codable, Sendable, CaseIterable {
    /// Everything operators do: the catalog, adjustments, refunds, the ledger.
    case admin
    /// A trusted game backend: grants, spends, refunds, reads.
    case service
    /// Support staff: reads, adjustments, refunds.
    case support
    /// Auditors: reads and the ledger's verification.
    case auditor
}

/// An API key as listed: never its secret, which is shown once at creation.
public struct APIKey: Codable, Sendable, Equatable {
    /// Recorded as the actor of every transaction the key makes.
    public var id: String
    public var name: String
    public var role: KeyRole
    public var createdAt: String
    public var revokedAt: String?

    package enum CodingKeys: String, CodingKey {
        case id, name, role
        case createdAt = "created_at"
        case revokedAt = "revoked_at"
    }

    package init(id: String, name: String, role: KeyRole, createdAt: String, revokedAt: String?) {
        self.id = id
        self.name = name
        self.role = role
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// A freshly created key with its secret, the only time the secret exists outside the caller.
public struct CreatedAPIKey: Sendable, Equatable {
    public var key: APIKey
    public var secret: String

    package init(key: APIKey, secret: String) {
        self.key = key
        self.secret = secret
    }
}

package enum APIKeySecret {
    /// `cwk_` and 43 characters of base64url: 256 random bits.
    package static func generate() -> String {
        "cwk_" + Base64URL.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// What the database stores: the SHA-256 of the secret, in hex.
    package static func hash(_ secret: String) -> String {
        Hex.encode(SHA256.hash(data: Data(secret.utf8)))
    }

    package static func generateID() -> String {
        let bytes = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        return "key_" + Hex.encode(bytes.prefix(8))
    }
}
