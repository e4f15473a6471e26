import Foundation

/// What a catalog product is, as the stores sell it: credits bought again and again, something
/// owned for ever, or a pass for a time that is bought again to extend it.
public enum ProductType: String, Codable, Sendable, CaseIterable {
    case consumable
    /// Owned for ever (a level pack, "no ads"): one purchase per customer, restored anywhere.
    case nonConsumable = "non_consumable"
    /// A pass for a time (Apple's non-renewing subscription): each purchase extends it.
    case nonRenewing = "non_renewing"

    /// The store's own name for a type (Apple's `type` claim), or nil for a type the wallet
    /// does not sell; auto-renewable subscriptions are refused with their own words.
    public init(appleType: String) throws(WalletError) {
        switch appleType {
        case "Consumable": self = .consumable
        case "Non-Consumable": self = .nonConsumable
        case "Non-Renewing Subscription": self = .nonRenewing
        case "Auto-Renewable Subscription":
            throw .purchaseInvalid("auto-renewable subscriptions are not kept by this wallet; only consumables, non-consumables and non-renewing passes are")
        default:
            throw .purchaseInvalid("the product type '\(appleType.prefix(40))' is not one this wallet sells")
        }
    }

    /// Whether a store purchase of this type is keyed by the store's original transaction id:
    /// a non-consumable is bought once, and a restore or a re-delivery that carries a new
    /// transaction id of the same purchase never grants twice.
    public var isKeyedByOriginalTransaction: Bool { self == .nonConsumable }
}

/// A pass's length, ISO 8601 `PnYnMnWnD` (`P30D`, `P3M`, `P1Y`): years and months in UTC calendar
/// arithmetic (the 31st becomes the month's last day), then weeks and days. At most ten years.
public struct PassDuration: Sendable, Equatable, Hashable, CustomStringConvertible {
    public let months: Int64
    public let days: Int64
    /// The text as written, which the ledger records.
    public let text: String

    /// Ten years, a month counted as 30 days: `P10Y`, `P120M`, `P3600D`, or a mix of them.
    public static let lengthDaysMax: Int64 = 3_660

    public init(_ text: String) throws(WalletError) {
        let refusal = WalletError.invalidRequest(
            "duration '\(text.prefix(40))' must be an ISO 8601 period of years, months, weeks and days such as P30D, P3M or P1Y, at most ten years",
            field: "duration")
        let bytes = Array(text.utf8)
        guard bytes.count >= 3, bytes.count <= 32, bytes[0] == UInt8(ascii: "P") else { throw refusal }
        var index = 1
        var months: Int64 = 0
        var days: Int64 = 0
        var lastDesignator = -1
        let designators: [UInt8] = [UInt8(ascii: "Y"), UInt8(ascii: "M"), UInt8(ascii: "W"), UInt8(ascii: "D")]
        while index < bytes.count {
            var value: Int64 = 0
            var digits = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
                guard digits <= 5 else { throw refusal }
            }
            guard digits >= 1, index < bytes.count, let designator = designators.firstIndex(of: bytes[index]), designator > lastDesignator else { throw refusal }
            lastDesignator = designator
            index += 1
            switch designator {
            case 0: months += value * 12
            case 1: months += value
            case 2: days += value * 7
            default: days += value
            }
        }
        guard months + days > 0, months <= 120, months * 30 + days <= Self.lengthDaysMax else { throw refusal }
        self.months = months
        self.days = days
        self.text = text
    }

    /// The end of a period of this length that starts at `start` (a ledger timestamp), or nil
    /// past year 9999.
    public func end(from start: String) -> String? {
        guard let milliseconds = Timestamp.milliseconds(rfc3339: Array(start.utf8)),
            let end = Timestamp.adding(months: months, days: days, to: milliseconds)
        else { return nil }
        return Timestamp.format(milliseconds: end)
    }

    public var description: String { text }
}

/// An entitlement's name, such as `vip` or `comic_pack_1`: a lowercase letter or digit, then up
/// to 63 lowercase letters, digits, `_`, `.` or `-`. ASCII, so its text is its bytes.
public struct EntitlementName: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public static let bytesMax = 64

    public init(_ text: String) throws(WalletError) {
        let bytes = Array(text.utf8)
        let isLowerOrDigit = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        guard let first = bytes.first, isLowerOrDigit(first), bytes.count <= Self.bytesMax,
            bytes.allSatisfy({ isLowerOrDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") })
        else {
            throw .invalidRequest(
                "entitlement '\(text.prefix(40))' must start with a lowercase letter or digit and hold at most \(Self.bytesMax) lowercase letters, digits, '_', '.' or '-'",
                field: "entitlement")
        }
        self.text = text
    }

    public var description: String { text }
}

extension EntitlementName: Decodable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(text) } catch {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.detail))
        }
    }
}

/// One thing an entitlement's state folds: a store purchase or a support grant (a period, or
/// for ever), or a support revocation (everything owned until then ends). A refund makes a
/// purchase inactive, its reversal active again.
package struct EntitlementItem: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case period(PassDuration)
        case forever
        case revoke
    }

    /// The `entitlement` transaction that added it.
    package var seq: Int64
    package var kind: Kind
    /// When it takes effect: the store's purchase date, or when support acted.
    package var startsAt: String
    /// The store purchase behind it, if any.
    package var purchaseSeq: Int64?
    package var active: Bool

    package init(seq: Int64, kind: Kind, startsAt: String, purchaseSeq: Int64?, active: Bool) {
        self.seq = seq
        self.kind = kind
        self.startsAt = startsAt
        self.purchaseSeq = purchaseSeq
        self.active = active
    }

    /// The stored name of the kind.
    package var kindName: String {
        switch kind {
        case .period: "period"
        case .forever: "forever"
        case .revoke: "revoke"
        }
    }

    package var period: PassDuration? {
        if case .period(let duration) = kind { return duration }
        return nil
    }
}

/// Where an entitlement stands: owned for ever, or until `expiresAt` (nil: never owned, or
/// revoked).
public struct EntitlementState: Sendable, Equatable {
    public var forever: Bool
    public var expiresAt: String?

    public init(forever: Bool, expiresAt: String?) {
        self.forever = forever
        self.expiresAt = expiresAt
    }

    public static let none = EntitlementState(forever: false, expiresAt: nil)

    /// Whether the player may use it at `at` (a ledger timestamp).
    public func isActive(at: String) -> Bool {
        forever || (expiresAt.map { $0 > at } ?? false)
    }
}

/// The rules of entitlements, as plain functions.
package enum EntitlementRules {
    /// The state `items` fold to: in order of when each takes effect, a period starts at the
    /// later of its own start and the previous end (remaining time is kept, never lost, never
    /// doubled); `forever` owns it for ever. Inactive (refunded) items count for nothing, and
    /// neither does an item added before a revocation (`seq` below it): support revokes what the
    /// player held when it acted, and a purchase redeemed afterwards counts, whenever it was
    /// bought. Periods that start at the same instant are laid shortest first (months, then
    /// days), never by redemption order: the same purchases give the same state in any order of
    /// redemption, though a month and 30 days do not commute.
    package static func fold(_ items: [EntitlementItem]) throws(WalletError) -> EntitlementState {
        let revokedBefore = items.filter { $0.active && $0.kind == .revoke }.map(\.seq).max() ?? Int64.min
        let counted = items.filter { $0.active && $0.kind != .revoke && $0.seq > revokedBefore }
        let ordered = counted.sorted { left, right in
            let leftLength = (left.period?.months ?? 0, left.period?.days ?? 0)
            let rightLength = (right.period?.months ?? 0, right.period?.days ?? 0)
            return (left.startsAt, leftLength.0, leftLength.1) < (right.startsAt, rightLength.0, rightLength.1)
        }
        var state = EntitlementState.none
        for item in ordered {
            switch item.kind {
            case .forever:
                state.forever = true
            case .revoke:
                break
            case .period(let duration):
                let start = max(item.startsAt, state.expiresAt ?? item.startsAt)
                guard let end = duration.end(from: start) else {
                    throw .invalidRequest("the pass would end after year 9999")
                }
                state.expiresAt = end
            }
        }
        return state
    }
}

/// What changes an entitlement, as its ledger entry records it (`metadata.change`).
public enum EntitlementChangeKind: String, Codable, Sendable, CaseIterable {
    /// A store purchase granted it (for ever, or a period).
    case purchase
    /// The store refunded or revoked that purchase (or support refunded it).
    case refund
    /// The store reversed that refund.
    case refundReversal = "refund_reversal"
    /// Support granted it, for ever or for a period.
    case grant
    /// Support revoked everything the player held of it until now.
    case revoke
    /// Support added days to the pass.
    case extend
}

/// A support change to a player's entitlement: grant (for ever, or for `duration`), revoke, or
/// extend by `days`; with reason code, note, ticket and actor, like an adjustment.
public struct EntitlementChangeRequest: LedgerMutation, Equatable {
    public enum Action: Sendable, Equatable {
        case grant(PassDuration?)
        case revoke
        case extend(days: Int64)
    }

    public var playerID: PlayerID
    public var entitlement: EntitlementName
    public var action: Action
    public var reasonCode: String
    public var note: String
    public var ticket: String?
    public var idempotencyKey: String
    public var actor: String

    public static let extendDaysMax: Int64 = 3_660

    public init(
        playerID: PlayerID, entitlement: EntitlementName, action: Action, reasonCode: String, note: String, ticket: String? = nil, idempotencyKey: String,
        actor: String
    ) {
        self.playerID = playerID
        self.entitlement = entitlement
        self.action = action
        self.reasonCode = reasonCode
        self.note = note
        self.ticket = ticket
        self.idempotencyKey = idempotencyKey
        self.actor = actor
    }

    package var change: EntitlementChangeKind {
        switch action {
        case .grant: .grant
        case .revoke: .revoke
        case .extend: .extend
        }
    }

    package func validate() throws(WalletError) {
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        try Validate.reasonCode(reasonCode)
        try Validate.text(note, field: .member("note"), bytesMax: Limits.noteBytesMax)
        if let ticket { try Validate.visibleText(ticket, field: .member("ticket"), bytesMax: Limits.identifierBytesMax) }
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
        if case .extend(let days) = action, !(1...Self.extendDaysMax).contains(days) {
            throw .invalidRequest("days must be between 1 and \(Self.extendDaysMax)", field: "days")
        }
    }

    /// Keyed like an adjustment, in the player's own scope for entitlements.
    package var idempotency: IdempotencyKey {
        IdempotencyKey(
            scope: "entitlement:\(playerID.text)", key: idempotencyKey, requestHash: requestHash,
            reusedDetail: "idempotency key '\(idempotencyKey)' was already used for a different entitlement change")
    }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("entitlement")
        canonical.append(playerID.text)
        canonical.append(entitlement.text)
        switch action {
        case .grant(let duration):
            canonical.append("grant")
            canonical.append(duration?.text ?? "")
        case .revoke:
            canonical.append("revoke")
        case .extend(let days):
            canonical.append("extend")
            canonical.append(days)
        }
        canonical.append(reasonCode)
        canonical.append(note)
        canonical.append(ticket ?? "")
        return canonical.sha256Hex()
    }
}

/// A player's entitlement as the API shows it: whether it is active now, until when, and the
/// purchases and support changes behind it.
public struct Entitlement: Codable, Sendable, Equatable {
    public var name: String
    public var active: Bool
    /// Owned for ever (a non-consumable): then there is no `expiresAt`.
    public var forever: Bool
    public var expiresAt: String?
    /// The items behind it, oldest first (left out of the one-entitlement answer).
    public var items: [Source]?

    /// One purchase or support change behind an entitlement.
    public struct Source: Codable, Sendable, Equatable {
        /// The `entitlement` transaction that added it.
        public var seq: Int64
        /// `purchase`, `grant`, `extend` or `revoke`.
        public var change: EntitlementChangeKind
        public var startsAt: String
        /// A period's length; none for for ever, or a revocation.
        public var period: String?
        /// False once refunded.
        public var active: Bool
        public var store: String?
        public var storeTransactionID: String?
        public var productID: String?

        package enum CodingKeys: String, CodingKey {
            case seq, change, period, active, store
            case startsAt = "starts_at"
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
        }

        package init(seq: Int64, change: EntitlementChangeKind, startsAt: String, period: String?, active: Bool, store: String?, storeTransactionID: String?, productID: String?) {
            self.seq = seq
            self.change = change
            self.startsAt = startsAt
            self.period = period
            self.active = active
            self.store = store
            self.storeTransactionID = storeTransactionID
            self.productID = productID
        }
    }

    package enum CodingKeys: String, CodingKey {
        case name, active, forever, items
        case expiresAt = "expires_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(active, forKey: .active)
        try container.encode(forever, forKey: .forever)
        // Always present (null for none), as the API documents it.
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encodeIfPresent(items, forKey: .items)
    }

    package init(name: String, state: EntitlementState, at: String, items: [Source]?) {
        self.name = name
        active = state.isActive(at: at)
        forever = state.forever
        expiresAt = state.expiresAt
        self.items = items
    }
}

/// A player's entitlements, by name.
public struct EntitlementList: Codable, Sendable, Equatable {
    public var playerID: String
    public var entitlements: [Entitlement]

    package enum CodingKeys: String, CodingKey {
        case entitlements
        case playerID = "player_id"
    }

    package init(playerID: PlayerID, entitlements: [Entitlement]) {
        self.playerID = playerID.text
        self.entitlements = entitlements
    }
}

/// The answer to a support change: its ledger entry and the entitlement after it.
public struct EntitlementChangeResult: Codable, Sendable, Equatable {
    public var transaction: LedgerTransaction
    public var entitlement: Entitlement
    public var replayed: Bool

    package init(transaction: LedgerTransaction, entitlement: Entitlement, replayed: Bool) {
        self.transaction = transaction
        self.entitlement = entitlement
        self.replayed = replayed
    }
}

/// What an `entitlement` transaction records in its metadata (hashed with it): the change, the
/// item it adds or toggles, and the state it leaves. `verify` folds these entries alone, per
/// player and entitlement, and checks each recorded state.
package struct EntitlementEntry: Sendable, Equatable {
    package var name: String
    package var change: EntitlementChangeKind
    /// For a refund or reversal: the item it toggles.
    package var itemSeq: Int64?
    /// For an item it adds: when it takes effect, and a period's length (none: for ever).
    package var startsAt: String?
    package var period: String?
    /// For a store purchase: the `purchase` transaction.
    package var purchaseSeq: Int64?
    /// Support's reason code (staff only).
    package var reasonCode: String?
    /// The state it leaves.
    package var state: EntitlementState

    /// Members only staff see.
    package static let staffMembers: Set<String> = ["reason_code"]

    package func metadata() throws(WalletError) -> Metadata {
        var members: [String: JSONValue] = [
            "entitlement": .string(name), "change": .string(change.rawValue), "forever": .bool(state.forever),
            "expires_at": state.expiresAt.map(JSONValue.string) ?? .null,
        ]
        if let itemSeq { members["item_seq"] = .integer(itemSeq) }
        if let startsAt { members["starts_at"] = .string(startsAt) }
        if let period { members["period"] = .string(period) }
        if let purchaseSeq { members["purchase_seq"] = .integer(purchaseSeq) }
        if let reasonCode { members["reason_code"] = .string(reasonCode) }
        return try Metadata(.object(members))
    }

    package init(
        name: String, change: EntitlementChangeKind, itemSeq: Int64? = nil, startsAt: String? = nil, period: String? = nil, purchaseSeq: Int64? = nil,
        reasonCode: String? = nil, state: EntitlementState
    ) {
        self.name = name
        self.change = change
        self.itemSeq = itemSeq
        self.startsAt = startsAt
        self.period = period
        self.purchaseSeq = purchaseSeq
        self.reasonCode = reasonCode
        self.state = state
    }

    /// The entry an `entitlement` transaction recorded, nil when its metadata is not one.
    package init?(_ transaction: LedgerTransaction) {
        guard transaction.kind == .entitlement, let text = transaction.metadata?.canonicalText, case .object(let members)? = try? JSONValue.parse(text),
            case .string(let name)? = members["entitlement"], case .string(let changeText)? = members["change"],
            let change = EntitlementChangeKind(rawValue: changeText), case .bool(let forever)? = members["forever"]
        else { return nil }
        func integer(_ member: String) -> Int64? {
            if case .integer(let value)? = members[member] { return value }
            return nil
        }
        func string(_ member: String) -> String? {
            if case .string(let value)? = members[member] { return value }
            return nil
        }
        let expiresAt: String?
        switch members["expires_at"] {
        case .string(let value)?: expiresAt = value
        case .null?: expiresAt = nil
        default: return nil
        }
        self.init(
            name: name, change: change, itemSeq: integer("item_seq"), startsAt: string("starts_at"), period: string("period"),
            purchaseSeq: integer("purchase_seq"), reasonCode: string("reason_code"), state: EntitlementState(forever: forever, expiresAt: expiresAt))
    }

    /// The item an entry adds (at `seq`, its transaction's), nil for a refund or a reversal.
    package func item(seq: Int64) throws(WalletError) -> EntitlementItem? {
        guard let startsAt else { return nil }
        let kind: EntitlementItem.Kind
        switch change {
        case .refund, .refundReversal: return nil
        case .revoke: kind = .revoke
        case .purchase, .grant, .extend: kind = try period.map { text throws(WalletError) in .period(try PassDuration(text)) } ?? .forever
        }
        return EntitlementItem(seq: seq, kind: kind, startsAt: startsAt, purchaseSeq: purchaseSeq, active: true)
    }
}

/// Recomputes every entitlement from its ledger entries alone, as `verify` reads the chain: each
/// entry's item applied (added, refunded, restored) and the fold compared with the state the
/// entry recorded. `states` is what the materialised table must hold at the end.
package struct EntitlementChecker {
    package struct Key: Hashable {
        package var player: Identifier
        package var name: String

        package init(player: Identifier, name: String) {
            self.player = player
            self.name = name
        }
    }

    /// Every item, as the entries made it, by player and entitlement: what `entitlement_items` must hold.
    package private(set) var items: [Key: [EntitlementItem]] = [:]
    package private(set) var states: [Key: (state: EntitlementState, lastSeq: Int64)] = [:]

    package init() {}

    /// Checks one transaction; only `entitlement` ones matter. Returns the problem, if any.
    package mutating func check(_ transaction: LedgerTransaction) -> String? {
        guard transaction.kind == .entitlement else { return nil }
        guard transaction.amount == 0, transaction.postings.allSatisfy({ $0.amount == 0 }) else { return "an entitlement entry moves credits" }
        guard let entry = EntitlementEntry(transaction) else { return "an entitlement entry's metadata does not say what changed" }
        let key = Key(player: Identifier(transaction.playerID), name: entry.name)
        var owned = items[key, default: []]
        switch entry.change {
        case .refund, .refundReversal:
            let restoring = entry.change == .refundReversal
            guard let itemSeq = entry.itemSeq, let index = owned.firstIndex(where: { $0.seq == itemSeq }), owned[index].purchaseSeq != nil,
                owned[index].active != restoring
            else { return "an entitlement \(entry.change.rawValue) names no purchase it could apply to" }
            owned[index].active = restoring
        case .purchase, .grant, .extend, .revoke:
            let item: EntitlementItem?
            do { item = try entry.item(seq: transaction.seq) } catch { return "an entitlement entry's period is not one: \(error.detail)" }
            guard let item, (entry.change == .purchase) == (entry.purchaseSeq != nil) else { return "an entitlement \(entry.change.rawValue) adds no item" }
            if entry.change == .revoke, item.kind != .revoke { return "an entitlement revocation adds a period" }
            owned.append(item)
        }
        let state: EntitlementState
        do { state = try EntitlementRules.fold(owned) } catch { return "an entitlement's periods run past year 9999" }
        guard state == entry.state else {
            return "entitlement \(entry.name) of \(transaction.playerID.prefix(64)) records \(entry.state.forever ? "for ever" : entry.state.expiresAt ?? "none") but its entries fold to \(state.forever ? "for ever" : state.expiresAt ?? "none")"
        }
        items[key] = owned
        states[key] = (state, transaction.seq)
        return nil
    }
}

/// The keys of the entitlement changes the wallet makes on its own, each in the store's scope:
/// one per purchase, and one per refund or reversal of its item (they alternate, so each is
/// named by the seq it takes; the item's state decides whether one applies at all).
package enum EntitlementKeys {
    package static func purchase(_ purchase: LedgerTransaction) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("entitlement purchase")
        canonical.append(purchase.seq)
        return IdempotencyKey(
            scope: "entitlement_store:\(purchase.store ?? "")", key: "purchase:\(purchase.seq)", requestHash: canonical.sha256Hex(),
            reusedDetail: "the purchase at seq \(purchase.seq) granted its entitlement already")
    }

    package static func correction(of item: EntitlementItem, restoring: Bool, store: String, next seq: Int64) -> IdempotencyKey {
        let change = restoring ? EntitlementChangeKind.refundReversal : .refund
        var canonical = CanonicalBytes()
        canonical.append("entitlement \(change.rawValue)")
        canonical.append(item.seq)
        canonical.append(seq)
        return IdempotencyKey(
            scope: "entitlement_store:\(store)", key: "\(change.rawValue):\(item.seq):at:\(seq)", requestHash: canonical.sha256Hex(),
            reusedDetail: "the entitlement item at seq \(item.seq) was changed already")
    }
}
