import WalletCore
import Foundation

/// Redeems StoreKit 2 consumable transactions: verifies Apple's signature offline, checks the
/// claims against the configuration, then credits through the ledger's grant, keyed by
/// `("apple", transactionId)` — so a re-delivered transaction answers the original result and
/// one transaction can never credit two players.
public struct ApplePurchases: Sendable {
    public let verifier: AppleSignedDataVerifier
    let ledger: any LedgerWriting & LedgerReading
    /// The App Store Server API, for what needs Apple's answer (StoreKit 1 receipts, order
    /// lookups); nil when no API key is configured.
    public let api: AppStoreServerAPI?

    public init(configuration: AppleConfiguration, ledger: any LedgerWriting & LedgerReading, api: AppStoreServerAPI? = nil) {
        verifier = AppleSignedDataVerifier(configuration: configuration)
        self.ledger = ledger
        self.api = api
    }

    /// Verifies `signedTransaction` and credits `credits × quantity` of its product to the player.
    public func redeem(playerID: PlayerID, signedTransaction: String, actor: String) async throws(WalletError) -> MutationResult {
        let transaction = try await verifiedTransaction(signedTransaction)
        return try await ledger.grant(try grantRequest(for: transaction, playerID: playerID, actor: actor))
    }

    /// The ledger's grant of an accepted transaction: keyed by its transaction id, or for a
    /// non-consumable by its original transaction id (a restore carries a new id of the same
    /// purchase), with the type Apple states and its purchase date. Every Apple credit (StoreKit
    /// 2, receipts, restores, order credits) is made here.
    func grantRequest(for transaction: AppleTransaction, playerID: PlayerID, actor: String) throws(WalletError) -> GrantRequest {
        let type = try ProductType(appleType: transaction.type)
        let purchasedAt = try transaction.purchaseDate.map { milliseconds throws(WalletError) in try Timestamp.purchaseDate(milliseconds: milliseconds, store: "Apple") }
        return GrantRequest(
            playerID: playerID, store: "apple", storeTransactionID: Self.ledgerKey(of: transaction, type: type), productID: transaction.productId,
            quantity: transaction.quantity, actor: actor, accountToken: try accountToken(of: transaction, playerID: playerID), productType: type,
            purchasedAt: purchasedAt)
    }

    /// The store transaction id the ledger keys a transaction by, whatever its type: a refund
    /// of a non-consumable names the purchase the ledger holds, whichever of its transactions
    /// Apple signed.
    static func ledgerKey(_ transaction: AppleTransaction) -> String {
        (try? ProductType(appleType: transaction.type)).map { ledgerKey(of: transaction, type: $0) } ?? transaction.transactionId
    }

    /// The store transaction id the ledger keys a transaction by.
    static func ledgerKey(of transaction: AppleTransaction, type: ProductType) -> String {
        type.isKeyedByOriginalTransaction ? transaction.originalTransactionId ?? transaction.transactionId : transaction.transactionId
    }

    /// The transaction's `appAccountToken` in lowercase, which the ledger binds to the player it
    /// credits, once it passes the configured binding (`AccountTokenBinding`): every Apple credit
    /// (StoreKit 2, receipts, order credits) goes through here.
    func accountToken(of transaction: AppleTransaction, playerID: PlayerID) throws(WalletError) -> String? {
        try verifier.configuration.accountTokenBinding.boundToken(transaction.appAccountToken, playerID: playerID)
    }

    /// The transaction, once its signature and every claim check out.
    public func verifiedTransaction(_ signedTransaction: String) async throws(WalletError) -> AppleTransaction {
        try accepted(try await verifier.verify(signedTransaction, as: AppleTransaction.self) { $0.signedDate })
    }

    /// The transaction, signed by Apple, once its claims check out for crediting.
    func accepted(_ transaction: AppleTransaction) throws(WalletError) -> AppleTransaction {
        let configuration = verifier.configuration
        guard transaction.bundleId == configuration.bundleID else { throw .purchaseInvalid("bundle id mismatch: \(transaction.bundleId.prefix(100))") }
        guard let environment = AppleConfiguration.Environment(rawValue: transaction.environment), configuration.environments.contains(environment) else {
            throw .purchaseInvalid("the \(transaction.environment.prefix(40)) environment is not accepted by this wallet")
        }
        _ = try ProductType(appleType: transaction.type)
        guard transaction.revocationDate == nil else { throw .purchaseInvalid("the transaction was revoked (refunded)") }
        guard transaction.quantity >= 1 else { throw .purchaseInvalid("the quantity must be at least 1") }
        return transaction
    }

    /// Applies an App Store Server Notification V2 once: verifies `signedPayload` and its
    /// `signedTransactionInfo`, then refunds (`REFUND`, `revocationPercentage` when present),
    /// re-credits (`REFUND_REVERSED`), records the share already spent (`CONSUMPTION_REQUEST`),
    /// or only records it (`TEST` and every other type).
    public func handleNotification(signedPayload: String) async throws(WalletError) -> NotificationOutcome {
        let configuration = verifier.configuration
        let notification = try await verifier.verify(signedPayload, as: AppleNotification.self) { $0.signedDate }
        if let bundleID = notification.data?.bundleId, bundleID != configuration.bundleID {
            throw .purchaseInvalid("bundle id mismatch: \(bundleID.prefix(100))")
        }
        if let name = notification.data?.environment {
            guard let environment = AppleConfiguration.Environment(rawValue: name), configuration.environments.contains(environment) else {
                throw .purchaseInvalid("the \(name.prefix(40)) environment is not accepted by this wallet")
            }
        }
        var transaction: AppleTransaction?
        if let signedTransaction = notification.data?.signedTransactionInfo {
            let verified = try await verifier.verify(signedTransaction, as: AppleTransaction.self) { $0.signedDate }
            guard verified.bundleId == configuration.bundleID else { throw .purchaseInvalid("bundle id mismatch: \(verified.bundleId.prefix(100))") }
            // The transaction's own environment counts, whether or not the outer data names one.
            guard let environment = AppleConfiguration.Environment(rawValue: verified.environment), configuration.environments.contains(environment) else {
                throw .purchaseInvalid("the \(verified.environment.prefix(40)) environment is not accepted by this wallet")
            }
            transaction = verified
        }
        let effect: StoreNotification.Effect
        switch notification.notificationType {
        case "REFUND":
            let share = transaction?.revocationPercentage ?? Limits.refundShareMax
            do {
                try Validate.refundShare(share)
                effect = .refund(shareMillipercent: share, policy: configuration.refundPolicy)
            } catch {
                effect = .refuse(reason: "revocationPercentage \(share) is outside 1...\(Limits.refundShareMax)")
            }
        case "REFUND_REVERSED": effect = .refundReversal
        case "CONSUMPTION_REQUEST": effect = .consumptionRequest
        default: effect = .none
        }
        if case .refuse = effect {} else if effect != .none, transaction == nil {
            throw .purchaseInvalid("a \(notification.notificationType) notification must carry signedTransactionInfo")
        }
        // Answered only when the operator said so, stating the customer's consent.
        var reply: ConsumptionReplyRequest?
        if let policy = configuration.consumptionReplies, let transaction, effect == .consumptionRequest {
            reply = ConsumptionReplyRequest(
                environment: transaction.environment, sampleContentProvided: policy.sampleContentProvided, refundPreference: policy.refundPreference,
                deadline: Date(timeIntervalSince1970: Double(notification.signedDate) / 1_000 + ConsumptionReplyPolicy.deadline))
        }
        do {
            return try await ledger.recordNotification(
                StoreNotification(
                    notificationUUID: notification.notificationUUID, store: "apple", type: notification.notificationType, subtype: notification.subtype,
                    storeTransactionID: transaction.map(Self.ledgerKey), effect: effect, reportedAt: notification.signedDate, actor: "apple:notifications",
                    consumptionReply: reply))
        } catch .invalidRequest(let reason, _) {
            // A signed payload is refused one way: 422 purchase_invalid with the reason.
            throw .purchaseInvalid(reason)
        }
    }
}

/// An App Store Server Notification V2 as Apple signs it (`ResponseBodyV2DecodedPayload`).
struct AppleNotification: Decodable {
    var notificationType: String
    var subtype: String?
    var notificationUUID: String
    var signedDate: Int64
    var data: Data?

    struct Data: Decodable {
        var bundleId: String?
        var environment: String?
        var signedTransactionInfo: String?
    }
}
