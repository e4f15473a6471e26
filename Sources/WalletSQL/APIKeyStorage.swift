import WalletCore

extension SQLLedgerStore {
    private static let keyColumns = "id, name, role, created_at, revoked_at"

    package func createAPIKey(role: KeyRole, name: String) async throws(WalletError) -> CreatedAPIKey {
        try Validate.text(name, field: RequestField("key name", member: "name"), bytesMax: Limits.identifierBytesMax)
        let secret = APIKeySecret.generate()
        return try await write { db, now, _ in
            let key = APIKey(id: APIKeySecret.generateID(), name: name, role: role, createdAt: Timestamp.format(now), revokedAt: nil)
            try db.execute(
                "INSERT INTO api_keys (id, name, role, key_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                [.text(key.id), .text(key.name), .text(key.role.rawValue), .text(APIKeySecret.hash(secret)), .text(key.createdAt)])
            return CreatedAPIKey(key: key, secret: secret)
        }
    }

    package func apiKeys() async throws(WalletError) -> [APIKey] {
        try await read { db in
            try db.all("SELECT \(Self.keyColumns) FROM api_keys ORDER BY created_at, id", [], Self.apiKey(from:))
        }
    }

    package func revokeAPIKey(id: String) async throws(WalletError) -> APIKey {
        try Validate.visibleText(id, field: "key id", bytesMax: 64)
        return try await write { db, now, _ in
            // Looked up first: an unknown id is refused before anything is written.
            guard var key = try db.first("SELECT \(Self.keyColumns) FROM api_keys WHERE id = ?", [.text(id)], Self.apiKey(from:)) else {
                throw WalletError.notFound("no API key with id '\(id)'")
            }
            // Revoking twice answers the first revocation.
            guard key.revokedAt == nil else { return key }
            key.revokedAt = Timestamp.format(now)
            try db.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [.text(key.revokedAt), .text(id)])
            return key
        }
    }

    package func authenticate(secret: String) async throws(WalletError) -> APIKey? {
        guard !secret.isEmpty, secret.utf8.count <= 512 else { return nil }
        let hash = APIKeySecret.hash(secret)
        return try await read { db in
            try db.first("SELECT \(Self.keyColumns) FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", [.text(hash)], Self.apiKey(from:))
        }
    }

    private static func apiKey(from row: any SQLRow) throws -> APIKey {
        let roleText = try row.text(2)
        guard let role = KeyRole(rawValue: roleText) else { throw WalletError.corrupt("API key has an unknown role '\(roleText.prefix(40))'") }
        return APIKey(id: try row.text(0), name: try row.text(1), role: role, createdAt: try row.text(3), revokedAt: try row.textOrNil(4))
    }
}
