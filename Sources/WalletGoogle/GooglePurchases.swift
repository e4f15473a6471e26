import Foundation
import WalletCore

/// Which Google Play purchases the wallet credits, and how it treats their refunds.
public struct GoogleConfiguration: Sendable {
    /// The app's package name (`com.example.game`): every call to Google names it, so a purchase
    /// token of another app is unknown there.
    public var packageName: String
    /// Credit purchases by license testers (`purchaseType` 0), as Apple's sandbox is opt-in.
    public var allowTestPurchases = false
    /// How voided purchases take back credits the player already spent.
    public var refundPolicy: RefundPolicy = .debt
    /// How a purchase's `obfuscatedExternalAccountId` ties it to a player.
    public var accountTokenBinding: AccountTokenBinding = .firstUse

    /// - Throws: `invalidRequest` for a package name that is not one (letters, digits and `_`
    ///   in at least two dot-separated parts, each starting with a letter).
    public init(packageName: String) throws(WalletError) {
        try Self.validatePackageName(packageName)
        self.packageName = packageName
    }

    public static func validatePackageName(_ name: String) throws(WalletError) {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            name.utf8.count <= Limits.identifierBytesMax && parts.count >= 2
            && parts.allSatisfy { part in
                guard let first = part.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) else { return false }
                return part.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                }
            }
        guard valid else { throw .invalidRequest("the Google package name must look like com.example.game, not '\(name.prefix(100))'") }
    }
}

/// Google Play one-time products: verifies each purchase with Google before it credits
/// `credits × quantity` once, keyed by `("google", purchase token)`, queues its consumption (or,
/// for a non-consumable, its acknowledgement) on Google's side in the credit's own write, and takes back what Google voids through the ledger's
/// refund rules. Nothing a client or a push says is trusted: what it names is asked of Google.
public struct GooglePurchases: Sendable {
    public static let store = "google"
    /// How far back the wallet reads Google's Voided Purchases API: its 30 days, less an hour, so
    /// that a clock a little behind Google's never asks for a start it refuses.
    public static let voidsKeptFor: TimeInterval = 30 * 86_400 - 3_600
    /// How much earlier than its notification a void may be listed and still be the one notified.
    static let voidNotificationSlack: Int64 = 10 * 60 * 1_000
    /// The most voided-purchase pages one read follows (Google sends up to 1,000 a page).
    public static let voidPagesMax = 100

    public let configuration: GoogleConfiguration
    public let api: any GooglePlayPurchasesAPI
    let ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox

    public init(configuration: GoogleConfiguration, api: any GooglePlayPurchasesAPI, ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox) {
        self.configuration = configuration
        self.api = api
        self.ledger = ledger
    }

    // MARK: Redeeming

    /// Asks Google for the purchase and credits it to `playerID` once: a token already credited
    /// answers the original result (or `idempotency_key_reused` for another player or product)
    /// without asking Google again.
    public func redeem(playerID: PlayerID, productID: String, purchaseToken: String, actor: String) async throws(WalletError) -> MutationResult {
        try Self.validatePathSegment(productID, field: "product id")
        try Self.validatePathSegment(purchaseToken, field: "purchase token")
        if let credited = try await ledger.purchase(store: Self.store, storeTransactionID: purchaseToken) {
            return try await ledger.grant(
                GrantRequest(
                    playerID: playerID, store: Self.store, storeTransactionID: purchaseToken, productID: productID, quantity: credited.quantity ?? 1,
                    actor: actor))
        }
        let purchase: GoogleProductPurchase
        do {
            purchase = try await api.productPurchase(productID: productID, purchaseToken: purchaseToken)
        } catch .notFound {
            throw .purchaseInvalid(
                "Google knows no purchase of \(productID) with this token for \(configuration.packageName) (another app's, or a made-up token); nothing was credited")
        }
        return try await ledger.grant(try grantRequest(for: purchase, playerID: playerID, productID: productID, purchaseToken: purchaseToken, actor: actor))
    }

    /// The grant a purchase Google answered for makes, once every rule passes: purchased (not
    /// pending or canceled), not a license tester's unless allowed, a quantity in range, and an
    /// account id that belongs to `playerID`.
    public func grantRequest(
        for purchase: GoogleProductPurchase, playerID: PlayerID, productID: String, purchaseToken: String, actor: String
    ) throws(WalletError) -> GrantRequest {
        switch purchase.purchaseState {
        case 0: break
        case 2:
            throw .purchasePending(
                "the purchase is pending on Google Play (a cash payment or a parent's approval): nothing was recorded; it credits once the player completes it")
        case 1: throw .purchaseInvalid("the purchase was canceled on Google Play; nothing was credited")
        default: throw .purchaseInvalid("Google reports the purchase in state \(purchase.purchaseState.map(String.init) ?? "none"); nothing was credited")
        }
        let type: StorePurchaseRecord.PurchaseType
        switch purchase.purchaseType {
        case nil: type = .paid
        case 0:
            guard configuration.allowTestPurchases else {
                throw .purchaseInvalid("a test purchase (a license tester's) is refused: this wallet takes none (--google-allow-test-purchases)")
            }
            type = .test
        case 1: type = .promo
        case 2: type = .rewarded
        case let other?: throw .purchaseInvalid("Google reports an unknown purchase type \(other); nothing was credited")
        }
        let quantity = Int64(purchase.quantity ?? 1)
        guard (1...Limits.quantityMax).contains(quantity) else { throw .purchaseInvalid("Google reports a quantity of \(quantity); nothing was credited") }
        if let orderID = purchase.orderId {
            do { try Validate.asciiIdentifier(orderID, field: "order id") } catch { throw .purchaseInvalid("Google reports a malformed order id") }
        }
        let region = purchase.regionCode.flatMap { code in code.utf8.count == 2 && code.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) ? code : nil }
        // When the customer bought it: a pass's period starts then, not when the wallet heard of it.
        var purchasedAt: String?
        if let text = purchase.purchaseTimeMillis {
            guard let millis = Int64(text), Timestamp.millisecondsRange.contains(millis) else {
                throw .purchaseInvalid("Google reports a purchase time out of range; nothing was credited")
            }
            purchasedAt = Timestamp.format(milliseconds: millis)
        }
        let token = try configuration.accountTokenBinding.boundToken(AccountToken.text(ofStoreAccountID: purchase.obfuscatedExternalAccountId), playerID: playerID)
        // Google does not say what kind of product it sold: the catalog's type stands, and decides
        // whether the purchase is consumed or acknowledged (`PurchaseFinish.Action`).
        return GrantRequest(
            playerID: playerID, store: Self.store, storeTransactionID: purchaseToken, productID: productID, quantity: quantity, actor: actor,
            accountToken: token, record: StorePurchaseRecord(orderID: purchase.orderId, purchaseType: type, region: region, finishes: true),
            purchasedAt: purchasedAt)
    }

    /// A product id or purchase token as it goes into a URL path: ASCII letters, digits, `.`, `_`
    /// and `-` (what Google issues), at most `Limits.identifierBytesMax` bytes.
    public static func validatePathSegment(_ value: String, field: String) throws(WalletError) {
        guard !value.isEmpty, value.utf8.count <= Limits.identifierBytesMax else {
            throw .invalidRequest("the \(field) must be 1 to \(Limits.identifierBytesMax) characters")
        }
        guard value != ".", value != "..",
            value.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else {
            throw .invalidRequest("the \(field) may hold only ASCII letters, digits, '.', '_' and '-'")
        }
    }

    // MARK: Voids

    /// The share of a purchase of `quantity` units crediting `amount` that `voids` (all Google
    /// lists for its token) take back in all, in thousandths of a percent: the whole for a full
    /// refund (or a void that says nothing), else the voided units added up, at most `quantity`.
    /// The ledger takes `amount × share / 100000` (rounded down): the share is the smallest that
    /// takes the voided units' credits exactly, or, where thousandths of a percent cannot say it
    /// exactly (credits × quantity above 100,000), the largest that takes no more than they credited.
    /// Nil quantity (a purchase never credited): the whole.
    public static func voidedShare(_ voids: [GoogleVoidedPurchase], quantity: Int64?, amount: Int64?) -> Int64 {
        guard let quantity, quantity >= 1 else { return Limits.refundShareMax }
        var units: Int64 = 0
        for void in voids {
            guard void.refundType == 2, let voided = void.voidedQuantity, voided >= 1 else { return Limits.refundShareMax }
            units += Int64(min(voided, Int(Limits.quantityMax)))
        }
        let taken = min(units, quantity)
        guard taken < quantity else { return Limits.refundShareMax }
        var share = (taken * Limits.refundShareMax + quantity - 1) / quantity
        if let amount, amount >= quantity, amount * share / Limits.refundShareMax > amount / quantity * taken {
            share -= 1
        }
        return share
    }

    /// Every one-time-product void Google lists for the last `voidsKeptFor` (all it keeps), by
    /// purchase token.
    func listedVoids(now: Date) async throws(WalletError) -> [String: [GoogleVoidedPurchase]] {
        var byToken: [String: [GoogleVoidedPurchase]] = [:]
        var pageToken: String?
        var pages = 0
        repeat {
            pages += 1
            guard pages <= Self.voidPagesMax else {
                throw .storeUnavailable("Google's voided purchases run past \(Self.voidPagesMax) pages; nothing was applied")
            }
            let page = try await api.voidedPurchases(start: now.addingTimeInterval(-Self.voidsKeptFor), end: now, pageToken: pageToken)
            for void in page.voidedPurchases { byToken[void.purchaseToken, default: []].append(void) }
            pageToken = page.nextPageToken
        } while pageToken != nil
        return byToken
    }

    /// The notification that applies `voids` (all Google lists for `purchaseToken`) through the
    /// ledger's refund rules: a share of the purchase in all, so the same state applied twice, or
    /// an older one after a newer, takes nothing more.
    func voidNotification(id: String, purchaseToken: String, voids: [GoogleVoidedPurchase], actor: String) async throws(WalletError) -> StoreNotification {
        let credited = try await ledger.purchase(store: Self.store, storeTransactionID: purchaseToken)
        let share = Self.voidedShare(voids, quantity: credited.map { $0.quantity ?? 1 }, amount: credited?.amount)
        let reportedAt = voids.compactMap { $0.voidedTimeMillis.flatMap { Int64($0) } }.max()
        let full = share == Limits.refundShareMax
        return StoreNotification(
            notificationUUID: id, store: Self.store, type: "VOIDED_PURCHASE", subtype: full ? "FULL" : "PARTIAL", storeTransactionID: purchaseToken,
            effect: .refund(shareMillipercent: share, policy: configuration.refundPolicy), reportedAt: reportedAt, actor: actor)
    }

    // MARK: Notifications

    /// Applies a Real-time developer notification once, by its Pub/Sub message id. The push is
    /// already authenticated (`GooglePushAuthentication`); what it names is still asked of Google.
    public func handleNotification(_ message: GooglePushMessage, now: Date = Date()) async throws(WalletError) -> NotificationOutcome {
        let notification = message.notification
        let actor = "google:notifications"
        func record(_ type: String, _ effect: StoreNotification.Effect, token: String? = nil) async throws(WalletError) -> NotificationOutcome {
            try await ledger.recordNotification(
                StoreNotification(notificationUUID: message.messageID, store: Self.store, type: type, subtype: nil, storeTransactionID: token, effect: effect, actor: actor))
        }
        if case .malformed(let reason) = notification.event {
            // Authenticated, so from Google: answering 400 would only make Pub/Sub deliver it for days.
            return try await record(notification.type, .refuse(reason: reason))
        }
        guard Identifier.same(notification.packageName, configuration.packageName) else {
            return try await record(notification.type, .refuse(reason: "the notification is for package \(notification.packageName.prefix(100)), not this wallet's"))
        }
        switch notification.event {
        case .test, .other, .malformed:
            return try await record(notification.type, .none)
        case .canceled(let token):
            return try await record(notification.type, .none, token: token)
        case .purchased(let token, let productID):
            try await creditBoundPlayer(purchaseToken: token, productID: productID, actor: actor)
            return try await record(notification.type, .none, token: token)
        case .voided(let token, let oneTimeProduct):
            guard oneTimeProduct else { return try await record(notification.type, .none, token: token) }
            // Google lists a void a little after it notifies: until the list holds one as recent as
            // the notification, 503, and Pub/Sub delivers it again.
            let voids = try await listedVoids(now: now)[token] ?? []
            let latest = voids.compactMap { $0.voidedTimeMillis.flatMap { Int64($0) } }.max()
            guard let latest, latest >= (notification.eventTimeMillis ?? 0) - Self.voidNotificationSlack else {
                throw .storeUnavailable("Google does not list this void of the purchase yet; the notification will be delivered again")
            }
            return try await ledger.recordNotification(try await voidNotification(id: message.messageID, purchaseToken: token, voids: voids, actor: actor))
        }
    }

    /// A purchase completed outside the app (a pending one paid later): credited to the player
    /// whose derived account id it carries, once Google confirms it. Only with derived ids
    /// (`--account-token-namespace`): a first-use binding is whoever redeemed an id first, and the
    /// app sets the id itself, so a player who bound a victim's id could otherwise collect the
    /// victim's completed purchases. Otherwise nothing: the app redeems it when it next runs.
    private func creditBoundPlayer(purchaseToken: String, productID: String, actor: String) async throws(WalletError) {
        guard case .derived = configuration.accountTokenBinding else { return }
        try Self.validatePathSegment(purchaseToken, field: "purchase token")
        try Self.validatePathSegment(productID, field: "product id")
        if try await ledger.purchase(store: Self.store, storeTransactionID: purchaseToken) != nil { return }
        let purchase: GoogleProductPurchase
        do {
            purchase = try await api.productPurchase(productID: productID, purchaseToken: purchaseToken)
        } catch .notFound {
            return
        }
        // An owner stored before the id syntax existed, that no longer follows it, is left to the app.
        guard let token = AccountToken.text(ofStoreAccountID: purchase.obfuscatedExternalAccountId),
            let owner = try await ledger.accountTokenOwner(store: Self.store, token: token), let playerID = try? PlayerID(owner)
        else { return }
        do {
            _ = try await ledger.grant(try grantRequest(for: purchase, playerID: playerID, productID: productID, purchaseToken: purchaseToken, actor: actor))
        } catch where error.isRefusal {
            // Pending still, canceled, a test purchase, unknown product...: the app's redemption reports it.
        }
    }

    // MARK: Catch-up

    /// Applies every void Google lists since `since` (at most its 30 days) through the same path
    /// as a live notification: a void already applied, live or by an earlier pass, takes nothing more.
    public func catchUp(since: Date?, now: Date = Date()) async throws(WalletError) -> GoogleCatchUpReport {
        let from = max(since ?? .distantPast, now.addingTimeInterval(-Self.voidsKeptFor))
        guard from < now else { throw .invalidRequest("the catch-up period must start before now") }
        let fromMillis = Int64((from.timeIntervalSince1970 * 1_000).rounded(.down))
        var report = GoogleCatchUpReport()
        for (token, voids) in try await listedVoids(now: now).sorted(by: { $0.key < $1.key }) {
            guard voids.contains(where: { ($0.voidedTimeMillis.flatMap { Int64($0) } ?? .max) >= fromMillis }) else { continue }
            report.purchases += 1
            do {
                var notification = try await voidNotification(id: "", purchaseToken: token, voids: voids, actor: "google:catch-up")
                notification.notificationUUID = Self.catchUpID(token: token, notification: notification)
                let outcome = try await ledger.recordNotification(notification)
                // Applied live (or by an earlier pass) under another id: the ledger took nothing more.
                if outcome.replayed || outcome.outcome == .alreadyApplied || outcome.outcome == .superseded {
                    report.alreadyApplied += 1
                } else {
                    report.applied += 1
                }
                report.outcomes[outcome.outcome.rawValue, default: 0] += 1
            } catch where error.isRefusal {
                report.refused.append(GoogleCatchUpReport.Refusal(purchaseToken: token, code: error.code, detail: error.detail))
            }
        }
        return report
    }

    /// One id per purchase and voided state, so that catching up the same state again is a replay.
    static func catchUpID(token: String, notification: StoreNotification) -> String {
        var canonical = CanonicalBytes()
        canonical.append(token)
        if case .refund(let share, _) = notification.effect { canonical.append(share) }
        canonical.append(notification.reportedAt ?? 0)
        return "catch-up:" + canonical.sha256Hex().prefix(48)
    }

    // MARK: Support

    /// The purchases recorded under a Google order id, each with its credit, its refunds and how
    /// its consumption went, and what Google lists as voided for it.
    public func lookUp(orderID: String, now: Date = Date()) async throws(WalletError) -> GoogleOrderLookup {
        try Validate.asciiIdentifier(orderID, field: "order id")
        var entries: [GoogleOrderLookup.Entry] = []
        for record in try await ledger.storePurchases(store: Self.store, orderID: orderID) {
            entries.append(
                GoogleOrderLookup.Entry(purchase: record, credit: try await ledger.purchase(store: Self.store, storeTransactionID: record.storeTransactionID)))
        }
        var voids: [GoogleVoidedPurchase] = []
        var voidsError: String?
        do {
            voids = try await listedVoids(now: now).values.joined().filter { $0.orderId == orderID || entries.map(\.purchase.storeTransactionID).contains($0.purchaseToken) }
        } catch {
            voidsError = error.detail
        }
        return GoogleOrderLookup(orderID: orderID, purchases: entries, voids: voids, voidsError: voidsError)
    }
}

extension WalletError {
    /// A rule's refusal of one purchase, as opposed to a failure of the ledger or of Google.
    var isRefusal: Bool { isRuleRefusal && code != "store_unavailable" && code != "not_configured" }
}

/// What a Google catch-up did.
public struct GoogleCatchUpReport: Codable, Sendable, Equatable {
    /// Voided purchases Google listed for the period.
    public var purchases = 0
    public var applied = 0
    public var alreadyApplied = 0
    public var outcomes: [String: Int] = [:]
    public var refused: [Refusal] = []

    public struct Refusal: Codable, Sendable, Equatable {
        public var purchaseToken: String
        public var code: String
        public var detail: String

        enum CodingKeys: String, CodingKey {
            case code, detail
            case purchaseToken = "purchase_token"
        }
    }

    enum CodingKeys: String, CodingKey {
        case purchases, applied, outcomes, refused
        case alreadyApplied = "already_applied"
    }
}

/// A Google order as support sees it.
public struct GoogleOrderLookup: Codable, Sendable, Equatable {
    public var orderID: String
    public var purchases: [Entry]
    /// What Google's Voided Purchases API lists for the order (its last 30 days).
    public var voids: [GoogleVoidedPurchase]
    /// Why the voids could not be read, if they could not.
    public var voidsError: String?

    public struct Entry: Codable, Sendable, Equatable {
        public var purchase: StorePurchase
        public var credit: LedgerTransaction?
    }

    enum CodingKeys: String, CodingKey {
        case purchases, voids
        case orderID = "order_id"
        case voidsError = "voids_error"
    }
}
