import HTTPTypes
import WalletCore

/// The one place where a ledger error becomes an HTTP answer.
extension WalletError {
    var apiError: APIError {
        let status: HTTPResponse.Status = switch self {
        case .invalidRequest: .badRequest
        case .insufficientFunds, .idempotencyKeyReused: .conflict
        case .unknownProduct, .unknownCurrency: .unprocessableContent
        case .notFound: .notFound
        // The database file is not ours or too new: the service cannot work until an operator acts.
        case .unsupportedDatabase: .internalServerError
        // Busy, full or failing storage: nothing was written and the client may retry.
        case .storage: .serviceUnavailable
        }
        var headers: HTTPFields = [:]
        if case .storage = self { headers[.retryAfter] = "1" }
        return APIError(status: status, code: code, detail: detail, headers: headers)
    }
}
