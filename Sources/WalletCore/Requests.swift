import Foundation

/// The currency used when a request names none.
public let defaultCurrency = "credits"

/// A request that changes the ledger under an idempotency key. Its player id, if it names one,
/// is a `PlayerID`, checked where the request was made (the API, the CLI).
package protocol LedgerMutation: Sendable {
    /// Throws `invalidRequest` for a value outside the wallet's limits.
    func validate() throws(WalletError)
    /// The key the request is recorded under, with the hash of its canonical bytes.
    var idempotency: IdempotencyKey { get }
}

/// An idempotency key with the hash of the request it stands for.
package struct IdempotencyKey: Sendable {
    package let scope: String
    package let key: String
    package let requestHash: String
    /// What `idempotencyKeyReused` says when the key was used for another request.
    package let reusedDetail: String

    /// A caller's key for a spend or adjustment, scoped to the wallet and to the kind of
    /// operation: players and game servers spend, support adjusts, and neither can occupy a key
    /// the other will use.
    package static func wallet(_ playerID: PlayerID, kind: TransactionKind, key: String, requestHash: String) -> IdempotencyKey {
        IdempotencyKey(
            scope: "\(kind.rawValue):\(playerID.text)", key: key, requestHash: requestHash,
            reusedDetail: "idempotency key '\(key)' was already used for a different \(kind.rawValue) on this wallet")
    }

    package init(scope: String, key: String, requestHash: String, reusedDetail: String) {
        self.scope = scope
        self.key = key
        self.requestHash = requestHash
        self.reusedDetail = reusedDetail
    }
}

/// A request validated and keyed by its caller, before it queues for the single writer: the
/// writer, which every write of the process waits for, spends no time on either.
package struct Checked<Request: LedgerMutation>: Sendable {
    package let request: Request
    package let key: IdempotencyKey

    package init(_ request: Request) throws(WalletError) {
        try request.validate()
        self.request = request
        key = request.idempotency
    }
}

/// Credit a player for a store transaction that a trusted caller already verified.
/// Keyed by `(store, storeTransactionID)` globally and forever.
public struct GrantRequest: LedgerMutation, Equatable {
    public var playerID: PlayerID
    public var store: String
    public var storeTransactionID: String
    public var productID: String
    public var quantity: Int64
    public var actor: String
    /// The store's token for the player's account (App Store `appAccountToken`: a UUID, in
    /// lowercase), when the purchase carries one. The first credit that carries a token binds
    /// it to its player; a purchase with a token bound to another player is refused.
    public var accountToken: String?
    /// What the store reported beyond the grant (order id, type, region), recorded with the credit;
    /// with `finishes`, the purchase is queued to be finished on the store's side. Not part of the
    /// request's identity: a replay answers the original whatever it carries.
    public var record: StorePurchaseRecord?
    /// The product's type as the store states it (Apple's `type`), nil when it does not say
    /// (Google Play, other stores): then the catalog's type stands. A mismatch is refused.
    public var productType: ProductType?
    /// When the customer bought it, as the store states it (a ledger timestamp): a pass's period
    /// starts then, not when the wallet heard of it. Nil: now. Not part of the request's identity.
    public var purchasedAt: String?

    public init(
        playerID: PlayerID, store: String, storeTransactionID: String, productID: String, quantity: Int64 = 1, actor: String,
        accountToken: String? = nil, record: StorePurchaseRecord? = nil, productType: ProductType? = nil, purchasedAt: String? = nil
    ) {
        self.productType = productType
        self.purchasedAt = purchasedAt
        self.record = record
        self.playerID = playerID
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.productID = productID
        self.quantity = quantity
        self.actor = actor
        self.accountToken = accountToken
    }

    package func validate() throws(WalletError) {
        try Validate.store(store)
        try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID)
        try Validate.asciiIdentifier(productID, field: .productID)
        guard (1...Limits.quantityMax).contains(quantity) else {
            throw .invalidRequest("quantity must be between 1 and \(Limits.quantityMax)", field: "quantity")
        }
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
        if let accountToken, UUID(uuidString: accountToken)?.uuidString.lowercased() != accountToken {
            throw .invalidRequest("an account token must be a UUID in lowercase")
        }
        try record?.validate()
        if let purchasedAt { _ = try Timestamp.parse(purchasedAt, field: .member("purchased_at")) }
    }

    /// Keyed by the store transaction, globally.
    package var idempotency: IdempotencyKey {
        IdempotencyKey(
            scope: "purchase:\(store)", key: storeTransactionID, requestHash: requestHash,
            reusedDetail: "store transaction \(store)/\(storeTransactionID) was already redeemed with a different request (another player, product or quantity)")
    }

    /// Identifies the request, not the caller: the actor is left out.
    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("purchase")
        canonical.append(playerID.text)
        canonical.append(store)
        canonical.append(storeTransactionID)
        canonical.append(productID)
        canonical.append(quantity)
        return canonical.sha256Hex()
    }
}

/// Debit a player's wallet. Never takes the balance below zero.
/// Credits given away (daily login, events, compensation): a bonus lot, which may expire.
/// Purchased credits never expire; only bonuses may carry `expiresAt`.
public struct BonusRequest: LedgerMutation, Equatable {
    public var playerID: PlayerID
    public var amount: Int64
    public var currency: String
    /// RFC 3339; must be in the future when the bonus is written.
    public var expiresAt: String?
    public var reasonCode: String
    public var note: String?
    public var campaign: String?
    public var idempotencyKey: String
    public var actor: String

    public init(
        playerID: PlayerID, amount: Int64, currency: String = defaultCurrency, expiresAt: String? = nil, reasonCode: String, note: String? = nil,
        campaign: String? = nil, idempotencyKey: String, actor: String
    ) {
        self.playerID = playerID
        self.amount = amount
        self.currency = currency
        self.expiresAt = expiresAt
        self.reasonCode = reasonCode
        self.note = note
        self.campaign = campaign
        self.idempotencyKey = idempotencyKey
        self.actor = actor
    }

    package func validate() throws(WalletError) {
        try Validate.positiveAmount(amount)
        try Validate.currency(currency)
        if let expiresAt { _ = try Timestamp.parse(expiresAt, field: .member("expires_at")) }
        try Validate.reasonCode(reasonCode)
        if let note { try Validate.text(note, field: .member("note"), bytesMax: Limits.noteBytesMax) }
        if let campaign { try Validate.visibleText(campaign, field: .member("campaign"), bytesMax: Limits.identifierBytesMax) }
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
    }

    /// The expiry in the ledger's own format (validated), if any.
    package var expiry: String? {
        get throws(WalletError) { try expiresAt.map { text throws(WalletError) in try Timestamp.parse(text, field: .member("expires_at")) } }
    }

    /// Keyed by the caller's key, scoped to the wallet's bonuses.
    package var idempotency: IdempotencyKey { .wallet(playerID, kind: .bonus, key: idempotencyKey, requestHash: requestHash) }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("bonus")
        canonical.append(playerID.text)
        canonical.append(amount)
        canonical.append(currency)
        canonical.append((try? expiry) ?? expiresAt)
        canonical.append(reasonCode)
        canonical.append(note)
        canonical.append(campaign)
        return canonical.sha256Hex()
    }
}

public struct SpendRequest: LedgerMutation, Equatable {
    public var playerID: PlayerID
    public var amount: Int64
    public var currency: String
    /// Scoped to the wallet: two players may use the same key.
    public var idempotencyKey: String
    public var reason: String?
    public var metadata: Metadata?
    public var actor: String

    public init(
        playerID: PlayerID, amount: Int64, currency: String = defaultCurrency, idempotencyKey: String,
        reason: String? = nil, metadata: Metadata? = nil, actor: String
    ) {
        self.playerID = playerID
        self.amount = amount
        self.currency = currency
        self.idempotencyKey = idempotencyKey
        self.reason = reason
        self.metadata = metadata
        self.actor = actor
    }

    package func validate() throws(WalletError) {
        try Validate.positiveAmount(amount)
        try Validate.currency(currency)
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        if let reason { try Validate.text(reason, field: .member("reason"), bytesMax: Limits.reasonBytesMax) }
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
    }

    /// Keyed by the caller's key, scoped to the wallet's spends.
    package var idempotency: IdempotencyKey { .wallet(playerID, kind: .spend, key: idempotencyKey, requestHash: requestHash) }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("spend")
        canonical.append(playerID.text)
        canonical.append(amount)
        canonical.append(currency)
        canonical.append(reason)
        canonical.append(metadata?.canonicalText)
        return canonical.sha256Hex()
    }
}

/// A support correction: credit or debit a wallet with a reason, a note and who did it.
public struct AdjustRequest: LedgerMutation, Equatable {
    public var playerID: PlayerID
    /// Positive credits the player, negative debits; never zero.
    public var amount: Int64
    public var currency: String
    public var reasonCode: String
    public var note: String
    public var ticket: String?
    public var idempotencyKey: String
    /// A debit may take the balance below zero only when this is set.
    public var allowNegative: Bool
    public var actor: String

    public init(
        playerID: PlayerID, amount: Int64, currency: String = defaultCurrency, reasonCode: String, note: String,
        ticket: String? = nil, idempotencyKey: String, allowNegative: Bool = false, actor: String
    ) {
        self.playerID = playerID
        self.amount = amount
        self.currency = currency
        self.reasonCode = reasonCode
        self.note = note
        self.ticket = ticket
        self.idempotencyKey = idempotencyKey
        self.allowNegative = allowNegative
        self.actor = actor
    }

    package func validate() throws(WalletError) {
        guard amount != 0 else { throw .invalidRequest("amount must not be zero", field: "amount") }
        guard (-Limits.amountPerOperationMax...Limits.amountPerOperationMax).contains(amount) else {
            throw .invalidRequest("amount must be between -\(Limits.amountPerOperationMax) and \(Limits.amountPerOperationMax)", field: "amount")
        }
        try Validate.currency(currency)
        try Validate.reasonCode(reasonCode)
        try Validate.text(note, field: .member("note"), bytesMax: Limits.noteBytesMax)
        if let ticket { try Validate.visibleText(ticket, field: .member("ticket"), bytesMax: Limits.identifierBytesMax) }
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
    }

    /// Keyed by the caller's key, scoped to the wallet's adjustments: a player's spend cannot
    /// take the key of a support ticket.
    package var idempotency: IdempotencyKey { .wallet(playerID, kind: .adjustment, key: idempotencyKey, requestHash: requestHash) }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("adjustment")
        canonical.append(playerID.text)
        canonical.append(amount)
        canonical.append(currency)
        canonical.append(reasonCode)
        canonical.append(note)
        canonical.append(ticket)
        canonical.append(allowNegative ? 1 : 0)
        return canonical.sha256Hex()
    }
}

/// What a refund does when the player already spent the credits it takes back.
public enum RefundPolicy: String, Codable, Sendable, CaseIterable {
    /// Take it all: the balance may go negative, and spending is refused until it is positive.
    case debt
    /// Stop at zero and record the part that could not be taken as `uncollected`.
    case floor
}

/// Take back the credits of a purchase (all, or a share), keyed by the store transaction.
public struct RefundRequest: LedgerMutation, Equatable {
    public var store: String
    public var storeTransactionID: String
    /// The refunded share in thousandths of a percent, as Apple's `revocationPercentage`:
    /// 100_000 is a full refund, 50_000 half.
    public var shareMillipercent: Int64
    public var policy: RefundPolicy
    public var actor: String

    public init(store: String, storeTransactionID: String, shareMillipercent: Int64 = Limits.refundShareMax, policy: RefundPolicy = .debt, actor: String) {
        self.store = store
        self.storeTransactionID = storeTransactionID
        self.shareMillipercent = shareMillipercent
        self.policy = policy
        self.actor = actor
    }

    /// A refund of `percentage` percent (1–100).
    public init(store: String, storeTransactionID: String, percentage: Int64, policy: RefundPolicy = .debt, actor: String) throws(WalletError) {
        guard (1...100).contains(percentage) else { throw .invalidRequest("percentage must be between 1 and 100", field: "percentage") }
        self.init(store: store, storeTransactionID: storeTransactionID, shareMillipercent: percentage * 1_000, policy: policy, actor: actor)
    }

    package func validate() throws(WalletError) {
        try Validate.store(store)
        try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID)
        try Validate.refundShare(shareMillipercent)
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
    }

    /// Keyed by the purchase's store transaction and the share: the same refund again is a
    /// replay, a larger share takes the difference.
    package var idempotency: IdempotencyKey {
        IdempotencyKey(
            scope: "refund:\(store):\(shareMillipercent)", key: storeTransactionID, requestHash: requestHash,
            reusedDetail: "store transaction \(store)/\(storeTransactionID) was already refunded by this share with another policy")
    }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("refund")
        canonical.append(store)
        canonical.append(storeTransactionID)
        canonical.append(shareMillipercent)
        canonical.append(policy.rawValue)
        return canonical.sha256Hex()
    }
}

/// Create or replace a catalog entry.
public struct ProductUpdate: Sendable, Equatable {
    public var productID: String
    public var credits: Int64
    public var currency: String
    public var store: String?
    public var active: Bool
    public var type: ProductType
    /// What a non-consumable or a pass grants besides its credits.
    public var entitlement: EntitlementName?
    /// A pass's length (`non_renewing` only).
    public var duration: PassDuration?

    public init(
        productID: String, credits: Int64, currency: String = defaultCurrency, store: String? = nil, active: Bool = true, type: ProductType = .consumable,
        entitlement: EntitlementName? = nil, duration: PassDuration? = nil
    ) {
        self.productID = productID
        self.credits = credits
        self.currency = currency
        self.store = store
        self.active = active
        self.type = type
        self.entitlement = entitlement
        self.duration = duration
    }

    /// A consumable grants credits only; a non-consumable an entitlement for ever, and credits
    /// if any (a starter pack); a pass an entitlement for its duration, and credits if any.
    package func validate() throws(WalletError) {
        try Validate.asciiIdentifier(productID, field: .productID)
        let creditsMin: Int64 = type == .consumable ? 1 : 0
        guard (creditsMin...Limits.productCreditsMax).contains(credits) else {
            throw .invalidRequest("credits must be between \(creditsMin) and \(Limits.productCreditsMax) for a \(type.rawValue) product", field: "credits")
        }
        try Validate.currency(currency)
        if let store { try Validate.store(store) }
        switch type {
        case .consumable:
            guard entitlement == nil, duration == nil else {
                throw .invalidRequest("a consumable grants credits only: an entitlement needs type non_consumable or non_renewing", field: entitlement == nil ? "duration" : "entitlement")
            }
        case .nonConsumable:
            guard entitlement != nil else { throw .invalidRequest("a non_consumable product needs an entitlement", field: "entitlement") }
            guard duration == nil else { throw .invalidRequest("a non_consumable product is owned for ever and takes no duration", field: "duration") }
        case .nonRenewing:
            guard entitlement != nil, duration != nil else {
                throw .invalidRequest("a non_renewing product needs an entitlement and a duration", field: entitlement == nil ? "entitlement" : "duration")
            }
        }
    }
}

/// A page of a player's history, newest first.
public struct HistoryQuery: Sendable, Equatable {
    public var playerID: PlayerID
    public var limit: Int
    /// Continue after this `seq` (exclusive): the `next` of the previous page.
    public var after: Int64?
    public var kind: TransactionKind?
    /// RFC 3339: only transactions created at or after it.
    public var from: String?
    /// RFC 3339, exclusive: only transactions created before it.
    public var to: String?

    public init(
        playerID: PlayerID, limit: Int = Limits.pageSizeDefault, after: Int64? = nil, kind: TransactionKind? = nil, from: String? = nil, to: String? = nil
    ) {
        self.playerID = playerID
        self.limit = limit
        self.after = after
        self.kind = kind
        self.from = from
        self.to = to
    }

    /// The period bounds in the ledger's timestamp format, once the query is valid.
    package func validated() throws(WalletError) -> (from: String?, to: String?) {
        try Validate.pageSize(limit)
        if let after, after < 1 { throw .invalidRequest("after must be a positive seq", field: "after") }
        return try ExportQuery(from: from, to: to).bounds()
    }
}
