import Foundation
import HTTPTypes
import Hummingbird
import WalletCore

/// An error as the API answers it: an RFC 9457 problem document with a stable `code`.
///
/// The code is one of the server's own (`Code`) or a ledger error's (`WalletError.code`), and
/// nothing else: `OpenAPITests` derives every code the server can answer from these two and
/// checks that the document lists each one.
public struct APIError: Error, Equatable, HTTPResponseError {
    public var status: HTTPResponse.Status
    public let code: String
    public var detail: String
    /// The request member an `invalid_request` concerns (a body member or query parameter), if
    /// one: the problem document lists it in `errors`.
    public var field: String?
    /// Extra headers, such as `Allow` on 405.
    public var headers: HTTPFields = [:]

    /// The codes the server answers of its own, beside those of `WalletError`. A new one is a
    /// case here, and the OpenAPI document must list it before `OpenAPITests` passes.
    enum Code: String, CaseIterable {
        case invalidRequest = "invalid_request"
        case unauthorized
        case forbidden
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case payloadTooLarge = "payload_too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case rateLimited = "rate_limited"
        case internalError = "internal_error"
    }

    init(status: HTTPResponse.Status, code: Code, detail: String, field: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code.rawValue
        self.detail = detail
        self.field = field
        self.headers = headers
    }

    /// A ledger error, with the status `WalletError.apiError` chose for it.
    init(_ error: WalletError, status: HTTPResponse.Status, headers: HTTPFields = [:]) {
        self.status = status
        self.code = error.code
        self.detail = error.detail
        self.field = error.field
        self.headers = headers
    }

    static func invalidRequest(_ detail: String, field: String? = nil) -> APIError {
        APIError(status: .badRequest, code: .invalidRequest, detail: detail, field: field)
    }
    static func unauthorized(_ detail: String) -> APIError {
        APIError(status: .unauthorized, code: .unauthorized, detail: detail, headers: [.wwwAuthenticate: "Bearer"])
    }
    static func forbidden(_ detail: String) -> APIError { APIError(status: .forbidden, code: .forbidden, detail: detail) }
    static func notFound(_ detail: String) -> APIError { APIError(status: .notFound, code: .notFound, detail: detail) }
    static func payloadTooLarge(bytesMax: Int = ServerLimits.bodyBytesMax) -> APIError {
        APIError(status: .contentTooLarge, code: .payloadTooLarge, detail: "the request body must be at most \(bytesMax) bytes")
    }
    static func internalError(requestID: String) -> APIError {
        APIError(status: .internalServerError, code: .internalError, detail: "an unexpected error occurred; it was logged with request id \(requestID)")
    }

    /// The problem document: `type`, `title`, `status`, `detail`, `code`, and `errors` when the
    /// error concerns a request member.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let problem = Problem(
            type: "urn:creditswallet:problem:\(code)", title: status.reasonPhrase, status: status.code, detail: detail, code: code,
            errors: field.map { [Problem.FieldError(field: $0, detail: detail)] })
        var headers = headers
        headers[.contentType] = "application/problem+json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try JSONBody.encode(problem)))
    }
}

/// RFC 9457 problem details, with the wallet's machine `code`.
struct Problem: Codable, Equatable {
    var type: String
    var title: String
    var status: Int
    var detail: String
    var code: String
    /// The request members at fault, each with what is wrong with it; absent when the error
    /// concerns none. A client shows each beside its input, by `field`, never by reading `detail`.
    var errors: [FieldError]?

    struct FieldError: Codable, Equatable {
        var field: String
        var detail: String
    }
}

/// JSON encoding for response bodies.
enum JSONBody {
    /// The answers sent most (a mutation's, a balance, a history page) write their own bytes
    /// (`JSONWritable`); the rest go through `JSONEncoder`. The bytes are the same either way.
    static func encode<Value: Encodable>(_ value: Value, for audience: Audience = .staff) throws(WalletError) -> ByteBuffer {
        ByteBuffer(bytes: try WalletJSON.bytes(value, for: audience))
    }

    /// A JSON answer, shaped for whoever called (`Audience`): a player's token gets only what
    /// is theirs to see of each transaction.
    static func response<Value: Encodable>(
        _ value: Value, for context: WalletRequestContext, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) throws(WalletError) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try encode(value, for: context.audience)))
    }
}
