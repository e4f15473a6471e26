import HTTPTypes
import WalletCore

/// The one place where a ledger error becomes an HTTP answer.
extension WalletError {
    var apiError: APIError {
        let status: HTTPResponse.Status = switch self {
        case .invalidRequest: .badRequest
        case .insufficientFunds, .idempotencyKeyReused, .alreadyRefunded, .holdResolved, .tooManyLots, .purchasePending: .conflict
        case .forbidden: .forbidden
        case .unknownProduct, .unknownCurrency, .purchaseInvalid, .captureExceedsHold: .unprocessableContent
        case .notConfigured: .notImplemented
        case .notFound: .notFound
        // The database file is not ours or too new: the service cannot work until an operator acts.
        // A ledger that breaks its own rules: retrying will not help, so no 503.
        case .unsupportedDatabase, .corrupt: .internalServerError
        // Busy, full or failing storage, or a full write queue: nothing was written and the
        // client may retry.
        case .storage, .overloaded, .storeUnavailable: .serviceUnavailable
        }
        var headers: HTTPFields = [:]
        if status == .serviceUnavailable { headers[.retryAfter] = "1" }
        return APIError(self, status: status, headers: headers)
    }
}
