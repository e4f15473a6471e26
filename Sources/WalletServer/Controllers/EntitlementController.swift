import Hummingbird
import WalletCore

/// A player's entitlements: what they own and until when, read by the game (the access check)
/// and by staff; granted, revoked and extended by support.
struct EntitlementController {
    let store: any LedgerWriting & LedgerReading

    func addRoutes(to routes: RouteRegistrar) {
        let readers = Access.roles([.service, .support, .auditor], playerOwnWallet: true)
        routes.add(.get, "/v1/wallets/{player_id}/entitlements", access: readers, handler: list)
        routes.add(.get, "/v1/wallets/{player_id}/entitlements/{name}", access: readers, handler: show)
        routes.add(.post, "/v1/wallets/{player_id}/entitlements", access: .roles([.support, .admin]), handler: change)
    }

    /// Every entitlement the player ever held, with the purchases and changes behind each.
    @Sendable func list(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.entitlements(playerID: try context.requireWalletPlayerID()), for: context)
    }

    /// One entitlement now, without its items: the game's access check, one indexed read. A name
    /// never owned answers `active: false`, not 404, so that the game need not tell the two apart.
    @Sendable func show(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let text = context.parameters.get("name").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the entitlement name in the path is not valid percent-encoding")
        }
        let entitlement = try await store.entitlement(playerID: try context.requireWalletPlayerID(), name: try EntitlementName(text))
        return try JSONBody.response(entitlement, for: context)
    }

    struct ChangeBody: StrictBody {
        var action: String
        var entitlement: EntitlementName
        var duration: String?
        var days: Int64?
        var reasonCode: String
        var note: String
        var ticket: String?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case action, entitlement, duration, days, note, ticket
            case reasonCode = "reason_code"
            case idempotencyKey = "idempotency_key"
        }

        /// The action with its own members only: a member that belongs to another action is
        /// refused rather than ignored, so that `{"action": "revoke", "duration": "P7D"}` is not
        /// mistaken for what the caller meant.
        func changeAction() throws(WalletError) -> EntitlementChangeRequest.Action {
            switch action {
            case "grant":
                guard days == nil else { throw .invalidRequest("days belongs to the extend action; a grant takes an optional duration", field: "days") }
                return .grant(try duration.map { text throws(WalletError) in try PassDuration(text) })
            case "revoke":
                guard duration == nil, days == nil else { throw .invalidRequest("a revoke takes neither duration nor days", field: duration == nil ? "days" : "duration") }
                return .revoke
            case "extend":
                guard duration == nil else { throw .invalidRequest("duration belongs to the grant action; an extend takes days", field: "duration") }
                guard let days else { throw .invalidRequest("the field 'days' is required to extend", field: "days") }
                return .extend(days: days)
            default:
                throw .invalidRequest("action must be one of grant, revoke, extend", field: "action")
            }
        }
    }

    /// Support's grant, revocation or extension: 201 with the ledger entry and the entitlement
    /// after it; a replay answers the same transaction (and the entitlement as it stands now)
    /// with `Idempotent-Replayed: true`.
    @Sendable func change(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(ChangeBody.self, from: request)
        let result = try await store.changeEntitlement(
            EntitlementChangeRequest(
                playerID: try context.requireWalletPlayerID(), entitlement: body.entitlement, action: try body.changeAction(), reasonCode: body.reasonCode,
                note: body.note, ticket: body.ticket, idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: body.idempotencyKey),
                actor: try context.requireCaller().actor))
        return try MutationResponse.response(
            EntitlementChangeResponse(transaction: result.transaction, entitlement: result.entitlement), of: result.transaction, replayed: result.replayed,
            context: context)
    }

    /// The answer to a change: `replayed` travels in the header, as for every mutation.
    struct EntitlementChangeResponse: Encodable {
        var transaction: LedgerTransaction
        var entitlement: Entitlement
    }
}
