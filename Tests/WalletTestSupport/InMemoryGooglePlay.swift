import Foundation
import Synchronization
import WalletCore
import WalletGoogle

/// What Google holds, in memory: the ledger side of Google Play (redeeming, consuming, voids,
/// notifications, catch-up, lookup) and its routes are tested against it on both stores; the HTTP
/// client is tested against `GoogleStandIn`, a server.
public final class InMemoryGooglePlay: GooglePlayPurchasesAPI {
    public init() {}

    public struct State {
        public var purchases: [String: (productID: String, purchase: GoogleProductPurchase)] = [:]
        public var voids: [GoogleVoidedPurchase] = []
        public var consumeFailures: [WalletError] = []
        public var gets = 0
        public var consumes = 0
        public var acknowledgements = 0
        public var voidPageSize = 2
    }

    public let state = Mutex(State())

    public func add(_ token: String, product: String = "com.example.consume5credits", _ purchase: GoogleProductPurchase = GoogleProductPurchase(orderId: nil)) {
        state.withLock { $0.purchases[token] = (product, purchase) }
    }

    public func update(_ token: String, _ change: (inout GoogleProductPurchase) -> Void) {
        state.withLock { state in
            if var entry = state.purchases[token] {
                change(&entry.purchase)
                state.purchases[token] = entry
            }
        }
    }

    public func void(_ token: String, at millis: Int64, quantity: Int? = nil) {
        state.withLock {
            $0.voids.append(
                GoogleVoidedPurchase(
                    purchaseToken: token, orderId: "GPA.\(token)", voidedTimeMillis: String(millis), voidedSource: 0, voidedReason: 1,
                    refundType: quantity == nil ? 1 : 2, voidedQuantity: quantity))
        }
    }

    public func productPurchase(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleProductPurchase {
        let entry = state.withLock { state in
            state.gets += 1
            return state.purchases[purchaseToken]
        }
        guard let entry, entry.productID == productID else { throw .notFound("Google knows no such purchase") }
        return entry.purchase
    }

    public func consume(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleConsumeOutcome {
        let outcome: Result<GoogleConsumeOutcome, WalletError> = state.withLock { state in
            state.consumes += 1
            if !state.consumeFailures.isEmpty { return .failure(state.consumeFailures.removeFirst()) }
            guard var entry = state.purchases[purchaseToken], entry.productID == productID else { return .failure(.notFound("Google knows no such purchase")) }
            if entry.purchase.consumptionState == 1 { return .success(.alreadyConsumed) }
            entry.purchase.consumptionState = 1
            state.purchases[purchaseToken] = entry
            return .success(.consumed)
        }
        return try outcome.get()
    }

    public func acknowledge(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleAcknowledgeOutcome {
        let outcome: Result<GoogleAcknowledgeOutcome, WalletError> = state.withLock { state in
            state.acknowledgements += 1
            guard var entry = state.purchases[purchaseToken], entry.productID == productID else { return .failure(.notFound("Google knows no such purchase")) }
            if entry.purchase.acknowledgementState == 1 { return .success(.alreadyAcknowledged) }
            entry.purchase.acknowledgementState = 1
            state.purchases[purchaseToken] = entry
            return .success(.acknowledged)
        }
        return try outcome.get()
    }

    public func voidedPurchases(start: Date, end: Date, pageToken: String?) async throws(WalletError) -> GoogleVoidedPurchasePage {
        let (from, to) = (Int64(start.timeIntervalSince1970 * 1_000), Int64(end.timeIntervalSince1970 * 1_000))
        return state.withLock { state in
            let listed = state.voids.filter { void in (Int64(void.voidedTimeMillis ?? "") ?? 0) >= from && (Int64(void.voidedTimeMillis ?? "") ?? 0) <= to }
            let offset = pageToken.flatMap(Int.init) ?? 0
            let page = Array(listed.dropFirst(offset).prefix(state.voidPageSize))
            let next = offset + page.count < listed.count ? String(offset + page.count) : nil
            return GoogleVoidedPurchasePage(voidedPurchases: page, nextPageToken: next)
        }
    }
}

/// Admits a push whose `Authorization` header is exactly `Bearer <token>`: the routes' tests
/// of what follows authentication; Google's OIDC tokens are verified in `GooglePlayClientTests`.
public struct FixedGooglePushToken: GooglePushAuthenticating {
    public let token: String

    public init(_ token: String) {
        self.token = token
    }

    public func refusal(authorization: String?, now: Date) async -> String? {
        authorization == "Bearer \(token)" ? nil : "not the test token"
    }
}
