import Hummingbird
import WalletCore

/// Who the caller is, and the API keys admins manage (what `wallet keys` does, over HTTP).
struct KeyController {
    let store: any APIKeyStore

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.get, "/v1/me", access: .roles(Set(KeyRole.allCases)), handler: me)
        routes.add(.get, "/v1/keys", access: .roles([.admin]), handler: list)
        routes.add(.post, "/v1/keys", access: .roles([.admin]), handler: create)
        routes.add(.post, "/v1/keys/{key_id}/revoke", access: .roles([.admin]), handler: revoke)
    }

    /// The calling key, without its secret: what a console shows and what it lets the key do.
    @Sendable func me(request: Request, context: WalletRequestContext) async throws -> Response {
        guard case .key(let key) = try context.requireCaller() else { throw APIError.forbidden("player tokens may not call this route") }
        return try JSONBody.response(key, for: context)
    }

    struct Keys: Encodable {
        var keys: [APIKey]
    }

    @Sendable func list(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(Keys(keys: try await store.apiKeys()), for: context)
    }

    struct KeyBody: StrictBody {
        var role: KeyRole
        var name: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case role, name
        }
    }

    /// The key with its secret, shown this once: only its SHA-256 is stored.
    struct Created: Encodable {
        var key: APIKey
        var secret: String
    }

    @Sendable func create(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(KeyBody.self, from: request)
        let by = try context.requireCaller().actor
        let created = try await store.createAPIKey(role: body.role, name: body.name)
        context.log(.notice, "api key created", metadata: ["key_id": .string(created.key.id), "role": .string(body.role.rawValue), "by": .string(by)])
        return try JSONBody.response(Created(key: created.key, secret: created.secret), for: context, status: .created, headers: [.cacheControl: "no-store"])
    }

    @Sendable func revoke(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let id = context.parameters.get("key_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the key id in the path is not valid percent-encoding")
        }
        let by = try context.requireCaller().actor
        let revoked = try await store.revokeAPIKey(id: id)
        context.log(.notice, "api key revoked", metadata: ["key_id": .string(revoked.id), "by": .string(by)])
        return try JSONBody.response(revoked, for: context)
    }
}
