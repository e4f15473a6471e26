import Hummingbird
import WalletApple
import WalletCore

/// Store purchases verified by a trusted backend, and refunds.
struct PurchaseController {
    let store: any LedgerWriting
    let applePurchases: ApplePurchases?

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.post, "/v1/purchases", access: .roles([.service]), handler: grant)
        routes.add(.post, "/v1/purchases/apple", access: .roles([.service], playerWalletInBody: true), handler: redeemApple)
        // Open: the payload must carry Apple's signature, which the handler verifies.
        routes.add(.post, "/v1/notifications/apple", access: .open, handler: appleNotification)
        routes.add(.post, "/v1/refunds", access: .roles([.service, .support, .admin]), handler: refund)
    }

    struct PurchaseBody: StrictBody {
        var playerID: String
        var store: String
        var storeTransactionID: String
        var productID: String
        var quantity: Int64?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case store, quantity
            case playerID = "player_id"
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
        }
    }

    /// The store transaction id is the idempotency key: a replay answers the original result.
    @Sendable func grant(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(PurchaseBody.self, from: request)
        let result = try await store.grant(
            GrantRequest(
                playerID: body.playerID, store: body.store, storeTransactionID: body.storeTransactionID, productID: body.productID,
                quantity: body.quantity ?? 1, actor: try context.requireCaller().actor))
        return try MutationResponse.response(for: result, context: context)
    }

    struct ApplePurchaseBody: StrictBody {
        var playerID: String
        var signedTransaction: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case playerID = "player_id"
            case signedTransaction = "signed_transaction"
        }
    }

    /// Verifies a StoreKit 2 signed transaction and credits it; a player token may redeem only
    /// into its own wallet. Apple's transaction id is the key: a re-delivery answers the original.
    @Sendable func redeemApple(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(ApplePurchaseBody.self, from: request)
        let caller = try context.requireCaller()
        try Access.requireOwnWallet(caller, playerID: body.playerID)
        guard let applePurchases else {
            throw WalletError.notConfigured("Apple purchases are not configured on this server: start it with --apple-bundle-id")
        }
        let result = try await applePurchases.redeem(playerID: body.playerID, signedTransaction: body.signedTransaction, actor: caller.actor)
        return try MutationResponse.response(for: result, context: context)
    }

    struct AppleNotificationBody: StrictBody {
        var signedPayload: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case signedPayload
        }
    }

    /// App Store Server Notifications V2. Answers 200 once the notification is applied and
    /// recorded (or was already); a bad signature is a 4xx and records nothing; a storage
    /// failure is a 503, so that Apple retries.
    @Sendable func appleNotification(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(AppleNotificationBody.self, from: request)
        guard let applePurchases else {
            throw WalletError.notConfigured("Apple notifications are not configured on this server: start it with --apple-bundle-id")
        }
        let outcome = try await applePurchases.handleNotification(signedPayload: body.signedPayload)
        context.logger.info("apple notification", metadata: ["type": .string(outcome.notificationType), "outcome": .string(outcome.outcome)])
        return try JSONBody.response(outcome, for: context)
    }

    struct RefundBody: StrictBody {
        var store: String
        var storeTransactionID: String
        var percentage: Int64?
        var policy: RefundPolicy?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case store, percentage, policy
            case storeTransactionID = "store_transaction_id"
        }
    }

    /// Keyed by the purchase's store transaction: a repeated refund answers the original.
    @Sendable func refund(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(RefundBody.self, from: request)
        let refund = try RefundRequest(
            store: body.store, storeTransactionID: body.storeTransactionID, percentage: body.percentage ?? 100,
            policy: body.policy ?? .debt, actor: try context.requireCaller().actor)
        return try MutationResponse.response(for: try await store.refund(refund), context: context)
    }
}
