import Foundation

/// Who placed a hold, and so who may resolve it.
public enum HoldParty: Sendable, Equatable {
    /// The game's backend (a service key), or an operator at the CLI.
    case service
    /// The player of that id, with their own token.
    case player(String)

    /// The party a ledger actor stands for: a player token acts as `player:<id>`; API keys and
    /// the CLI act under their own names.
    package init(actor: String) {
        self = AccountOwner.playerID(ofOwner: actor).map(Self.player) ?? .service
    }

    /// The ledger actor of this party (`player:<id>` for a player).
    package var actor: String? {
        if case .player(let id) = self { return AccountOwner.player(id).text }
        return nil
    }
}

/// A reservation of credits: moved to `@holds` at once (the spendable balance drops), then
/// captured (to `@spend`, the rest given back to the lots it came from), released, or expired,
/// exactly once.
public struct Hold: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable, CaseIterable {
        case open, captured, released, expired
    }

    public var id: String
    /// Text, as stored: see `LedgerTransaction.playerID`.
    public var playerID: String
    public var currency: String
    public var amount: Int64
    public var status: Status
    public var expiresAt: String
    public var holdSeq: Int64
    public var resolvedSeq: Int64?
    /// What a capture took.
    public var captured: Int64?
    /// Who placed it (the hold transaction's actor), and so who may resolve it.
    public var placedBy: HoldParty = .service

    package init(
        id: String, playerID: String, currency: String, amount: Int64, status: Status, expiresAt: String, holdSeq: Int64, resolvedSeq: Int64?, captured: Int64?,
        placedBy: HoldParty = .service
    ) {
        self.id = id
        self.playerID = playerID
        self.currency = currency
        self.amount = amount
        self.status = status
        self.expiresAt = expiresAt
        self.holdSeq = holdSeq
        self.resolvedSeq = resolvedSeq
        self.captured = captured
        self.placedBy = placedBy
    }

    /// Whether its expiry has passed at `now`: it can no longer be captured, only released as expired.
    public func isExpired(at now: String) -> Bool {
        expiresAt <= now
    }

    /// A hold is resolved by the kind of caller that placed it: one the game placed (a service
    /// key, or the CLI) only by a service key or the CLI, so a player cannot release the game's
    /// match fee or capture it for less; one a player placed by that player or a service key.
    /// Another player's hold is unknown to a player (`not_found`, as if it did not exist).
    package func requireResolvable(by resolver: HoldParty) throws(WalletError) {
        guard case .player(let resolving) = resolver else { return }
        guard Identifier.same(resolving, playerID) else { throw .notFound("no hold \(id.prefix(64))") }
        guard case .player = placedBy else {
            throw .forbidden("the game placed this hold: only the game's service key can capture or release it")
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, currency, amount, status, captured
        case playerID = "player_id"
        case expiresAt = "expires_at"
        case holdSeq = "hold_seq"
        case resolvedSeq = "resolved_seq"
    }
}

/// A player's holds, as the API and the CLI answer them.
public struct PlayerHolds: Encodable, Sendable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    public var holds: [Hold]

    public init(playerID: PlayerID, holds: [Hold]) {
        self.playerID = playerID.text
        self.holds = holds
    }

    enum CodingKeys: String, CodingKey {
        case holds
        case playerID = "player_id"
    }
}

/// What a hold operation answers: the hold, the transaction it wrote, the player's balance after.
public struct HoldResult: Codable, Sendable, Equatable {
    public var hold: Hold
    public var transaction: LedgerTransaction
    public var balance: Int64
    /// A replay answers the original body; the API says so in `Idempotent-Replayed`.
    public var replayed = false

    enum CodingKeys: String, CodingKey {
        case hold, transaction, balance
    }

    package init(hold: Hold, transaction: LedgerTransaction, balance: Int64, replayed: Bool) {
        self.hold = hold
        self.transaction = transaction
        self.balance = balance
        self.replayed = replayed
    }
}

/// Reserve credits until the outcome is known (a matchmaking fee, a bid, a crafting job).
public struct HoldRequest: LedgerMutation, Equatable {
    public var playerID: PlayerID
    public var amount: Int64
    public var currency: String
    /// 1 to 604800 (a week).
    public var expiresInSeconds: Int64
    public var reason: String?
    public var metadata: Metadata?
    public var idempotencyKey: String
    public var actor: String

    public static let expiresInSecondsRange: ClosedRange<Int64> = 1...604_800

    public init(
        playerID: PlayerID, amount: Int64, currency: String = defaultCurrency, expiresInSeconds: Int64, reason: String? = nil, metadata: Metadata? = nil,
        idempotencyKey: String, actor: String
    ) {
        self.playerID = playerID
        self.amount = amount
        self.currency = currency
        self.expiresInSeconds = expiresInSeconds
        self.reason = reason
        self.metadata = metadata
        self.idempotencyKey = idempotencyKey
        self.actor = actor
    }

    package func validate() throws(WalletError) {
        try Validate.positiveAmount(amount)
        try Validate.currency(currency)
        guard Self.expiresInSecondsRange.contains(expiresInSeconds) else {
            throw .invalidRequest("expires_in_seconds must be from 1 to \(Self.expiresInSecondsRange.upperBound)", field: "expires_in_seconds")
        }
        if let reason { try Validate.text(reason, field: .member("reason"), bytesMax: Limits.reasonBytesMax) }
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
    }

    package var idempotency: IdempotencyKey { .wallet(playerID, kind: .hold, key: idempotencyKey, requestHash: requestHash) }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("hold")
        canonical.append(playerID.text)
        canonical.append(amount)
        canonical.append(currency)
        canonical.append(expiresInSeconds)
        canonical.append(reason)
        canonical.append(metadata?.canonicalText)
        return canonical.sha256Hex()
    }
}

/// Capture (all, or `amount` of it) or release a hold, once.
public struct HoldResolution: LedgerMutation, Equatable {
    public enum Action: Equatable, Sendable {
        case capture(amount: Int64?)
        case release
    }

    public var holdID: String
    public var action: Action
    public var idempotencyKey: String
    public var actor: String
    /// Why, in a person's words (support releasing a hold a player asked about): the
    /// transaction's note.
    public var reason: String?
    /// Who resolves it: `HoldParty(actor:)` (a player token's actor is `player:<id>`).
    public var resolver: HoldParty { HoldParty(actor: actor) }

    public init(holdID: String, action: Action, idempotencyKey: String, actor: String, reason: String? = nil) {
        self.holdID = holdID
        self.action = action
        self.idempotencyKey = idempotencyKey
        self.actor = actor
        self.reason = reason
    }

    package func validate() throws(WalletError) {
        guard holdID.utf8.count == 36, UUID(uuidString: holdID) != nil else { throw .notFound("no hold \(holdID.prefix(64))") }
        if case .capture(let amount?) = action { try Validate.positiveAmount(amount) }
        try Validate.asciiIdentifier(idempotencyKey, field: .idempotencyKey)
        try Validate.visibleText(actor, field: "actor", bytesMax: Limits.identifierBytesMax)
        if let reason { try Validate.text(reason, field: .member("reason"), bytesMax: Limits.reasonBytesMax) }
    }

    /// The key under which the wallet books a hold's expiry itself.
    package static let expiryKeyName = "expiry"

    /// The key of the expiry of hold `holdID`, in the scope of its resolutions: a capture or
    /// release and its expiry exclude each other.
    package static func expiryKey(holdID: String) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("hold_expiry")
        canonical.append(holdID)
        return IdempotencyKey(
            scope: scope(holdID), key: expiryKeyName, requestHash: canonical.sha256Hex(), reusedDetail: "the hold's expiry was booked already")
    }

    private static func scope(_ holdID: String) -> String { "hold_resolution:\(holdID)" }

    /// One scope per hold: whichever key resolved it, only that key replays.
    package var idempotency: IdempotencyKey {
        IdempotencyKey(
            scope: Self.scope(holdID), key: idempotencyKey, requestHash: requestHash,
            reusedDetail: "idempotency key '\(idempotencyKey)' was already used to resolve this hold differently")
    }

    package var requestHash: String {
        var canonical = CanonicalBytes()
        canonical.append("hold_resolution")
        canonical.append(holdID)
        switch action {
        case .capture(let amount):
            canonical.append("capture")
            canonical.append(amount)
        case .release:
            canonical.append("release")
        }
        // Only when given, so that the requests of resolutions made before reasons existed
        // hash as they did and still replay.
        if let reason { canonical.append(reason) }
        return canonical.sha256Hex()
    }
}
