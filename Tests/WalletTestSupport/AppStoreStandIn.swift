import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import WalletApple
import WalletCore

/// A stand-in for Apple's App Store Server API, on 127.0.0.1: one server per environment,
/// sharing what they know. It checks each request's token as Apple does (ES256 by the
/// configured key, `kid`, `iss`, `aud`, `bid`, `iat`, `exp` at most five minutes on and not
/// passed), serves transaction history in pages, order lookups and notification history, takes
/// consumption information, and can be told to answer a request with a failure or slowly.
public final class AppStoreStandIn: Sendable {
    public static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"
    public static let keyID = "STANDIN123"
    public static let bundleID = "com.example.game"

    /// The in-app purchase key the wallet signs its tokens with.
    public let privateKey: P256.Signing.PrivateKey
    /// What Apple holds, per environment.
    private let shared = Shared()
    private let servers: [AppleConfiguration.Environment: Task<Void, any Error>]
    public let productionURL: String
    public let sandboxURL: String

    /// An answer the stand-in gives instead of the normal one, to the next request.
    public enum Scripted: Sendable {
        /// A status with Apple's error body (when `errorCode` is set) and headers.
        case failure(status: Int, errorCode: Int64? = nil, headers: [String: String] = [:])
        /// Waits, then answers normally.
        case delay(Duration)
    }

    /// A request as the stand-in saw it.
    public struct Seen: Sendable {
        public var environment: AppleConfiguration.Environment
        public var method: String
        public var path: String
        public var query: [String: String]
        public var body: String
        /// Nil when the token checked out; otherwise why not.
        public var tokenProblem: String?
        /// When it arrived.
        public var at: Date
    }

    /// A notification Apple holds: its signed payload, when it was signed, and whether Apple
    /// failed to deliver it (what `onlyFailures` asks for).
    struct HeldNotification {
        var signedPayload: String
        var signedDate: Int64
        var failed: Bool
    }

    final class Shared: Sendable {
        let state = Mutex(State())
    }

    struct State {
        var customers: [AppleConfiguration.Environment: [[String]]] = [:]
        var orders: [String: [String]] = [:]
        var notifications: [AppleConfiguration.Environment: [HeldNotification]] = [:]
        var script: [Scripted] = []
        var seen: [Seen] = []
        var pageSize = 20
        /// History pages claim there is always more, as an Apple paging without end would.
        var endlessHistory = false
    }

    /// Starts both servers; they stop when the stand-in is released (`stop()`).
    public init() async throws {
        privateKey = P256.Signing.PrivateKey()
        var servers: [AppleConfiguration.Environment: Task<Void, any Error>] = [:]
        var urls: [AppleConfiguration.Environment: String] = [:]
        let shared = self.shared
        let publicKey = privateKey.publicKey
        for environment in AppleConfiguration.Environment.allCases {
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            let router = Router()
            Self.addRoutes(to: router, environment: environment, shared: shared, publicKey: publicKey)
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in
                    continuation.yield(channel.localAddress?.port ?? 0)
                    continuation.finish()
                }, logger: Self.quietLogger)
            servers[environment] = Task { try await app.runService(gracefulShutdownSignals: []) }
            var port = 0
            for await value in stream { port = value }
            urls[environment] = "http://127.0.0.1:\(port)"
        }
        self.servers = servers
        productionURL = urls[.production] ?? ""
        sandboxURL = urls[.sandbox] ?? ""
    }

    /// Cancelling a server on purpose is not worth a log line.
    static let quietLogger: Logger = {
        var logger = Logger(label: "app-store-stand-in")
        logger.logLevel = .critical
        return logger
    }()

    public func stop() {
        for server in servers.values { server.cancel() }
    }

    deinit {
        for server in servers.values { server.cancel() }
    }

    // MARK: What Apple knows

    /// One customer's purchases (signed transactions, oldest first): a history request for any
    /// of their ids answers all of them.
    public func addCustomer(_ signedTransactions: [String], environment: AppleConfiguration.Environment = .production) {
        shared.state.withLock { $0.customers[environment, default: []].append(signedTransactions) }
    }

    public func addOrder(_ orderID: String, signedTransactions: [String]) {
        shared.state.withLock { $0.orders[orderID] = signedTransactions }
    }

    /// Notifications Apple sent (`failed`: and could not deliver); Get Notification History
    /// answers those signed within its request's dates.
    public func addNotifications(_ signedPayloads: [String], failed: Bool = true, environment: AppleConfiguration.Environment = .production) {
        let held = signedPayloads.map { payload in
            HeldNotification(signedPayload: payload, signedDate: Self.payloadField("signedDate", of: payload) as? Int64 ?? 0, failed: failed)
        }
        shared.state.withLock { $0.notifications[environment, default: []] += held }
    }

    public func setPageSize(_ size: Int) {
        shared.state.withLock { $0.pageSize = size }
    }

    /// Makes every history page say that more follow (each next page the same as the last).
    public func setEndlessHistory() {
        shared.state.withLock { $0.endlessHistory = true }
    }

    /// Answers the next requests with these, in order, before answering normally again.
    public func script(_ answers: Scripted...) {
        shared.state.withLock { $0.script += answers }
    }

    public var seen: [Seen] { shared.state.withLock { $0.seen } }

    /// The wallet's configuration for this stand-in, with quick retries for tests. The timeout is
    /// long, as the Google stand-in's is: a test that counts Apple's requests must not see one
    /// sent again because the whole suite kept two cores busy for a few seconds; the tests about
    /// timeouts set their own.
    public func apiConfiguration(key: P256.Signing.PrivateKey? = nil, requestTimeout: Duration = .seconds(60)) throws -> AppStoreServerAPIConfiguration {
        let credentials = try AppStoreServerAPICredentials(
            issuerID: Self.issuerID, keyID: Self.keyID, privateKeyPEM: (key ?? privateKey).pemRepresentation, bundleID: Self.bundleID)
        var configuration = try AppStoreServerAPIConfiguration(credentials: credentials, productionURL: productionURL, sandboxURL: sandboxURL)
        configuration.backoff = .milliseconds(20)
        configuration.requestTimeout = requestTimeout
        return configuration
    }

    // MARK: The API

    private static func addRoutes(
        to router: Router<BasicRequestContext>, environment: AppleConfiguration.Environment, shared: Shared, publicKey: P256.Signing.PublicKey
    ) {
        let handle: @Sendable (Request, BasicRequestContext, (Request, BasicRequestContext, String) throws -> Response) async throws -> Response = {
            request, context, answer in
            var body = try await request.body.collect(upTo: 1024 * 1024)
            let bodyText = body.readString(length: body.readableBytes) ?? ""
            let tokenProblem = Self.tokenProblem(request, publicKey: publicKey)
            var query: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
            let scripted = shared.state.withLock { state in
                state.seen.append(
                    Seen(
                        environment: environment, method: request.method.rawValue, path: request.uri.path, query: query, body: bodyText,
                        tokenProblem: tokenProblem, at: Date()))
                return state.script.isEmpty ? nil : state.script.removeFirst()
            }
            switch scripted {
            case .failure(let status, let errorCode, let headers)?:
                var fields = HTTPFields()
                for (name, value) in headers { if let field = HTTPField.Name(name) { fields[field] = value } }
                let json = errorCode.map { #"{"errorCode":\#($0),"errorMessage":"scripted failure"}"# } ?? ""
                return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: json)))
            case .delay(let duration)?:
                try await Task.sleep(for: duration)
            case nil:
                break
            }
            if tokenProblem != nil { return Response(status: .unauthorized) }
            return try answer(request, context, bodyText)
        }
        router.get("/inApps/v2/history/:id") { request, context in
            try await handle(request, context) { request, context, _ in
                let id = context.parameters.get("id") ?? ""
                let (customer, pageSize, endless) = shared.state.withLock { state in
                    (state.customers[environment, default: []].first { signed in signed.contains { Self.transactionID(of: $0) == id } }, state.pageSize, state.endlessHistory)
                }
                guard let customer else { return Self.error(404, 4_040_010) }
                // Apple's `productType` filter: the kinds asked for, or every kind when none is.
                let kinds = Set(request.uri.queryParameters[values: "productType"].map(String.init))
                let listed = kinds.isEmpty ? customer : customer.filter { Self.productType(of: $0).map(kinds.contains) ?? false }
                let ordered = request.uri.queryParameters["sort"] == "DESCENDING" ? listed.reversed() : listed
                let start = request.uri.queryParameters["revision"].flatMap { Int($0.dropFirst(4)) } ?? 0
                let page = Array(ordered.dropFirst(endless ? 0 : start).prefix(pageSize))
                let more = endless || start + page.count < ordered.count
                return Self.json([
                    "revision": "rev-\(start + page.count)", "hasMore": more, "bundleId": Self.bundleID, "environment": environment.rawValue,
                    "signedTransactions": page,
                ])
            }
        }
        router.get("/inApps/v1/lookup/:order") { request, context in
            try await handle(request, context) { _, context, _ in
                let order = context.parameters.get("order") ?? ""
                guard environment == .production, let signed = shared.state.withLock({ $0.orders[order] }) else { return Self.json(["status": 1]) }
                return Self.json(["status": 0, "signedTransactions": signed])
            }
        }
        router.post("/inApps/v1/notifications/history") { request, context in
            try await handle(request, context) { request, _, body in
                // Dates in milliseconds since 1970, as Apple takes them; a start after the end is Apple's 4000013.
                guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                    let startDate = (object["startDate"] as? NSNumber)?.int64Value, let endDate = (object["endDate"] as? NSNumber)?.int64Value,
                    startDate > 1_199_145_600_000, endDate > 1_199_145_600_000
                else { return Self.error(400, 4_000_015) }
                guard startDate <= endDate else { return Self.error(400, 4_000_013) }
                let onlyFailures = object["onlyFailures"] as? Bool ?? false
                let (held, pageSize) = shared.state.withLock { ($0.notifications[environment, default: []], $0.pageSize) }
                let all = held.filter { ($0.failed || !onlyFailures) && (startDate...endDate).contains($0.signedDate) }.map(\.signedPayload)
                let start = request.uri.queryParameters["paginationToken"].flatMap { Int($0.dropFirst(5)) } ?? 0
                let page = Array(all.dropFirst(start).prefix(pageSize))
                let more = start + page.count < all.count
                var answer: [String: Any] = ["notificationHistory": page.map { ["signedPayload": $0] }, "hasMore": more]
                if more { answer["paginationToken"] = "page-\(start + page.count)" }
                return Self.json(answer)
            }
        }
        router.put("/inApps/v2/transactions/consumption/:id") { request, context in
            try await handle(request, context) { _, _, _ in Response(status: .accepted) }
        }
    }

    /// Why the request's token would be refused by Apple, or nil.
    static func tokenProblem(_ request: Request, publicKey: P256.Signing.PublicKey) -> String? {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        guard let jws = try? CompactJWS<TokenHeader>(String(authorization.dropFirst(7)), bytesMax: 4_096) else { return "not a compact JWS" }
        guard jws.header.alg == "ES256", jws.header.kid == keyID, jws.header.typ == "JWT" else { return "header \(jws.header)" }
        guard jws.isSigned(by: publicKey) else { return "signature" }
        guard let claims = jws.payload(as: TokenClaims.self) else { return "claims" }
        let now = Int64(Date().timeIntervalSince1970)
        guard claims.iss == issuerID, claims.aud == "appstoreconnect-v1", claims.bid == bundleID else { return "claims \(claims)" }
        guard claims.iat <= now + 60, claims.exp > now, claims.exp - claims.iat <= 300 else { return "times \(claims)" }
        return nil
    }

    struct TokenHeader: Decodable, CustomStringConvertible {
        var alg: String
        var kid: String?
        var typ: String?
        var description: String { "alg \(alg) kid \(kid ?? "-") typ \(typ ?? "-")" }
    }

    struct TokenClaims: Decodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }

    /// A signed transaction's id, read without verifying (the stand-in signed it).
    static func transactionID(of signed: String) -> String? {
        payloadField("transactionId", of: signed) as? String
    }

    /// The history `productType` of a signed transaction's `type`, read without verifying.
    static func productType(of signed: String) -> String? {
        switch payloadField("type", of: signed) as? String {
        case "Consumable": "CONSUMABLE"
        case "Non-Consumable": "NON_CONSUMABLE"
        case "Non-Renewing Subscription": "NON_RENEWABLE"
        case "Auto-Renewable Subscription": "AUTO_RENEWABLE"
        default: nil
        }
    }

    /// A field of a JWS payload, read without verifying.
    static func payloadField(_ name: String, of signed: String) -> Any? {
        let parts = signed.split(separator: ".")
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        else { return nil }
        if let number = object[name] as? NSNumber, name == "signedDate" { return number.int64Value }
        return object[name]
    }

    static func json(_ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func error(_ status: Int, _ code: Int64) -> Response {
        Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"errorCode":\#(code),"errorMessage":"stand-in"}"#)))
    }
}
