import Foundation
import Hummingbird
import WalletCore
import WalletGoogle

/// Google Play: purchases redeemed by the game, Real-time developer notifications pushed by
/// Pub/Sub, and support's order lookup.
struct GoogleController {
    let google: GooglePurchases?
    let push: (any GooglePushAuthenticating)?
    /// Redemptions per player from players' own tokens: each one asks Google, against the app's
    /// shared daily quota, so one player's made-up tokens cannot use it up.
    let redeemLimiter = RateLimiter<PlayerID>(limit: ServerLimits.googlePurchasesPerPlayerPerMinute, window: 60)

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.post, "/v1/purchases/google", access: .roles([.service], playerWalletInBody: true), handler: redeem)
        routes.add(.get, "/v1/google/orders/{order_id}", access: .roles([.support, .admin]), handler: lookUpOrder)
        // Open to API keys and players alike: the push must carry Google's OIDC token, which the
        // handler verifies before it reads anything else.
        routes.add(.post, "/v1/notifications/google", access: .open, handler: notification)
    }

    struct GooglePurchaseBody: StrictBody {
        var playerID: PlayerID
        var productID: String
        var purchaseToken: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case playerID = "player_id"
            case productID = "product_id"
            case purchaseToken = "purchase_token"
        }
    }

    /// Asks Google for the purchase and credits it once: 201, a replay marked `Idempotent-Replayed`,
    /// 409 `purchase_pending` while Google holds it pending. A player token redeems into its own
    /// wallet only.
    @Sendable func redeem(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(GooglePurchaseBody.self, from: request)
        let caller = try context.requireCaller()
        try Access.requireOwnWallet(caller, playerID: body.playerID)
        if case .player = caller, let seconds = redeemLimiter.wait(for: body.playerID) {
            throw APIError(
                status: .tooManyRequests, code: .rateLimited,
                detail: "at most \(ServerLimits.googlePurchasesPerPlayerPerMinute) Google purchases a minute per player token; try again in \(seconds) s",
                headers: [.retryAfter: "\(seconds)"])
        }
        let result = try await requireGoogle().redeem(playerID: body.playerID, productID: body.productID, purchaseToken: body.purchaseToken, actor: caller.actor)
        return try MutationResponse.response(for: result, context: context)
    }

    /// The purchases recorded under a Google order id, their credits, refunds and consumption,
    /// and what Google lists as voided.
    @Sendable func lookUpOrder(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let orderID = context.parameters.get("order_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the order id in the path is not valid percent-encoding")
        }
        return try JSONBody.response(try await requireGoogle().lookUp(orderID: orderID), for: context)
    }

    /// A Pub/Sub push. 401 and nothing done unless it carries Google's token for this wallet's
    /// subscription; 200 once applied and recorded (or already); 503 when storage or Google
    /// failed, so that Pub/Sub delivers it again.
    @Sendable func notification(request: Request, context: WalletRequestContext) async throws -> Response {
        let google = try requireGoogle()
        guard let push else {
            throw WalletError.notConfigured(
                "Google push notifications are not configured on this server: start it with --google-push-audience and --google-push-service-account")
        }
        if let refusal = await push.refusal(authorization: request.headers.value(.authorization), now: Date()) {
            context.log(.warning, "google push refused", metadata: ["reason": .string(refusal)])
            throw APIError.unauthorized("the push does not carry Google's token for this wallet's subscription")
        }
        let message = try GooglePushMessage(envelope: try await RequestBodyReader.bytes(of: request))
        let outcome = try await google.handleNotification(message)
        context.log(.info, "google notification", metadata: ["type": .string(outcome.notificationType), "outcome": .string(outcome.outcome.rawValue)])
        return try JSONBody.response(outcome, for: context)
    }

    private func requireGoogle() throws(WalletError) -> GooglePurchases {
        guard let google else {
            throw .notConfigured(
                "Google Play purchases are not configured on this server: start it with --google-package-name and --google-service-account")
        }
        return google
    }
}
