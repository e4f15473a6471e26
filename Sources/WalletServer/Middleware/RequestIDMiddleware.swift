import Foundation
import HTTPTypes
import Hummingbird
import WalletCore

/// Gives every request an id — the client's `X-Request-Id` when it is short visible ASCII, else
/// a fresh one — puts it in the request's log metadata, and returns it on every response.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.requestID = Self.usableID(request.headers[.requestID]) ?? RandomID.uuid()
        context.logger[metadataKey: "request_id"] = .string(context.requestID)
        var response = try await next(request, context)
        response.headers[.requestID] = context.requestID
        return response
    }

    static func usableID(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= ServerLimits.requestIDBytesMax,
            value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else { return nil }
        return value
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
