import Hummingbird
import WalletCore

/// A player's wallet: balances, history, spends and support adjustments.
struct WalletController {
    let store: any LedgerWriting & LedgerReading

    func addRoutes(to routes: RouteRegistrar) {
        let readers = Access.roles([.service, .support, .auditor], playerOwnWallet: true)
        routes.add(.get, "/v1/wallets/{player_id}", access: readers, handler: balance)
        routes.add(.get, "/v1/wallets/{player_id}/transactions", access: readers, handler: transactions)
        routes.add(.get, "/v1/wallets/{player_id}/statement", access: .roles([.support, .auditor], playerOwnWallet: true), handler: statement)
        routes.add(.post, "/v1/wallets/{player_id}/spend", access: .roles([.service], playerOwnWallet: true), handler: spend)
        routes.add(.post, "/v1/wallets/{player_id}/adjustments", access: .roles([.support, .admin]), handler: adjust)
        routes.add(.post, "/v1/wallets/{player_id}/bonuses", access: .roles([.service, .support, .admin]), handler: bonus)
        routes.add(.get, "/v1/wallets/{player_id}/lots", access: readers, handler: lots)
        routes.add(.post, "/v1/wallets/{player_id}/holds", access: .roles([.service], playerOwnWallet: true), handler: createHold)
        routes.add(.get, "/v1/wallets/{player_id}/holds", access: readers, handler: holds)
    }

    struct HoldBody: StrictBody {
        var amount: Int64
        var currency: String?
        var expiresInSeconds: Int64
        var reason: String?
        var metadata: JSONValue?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case amount, currency, reason, metadata
            case expiresInSeconds = "expires_in_seconds"
            case idempotencyKey = "idempotency_key"
        }
    }

    /// Reserves credits: 201 with the hold's `id`, `status` and `expires_at`.
    @Sendable func createHold(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(HoldBody.self, from: request)
        let result = try await store.createHold(
            HoldRequest(
                playerID: try context.requireWalletPlayerID(), amount: body.amount, currency: body.currency ?? defaultCurrency,
                expiresInSeconds: body.expiresInSeconds, reason: body.reason, metadata: try body.metadata.map { value throws(WalletError) in try Metadata(value) },
                idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: body.idempotencyKey), actor: try context.requireCaller().actor))
        return try MutationResponse.response(result, of: result.transaction, replayed: result.replayed, context: context)
    }

    @Sendable func holds(request: Request, context: WalletRequestContext) async throws -> Response {
        let playerID = try context.requireWalletPlayerID()
        return try JSONBody.response(PlayerHolds(playerID: playerID, holds: try await store.holds(playerID: playerID)), for: context)
    }

    struct BonusBody: StrictBody {
        var amount: Int64
        var currency: String?
        var expiresAt: String?
        var reasonCode: String
        var note: String?
        var campaign: String?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case amount, currency, note, campaign
            case expiresAt = "expires_at"
            case reasonCode = "reason_code"
            case idempotencyKey = "idempotency_key"
        }
    }

    /// Bonus credits: a lot that may expire (`expires_at`, in the future).
    @Sendable func bonus(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(BonusBody.self, from: request)
        let result = try await store.bonus(
            BonusRequest(
                playerID: try context.requireWalletPlayerID(), amount: body.amount, currency: body.currency ?? defaultCurrency, expiresAt: body.expiresAt,
                reasonCode: body.reasonCode, note: body.note, campaign: body.campaign,
                idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: body.idempotencyKey), actor: try context.requireCaller().actor))
        return try MutationResponse.response(for: result, context: context)
    }

    /// The open lots: what remains of each credit, in burn order per currency, with its expiry.
    @Sendable func lots(request: Request, context: WalletRequestContext) async throws -> Response {
        let playerID = try context.requireWalletPlayerID()
        let query = LotQuery(
            playerID: playerID, limit: try QueryReader.integer(request, "limit").map(Int.init) ?? Limits.pageSizeDefault,
            after: try QueryReader.integer(request, "after"))
        let page = try await store.lots(query)
        return try JSONBody.response(PlayerLots(playerID: playerID, lots: page.lots, next: page.next), for: context)
    }

    @Sendable func balance(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.balances(playerID: try context.requireWalletPlayerID()), for: context)
    }

    @Sendable func transactions(request: Request, context: WalletRequestContext) async throws -> Response {
        let limit = try QueryReader.integer(request, "limit").map(Int.init) ?? Limits.pageSizeDefault
        let after = try QueryReader.integer(request, "after")
        let kind = try request.uri.queryParameters.get("kind").map { text in
            guard let kind = TransactionKind(rawValue: text) else {
                throw APIError.invalidRequest("kind must be one of \(TransactionKind.allCases.map(\.rawValue).joined(separator: ", "))", field: "kind")
            }
            return kind
        }
        let query = HistoryQuery(
            playerID: try context.requireWalletPlayerID(), limit: limit, after: after, kind: kind,
            from: request.uri.queryParameters.get("from"), to: request.uri.queryParameters.get("to"))
        let page = try await store.history(query)
        return try JSONBody.response(page, for: context)
    }

    /// Opening balance, transactions and closing balance per currency for `[from, to)`.
    @Sendable func statement(request: Request, context: WalletRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        return try JSONBody.response(try await store.statement(StatementQuery(playerID: try context.requireWalletPlayerID(), from: query.get("from"), to: query.get("to"))), for: context)
    }

    struct SpendBody: StrictBody {
        var amount: Int64
        var currency: String?
        var reason: String?
        var metadata: JSONValue?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case amount, currency, reason, metadata
            case idempotencyKey = "idempotency_key"
        }
    }

    @Sendable func spend(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(SpendBody.self, from: request)
        let result = try await store.spend(
            SpendRequest(
                playerID: try context.requireWalletPlayerID(), amount: body.amount, currency: body.currency ?? defaultCurrency,
                idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: body.idempotencyKey), reason: body.reason,
                metadata: try body.metadata.map { value throws(WalletError) in try Metadata(value) }, actor: try context.requireCaller().actor))
        return try MutationResponse.response(for: result, context: context)
    }

    struct AdjustmentBody: StrictBody {
        var amount: Int64
        var reasonCode: String
        var note: String
        var ticket: String?
        var currency: String?
        var allowNegative: Bool?
        var idempotencyKey: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case amount, note, ticket, currency
            case reasonCode = "reason_code"
            case allowNegative = "allow_negative"
            case idempotencyKey = "idempotency_key"
        }
    }

    @Sendable func adjust(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(AdjustmentBody.self, from: request)
        let result = try await store.adjust(
            AdjustRequest(
                playerID: try context.requireWalletPlayerID(), amount: body.amount, currency: body.currency ?? defaultCurrency,
                reasonCode: body.reasonCode, note: body.note, ticket: body.ticket,
                idempotencyKey: try IdempotencyKeyReader.key(request, bodyKey: body.idempotencyKey),
                allowNegative: body.allowNegative ?? false, actor: try context.requireCaller().actor))
        return try MutationResponse.response(for: result, context: context)
    }
}

enum QueryReader {
    /// An optional integer query parameter; present but not an integer is a 400.
    static func integer(_ request: Request, _ name: String) throws -> Int64? {
        guard let text = request.uri.queryParameters.get(name) else { return nil }
        guard let value = Int64(text) else { throw APIError.invalidRequest("the query parameter '\(name)' must be an integer", field: name) }
        return value
    }
}
