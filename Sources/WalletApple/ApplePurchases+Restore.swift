import Foundation
import WalletCore

/// Restoring purchases: what a player bought on another device, or before reinstalling, granted
/// to them once. Every transaction is verified as a redemption verifies it, and granted through
/// the same grant (`grantRequest(for:playerID:actor:)`), so a purchase granted before answers its
/// original result and one granted to another player is refused.
extension ApplePurchases {
    /// The most StoreKit 2 transactions one restore takes (`Transaction.all` of one device).
    public static let restoreTransactionsMax = 100

    /// Grants the player every purchase of theirs not yet granted, in one write.
    ///
    /// With `signedTransactions` (StoreKit 2, 1 to `restoreTransactionsMax`), each is verified
    /// offline. With a StoreKit 1 `receipt`, the receipt is verified, then Apple is asked for the
    /// customer's non-consumables and non-renewing passes (all of them: a receipt need not name
    /// them) and for the consumables the receipt names (which StoreKit 1 keeps in it until the
    /// app finishes them). One of the two, not both.
    ///
    /// A non-consumable is granted once whatever its transaction id (it is keyed by its original
    /// transaction), so restoring twice grants nothing the second time.
    public func restore(playerID: PlayerID, receipt: String?, signedTransactions: [String]?, actor: String) async throws(WalletError) -> RestoreResult {
        switch (receipt, signedTransactions) {
        case (let receipt?, nil): return try await restore(playerID: playerID, receipt: receipt, actor: actor)
        case (nil, let signed?): return try await restore(playerID: playerID, signedTransactions: signed, actor: actor)
        default: throw .invalidRequest("a restore takes either a receipt or signed_transactions, not both and not neither")
        }
    }

    private func restore(playerID: PlayerID, signedTransactions: [String], actor: String) async throws(WalletError) -> RestoreResult {
        guard (1...Self.restoreTransactionsMax).contains(signedTransactions.count) else {
            throw .invalidRequest("signed_transactions must hold 1 to \(Self.restoreTransactionsMax) transactions, not \(signedTransactions.count)")
        }
        var verified: [AppleTransaction] = []
        var refused: [RestoreResult.Refusal] = []
        for signed in signedTransactions {
            switch await verify(signed) {
            case .success(let transaction): verified.append(transaction)
            case .failure(let refusal): refused.append(RestoreResult.Refusal(refusal, productID: nil))
            }
        }
        return try await restored(verified, refused: refused, playerID: playerID, environment: nil, actor: actor)
    }

    private func restore(playerID: PlayerID, receipt: String, actor: String) async throws(WalletError) -> RestoreResult {
        let named = try await AppReceipt.verifiedTransactionIDs(receipt: receipt, trustedRoots: verifier.configuration.receiptRoots)
        guard let transactionID = named.first else {
            throw .invalidRequest("the receipt holds no in-app purchase, so there is nothing to restore")
        }
        let api = try requireAPI("Restoring StoreKit 1 receipts")
        let environments = verifier.configuration.environments
        let kept = try await api.history(transactionID: transactionID, productTypes: [.nonConsumable, .nonRenewable], environments: environments)
        // The receipt's non-consumables were just read: paging for them among consumables would run to the end.
        let seen = Set(kept.signedTransactions.compactMap(AppStoreServerAPI.unverifiedTransactionID))
        let consumables = try await api.consumableHistory(transactionID: transactionID, environments: environments, wanted: Set(named).subtracting(seen))
        let wanted = Set(named)
        var verified: [AppleTransaction] = []
        var refused: [RestoreResult.Refusal] = []
        for (signed, keptKind) in kept.signedTransactions.map({ ($0, true) }) + consumables.signedTransactions.map({ ($0, false) }) {
            switch await verify(signed) {
            // A consumable only when the receipt names it, wherever Apple listed it.
            case .success(let transaction) where wanted.contains(transaction.transactionId) || Self.isKept(transaction): verified.append(transaction)
            case .success: continue
            case .failure(let refusal) where keptKind || (refusal.storeTransactionID.map(wanted.contains) ?? true):
                refused.append(RestoreResult.Refusal(refusal, productID: nil))
            case .failure: continue
            }
        }
        return try await restored(verified, refused: refused, playerID: playerID, environment: kept.environment.rawValue, actor: actor)
    }

    /// A non-consumable or a pass: what a customer keeps, so what a restore grants unasked.
    private static func isKept(_ transaction: AppleTransaction) -> Bool {
        guard let type = try? ProductType(appleType: transaction.type) else { return false }
        return type != .consumable
    }

    /// Grants `transactions` in one write, each purchase once (a non-consumable restored under a
    /// new transaction id is its original purchase: the earliest is granted), oldest first, and
    /// reports each with the state its entitlement is left in.
    private func restored(
        _ transactions: [AppleTransaction], refused: [RestoreResult.Refusal], playerID: PlayerID, environment: String?, actor: String
    ) async throws(WalletError) -> RestoreResult {
        var byKey: [String: AppleTransaction] = [:]
        for transaction in transactions {
            let key = Self.ledgerKey(transaction)
            if let held = byKey[key], (held.purchaseDate ?? .max, held.transactionId) <= (transaction.purchaseDate ?? .max, transaction.transactionId) { continue }
            byKey[key] = transaction
        }
        let unique = byKey.values.sorted { ($0.purchaseDate ?? .max, $0.transactionId) < ($1.purchaseDate ?? .max, $1.transactionId) }
        let grants = try await grantEach(unique, to: playerID, actor: actor)
        // The write applies the grants in order, so the last one of an entitlement saw its final state.
        var latest: [String: Entitlement] = [:]
        for grant in grants {
            if case .success(let result) = grant.outcome, let entitlement = result.entitlement { latest[entitlement.name] = entitlement }
        }
        var result = RestoreResult(playerID: playerID.text, environment: environment, granted: [], alreadyGranted: [], refused: refused)
        for grant in grants {
            switch grant.outcome {
            case .success(let granted):
                let entry = RestoreResult.Entry(granted.transaction, entitlement: granted.entitlement.flatMap { latest[$0.name] })
                if granted.replayed { result.alreadyGranted.append(entry) } else { result.granted.append(entry) }
            case .failure(let refusal):
                result.refused.append(RestoreResult.Refusal(refusal, productID: grant.transaction.productId))
            }
        }
        return result
    }
}

/// What a restore did: each purchase granted now, granted to this player before, or refused.
public struct RestoreResult: Codable, Sendable, Equatable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    /// `Production` or `Sandbox`: the environment whose history was read (receipts only).
    public var environment: String?
    public var granted: [Entry]
    public var alreadyGranted: [Entry]
    public var refused: [Refusal]

    /// A purchase granted, now or before: its purchase transaction, and for a product with an
    /// entitlement the state the restore left it in.
    public struct Entry: Codable, Sendable, Equatable {
        /// The key the ledger holds it by: a non-consumable's original transaction id.
        public var storeTransactionID: String
        public var productID: String
        public var seq: Int64
        /// Credits granted (zero for an entitlement-only product).
        public var amount: Int64
        public var currency: String
        public var createdAt: String
        public var entitlement: Entitlement?

        init(_ purchase: LedgerTransaction, entitlement: Entitlement?) {
            storeTransactionID = purchase.storeTransactionID ?? ""
            productID = purchase.productID ?? ""
            seq = purchase.seq
            amount = purchase.amount
            currency = purchase.currency
            createdAt = purchase.createdAt
            self.entitlement = entitlement
        }

        enum CodingKeys: String, CodingKey {
            case seq, amount, currency, entitlement
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
            case createdAt = "created_at"
        }
    }

    /// A purchase not granted, and why (a `WalletError` code and detail, or
    /// `already_credited_elsewhere`). The ids are absent when the signature did not verify.
    public struct Refusal: Codable, Sendable, Equatable {
        public var storeTransactionID: String?
        public var productID: String?
        public var code: String
        public var detail: String

        init(_ refusal: StoreTransactionRefusal, productID: String?) {
            storeTransactionID = refusal.storeTransactionID
            self.productID = productID
            code = refusal.code
            detail = refusal.detail
        }

        enum CodingKeys: String, CodingKey {
            case code, detail
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
        }
    }

    enum CodingKeys: String, CodingKey {
        case environment, granted, refused
        case playerID = "player_id"
        case alreadyGranted = "already_granted"
    }
}
