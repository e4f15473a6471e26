import Crypto
import Foundation

/// How a store purchase's account token (Apple's `appAccountToken`, Google's
/// `obfuscatedExternalAccountId`) ties the purchase to a player.
public enum AccountTokenBinding: Sendable, Equatable {
    /// The first player credited with a token keeps it: later purchases carrying it credit that
    /// player only. A token that was never used before binds to whoever redeems it first.
    case firstUse
    /// The game sets the token to `AccountToken.derived(namespace:playerID:)`, and every purchase
    /// must carry exactly that value for the player it is credited to: a purchase without a
    /// token, or with any other, credits nothing. Nothing is learned from use, so nothing can be
    /// bound to the wrong player.
    case derived(namespace: UUID)

    /// The token a purchase binds to the ledger (lowercase UUID text), or nil when it carries none;
    /// `text` is the purchase's token as the store signed it.
    /// - Throws: `purchaseInvalid` when the token is not a UUID, is missing or differs from the
    ///   player's derived token (`derived`), or when a player id that is itself a UUID differs
    ///   from it (`firstUse`).
    public func boundToken(_ text: String?, playerID: PlayerID) throws(WalletError) -> String? {
        let token: UUID?
        if let text, !text.isEmpty {
            guard let parsed = UUID(uuidString: text) else { throw .purchaseInvalid("the purchase's account token is not a UUID") }
            token = parsed
        } else {
            token = nil
        }
        switch self {
        case .firstUse:
            if let token, let playerUUID = UUID(uuidString: playerID.text), playerUUID != token {
                throw .purchaseInvalid("the purchase's account token belongs to another player")
            }
        case .derived(let namespace):
            guard let token else {
                throw .purchaseInvalid("the purchase carries no account token; this wallet credits only purchases made with the player's derived token")
            }
            guard token == AccountToken.derived(namespace: namespace, playerID: playerID) else {
                throw .purchaseInvalid("the purchase's account token is not the one derived for this player: it was made for another player")
            }
        }
        return token?.uuidString.lowercased()
    }
}

/// Account tokens derived from player ids, so that a game and the wallet compute the same token
/// without storing or exchanging one.
public enum AccountToken {
    /// The name-based UUID (version 5, RFC 9562 section 5.5) of `playerID`'s UTF-8 bytes in
    /// `namespace`: SHA-1 over the namespace's 16 bytes then the name, its first 16 bytes with
    /// the version set to 5 and the variant to RFC 9562's. The same inputs give the same UUID
    /// everywhere (Python's `uuid.uuid5`, Java's and .NET's implementations of the RFC).
    public static func derived(namespace: UUID, playerID: PlayerID) -> UUID {
        nameBased(namespace: namespace, name: playerID.text)
    }

    /// The name-based UUID (version 5) of `name`'s UTF-8 bytes in `namespace`, for any text, so
    /// that the derivation is tested against other implementations on names no player id may
    /// be (non-ASCII ones).
    package static func nameBased(namespace: UUID, name: String) -> UUID {
        var hash = Insecure.SHA1()
        withUnsafeBytes(of: namespace.uuid) { hash.update(bufferPointer: $0) }
        hash.update(data: Data(name.utf8))
        var bytes = Array(hash.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11], bytes[12],
                bytes[13], bytes[14], bytes[15]
            ))
    }
}

extension AccountToken {
    /// The namespace in which a store account id that is not a UUID becomes one (`text(ofStoreAccountID:)`):
    /// uuid5(NAMESPACE_URL, "creditswallet:google-play:obfuscatedExternalAccountId").
    public static let storeAccountIDNamespace = UUID(uuid: (0x1F, 0xCF, 0xC2, 0x75, 0xFD, 0x73, 0x59, 0x66, 0x83, 0xB7, 0x50, 0x8C, 0x19, 0x15, 0xAF, 0x15))

    /// The account token a store account id binds as. Google Play's `obfuscatedExternalAccountId`
    /// is any text of up to 64 characters, while the ledger binds UUIDs: a UUID (what
    /// `derived(namespace:playerID:)` gives, the form this wallet asks games to set) is taken as
    /// it is, and any other text as its name-based UUID in `storeAccountIDNamespace`, so one id
    /// always binds as one token. Nil for no id.
    public static func text(ofStoreAccountID id: String?) -> String? {
        guard let id, !id.isEmpty else { return nil }
        if let uuid = UUID(uuidString: id) { return uuid.uuidString.lowercased() }
        return nameBased(namespace: storeAccountIDNamespace, name: id).uuidString.lowercased()
    }
}
