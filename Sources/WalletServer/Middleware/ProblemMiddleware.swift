import Foundation
import Hummingbird
import Logging
import NIOCore
import WalletCore

/// Turns every error into a problem document, so no route ever answers an empty 500, and logs
/// each request once with its outcome. Unexpected errors are logged with the request id and
/// answered as `internal_error`.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            let apiError = self.apiError(for: error, request: request, context: context)
            response = try apiError.response(from: request, context: context)
        }
        let elapsed = ContinuousClock.now - started
        context.log(
            .info, "request",
            metadata: [
                "method": .string(request.method.rawValue), "route": .string(context.endpointPath ?? "unmatched"),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .string(Self.milliseconds(elapsed)),
            ])
        return response
    }

    /// `duration` in milliseconds to the microsecond, `0.050` rather than `0.050485999999999996`:
    /// finer digits are noise in a log line.
    static func milliseconds(_ duration: Duration) -> String {
        let microseconds = max(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000, 0)
        let fraction = String(microseconds % 1_000)
        return "\(microseconds / 1_000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    private func apiError(for error: any Error, request: Request, context: Context) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as WalletError:
            switch error {
            case .storage: context.log(.error, "storage failure", metadata: ["error": .string(error.detail)])
            case .corrupt: context.log(.critical, "the ledger breaks its own rules", metadata: ["error": .string(error.detail)])
            default: break
            }
            return error.apiError
        case let error as DecodingError:
            return .invalidRequest(Self.describe(error))
        case is NIOTooManyBytesError:
            return .payloadTooLarge()
        case let error as HTTPError:
            return map(error, request: request, context: context)
        default:
            context.log(.error, "unexpected error", metadata: ["error": .string(String(reflecting: error))])
            return .internalError(requestID: context.requestID)
        }
    }

    private func map(_ error: HTTPError, request: Request, context: Context) -> APIError {
        switch error.status {
        case .notFound:
            let path = request.uri.path
            let allowed = routes.methods(matching: path)
            if !allowed.isEmpty {
                let allow = allowed.map(\.rawValue).sorted().joined(separator: ", ")
                return APIError(status: .methodNotAllowed, code: .methodNotAllowed, detail: "\(request.method.rawValue) is not allowed here; use \(allow)", headers: [.allow: allow])
            }
            return .notFound("no route for \(request.method.rawValue) \(path)")
        case .contentTooLarge:
            return .payloadTooLarge()
        default:
            if error.status.code >= 500 {
                context.log(.error, "server error", metadata: ["error": .string(String(reflecting: error))])
                return .internalError(requestID: context.requestID)
            }
            return APIError(status: error.status, code: .invalidRequest, detail: error.body ?? error.status.reasonPhrase)
        }
    }

    /// A sentence naming the field, for the clients' developers.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "the body" : "'\(path)'"
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "the field '\(key.stringValue)' is required\(parent)"
        case .typeMismatch(let type, let context):
            return "\(path(context)) must be \(Self.typeName(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context)) must be \(Self.typeName(type)), not null"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(path(context)) is invalid: \(context.debugDescription)"
        @unknown default:
            return "the body could not be decoded"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is Int64.Type, is Int.Type: "an integer"
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        default: "\(type)"
        }
    }
}
