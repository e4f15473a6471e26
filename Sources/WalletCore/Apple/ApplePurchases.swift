import Foundation

/// Redeems StoreKit 2 consumable transactions: verifies Apple's signature offline, checks the
/// claims against the configuration, then credits through the ledger's grant, keyed by
/// `("apple", transactionId)` — so a re-delivered transaction answers the original result and
/// one transaction can never credit two players.
public struct ApplePurchases: Sendable {
    public let verifier: AppleSignedDataVerifier
    let ledger: any LedgerStore

    public init(configuration: AppleConfiguration, ledger: any LedgerStore) {
        verifier = AppleSignedDataVerifier(configuration: configuration)
        self.ledger = ledger
    }

    /// Verifies `signedTransaction` and credits `credits × quantity` of its product to the player.
    public func redeem(playerID: String, signedTransaction: String, actor: String) async throws(WalletError) -> MutationResult {
        try PlayerID.validate(playerID)
        let transaction = try await verifiedTransaction(signedTransaction)
        if let token = transaction.appAccountToken, let playerUUID = UUID(uuidString: playerID), UUID(uuidString: token) != playerUUID {
            throw .purchaseInvalid("the transaction's appAccountToken belongs to another player")
        }
        return try await ledger.grant(
            GrantRequest(playerID: playerID, store: "apple", storeTransactionID: transaction.transactionId, productID: transaction.productId,
                         quantity: transaction.quantity, actor: actor))
    }

    /// The transaction, once its signature and every claim check out.
    public func verifiedTransaction(_ signedTransaction: String) async throws(WalletError) -> AppleTransaction {
        let transaction = try await verifier.verify(signedTransaction, as: AppleTransaction.self) { $0.signedDate }
        let configuration = verifier.configuration
        guard transaction.bundleId == configuration.bundleID else { throw .purchaseInvalid("bundle id mismatch: \(transaction.bundleId.prefix(100))") }
        guard let environment = AppleConfiguration.Environment(rawValue: transaction.environment), configuration.environments.contains(environment) else {
            throw .purchaseInvalid("the \(transaction.environment.prefix(40)) environment is not accepted by this wallet")
        }
        guard transaction.type == "Consumable" else { throw .purchaseInvalid("the product type is \(transaction.type.prefix(40)), not Consumable") }
        guard transaction.revocationDate == nil else { throw .purchaseInvalid("the transaction was revoked (refunded)") }
        guard transaction.quantity >= 1 else { throw .purchaseInvalid("the quantity must be at least 1") }
        return transaction
    }
}
