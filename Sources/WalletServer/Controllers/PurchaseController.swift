import Hummingbird
import WalletCore

/// Store purchases verified by a trusted backend, and refunds.
struct PurchaseController {
    let store: any LedgerStore

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.post, "/v1/purchases", access: .roles([.service]), handler: grant)
        routes.add(.post, "/v1/refunds", access: .roles([.service, .support, .admin]), handler: refund)
    }

    struct PurchaseBody: StrictBody {
        var playerID: String
        var store: String
        var transactionID: String
        var productID: String
        var quantity: Int64?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case store, quantity
            case playerID = "player_id"
            case transactionID = "transaction_id"
            case productID = "product_id"
        }
    }

    /// The store transaction id is the idempotency key: a replay answers the original result.
    @Sendable func grant(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(PurchaseBody.self, from: request)
        let result = try await store.grant(
            GrantRequest(
                playerID: body.playerID, store: body.store, storeTransactionID: body.transactionID, productID: body.productID,
                quantity: body.quantity ?? 1, actor: try context.requireCaller().actor))
        return MutationResponse.response(for: result)
    }

    struct RefundBody: StrictBody {
        var store: String
        var transactionID: String
        var percentage: Int64?
        var policy: RefundPolicy?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case store, percentage, policy
            case transactionID = "transaction_id"
        }
    }

    /// Keyed by the purchase's store transaction: a repeated refund answers the original.
    @Sendable func refund(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(RefundBody.self, from: request)
        let refund = try RefundRequest(
            store: body.store, storeTransactionID: body.transactionID, percentage: body.percentage ?? 100,
            policy: body.policy ?? .debt, actor: try context.requireCaller().actor)
        return MutationResponse.response(for: try await store.refund(refund))
    }
}
