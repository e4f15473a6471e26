import Foundation
import Hummingbird
import WalletCore

/// What staff read beside a wallet's pages: one transaction whole, a purchase by its store
/// transaction id, and the background queues.
struct StaffController {
    let store: any StaffReading & WebhookStore & EventFeed
    var clock: @Sendable () -> Date = { Date() }

    func addRoutes(to routes: RouteRegistrar) {
        // Service keys already read whole transactions (any wallet's history, the event feed).
        routes.add(.get, "/v1/transactions/{seq}", access: .roles([.service, .support, .auditor, .admin]), handler: transaction)
        routes.add(.get, "/v1/purchases/{store}/{store_transaction_id}", access: .roles([.support, .auditor, .admin]), handler: purchase)
        routes.add(.get, "/v1/outboxes", access: .roles([.auditor, .admin]), handler: outboxes)
        // A player's notifications are a wallet's page: admin keys do not read wallets (RoleMatrix).
        routes.add(.get, "/v1/wallets/{player_id}/notifications", access: .roles([.support, .auditor]), handler: notifications)
    }

    /// The store notifications about the player's purchases, newest first, a page at a time.
    @Sendable func notifications(request: Request, context: WalletRequestContext) async throws -> Response {
        let limit = try QueryReader.integer(request, "limit").map { Int(clamping: $0) } ?? Limits.pageSizeDefault
        let query = NotificationQuery(playerID: try context.requireWalletPlayerID(), limit: limit, before: request.uri.queryParameters.get("before"))
        return try JSONBody.response(try await store.notifications(query), for: context)
    }

    /// The transaction at `seq` as stored, with its lot draws and, for a purchase, its corrections.
    @Sendable func transaction(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let seq = Self.seq(context.parameters.get("seq")) else {
            throw APIError.invalidRequest("seq must be a whole number from 1 to \(Int64.max)", field: "seq")
        }
        return try JSONBody.response(try await store.transactionDetail(seq: seq), for: context)
    }

    /// A seq spelled as the ledger writes it: decimal digits without sign or leading zero, so that
    /// `+5`, `05` and `5.0` are refused rather than read as other spellings of 5.
    private static func seq(_ text: String?) -> Int64? {
        guard let text, let first = text.utf8.first, first != UInt8(ascii: "0"),
            text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int64(text)
    }

    /// The purchase that credited a store transaction; 404 when the wallet never credited it.
    @Sendable func purchase(request: Request, context: WalletRequestContext) async throws -> Response {
        // Decoded byte for byte: Foundation's decoder would drop a leading byte order mark and find
        // `T1` for `%EF%BB%BFT1`. `%2F` is a slash inside the id, which visible ASCII allows.
        guard let rawStore = context.parameters.get("store"), let store = Identifier.percentDecoded(rawStore[...]) else {
            throw APIError.invalidRequest("the store in the path is not valid percent-encoding", field: "store")
        }
        guard let rawID = context.parameters.get("store_transaction_id"), let storeTransactionID = Identifier.percentDecoded(rawID[...]) else {
            throw APIError.invalidRequest("the store transaction id in the path is not valid percent-encoding", field: "store_transaction_id")
        }
        guard let found = try await self.store.purchaseLookup(store: store, storeTransactionID: storeTransactionID) else {
            throw APIError.notFound("the wallet never credited \(store) transaction \(storeTransactionID.prefix(64))")
        }
        return try JSONBody.response(found, for: context)
    }

    struct Outboxes: Encodable {
        var queues: [OutboxQueue]
    }

    /// Each background queue: the stores' replies and purchases to finish, then each webhook endpoint.
    @Sendable func outboxes(request: Request, context: WalletRequestContext) async throws -> Response {
        let now = clock()
        let queues = try await store.storeOutboxes(at: now) + WebhookBacklogs.queues(store, at: now)
        return try JSONBody.response(Outboxes(queues: queues), for: context)
    }
}
