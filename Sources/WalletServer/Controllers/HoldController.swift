import Hummingbird
import WalletCore

/// Resolving holds: capture (all or part) or release, once, by the hold's id. A player token
/// may resolve only the holds it placed on its own wallet; a service key any hold; support and
/// admins may release one (a player's "my hold never came back"), with a reason.
struct HoldController {
    let store: any LedgerWriting & LedgerReading

    func addRoutes(to routes: RouteRegistrar) {
        // The hold names the wallet: a player's token is checked against it in the handler.
        routes.add(.post, "/v1/holds/{hold_id}/capture", access: .roles([.service], playerWalletInBody: true), handler: capture)
        routes.add(.post, "/v1/holds/{hold_id}/release", access: .roles([.service, .support, .admin], playerWalletInBody: true), handler: release)
    }

    struct CaptureBody: StrictBody {
        var amount: Int64?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case amount
            case idempotencyKey = "idempotency_key"
        }
    }

    struct ReleaseBody: StrictBody {
        var idempotencyKey: String?
        var reason: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case reason
            case idempotencyKey = "idempotency_key"
        }
    }

    @Sendable func capture(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(CaptureBody.self, from: request)
        return try await resolve(request, context, .capture(amount: body.amount), bodyKey: body.idempotencyKey)
    }

    @Sendable func release(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(ReleaseBody.self, from: request)
        return try await resolve(request, context, .release, bodyKey: body.idempotencyKey, reason: body.reason)
    }

    private func resolve(_ request: Request, _ context: WalletRequestContext, _ action: HoldResolution.Action, bodyKey: String?, reason: String? = nil) async throws -> Response {
        guard let holdID = context.parameters.get("hold_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the hold id in the path is not valid percent-encoding")
        }
        // The store checks who may resolve it (`Hold.requireResolvable`): another player's hold
        // is unknown to a player, and a hold the game placed is the game's to resolve.
        let caller = try context.requireCaller()
        let result = try await store.resolveHold(
            HoldResolution(holdID: holdID, action: action, idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: bodyKey), actor: caller.actor, reason: reason))
        return try MutationResponse.response(result, of: result.transaction, replayed: result.replayed, context: context)
    }
}
