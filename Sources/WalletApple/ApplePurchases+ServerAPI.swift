import Foundation
import WalletCore

/// What needs Apple's App Store Server API: StoreKit 1 receipts and order lookups. Whatever the
/// API answers is verified as a StoreKit 2 transaction is (signature, chain, bundle,
/// environment, type) before it is credited or shown as Apple's.
extension ApplePurchases {
    /// Credits a StoreKit 1 app receipt's purchases: verifies the receipt's signature and chain
    /// to Apple's root (a receipt that does not verify is `invalid_request`, and Apple is not
    /// asked), reads the transaction ids it names, asks Apple for that customer's consumable
    /// history, verifies each signed transaction, and credits to `playerID`, in one write, every
    /// one the receipt names that was not yet credited.
    ///
    /// Only what the receipt names: StoreKit 1 keeps a consumable in the receipt until the app
    /// finishes it, so the purchases waiting to be credited are the ones named. Who may redeem a
    /// genuine receipt is the caller's to prove (a player token, a service key); an
    /// `appAccountToken` ties each purchase to its player whatever the receipt says, bound on
    /// first use or derived from the player id (`AccountTokenBinding`).
    public func redeemReceipt(playerID: PlayerID, receipt: String, actor: String) async throws(WalletError) -> ReceiptRedemption {
        let named = try await AppReceipt.verifiedTransactionIDs(receipt: receipt, trustedRoots: verifier.configuration.receiptRoots)
        guard let transactionID = named.first else {
            throw .invalidRequest("the receipt holds no in-app purchase, so there is nothing to credit")
        }
        let api = try requireAPI("StoreKit 1 receipts")
        let wanted = Set(named)
        let history = try await api.consumableHistory(transactionID: transactionID, environments: verifier.configuration.environments, wanted: wanted)
        var verified: [AppleTransaction] = []
        var refused: [StoreTransactionRefusal] = []
        for signed in history.signedTransactions {
            switch await verify(signed) {
            case .success(let transaction) where wanted.contains(transaction.transactionId): verified.append(transaction)
            case .success: continue
            case .failure(let refusal) where refusal.storeTransactionID.map(wanted.contains) ?? true: refused.append(refusal)
            case .failure: continue
            }
        }
        let outcome = try await credit(verified, to: playerID, actor: actor)
        return ReceiptRedemption(
            playerID: playerID.text, environment: history.environment.rawValue, credited: outcome.now, alreadyCredited: outcome.before,
            refused: refused + outcome.refused, complete: true)
    }

    /// The transactions of an order id (from Apple's emailed receipt), each with whether and to
    /// whom it was credited; with `creditTo`, those not yet credited are credited to that
    /// player in one write.
    public func lookUpOrder(orderID: String, creditTo: PlayerID?, actor: String) async throws(WalletError) -> OrderLookupResult {
        try AppStoreServerAPI.validatePathSegment(orderID, field: "the order id")
        let api = try requireAPI("order lookups")
        var entries: [OrderLookupResult.Entry] = []
        var uncredited: [AppleTransaction] = []
        // The ledger's key of each entry not credited yet: what the credits below answer by.
        var ledgerKeys: [Int: String] = [:]
        for signed in try await api.lookUpOrder(orderID: orderID) {
            switch await verify(signed) {
            case .failure(let refusal):
                entries.append(.init(storeTransactionID: refusal.storeTransactionID, productID: nil, status: "refused", credit: nil, refusal: refusal))
            case .success(let transaction):
                // Found by the ledger's key: a non-consumable is held by its original transaction id.
                let key = Self.ledgerKey(of: transaction, type: (try? ProductType(appleType: transaction.type)) ?? .consumable)
                if let purchase = try await ledger.purchase(store: "apple", storeTransactionID: key) {
                    entries.append(.init(storeTransactionID: transaction.transactionId, productID: transaction.productId, status: "credited", credit: .init(purchase), refusal: nil))
                } else {
                    uncredited.append(transaction)
                    ledgerKeys[entries.count] = key
                    entries.append(.init(storeTransactionID: transaction.transactionId, productID: transaction.productId, status: "not_credited", credit: nil, refusal: nil))
                }
            }
        }
        if let creditTo, !uncredited.isEmpty {
            let outcome = try await credit(uncredited, to: creditTo, actor: actor)
            for index in entries.indices where entries[index].status == "not_credited" {
                let id = ledgerKeys[index]
                if let credit = (outcome.now + outcome.before).first(where: { $0.storeTransactionID == id }) {
                    entries[index].status = outcome.now.contains(credit) ? "credited_now" : "credited"
                    entries[index].credit = credit
                } else if let refusal = outcome.refused.first(where: { $0.storeTransactionID == id }) {
                    entries[index].status = "refused"
                    entries[index].refusal = refusal
                }
            }
        }
        return OrderLookupResult(orderID: orderID, transactions: entries)
    }

    func requireAPI(_ feature: String) throws(WalletError) -> AppStoreServerAPI {
        guard let api else {
            throw .notConfigured(
                "\(feature) need the App Store Server API: configure --apple-issuer-id, --apple-key-id and --apple-private-key (App Store Connect's in-app purchase key)")
        }
        return api
    }

    /// A signed transaction from Apple's API, verified and checked for crediting, or why not.
    func verify(_ signed: String) async -> Result<AppleTransaction, StoreTransactionRefusal> {
        let transaction: AppleTransaction
        do {
            transaction = try await verifier.verify(signed, as: AppleTransaction.self) { $0.signedDate }
        } catch {
            return .failure(StoreTransactionRefusal(storeTransactionID: nil, error))
        }
        do {
            return .success(try accepted(transaction))
        } catch {
            return .failure(StoreTransactionRefusal(storeTransactionID: transaction.transactionId, error))
        }
    }

    /// Credits verified transactions to a player in one write: what was credited now, what had
    /// been credited to this player before, and what was refused (another player's, a product
    /// not in the catalog, a refunded purchase).
    private func credit(
        _ transactions: [AppleTransaction], to playerID: PlayerID, actor: String
    ) async throws(WalletError) -> (now: [StoreTransactionCredit], before: [StoreTransactionCredit], refused: [StoreTransactionRefusal]) {
        var now: [StoreTransactionCredit] = []
        var before: [StoreTransactionCredit] = []
        var refusedUnasked: [StoreTransactionRefusal] = []
        var refusedByLedger: [StoreTransactionRefusal] = []
        for grant in try await grantEach(transactions, to: playerID, actor: actor) {
            switch grant.outcome {
            case .success(let result) where result.replayed: before.append(.init(result.transaction))
            case .success(let result): now.append(.init(result.transaction))
            case .failure(let refusal) where grant.request == nil: refusedUnasked.append(refusal)
            case .failure(let refusal): refusedByLedger.append(refusal)
            }
        }
        return (now, before, refusedUnasked + refusedByLedger)
    }

    /// One verified transaction's grant: the request made of it (nil when the transaction itself
    /// was refused: its type, its date, its account token), and the ledger's result or why not.
    struct TransactionGrant {
        var transaction: AppleTransaction
        var request: GrantRequest?
        var outcome: Result<MutationResult, StoreTransactionRefusal>
    }

    /// Grants verified transactions to a player in one write (`LedgerWriting.grantEach`), each on
    /// its own terms, in the order given. A purchase already granted to another player is
    /// refused as `already_credited_elsewhere`.
    func grantEach(_ transactions: [AppleTransaction], to playerID: PlayerID, actor: String) async throws(WalletError) -> [TransactionGrant] {
        var prepared: [Result<GrantRequest, StoreTransactionRefusal>] = []
        for transaction in transactions {
            do {
                prepared.append(.success(try grantRequest(for: transaction, playerID: playerID, actor: actor)))
            } catch {
                prepared.append(.failure(StoreTransactionRefusal(storeTransactionID: transaction.transactionId, error)))
            }
        }
        let requests = prepared.compactMap { try? $0.get() }
        let outcomes = requests.isEmpty ? [] : try await ledger.grantEach(requests)
        guard outcomes.count == requests.count else { throw .corrupt("the ledger answered \(outcomes.count) grants for \(requests.count) requests") }
        var next = outcomes.makeIterator()
        var grants: [TransactionGrant] = []
        for (transaction, request) in zip(transactions, prepared) {
            switch request {
            case .failure(let refusal):
                grants.append(TransactionGrant(transaction: transaction, request: nil, outcome: .failure(refusal)))
            case .success(let request):
                let outcome: Result<MutationResult, StoreTransactionRefusal> =
                    switch next.next() {
                    case .success(let result)?: .success(result)
                    case .failure(.idempotencyKeyReused)?:
                        .failure(
                            StoreTransactionRefusal(
                                storeTransactionID: request.storeTransactionID, code: "already_credited_elsewhere",
                                detail: "store transaction apple/\(request.storeTransactionID) was already credited to another player"))
                    case .failure(let error)?: .failure(StoreTransactionRefusal(storeTransactionID: request.storeTransactionID, error))
                    case nil: .failure(StoreTransactionRefusal(storeTransactionID: request.storeTransactionID, .corrupt("the ledger left a grant unanswered")))
                    }
                grants.append(TransactionGrant(transaction: transaction, request: request, outcome: outcome))
            }
        }
        return grants
    }
}

/// A store transaction the ledger credited: its purchase transaction, in short.
public struct StoreTransactionCredit: Codable, Sendable, Equatable {
    public var storeTransactionID: String
    public var productID: String
    public var quantity: Int64
    /// Text, as stored: see `LedgerTransaction.playerID`.
    public var playerID: String
    public var amount: Int64
    public var currency: String
    public var seq: Int64
    public var createdAt: String

    init(_ purchase: LedgerTransaction) {
        storeTransactionID = purchase.storeTransactionID ?? ""
        productID = purchase.productID ?? ""
        quantity = purchase.quantity ?? 1
        playerID = purchase.playerID
        amount = purchase.amount
        currency = purchase.currency
        seq = purchase.seq
        createdAt = purchase.createdAt
    }

    enum CodingKeys: String, CodingKey {
        case quantity, amount, currency, seq
        case storeTransactionID = "store_transaction_id"
        case productID = "product_id"
        case playerID = "player_id"
        case createdAt = "created_at"
    }
}

/// A store transaction that was not credited, and why (a `WalletError` code and detail, or
/// `already_credited_elsewhere`). The id is absent when the signature itself did not verify.
public struct StoreTransactionRefusal: Codable, Sendable, Equatable, Error {
    public var storeTransactionID: String?
    public var code: String
    public var detail: String

    init(storeTransactionID: String?, code: String, detail: String) {
        self.storeTransactionID = storeTransactionID
        self.code = code
        self.detail = detail
    }

    init(storeTransactionID: String?, _ error: WalletError) {
        self.init(storeTransactionID: storeTransactionID, code: error.code, detail: error.detail)
    }

    enum CodingKeys: String, CodingKey {
        case code, detail
        case storeTransactionID = "store_transaction_id"
    }
}

/// What a StoreKit 1 receipt credited.
public struct ReceiptRedemption: Codable, Sendable, Equatable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    /// `Production` or `Sandbox`: the environment whose history was read.
    public var environment: String
    /// Credited by this request.
    public var credited: [StoreTransactionCredit]
    /// Credited to this player before (by an earlier receipt, a StoreKit 2 redemption, ...).
    public var alreadyCredited: [StoreTransactionCredit]
    public var refused: [StoreTransactionRefusal]
    /// Always true: a customer's history longer than the wallet reads for one receipt
    /// (`AppStoreServerAPI.historyPagesMax`) is refused with `store_unavailable` rather than read
    /// in part. Kept so that answers keep their documented shape.
    public var complete: Bool

    enum CodingKeys: String, CodingKey {
        case environment, credited, refused, complete
        case playerID = "player_id"
        case alreadyCredited = "already_credited"
    }
}

/// The transactions of an App Store order, as support sees them.
public struct OrderLookupResult: Codable, Sendable, Equatable {
    public var orderID: String
    public var transactions: [Entry]

    public struct Entry: Codable, Sendable, Equatable {
        public var storeTransactionID: String?
        public var productID: String?
        /// `credited` (before), `credited_now`, `not_credited` or `refused`.
        public var status: String
        public var credit: StoreTransactionCredit?
        public var refusal: StoreTransactionRefusal?

        enum CodingKeys: String, CodingKey {
            case status, credit, refusal
            case storeTransactionID = "store_transaction_id"
            case productID = "product_id"
        }
    }

    enum CodingKeys: String, CodingKey {
        case transactions
        case orderID = "order_id"
    }
}

extension ApplePurchases {
    /// The most notification history pages read in one catch-up (20 notifications each).
    public static let catchUpPagesMax = 1_000

    /// Applies every notification Apple sent (or tried to send) between `since` and `until`
    /// through the same path as a live one: idempotent by `notificationUUID`, so notifications
    /// already applied are only counted. Reads production, then sandbox when accepted.
    public func catchUp(since: Date, until: Date, onlyFailures: Bool) async throws(WalletError) -> CatchUpReport {
        let api = try requireAPI("notification catch-up")
        guard since < until else { throw .invalidRequest("the catch-up period must start before it ends") }
        var report = CatchUpReport()
        for environment in [AppleConfiguration.Environment.production, .sandbox] where verifier.configuration.environments.contains(environment) {
            var token: String?
            var pages = 0
            repeat {
                pages += 1
                guard pages <= Self.catchUpPagesMax else {
                    throw .storeUnavailable("Apple's notification history for \(environment.rawValue) runs past \(Self.catchUpPagesMax) pages; catch up a shorter period")
                }
                let page = try await api.notificationHistory(environment: environment, start: since, end: until, onlyFailures: onlyFailures, paginationToken: token)
                for payload in page.signedPayloads {
                    report.notifications += 1
                    do {
                        let outcome = try await handleNotification(signedPayload: payload)
                        if outcome.replayed { report.alreadyApplied += 1 } else { report.applied += 1 }
                        report.outcomes[outcome.outcome.rawValue, default: 0] += 1
                    } catch where error.isRuleRefusal {
                        report.refused.append(StoreTransactionRefusal(storeTransactionID: nil, error))
                    }
                }
                token = page.nextPaginationToken
            } while token != nil
        }
        return report
    }
}

/// What a notification catch-up did.
public struct CatchUpReport: Codable, Sendable, Equatable {
    /// Notifications Apple listed.
    public var notifications = 0
    /// Applied now for the first time.
    public var applied = 0
    /// Applied before (live, or by an earlier catch-up): nothing changed.
    public var alreadyApplied = 0
    /// How many ended each way (`refunded`, `consumption_recorded`, `recorded`, ...).
    public var outcomes: [String: Int] = [:]
    /// Notifications that failed verification or a rule, each with why.
    public var refused: [StoreTransactionRefusal] = []

    enum CodingKeys: String, CodingKey {
        case notifications, applied, outcomes, refused
        case alreadyApplied = "already_applied"
    }
}
