/// Who owns a ledger account: a player's wallet, or one of the ledger's own accounts where
/// every credit comes from and every debit goes to. Accounts are stored under `text`; this type
/// is the one place that spells it.
public enum AccountOwner: Sendable, Hashable {
    /// A player's wallet: `player:<id>`.
    case player(String)
    /// One of the ledger's accounts: `@…`.
    case system(SystemAccount)

    /// What a player's account is stored under, before the player's id.
    package static let playerPrefix = "player:"

    /// The account as stored and as postings name it.
    public var text: String {
        switch self {
        case .player(let id): Self.playerPrefix + id
        case .system(let account): account.text
        }
    }

    /// The player whose wallet `text` is, nil for any other account.
    package static func playerID(ofOwner text: String) -> String? {
        // By bytes: a stored owner may continue the prefix with a combining mark, which joins
        // the ':' into one Character, and must still lose exactly the prefix's bytes.
        text.utf8.starts(with: playerPrefix.utf8) ? String(decoding: text.utf8.dropFirst(playerPrefix.utf8.count), as: UTF8.self) : nil
    }
}

/// The ledger's own accounts. Their balances are the other side of every player's: what stores
/// paid for, what was spent, given, adjusted, refunded, held, or expired.
public enum SystemAccount: Sendable, Hashable {
    /// Credits bought on a store (`@store:apple`): negative, what the store's players were credited.
    case store(String)
    /// Credits spent, and holds captured.
    case spend
    /// Credits held until a hold is captured, released or expired.
    case holds
    /// Bonus credits given away.
    case bonuses
    /// Support's corrections.
    case adjustments
    /// Credits taken back by refunds.
    case refunds
    /// Credits that expired unspent (breakage).
    case expired
    /// The other side of an entitlement change, which moves no credits: always zero.
    case entitlements

    public var text: String {
        switch self {
        case .store(let store): "@store:\(store)"
        case .spend: "@spend"
        case .holds: "@holds"
        case .bonuses: "@bonuses"
        case .adjustments: "@adjustments"
        case .refunds: "@refunds"
        case .expired: "@expired"
        case .entitlements: "@entitlements"
        }
    }
}
