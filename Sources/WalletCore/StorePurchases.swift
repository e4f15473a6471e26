import Foundation

/// What a store reported about a purchase beyond what the grant books (Google Play: the order id,
/// the purchase's type and billing region), recorded in the credit's own write, and whether the
/// wallet must finish the purchase on the store's side afterwards (Google Play: consume it, or
/// Google refunds it after three days and the player cannot buy the product again).
public struct StorePurchaseRecord: Sendable, Equatable {
    public enum PurchaseType: String, Codable, Sendable, CaseIterable {
        case paid, test, promo, rewarded
    }

    /// The store's order id (`GPA.…`), searchable by support.
    public var orderID: String?
    public var purchaseType: PurchaseType
    /// ISO 3166-1 alpha-2 billing region.
    public var region: String?
    /// Queue the purchase's finishing (`PurchaseFinish`) with the credit.
    public var finishes: Bool

    public init(orderID: String?, purchaseType: PurchaseType, region: String?, finishes: Bool) {
        self.orderID = orderID
        self.purchaseType = purchaseType
        self.region = region
        self.finishes = finishes
    }

    package func validate() throws(WalletError) {
        if let orderID { try Validate.asciiIdentifier(orderID, field: "order id") }
        if let region {
            guard (2...8).contains(region.utf8.count), region.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
                throw .invalidRequest("a region must be 2 to 8 capital letters")
            }
        }
    }
}

/// A store purchase the wallet credited, as support looks it up: the record, the credit, and
/// how finishing it on the store's side went.
public struct StorePurchase: Codable, Sendable, Equatable {
    public var store: String
    public var storeTransactionID: String
    public var orderID: String?
    public var purchaseType: StorePurchaseRecord.PurchaseType
    public var region: String?
    /// The purchase transaction that credited it.
    public var seq: Int64
    /// Nil when the purchase needs no finishing.
    public var finish: PurchaseFinish?
    /// The seqs of the purchase's refunds and refund reversals, oldest first.
    public var corrections: [Int64]

    package init(
        store: String, storeTransactionID: String, orderID: String?, purchaseType: StorePurchaseRecord.PurchaseType, region: String?, seq: Int64,
        finish: PurchaseFinish?, corrections: [Int64] = []
    ) {
        self.corrections = corrections
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.orderID = orderID
        self.purchaseType = purchaseType
        self.region = region
        self.seq = seq
        self.finish = finish
    }

    enum CodingKeys: String, CodingKey {
        case store, region, seq, finish, corrections
        case storeTransactionID = "store_transaction_id"
        case orderID = "order_id"
        case purchaseType = "purchase_type"
    }
}

/// A purchase to finish on the store's side (Google Play: consume or acknowledge), in the outbox:
/// queued in the credit's write, then tried by `wallet serve` until the store accepts it or says
/// it is done.
public struct PurchaseFinish: Codable, Sendable, Equatable {
    /// What finishing a purchase means on the store's side, decided by the product's type when
    /// it is credited: a consumable or a pass is consumed, so that the player can buy it again; a
    /// non-consumable is only acknowledged, since consuming it would let the player buy again
    /// what they own (and a store that is not told at all refunds it).
    public enum Action: String, Codable, Sendable, CaseIterable {
        case consume
        case acknowledge

        /// The one rule: only a non-consumable is kept, so only it is acknowledged.
        public init(_ type: ProductType) {
            switch type {
            case .consumable, .nonRenewing: self = .consume
            case .nonConsumable: self = .acknowledge
            }
        }
    }

    public enum Status: String, Codable, Sendable, CaseIterable {
        /// Waiting for its next attempt.
        case pending
        /// The store took it, or answered that it was finished already.
        case done
        /// The store refused it for good (the purchase is gone): sending again cannot help.
        case failed
    }

    public var store: String
    public var storeTransactionID: String
    public var productID: String
    public var action: Action
    public var status: Status
    public var attempts: Int64
    public var createdAt: String
    public var nextAttemptAt: String
    public var lastError: String?
    public var finishedAt: String?

    package init(
        store: String, storeTransactionID: String, productID: String, action: Action, status: Status, attempts: Int64, createdAt: String,
        nextAttemptAt: String, lastError: String?, finishedAt: String?
    ) {
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.productID = productID
        self.action = action
        self.status = status
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.finishedAt = finishedAt
    }

    /// How one attempt ended.
    public enum Attempt: Sendable, Equatable {
        case done
        /// Try again at `retryAt`.
        case failed(error: String, retryAt: Date)
        /// The store will never take it.
        case refused(error: String)
    }

    enum CodingKeys: String, CodingKey {
        case store, action, status, attempts
        case storeTransactionID = "store_transaction_id"
        case productID = "product_id"
        case createdAt = "created_at"
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case finishedAt = "finished_at"
    }
}

/// The purchases a ledger must finish on the stores' side, queued by grants that carry a
/// `StorePurchaseRecord` with `finishes`, and what support reads of store purchases.
public protocol PurchaseFinishOutbox: Sendable {
    /// Takes up to `limit` pending finishes due at `now` and holds them for `lease` (their next
    /// attempt moves past it), so that other instances do not send them too.
    func claimPurchaseFinishes(at now: Date, limit: Int, lease: Duration) async throws(WalletError) -> [PurchaseFinish]
    /// Records how the attempt on a claimed finish ended. A claim that lapsed and was taken again
    /// (its attempt count moved on) changes nothing: the current state is returned.
    func recordPurchaseFinish(_ claimed: PurchaseFinish, _ attempt: PurchaseFinish.Attempt, at now: Date) async throws(WalletError) -> PurchaseFinish
    /// The outbox of one store, newest first, optionally one status only.
    func purchaseFinishes(store: String, status: PurchaseFinish.Status?, limit: Int) async throws(WalletError) -> [PurchaseFinish]
    /// The store purchases recorded under an order id (`GPA.…`), oldest first.
    func storePurchases(store: String, orderID: String) async throws(WalletError) -> [StorePurchase]
    /// The store purchase recorded for a store transaction (Google Play: its purchase token).
    func storePurchase(store: String, storeTransactionID: String) async throws(WalletError) -> StorePurchase?
    /// The player a store account token (`AccountToken.text(ofStoreAccountID:)`) is bound to, if any.
    func accountTokenOwner(store: String, token: String) async throws(WalletError) -> String?
}

/// When an outbox tries again what a store did not take (consumption answers, consumptions): 30
/// seconds after the first failure, doubling, at most 30 minutes.
public enum OutboxRetry {
    public static func delay(afterAttempts attempts: Int64) -> TimeInterval {
        min(30 * pow(2, Double(max(0, min(attempts - 1, 10)))), 1_800)
    }
}
