/// Every failure a ledger operation reports to its caller.
///
/// Each case has a stable machine `code` shared by the API and the CLI, and a `detail` a person
/// can act on. A thrown `WalletError` always means the operation changed nothing.
public enum WalletError: Error, Equatable, Sendable {
    /// The request is malformed or breaks a limit (empty id, zero amount, key too long, ...).
    /// `field` names the request member at fault (a body member or query parameter, as the API
    /// spells it) when the error concerns one, so that a client can show it beside its input.
    case invalidRequest(String, field: String? = nil)
    /// The spend or adjustment would take the balance below zero; carries the current balance.
    case insufficientFunds(balance: Int64, currency: String)
    /// The idempotency key was already used for a different request.
    case idempotencyKeyReused(String)
    /// The product is not in the catalog, is inactive, or is not sold on that store.
    case unknownProduct(String)
    /// The currency code is well formed but no product or account uses it.
    case unknownCurrency(String)
    /// The thing the request names does not exist (a purchase to refund, ...).
    case notFound(String)
    /// The database file was written by another program or a newer version of the wallet.
    case unsupportedDatabase(String)
    /// The storage layer failed (disk full, I/O error, locked for too long, the database server
    /// unreachable). Nothing was written; the same request may succeed later.
    case storage(String)
    /// The stored ledger breaks its own rules (a row the wallet cannot read, balances that
    /// disagree with their postings): retrying will not help, an operator must run `wallet
    /// verify` and look. Nothing was written.
    case corrupt(String)
    /// The write queue is full; nothing was written and the caller should retry shortly.
    case overloaded(String)
    /// The purchase is already refunded by at least the share asked for: nothing more to take.
    case alreadyRefunded(String)
    /// A store's signed purchase failed verification; the detail names the reason.
    case purchaseInvalid(String)
    /// The store holds the purchase as pending (Google Play: a cash payment or a parent's
    /// approval not yet given): nothing was recorded, and the same request may credit later.
    case purchasePending(String)
    /// The feature needs configuration the service does not have (an Apple bundle id, ...).
    case notConfigured(String)
    /// A store's server API could not answer (unreachable, failing, rate limiting, or refusing
    /// the wallet's credentials). Nothing was written; the same request may succeed later.
    case storeUnavailable(String)
    /// The hold was resolved already (`captured`, `released` or `expired`) by another request.
    case holdResolved(status: Hold.Status, detail: String)
    /// A capture asked for more than the hold holds.
    case captureExceedsHold(String)
    /// The caller may not do this to what it names, although it may see it (a player resolving
    /// a hold the game placed on their wallet).
    case forbidden(String)
    /// The wallet holds as many open lots as one wallet may (`Limits.openLotsPerWalletMax`): a
    /// credit that would make another is refused until some are spent or expire.
    case tooManyLots(String)

    /// The stable machine-readable code, identical in API problem documents and CLI errors.
    public var code: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .insufficientFunds: "insufficient_funds"
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .unknownProduct: "unknown_product"
        case .unknownCurrency: "unknown_currency"
        case .notFound: "not_found"
        case .unsupportedDatabase: "unsupported_database"
        case .storage: "storage_error"
        case .corrupt: "ledger_corrupt"
        case .overloaded: "overloaded"
        case .alreadyRefunded: "already_refunded"
        case .purchaseInvalid: "purchase_invalid"
        case .purchasePending: "purchase_pending"
        case .notConfigured: "not_configured"
        case .storeUnavailable: "store_unavailable"
        case .holdResolved(let status, _): "hold_\(status.rawValue)"
        case .captureExceedsHold: "capture_exceeds_hold"
        case .forbidden: "forbidden"
        case .tooManyLots: "too_many_lots"
        }
    }

    /// A sentence for a person: what was wrong and, where it helps, what to do.
    public var detail: String {
        switch self {
        case .invalidRequest(let detail, _), .idempotencyKeyReused(let detail), .unknownProduct(let detail),
            .unknownCurrency(let detail), .notFound(let detail), .unsupportedDatabase(let detail),
            .storage(let detail), .corrupt(let detail), .overloaded(let detail), .purchaseInvalid(let detail), .purchasePending(let detail), .notConfigured(let detail), .alreadyRefunded(let detail),
            .storeUnavailable(let detail), .captureExceedsHold(let detail), .holdResolved(_, let detail), .forbidden(let detail), .tooManyLots(let detail):
            detail
        case .insufficientFunds(let balance, let currency):
            "insufficient funds: the balance is \(balance) \(currency)"
        }
    }
}

extension WalletError {
    /// The request member an `invalidRequest` concerns, if it names one.
    public var field: String? {
        if case .invalidRequest(_, let field) = self { field } else { nil }
    }

    /// This error as about the request member `member`: an `invalidRequest` that names no member
    /// yet gets it; any other error is returned unchanged.
    public func about(_ member: String?) -> WalletError {
        guard case .invalidRequest(let detail, nil) = self, let member else { return self }
        return .invalidRequest(detail, field: member)
    }

    /// Whether this is a rule refusing one request (which changes nothing and leaves other
    /// requests to go on), rather than storage that failed or a ledger that breaks its rules.
    package var isRuleRefusal: Bool {
        switch self {
        case .storage, .corrupt, .unsupportedDatabase, .overloaded: false
        default: true
        }
    }
}

extension WalletError: CustomStringConvertible {
    public var description: String { "\(code): \(detail)" }
}
