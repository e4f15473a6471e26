import Hummingbird
import WalletApple
import WalletCore

/// Store purchases verified by a trusted backend, and refunds.
struct PurchaseController {
    let store: any LedgerWriting
    let applePurchases: ApplePurchases?
    /// Receipts per player from players' own tokens: each one pages Apple's history against the
    /// app's shared allowance.
    let receiptLimiter = RateLimiter<PlayerID>(limit: ServerLimits.receiptsPerPlayerPerMinute, window: 60)

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.post, "/v1/purchases", access: .roles([.service]), handler: grant)
        routes.add(.post, "/v1/purchases/apple", access: .roles([.service], playerWalletInBody: true), handler: redeemApple)
        routes.add(.post, "/v1/purchases/apple/receipt", access: .roles([.service], playerWalletInBody: true), handler: redeemAppleReceipt)
        routes.add(.post, "/v1/wallets/{player_id}/restore", access: .roles([.service], playerOwnWallet: true), handler: restoreApple)
        routes.add(.get, "/v1/apple/orders/{order_id}", access: .roles([.support, .admin]), handler: lookUpAppleOrder)
        routes.add(.post, "/v1/apple/orders/{order_id}/credit", access: .roles([.support, .admin]), handler: creditAppleOrder)
        // Open: the payload must carry Apple's signature, which the handler verifies.
        routes.add(.post, "/v1/notifications/apple", access: .open, handler: appleNotification)
        routes.add(.post, "/v1/refunds", access: .roles([.service, .support, .admin]), handler: refund)
    }

    struct PurchaseBody: StrictBody {
        var playerID: PlayerID
        var store: String
        var storeTransactionID: String
        var productID: String
        var quantity: Int64?
        var purchasedAt: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case store, quantity
            case playerID = "player_id"
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
            case purchasedAt = "purchased_at"
        }
    }

    /// The store transaction id is the idempotency key: a replay answers the original result.
    @Sendable func grant(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(PurchaseBody.self, from: request)
        // Core reads the purchase date in any RFC 3339 form and keeps it in the ledger's.
        let result = try await store.grant(
            GrantRequest(
                playerID: body.playerID, store: body.store, storeTransactionID: body.storeTransactionID, productID: body.productID,
                quantity: body.quantity ?? 1, actor: try context.requireCaller().actor, purchasedAt: body.purchasedAt))
        return try MutationResponse.response(for: result, context: context)
    }

    struct ApplePurchaseBody: StrictBody {
        var playerID: PlayerID
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
        let result = try await requireApple().redeem(playerID: body.playerID, signedTransaction: body.signedTransaction, actor: caller.actor)
        return try MutationResponse.response(for: result, context: context)
    }

    struct AppleReceiptBody: StrictBody {
        var playerID: PlayerID
        var receipt: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case receipt
            case playerID = "player_id"
        }
    }

    /// A StoreKit 1 app receipt: the purchases Apple lists for its customer, verified, each
    /// credited once. 201 when something was credited now, 200 otherwise.
    @Sendable func redeemAppleReceipt(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(AppleReceiptBody.self, from: request, bytesMax: ServerLimits.receiptBodyBytesMax)
        let caller = try context.requireCaller()
        try Access.requireOwnWallet(caller, playerID: body.playerID)
        try spendReceiptAllowance(caller, playerID: body.playerID)
        let result = try await requireApple().redeemReceipt(playerID: body.playerID, receipt: body.receipt, actor: caller.actor)
        for _ in result.credited { WalletMetrics.recordTransaction(.purchase) }
        return try JSONBody.response(result, for: context, status: result.credited.isEmpty ? .ok : .created)
    }

    struct RestoreBody: StrictBody {
        var receipt: String?
        var signedTransactions: [String]?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case receipt
            case signedTransactions = "signed_transactions"
        }
    }

    /// Restores a player's Apple purchases (a new device, a reinstall): StoreKit 2 signed
    /// transactions, or a StoreKit 1 receipt read through Apple's transaction history; each
    /// granted once. Player tokens share the receipts' allowance: a restore may ask Apple too.
    /// 201 when something was granted now, 200 otherwise.
    @Sendable func restoreApple(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(RestoreBody.self, from: request, bytesMax: ServerLimits.receiptBodyBytesMax)
        let caller = try context.requireCaller()
        let playerID = try context.requireWalletPlayerID()
        try spendReceiptAllowance(caller, playerID: playerID)
        let result = try await requireApple().restore(playerID: playerID, receipt: body.receipt, signedTransactions: body.signedTransactions, actor: caller.actor)
        for _ in result.granted { WalletMetrics.recordTransaction(.purchase) }
        return try JSONBody.response(result, for: context, status: result.granted.isEmpty ? .ok : .created)
    }

    /// Receipts and restores share one allowance per player token: each may page Apple's history
    /// against the app's shared quota. A trusted service key (the game's backend) neither spends
    /// nor is stopped by it: the limit bounds what a player's own device can make the wallet ask
    /// Apple, not a player's retries blocking the backend.
    private func spendReceiptAllowance(_ caller: Caller, playerID: PlayerID) throws {
        guard !Self.isService(caller), let seconds = receiptLimiter.wait(for: playerID) else { return }
        throw APIError(
            status: .tooManyRequests, code: .rateLimited,
            detail: "at most \(ServerLimits.receiptsPerPlayerPerMinute) receipts or restores a minute per player; try again in \(seconds) s",
            headers: [.retryAfter: "\(seconds)"])
    }

    private static func isService(_ caller: Caller) -> Bool {
        if case .key(let key) = caller, key.role == .service { true } else { false }
    }

    /// An order's transactions as Apple lists them, each with whether and to whom it was credited.
    @Sendable func lookUpAppleOrder(request: Request, context: WalletRequestContext) async throws -> Response {
        let result = try await requireApple().lookUpOrder(orderID: try Self.orderID(context), creditTo: nil, actor: try context.requireCaller().actor)
        return try JSONBody.response(result, for: context)
    }

    struct CreditOrderBody: StrictBody {
        var playerID: PlayerID

        enum CodingKeys: String, CodingKey, CaseIterable {
            case playerID = "player_id"
        }
    }

    /// Credits an order's transactions not yet credited to a player, in one write; answers as
    /// the lookup does, with `credited_now` for those.
    @Sendable func creditAppleOrder(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(CreditOrderBody.self, from: request)
        let result = try await requireApple().lookUpOrder(orderID: try Self.orderID(context), creditTo: body.playerID, actor: try context.requireCaller().actor)
        return try JSONBody.response(result, for: context)
    }

    private static func orderID(_ context: WalletRequestContext) throws -> String {
        guard let orderID = context.parameters.get("order_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the order id in the path is not valid percent-encoding")
        }
        return orderID
    }

    private func requireApple() throws(WalletError) -> ApplePurchases {
        guard let applePurchases else {
            throw .notConfigured("Apple purchases are not configured on this server: start it with --apple-bundle-id")
        }
        return applePurchases
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
        let outcome = try await requireApple().handleNotification(signedPayload: body.signedPayload)
        context.log(.info, "apple notification", metadata: ["type": .string(outcome.notificationType), "outcome": .string(outcome.outcome.rawValue)])
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
