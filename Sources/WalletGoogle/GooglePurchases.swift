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
    let ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox & WorkLeases

    public init(configuration: GoogleConfiguration, api: any GooglePlayPurchasesAPI, ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox & WorkLeases) {
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
            guard let millis = Int64(text) else { throw .purchaseInvalid("Google reports a purchase time that is not a number; nothing was credited") }
            purchasedAt = try Timestamp.purchaseDate(milliseconds: millis, store: "Google")
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

    /// One entry of Google's list as the ledger records it: named by its order id and voided time
    /// (what tells two voids of one purchase apart), the units a quantity-based partial refund
    /// voided, or the whole purchase for a full refund (or an entry that says nothing of its units).
    static func storeVoid(_ void: GoogleVoidedPurchase) -> StoreVoid {
        let units = void.refundType == 2 ? void.voidedQuantity.flatMap { $0 >= 1 ? Int64(min($0, Int(Limits.quantityMax))) : nil } : nil
        let readable = "\(void.voidedTimeMillis ?? "-"):\(void.orderId ?? "-")"
        // An entry whose fields do not make a short visible name is named by their hash instead.
        var canonical = CanonicalBytes()
        canonical.append(void.voidedTimeMillis)
        canonical.append(void.orderId)
        let valid = (try? Validate.asciiIdentifier(readable, field: "void id")) != nil
        return StoreVoid(voidID: valid ? readable : "sha256:" + canonical.sha256Hex(), units: units)
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
    /// ledger's refund rules: the write adds them to the voids it recorded before, each once, so the
    /// same list applied twice, or an older one after a newer, takes nothing more.
    func voidNotification(id: String, purchaseToken: String, voids: [GoogleVoidedPurchase], actor: String) -> StoreNotification {
        // Google may list one entry on two pages: the write counts it once anyway, and the
        // notification carries it once, within its bound.
        var seen: Set<[UInt8]> = []
        let entries = voids.map(Self.storeVoid).filter { seen.insert(Array($0.voidID.utf8)).inserted }
        let reportedAt = voids.compactMap { $0.voidedTimeMillis.flatMap { Int64($0) } }.max()
        let full = entries.contains { $0.units == nil }
        return StoreNotification(
            notificationUUID: id, store: Self.store, type: "VOIDED_PURCHASE", subtype: full ? "FULL" : "PARTIAL", storeTransactionID: purchaseToken,
            effect: .voids(entries, policy: configuration.refundPolicy), reportedAt: reportedAt, actor: actor)
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
            return try await ledger.recordNotification(voidNotification(id: message.messageID, purchaseToken: token, voids: voids, actor: actor))
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

    /// The lease a catch-up run holds (`WorkLeases`), so that one instance at a time reads Google's list.
    public static let catchUpLease = "google.catch-up"
    /// How long a run holds it at most: far longer than a run takes (`voidPagesMax` pages and their
    /// voids), short enough that a crashed run stops no other for long.
    public static let catchUpLeaseDuration: Duration = .seconds(900)

    /// Applies every void Google lists since `since` (at most its 30 days) through the same path
    /// as a live notification: a void already applied, live or by an earlier pass, takes nothing
    /// more. One run at a time, across instances and the CLI: a run that finds another holding the
    /// catch-up's lease asks Google nothing and says so (`skipped`).
    public func catchUp(since: Date?, now: Date = Date()) async throws(WalletError) -> GoogleCatchUpReport {
        let from = max(since ?? .distantPast, now.addingTimeInterval(-Self.voidsKeptFor))
        guard from < now else { throw .invalidRequest("the catch-up period must start before now") }
        let holder = RandomID.uuid()
        let lease = try await ledger.takeLease(Self.catchUpLease, holder: holder, for: Self.catchUpLeaseDuration)
        guard Identifier.same(lease.holder, holder) else {
            var report = GoogleCatchUpReport()
            report.skipped = "another run holds the Google catch-up until \(lease.expiresAt); this one read nothing"
            return report
        }
        let result: Result<GoogleCatchUpReport, WalletError>
        do {
            result = .success(try await catchUp(from: from, now: now))
        } catch {
            result = .failure(error)
        }
        // Given back at once; if that fails, the lease lapses at its expiry.
        try? await ledger.releaseLease(Self.catchUpLease, holder: holder)
        return try result.get()
    }

    private func catchUp(from: Date, now: Date) async throws(WalletError) -> GoogleCatchUpReport {
        let fromMillis = Int64((from.timeIntervalSince1970 * 1_000).rounded(.down))
        var report = GoogleCatchUpReport()
        for (token, voids) in try await listedVoids(now: now).sorted(by: { $0.key < $1.key }) {
            guard voids.contains(where: { ($0.voidedTimeMillis.flatMap { Int64($0) } ?? .max) >= fromMillis }) else { continue }
            report.purchases += 1
            do {
                var notification = voidNotification(id: "", purchaseToken: token, voids: voids, actor: "google:catch-up")
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

    /// One id per purchase and list of its voids, so that catching up the same list again is a replay.
    static func catchUpID(token: String, notification: StoreNotification) -> String {
        var canonical = CanonicalBytes()
        canonical.append(token)
        if case .voids(let voids, _) = notification.effect {
            for void in voids.sorted(by: { Identifier($0.voidID) < Identifier($1.voidID) }) {
                canonical.append(void.voidID)
                canonical.append(void.units ?? 0)
            }
        }
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
    /// Why the run did nothing, when another run held the catch-up.
    public var skipped: String?

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
        case purchases, applied, outcomes, refused, skipped
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
