import Hummingbird
import WalletCore

/// Resolving holds: capture (all or part) or release, once, by the hold's id. A player token
/// may resolve only its own wallet's holds.
struct HoldController {
    let store: any LedgerWriting & LedgerReading

    func addRoutes(to routes: RouteRegistrar) {
        // The hold names the wallet: a player's token is checked against it in the handler.
        let access = Access.roles([.service], playerWalletInBody: true)
        routes.add(.post, "/v1/holds/{hold_id}/capture", access: access, handler: capture)
        routes.add(.post, "/v1/holds/{hold_id}/release", access: access, handler: release)
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

        enum CodingKeys: String, CodingKey, CaseIterable {
            case idempotencyKey = "idempotency_key"
        }
    }

    @Sendable func capture(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(CaptureBody.self, from: request)
        return try await resolve(request, context, .capture(amount: body.amount), bodyKey: body.idempotencyKey)
    }

    @Sendable func release(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(ReleaseBody.self, from: request)
        return try await resolve(request, context, .release, bodyKey: body.idempotencyKey)
    }

    private func resolve(_ request: Request, _ context: WalletRequestContext, _ action: HoldResolution.Action, bodyKey: String?) async throws -> Response {
        guard let holdID = context.parameters.get("hold_id")?.removingPercentEncoding else {
            throw APIError.invalidRequest("the hold id in the path is not valid percent-encoding")
        }
        let caller = try context.requireCaller()
        if case .player = caller {
            // Only the wallet's own player: a hold of another wallet is answered as unknown.
            let own = try await playerOwns(holdID, caller: caller)
            guard own else { throw WalletError.notFound("no hold \(holdID.prefix(64))") }
        }
        let result = try await store.resolveHold(
            HoldResolution(holdID: holdID, action: action, idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: bodyKey), actor: caller.actor))
        return try MutationResponse.response(result, of: result.transaction, replayed: result.replayed, context: context)
    }

    private func playerOwns(_ holdID: String, caller: Caller) async throws -> Bool {
        guard case .player(let id) = caller else { return true }
        return try await store.holds(playerID: id.text).contains { $0.id == holdID }
    }
}
