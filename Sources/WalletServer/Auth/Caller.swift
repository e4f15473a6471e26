import HTTPTypes
import Hummingbird
import Synchronization
import WalletCore

/// Who is calling: an API key with its role, or a player with a verified token.
public enum Caller: Sendable, Equatable {
    case key(APIKey)
    /// A player, by an id that follows the `PlayerID` syntax and compares by its bytes.
    case player(id: PlayerID)

    /// What the ledger records as the transaction's actor.
    var actor: String {
        switch self {
        case .key(let key): key.id
        case .player(let id): AccountOwner.player(id.text).text
        }
    }
}

/// Who may call a route: key roles, and whether a player may, for their own wallet only.
public struct Access: Sendable, Equatable {
    public var roles: Set<KeyRole>
    public var playerOwnWallet: Bool
    /// The wallet is named in the request body, not the path: the handler checks a player's
    /// token against it with `requireOwnWallet` once the body is read.
    public var playerWalletInBody: Bool
    /// Open routes take no credentials at all.
    public var isOpen: Bool

    public static let open = Access(roles: [], playerOwnWallet: false, playerWalletInBody: false, isOpen: true)

    public static func roles(_ roles: Set<KeyRole>, playerOwnWallet: Bool = false, playerWalletInBody: Bool = false) -> Access {
        Access(roles: roles, playerOwnWallet: playerOwnWallet || playerWalletInBody, playerWalletInBody: playerWalletInBody, isOpen: false)
    }

    /// Refuses a player token that names another wallet than `playerID`; keys pass.
    static func requireOwnWallet(_ caller: Caller, playerID: PlayerID) throws(APIError) {
        if case .player(let id) = caller, id != playerID { throw .forbidden("a player token may only act on its own wallet") }
    }

    /// Refuses `caller` unless this access admits it; `walletPlayerID` is the wallet the
    /// route acts on, if any.
    func check(_ caller: Caller, walletPlayerID: PlayerID?) throws(APIError) {
        switch caller {
        case .key(let key):
            guard roles.contains(key.role) else {
                throw .forbidden("a \(key.role.rawValue) key may not call this route")
            }
        case .player(let id):
            guard playerOwnWallet else { throw .forbidden("player tokens may not call this route") }
            if playerWalletInBody { return }
            // `PlayerID` compares bytes: `\u{212A}ate` is not `Kate` (and is refused anyway).
            guard let walletPlayerID, walletPlayerID == id else {
                throw .forbidden("a player token may only act on its own wallet")
            }
        }
    }
}

/// Turns the `Authorization` header into a `Caller`.
struct Authenticator: Sendable {
    let store: any APIKeyStore
    let playerTokens: PlayerTokenVerifier?
    /// Valid API keys seen in the last second: a busy server reads each key from the database
    /// about once a second instead of on every request.
    var keys = APIKeyCache()

    func authenticate(_ request: Request) async throws -> Caller {
        guard let header = request.headers.value(.authorization) else {
            throw APIError.unauthorized("send an API key or a player token as 'Authorization: Bearer <credential>'")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw APIError.unauthorized("the Authorization header must be 'Bearer <credential>'")
        }
        let credential = String(parts[1])
        // A JWT has three dot-separated parts; API keys have none.
        if credential.utf8.contains(UInt8(ascii: ".")) {
            guard let playerTokens else { throw APIError.unauthorized("player tokens are not enabled on this server") }
            return .player(id: try playerTokens.verify(credential))
        }
        if let key = keys.key(for: credential) { return .key(key) }
        guard let key = try await store.authenticate(secret: credential) else {
            throw APIError.unauthorized("unknown or revoked API key")
        }
        keys.remember(key, for: credential)
        return .key(key)
    }
}

/// API keys that authenticated recently, by secret, each for `lifetime`. Only valid keys are
/// kept (an unknown secret is looked up every time, so guessing fills nothing), at most
/// `capacity` of them. A key revoked with `wallet keys revoke` is refused once its entry
/// expires: within `lifetime`.
final class APIKeyCache: Sendable {
    static let capacity = 1_024

    let lifetime: Duration
    /// By the secret's exact bytes: a canonically equivalent spelling is another secret.
    private let entries = Mutex<[Identifier: (key: APIKey, expires: ContinuousClock.Instant)]>([:])

    init(lifetime: Duration = .seconds(1)) {
        self.lifetime = lifetime
    }

    /// Keys held now, expired ones included until the next clean-up.
    var count: Int { entries.withLock { $0.count } }

    func key(for secret: String) -> APIKey? {
        let now = ContinuousClock.now
        let secret = Identifier(secret)
        return entries.withLock { entries in
            guard let entry = entries[secret] else { return nil }
            guard entry.expires > now else {
                entries[secret] = nil
                return nil
            }
            return entry.key
        }
    }

    func remember(_ key: APIKey, for secret: String) {
        let now = ContinuousClock.now
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries = entries.filter { $0.value.expires > now } }
            guard entries.count < Self.capacity else { return }
            entries[Identifier(secret)] = (key, now + lifetime)
        }
    }
}
