import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import WalletCore

/// One route of the API: its method, its OpenAPI path template and who may call it.
public struct RouteSpec: Sendable, Equatable {
    public var method: HTTPRequest.Method
    public var path: String
    public var access: Access
}

/// Every route the application registered, in order. The OpenAPI test compares it with the
/// document, and the problem middleware answers 405 from it.
public final class RouteTable: Sendable {
    private let storage = Mutex<[RouteSpec]>([])

    public var routes: [RouteSpec] { storage.withLock { $0 } }

    func append(_ route: RouteSpec) { storage.withLock { $0.append(route) } }

    /// The methods registered for paths matching `path` (`{name}` matches one segment).
    func methods(matching path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return routes.filter { route in
            let template = route.path.split(separator: "/", omittingEmptySubsequences: false)
            return template.count == segments.count
                && zip(template, segments).allSatisfy { pattern, segment in
                    (pattern.hasPrefix("{") && !segment.isEmpty) || pattern == segment
                }
        }.map(\.method)
    }
}

/// Registers handlers with their access rule: each request is authenticated and checked
/// against the rule before its handler runs, so no handler can forget it.
struct RouteRegistrar {
    let router: Router<WalletRequestContext>
    let authenticator: Authenticator
    let table: RouteTable

    typealias Handler = @Sendable (Request, WalletRequestContext) async throws -> Response

    func add(_ method: HTTPRequest.Method, _ path: String, access: Access, handler: @escaping Handler) {
        table.append(RouteSpec(method: method, path: path, access: access))
        let authenticator = self.authenticator
        let hasWallet = path.contains("{player_id}")
        router.on(RouterPath(path), method: method) { request, context in
            guard !access.isOpen else { return try await handler(request, context) }
            var context = context
            let caller = try await authenticator.authenticate(request)
            // Known before the check, so that a refused request's line names whom it refused;
            // no handler runs unless the check passes.
            context.caller = caller
            let walletPlayerID = hasWallet ? try context.pathPlayerID() : nil
            try access.check(caller, walletPlayerID: walletPlayerID)
            context.walletPlayerID = walletPlayerID
            return try await handler(request, context)
        }
    }
}

extension WalletRequestContext {
    /// The `{player_id}` path parameter, percent-decoded and validated.
    fileprivate func pathPlayerID() throws -> PlayerID {
        guard let raw = parameters.get("player_id"), let playerID = Identifier.percentDecoded(raw[...]) else {
            throw APIError.invalidRequest("the player id in the path is not valid percent-encoding", field: "player_id")
        }
        return try PlayerID(playerID)
    }
}

/// Reads JSON request bodies strictly: at most `bytesMax` bytes (`ServerLimits.bodyBytesMax` unless a route says), JSON media
/// type, then `checkStrictly`, then the decoding.
enum RequestBodyReader {
    static func decode<Body: StrictBody>(_ type: Body.Type, from request: Request, bytesMax: Int = ServerLimits.bodyBytesMax) async throws -> Body {
        let bytes = try await self.bytes(of: request, bytesMax: bytesMax)
        let value = try checkStrictly(bytes, for: Body.self)
        do {
            return try JSONValueDecoder.decode(Body.self, from: value)
        } catch let error as DecodingError {
            // A missing member or one of the wrong type: named by the top-level member it concerns.
            throw APIError.invalidRequest(ProblemMiddleware.describe(error), field: member(of: error))
        }
    }

    /// The top-level body member a decoding error concerns, if any.
    static func member(of error: DecodingError) -> String? {
        switch error {
        case .keyNotFound(let key, let context): (context.codingPath.first ?? key).stringValue
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): context.codingPath.first?.stringValue
        @unknown default: nil
        }
    }

    /// The body's bytes, once its media type is JSON and it is at most `bytesMax` bytes long.
    static func bytes(of request: Request, bytesMax: Int = ServerLimits.bodyBytesMax) async throws -> [UInt8] {
        if let contentType = request.headers.value(.contentType)?.lowercased(),
            !(contentType.hasPrefix("application/json") || contentType.contains("+json"))
        {
            throw APIError(status: .unsupportedMediaType, code: .unsupportedMediaType, detail: "send the body as application/json")
        }
        if let length = request.headers.value(.contentLength).flatMap(Int.init), length > bytesMax {
            throw APIError.payloadTooLarge(bytesMax: bytesMax)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: bytesMax)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(bytesMax: bytesMax)
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            // A malformed chunked encoding or a connection cut mid-body: the client's fault.
            throw APIError.invalidRequest("the request body could not be read: it is malformed or incomplete")
        }
        return Array(buffer.readableBytesView)
    }

    /// The body, parsed once with the parser every reader of stored JSON uses, refused for what
    /// `JSONDecoder` would let through: a member named twice (`{"amount":1000,"amount":1}`),
    /// invalid UTF-8 or a lone surrogate, nesting deeper than metadata may be, a number that
    /// would not be kept exactly; and at the top level, an object whose field names are the
    /// route's by their bytes (a misspelt optional field must not be silently ignored), no null
    /// (an optional field is left out: the document describes no nullable field), and numbers
    /// that are integers (`1.0`, `1e3` and `2.5` are not amounts).
    private static func checkStrictly<Body: StrictBody>(_ bytes: [UInt8], for _: Body.Type) throws(WalletError) -> JSONValue {
        let body = try JSONValue.strict(bytes, what: "the body")
        guard case .object(let members) = body else {
            throw .invalidRequest("the body must be a JSON object")
        }
        let names = Body.CodingKeys.allCases.map(\.stringValue)
        // One pass over the members, no set built or members sorted for a sound body; a faulty
        // one is then read in its members' byte order, so that the fault named does not depend
        // on the order they came in.
        guard members.contains(where: { fault(in: $0.key, $0.value, names: names) != nil }) else { return body }
        for (name, value) in members.sorted(by: { Identifier($0.key) < Identifier($1.key) }) {
            if let fault = fault(in: name, value, names: names) { throw fault }
        }
        return body
    }

    /// What is wrong with the top-level member `name`, if anything, given the route's field names.
    private static func fault(in name: String, _ value: JSONValue, names: [String]) -> WalletError? {
        guard names.contains(where: { Identifier.same($0, name) }) else {
            return .invalidRequest(
                "unknown field '\(name.prefix(64))'; this route accepts \(names.sorted().joined(separator: ", "))", field: name.isEmpty ? nil : String(name.prefix(64)))
        }
        switch value {
        case .null: return .invalidRequest("the field '\(name)' must not be null; leave it out instead", field: name)
        case .number: return .invalidRequest("the field '\(name)' holds a fraction; amounts and counts are whole numbers", field: name)
        default: return nil
        }
    }
}

/// A request body whose `CodingKeys` list every field it accepts.
protocol StrictBody: Decodable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

extension StrictBody {
    static var fieldNames: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)) }
}
