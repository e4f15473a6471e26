import GRDB

extension SQLiteLedgerStore {
    public func createAPIKey(role: KeyRole, name: String) async throws(WalletError) -> CreatedAPIKey {
        try Validate.text(name, field: "key name", bytesMax: Limits.identifierBytesMax)
        let secret = APIKeySecret.generate()
        return try await write { db, now, _ in
            let key = APIKey(id: APIKeySecret.generateID(), name: name, role: role, createdAt: Timestamp.format(now), revokedAt: nil)
            try db.execute(
                sql: "INSERT INTO api_keys (id, name, role, key_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [key.id, key.name, key.role.rawValue, APIKeySecret.hash(secret), key.createdAt])
            return CreatedAPIKey(key: key, secret: secret)
        }
    }

    public func apiKeys() async throws(WalletError) -> [APIKey] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY created_at, id").map { try Self.apiKey(from: $0) }
        }
    }

    public func revokeAPIKey(id: String) async throws(WalletError) -> APIKey {
        try Validate.visibleText(id, field: "key id", bytesMax: 64)
        return try await write { db, now, _ in
            try db.execute(sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [Timestamp.format(now), id])
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM api_keys WHERE id = ?", arguments: [id]) else {
                throw WalletError.notFound("no API key with id '\(id)'")
            }
            return try Self.apiKey(from: row)
        }
    }

    public func authenticate(secret: String) async throws(WalletError) -> APIKey? {
        guard !secret.isEmpty, secret.utf8.count <= 512 else { return nil }
        let hash = APIKeySecret.hash(secret)
        return try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"), arguments: [hash])
                .map { try Self.apiKey(from: $0) }
        }
    }

    /// Ready when the database answers a read and the latest write committed (or failed more
    /// than a few seconds ago): a full disk or a lock held past the busy timeout makes the
    /// instance unready, so a balancer stops sending it writes.
    public func checkReadiness() async throws(WalletError) {
        _ = try await read { db in try Int.fetchOne(db, sql: "SELECT 1") }
        if let failure = recentCommitFailure { throw .storage("writes cannot commit: \(failure.prefix(200))") }
    }

    private static func apiKey(from row: Row) throws -> APIKey {
        let roleText: String = row["role"]
        guard let role = KeyRole(rawValue: roleText) else { throw WalletError.storage("API key has an unknown role '\(roleText)'") }
        return APIKey(id: row["id"], name: row["name"], role: role, createdAt: row["created_at"], revokedAt: row["revoked_at"])
    }
}
