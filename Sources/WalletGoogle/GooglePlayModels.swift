import Foundation
import WalletCore

/// A one-time product purchase as the Android Publisher API answers it
/// (`purchases.products.get`, `ProductPurchase`). Only what the wallet reads; nothing here is
/// trusted until the wallet asked Google for it itself.
public struct GoogleProductPurchase: Decodable, Sendable, Equatable {
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    /// Absent for a paid purchase; 0 test (license testers), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    /// `GPA.…`; absent for some test purchases.
    public var orderId: String?
    /// What the app set with `setObfuscatedAccountId` (at most 64 characters).
    public var obfuscatedExternalAccountId: String?
    /// Absent means 1.
    public var quantity: Int?
    /// ISO 3166-1 alpha-2 billing region.
    public var regionCode: String?
    /// Milliseconds since 1970, as a decimal string.
    public var purchaseTimeMillis: String?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?

    public init(
        purchaseState: Int? = 0, consumptionState: Int? = 0, purchaseType: Int? = nil, orderId: String? = nil,
        obfuscatedExternalAccountId: String? = nil, quantity: Int? = nil, regionCode: String? = nil, purchaseTimeMillis: String? = nil,
        acknowledgementState: Int? = 0
    ) {
        self.purchaseState = purchaseState
        self.consumptionState = consumptionState
        self.purchaseType = purchaseType
        self.orderId = orderId
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.quantity = quantity
        self.regionCode = regionCode
        self.purchaseTimeMillis = purchaseTimeMillis
        self.acknowledgementState = acknowledgementState
    }
}

/// One entry of the Voided Purchases API (`purchases.voidedpurchases.list`, `VoidedPurchase`).
public struct GoogleVoidedPurchase: Codable, Sendable, Equatable {
    public var purchaseToken: String
    public var orderId: String?
    /// Milliseconds since 1970, as a decimal string.
    public var voidedTimeMillis: String?
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud,
    /// 6 friendly fraud, 7 chargeback, 8 unacknowledged purchase.
    public var voidedReason: Int?
    /// 1 full refund, 2 quantity-based partial refund (`includeQuantityBasedPartialRefund=true`).
    public var refundType: Int?
    /// For a quantity-based partial refund: how many units were refunded.
    public var voidedQuantity: Int?

    public init(
        purchaseToken: String, orderId: String? = nil, voidedTimeMillis: String? = nil, voidedSource: Int? = nil, voidedReason: Int? = nil,
        refundType: Int? = nil, voidedQuantity: Int? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.voidedTimeMillis = voidedTimeMillis
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.refundType = refundType
        self.voidedQuantity = voidedQuantity
    }
}

/// One page of voided purchases, and the token of the next one (nil on the last page).
public struct GoogleVoidedPurchasePage: Sendable, Equatable {
    public var voidedPurchases: [GoogleVoidedPurchase]
    public var nextPageToken: String?

    public init(voidedPurchases: [GoogleVoidedPurchase], nextPageToken: String?) {
        self.voidedPurchases = voidedPurchases
        self.nextPageToken = nextPageToken
    }
}

/// How a consume request ended, when Google took it.
public enum GoogleConsumeOutcome: Sendable, Equatable {
    /// Consumed by this request.
    case consumed
    /// Consumed before (by an earlier attempt, or by the app).
    case alreadyConsumed
}

/// How an acknowledge request ended, when Google took it.
public enum GoogleAcknowledgeOutcome: Sendable, Equatable {
    /// Acknowledged by this request.
    case acknowledged
    /// Acknowledged before (by an earlier attempt, or by the app).
    case alreadyAcknowledged
}

/// What the wallet asks Google about one-time purchases: the Android Publisher API v3, or a
/// stand-in in tests. Every failure is a `WalletError` a person can act on: `notConfigured` for a
/// misconfigured key or a missing Play Console permission (401, 403), `notFound` for no such
/// purchase (404, 410), `storeUnavailable` for Google failing or slow after the retries.
public protocol GooglePlayPurchasesAPI: Sendable {
    /// `GET …/purchases/products/{productId}/tokens/{token}`.
    func productPurchase(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleProductPurchase
    /// `POST …/purchases/products/{productId}/tokens/{token}:consume`.
    func consume(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleConsumeOutcome
    /// `POST …/purchases/products/{productId}/tokens/{token}:acknowledge`: what finishes a
    /// non-consumable, which must stay owned (consumed, it could be bought again).
    func acknowledge(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleAcknowledgeOutcome
    /// `GET …/purchases/voidedpurchases`, one page, `type=0` (one-time products),
    /// `includeQuantityBasedPartialRefund=true`, between `start` and `end`.
    func voidedPurchases(start: Date, end: Date, pageToken: String?) async throws(WalletError) -> GoogleVoidedPurchasePage
}

/// Authenticates a Pub/Sub push before anything in it is read: Google's OIDC token in the
/// `Authorization` header, or a stand-in's in tests.
public protocol GooglePushAuthenticating: Sendable {
    /// Nil when the header carries a token Google signed for this wallet's push subscription;
    /// otherwise why not (for the log: the caller answers 401 and does nothing).
    func refusal(authorization: String?, now: Date) async -> String?
}
