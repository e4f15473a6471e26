import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import WalletCore
import WalletGoogle
import _CryptoExtras

/// RSA keys made once per test process (making one takes a moment): the test service
/// account's, and two keys Google signs push tokens with.
public enum GoogleTestKeys {
    private static let generated: Result<[_RSA.Signing.PrivateKey], any Error> = Result {
        try (0..<3).map { _ in try _RSA.Signing.PrivateKey(keySize: .bits2048) }
    }

    /// The test service account's key.
    public static func serviceAccount() throws -> _RSA.Signing.PrivateKey { try generated.get()[0] }
    /// The key Google's JWKS publishes first (`push-key-1`).
    public static func push() throws -> _RSA.Signing.PrivateKey { try generated.get()[1] }
    /// The key Google rotates to (`push-key-2`).
    public static func pushNext() throws -> _RSA.Signing.PrivateKey { try generated.get()[2] }
}

/// A stand-in for Google on 127.0.0.1: the OAuth token endpoint (checking each assertion's
/// RS256 signature against the test service account's key and its claims, as Google does),
/// the Android Publisher API's purchase get, consume and voided purchases for one package,
/// and the JWKS push tokens are signed with. Each kind of request can be told to fail or to
/// answer slowly, and every request is recorded.
public final class GoogleStandIn: Sendable {
    public static let packageName = "com.example.game"
    public static let clientEmail = "wallet@example-project.iam.gserviceaccount.com"
    public static let privateKeyID = "3f1c2b7e9d0a4c5b8e6f1a2d3c4b5a6978e0d1f2"
    public static let pushServiceAccount = "pubsub-push@example-project.iam.gserviceaccount.com"
    public static let pushAudience = "https://wallet.example.com/v1/notifications/google"
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"

    /// The stand-in's base URL (`http://127.0.0.1:PORT`).
    public let url: String
    public var tokenURI: String { url + "/token" }
    public var jwksURL: String { url + "/oauth2/v3/certs" }
    private let shared: Shared
    private let server: Task<Void, any Error>

    /// The kinds of request the stand-in answers.
    public enum Kind: String, Sendable, CaseIterable {
        case token, purchase, consume, acknowledge, voided, jwks
    }

    /// An answer the stand-in gives instead of the normal one, to the next request of a kind.
    public enum Scripted: Sendable {
        /// A status with Google's error body (`{"error":{"code","message"}}`, or OAuth's
        /// `{"error","error_description"}` for the token endpoint) and headers.
        case failure(status: Int, message: String = "scripted failure", headers: [String: String] = [:])
        /// Waits, then answers normally.
        case delay(Duration)
        /// This status and body, as they are.
        case raw(status: Int, body: String)
    }

    /// A request as the stand-in saw it.
    public struct Seen: Sendable {
        public var kind: Kind
        public var method: String
        public var path: String
        public var query: [String: String]
        public var body: String
        /// Nil when the assertion (token endpoint) or the access token (API) checked out;
        /// otherwise why not.
        public var tokenProblem: String?
        /// The access token an API request carried (`Authorization: Bearer ...`), if any.
        public var bearer: String?
        public var at: Date
    }

    /// Ways a push token can be forged or wrong.
    public enum PushForgery: String, Sendable, CaseIterable {
        /// Signed by a key that is not Google's, under Google's key id.
        case wrongKey
        /// Names a key id the JWKS does not hold.
        case unknownKeyID
        case wrongAudience, wrongIssuer, wrongEmail, unverifiedEmail
        /// Expired ten minutes ago.
        case expired
        /// Issued ten minutes from now.
        case issuedInFuture
        /// `alg` `none`, no signature.
        case algorithmNone
        /// HS256, with the published public key as the secret (the classic confusion).
        case hmacWithPublicKey
    }

    final class Shared: Sendable {
        let state = Mutex(State())
        let packageName: String
        let publicKey: _RSA.Signing.PublicKey
        let tokenURI: Mutex<String> = Mutex("")

        init(packageName: String, publicKey: _RSA.Signing.PublicKey) {
            self.packageName = packageName
            self.publicKey = publicKey
        }
    }

    struct State {
        var purchases: [String: GoogleProductPurchase] = [:]
        var voided: [GoogleVoidedPurchase] = []
        var voidedPageSize = 1_000
        var tokenLifetimeSeconds: Int64 = 3_599
        var issued: [String: Date] = [:]
        var tokensIssued = 0
        var published: [(kid: String, key: _RSA.Signing.PublicKey)] = []
        var jwksCacheControl: String? = "public, max-age=21600, must-revalidate, no-transform"
        var script: [Kind: [Scripted]] = [:]
        var seen: [Seen] = []
    }

    /// Starts the server; it stops at `stop()` or when the stand-in is released.
    public init(packageName: String = GoogleStandIn.packageName) async throws {
        let shared = Shared(packageName: packageName, publicKey: try GoogleTestKeys.serviceAccount().publicKey)
        let pushKey = try GoogleTestKeys.push().publicKey
        shared.state.withLock { $0.published = [("push-key-1", pushKey)] }
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let router = Router()
        router.add(middleware: CloseEachConnection())
        Self.addRoutes(to: router, shared: shared)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: Self.quietLogger)
        server = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await value in stream { port = value }
        url = "http://127.0.0.1:\(port)"
        self.shared = shared
        shared.tokenURI.withLock { $0 = url + "/token" }
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "google-stand-in")
        logger.logLevel = .critical
        return logger
    }()

    public func stop() { server.cancel() }

    deinit { server.cancel() }

    // MARK: What Google knows

    /// A purchase of `productID` Google answers for `token` (in the stand-in's package only).
    public func add(purchase: GoogleProductPurchase, token: String, productID: String) {
        shared.state.withLock { $0.purchases[productID + "/" + token] = purchase }
    }

    /// The purchase as Google holds it now (consumed or not).
    public func purchase(token: String, productID: String) -> GoogleProductPurchase? {
        shared.state.withLock { $0.purchases[productID + "/" + token] }
    }

    /// A voided purchase the Voided Purchases API lists (by its `voidedTimeMillis`).
    public func addVoided(_ voided: GoogleVoidedPurchase) {
        shared.state.withLock { $0.voided.append(voided) }
    }

    public func setVoidedPageSize(_ size: Int) {
        shared.state.withLock { $0.voidedPageSize = size }
    }

    /// The `expires_in` of the access tokens issued from now on.
    public func setTokenLifetime(seconds: Int64) {
        shared.state.withLock { $0.tokenLifetimeSeconds = seconds }
    }

    /// Forgets every access token issued: the API answers 401 to them, as to a revoked token.
    public func revokeAccessTokens() {
        shared.state.withLock { $0.issued = [:] }
    }

    /// How many access tokens the token endpoint issued.
    public var tokensIssued: Int { shared.state.withLock { $0.tokensIssued } }

    /// Publishes the rotated push key beside the first (or, with `only`, instead of it).
    public func rotatePushKeys(only: Bool = false) throws {
        let next = try GoogleTestKeys.pushNext().publicKey
        shared.state.withLock { state in
            if only { state.published = [] }
            state.published.append(("push-key-2", next))
        }
    }

    /// The JWKS answer's `Cache-Control` (nil: none).
    public func setJWKSCacheControl(_ value: String?) {
        shared.state.withLock { $0.jwksCacheControl = value }
    }

    /// Answers the next requests of `kind` with these, in order, before answering normally again.
    public func script(_ kind: Kind, _ answers: Scripted...) {
        shared.state.withLock { $0.script[kind, default: []] += answers }
    }

    public var seen: [Seen] { shared.state.withLock { $0.seen } }

    public func seen(_ kind: Kind) -> [Seen] { seen.filter { $0.kind == kind } }

    // MARK: The wallet's configuration

    /// The test service account's key file, as Google Cloud issues one, with this stand-in's
    /// token URI (or `tokenURI`), and `changes` applied (nil removes a member).
    public func serviceAccountJSON(changes: [String: String?] = [:]) throws -> String {
        try Self.serviceAccountJSON(tokenURI: tokenURI, changes: changes)
    }

    public static func serviceAccountJSON(tokenURI: String, changes: [String: String?] = [:]) throws -> String {
        var file: [String: String] = [
            "type": "service_account", "project_id": "example-project", "private_key_id": privateKeyID,
            "private_key": try GoogleTestKeys.serviceAccount().pkcs8PEMRepresentation, "client_email": clientEmail, "client_id": "104729386510293847561",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/wallet%40example-project.iam.gserviceaccount.com",
            "universe_domain": "googleapis.com",
        ]
        for (name, value) in changes { file[name] = value }
        return String(decoding: try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self)
    }

    public func serviceAccount() throws -> GoogleServiceAccount {
        try GoogleServiceAccount(json: try serviceAccountJSON())
    }

    /// The client's configuration for this stand-in, with quick retries for tests, and a timeout long
    /// enough that a loaded machine (the whole suite on two cores) never turns one request into two.
    public func apiConfiguration(requestTimeout: Duration = .seconds(60), packageName: String = GoogleStandIn.packageName) throws -> GooglePlayAPIConfiguration {
        var configuration = try GooglePlayAPIConfiguration(serviceAccount: try serviceAccount(), packageName: packageName, baseURL: url)
        configuration.backoff = .milliseconds(20)
        configuration.requestTimeout = requestTimeout
        return configuration
    }

    /// Push authentication trusting this stand-in's JWKS, with a fetch timeout long enough for a
    /// loaded machine: a fetch that timed out keeps no keys, and every genuine token is refused.
    public func pushAuthentication() throws -> GooglePushAuthentication {
        try GooglePushAuthentication(audience: Self.pushAudience, serviceAccountEmail: Self.pushServiceAccount, jwksURL: jwksURL, fetchTimeout: .seconds(60))
    }

    // MARK: Push tokens

    /// An OIDC token as Pub/Sub sends with a push, issued at `now`: signed by the key `kid`
    /// names (`push-key-1` or `push-key-2`), or forged as `forgery` says.
    public static func pushToken(_ forgery: PushForgery? = nil, kid: String = "push-key-1", now: Date = Date()) throws -> String {
        let issuedAt = Int64(now.timeIntervalSince1970) - (forgery == .expired ? 4_200 : 0) + (forgery == .issuedInFuture ? 600 : 0)
        let claims: [String: Any] = [
            "aud": forgery == .wrongAudience ? "https://attacker.example.com/push" : pushAudience,
            "azp": "114200000000000000000",
            "email": forgery == .wrongEmail ? "attacker@evil-project.iam.gserviceaccount.com" : pushServiceAccount,
            "email_verified": forgery != .unverifiedEmail,
            "exp": issuedAt + 3_600, "iat": issuedAt,
            "iss": forgery == .wrongIssuer ? "https://accounts.example.com" : "https://accounts.google.com",
            "sub": "114200000000000000000",
        ]
        let signingKey = kid == "push-key-2" ? try GoogleTestKeys.pushNext() : try GoogleTestKeys.push()
        let headerKid = forgery == .unknownKeyID ? "push-key-9" : kid
        let alg = forgery == .algorithmNone ? "none" : forgery == .hmacWithPublicKey ? "HS256" : "RS256"
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "kid": headerKid, "typ": "JWT"], options: .sortedKeys)
        let payload = try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys)
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let signature: Data
        switch forgery {
        case .algorithmNone:
            signature = Data()
        case .hmacWithPublicKey:
            let secret = SymmetricKey(data: Data(signingKey.publicKey.pemRepresentation.utf8))
            signature = Data(HMAC<SHA256>.authenticationCode(for: Data(signingInput.utf8), using: secret))
        case .wrongKey:
            signature = try GoogleTestKeys.serviceAccount().signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        default:
            signature = try signingKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return signingInput + "." + Base64URL.encode(signature)
    }

    // MARK: The endpoints

    private typealias Answer = @Sendable (Request, BasicRequestContext, String) async throws -> Response

    private static func addRoutes(to router: Router<BasicRequestContext>, shared: Shared) {
        let handle: @Sendable (Kind, Request, BasicRequestContext, Answer) async throws -> Response = { kind, request, context, answer in
            var body = try await request.body.collect(upTo: 1024 * 1024)
            let bodyText = body.readString(length: body.readableBytes) ?? ""
            let tokenProblem: String? =
                switch kind {
                case .token: assertionProblem(bodyText, shared: shared)
                case .jwks: nil
                default: accessTokenProblem(request, shared: shared)
                }
            var query: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
            let scripted = shared.state.withLock { state in
                state.seen.append(
                    Seen(
                        kind: kind, method: request.method.rawValue, path: request.uri.path, query: query, body: bodyText, tokenProblem: tokenProblem,
                        bearer: request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }, at: Date()))
                return state.script[kind]?.isEmpty == false ? state.script[kind]?.removeFirst() : nil
            }
            switch scripted {
            case .failure(let status, let message, let headers)?:
                var fields = HTTPFields()
                for (name, value) in headers { if let field = HTTPField.Name(name) { fields[field] = value } }
                let error: [String: Any] =
                    kind == .token ? ["error": "scripted", "error_description": message] : ["error": ["code": status, "message": message, "status": "SCRIPTED"]]
                return json(error, status: status, headers: fields)
            case .raw(let status, let text)?:
                return Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
            case .delay(let duration)?:
                try await Task.sleep(for: duration)
            case nil:
                break
            }
            // Google's front end refuses a POST that does not state its length.
            if request.method == .post, request.headers[.contentLength] == nil { return googleError(411, "Length Required") }
            if let tokenProblem {
                if kind == .token { return json(["error": "invalid_grant", "error_description": tokenProblem], status: 400) }
                return googleError(401, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
            }
            return try await answer(request, context, bodyText)
        }
        router.post("/token") { request, context in
            try await handle(.token, request, context) { _, _, _ in
                let (token, lifetime) = shared.state.withLock { state in
                    state.tokensIssued += 1
                    let token = "ya29.standin-\(state.tokensIssued)-\(UUID().uuidString)"
                    state.issued[token] = Date().addingTimeInterval(TimeInterval(state.tokenLifetimeSeconds))
                    return (token, state.tokenLifetimeSeconds)
                }
                return json(["access_token": token, "expires_in": lifetime, "token_type": "Bearer"])
            }
        }
        router.get("/oauth2/v3/certs") { request, context in
            try await handle(.jwks, request, context) { _, _, _ in
                let (published, cacheControl) = shared.state.withLock { ($0.published, $0.jwksCacheControl) }
                let keys = try published.map { kid, key in
                    let primitives = try key.getKeyPrimitives()
                    return ["kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent)]
                }
                var headers = HTTPFields()
                if let cacheControl { headers[.cacheControl] = cacheControl }
                return json(["keys": keys], headers: headers)
            }
        }
        let purchasePath = "/androidpublisher/v3/applications/:package/purchases/products/:product/tokens/:token"
        router.get(RouterPath(purchasePath)) { request, context in
            try await handle(.purchase, request, context) { _, context, _ in
                guard context.parameters.get("package") == shared.packageName else { return noSuchApp() }
                let key = (context.parameters.get("product") ?? "") + "/" + (context.parameters.get("token") ?? "")
                guard let purchase = shared.state.withLock({ $0.purchases[key] }) else { return googleError(404, "The purchase token was not found.") }
                return json(productPurchase(purchase))
            }
        }
        router.post(RouterPath(purchasePath)) { request, context in
            let token = context.parameters.get("token") ?? ""
            guard !token.hasSuffix(":acknowledge") else {
                return try await handle(.acknowledge, request, context) { _, context, _ in
                    guard context.parameters.get("package") == shared.packageName else { return noSuchApp() }
                    let key = (context.parameters.get("product") ?? "") + "/" + token.dropLast(":acknowledge".count)
                    let refusal: Response? = shared.state.withLock { state in
                        guard let purchase = state.purchases[key] else { return googleError(404, "The purchase token was not found.") }
                        guard purchase.purchaseState == 0 else { return googleError(400, "The purchase is not in a valid state to perform the desired operation.") }
                        guard purchase.acknowledgementState != 1 else { return googleError(400, "The purchase has already been acknowledged.") }
                        state.purchases[key]?.acknowledgementState = 1
                        return nil
                    }
                    return refusal ?? Response(status: .ok)
                }
            }
            return try await handle(.consume, request, context) { _, context, _ in
                guard context.parameters.get("package") == shared.packageName else { return noSuchApp() }
                guard token.hasSuffix(":consume") else { return googleError(404, "No such method.") }
                let key = (context.parameters.get("product") ?? "") + "/" + token.dropLast(":consume".count)
                let refusal: Response? = shared.state.withLock { state in
                    guard let purchase = state.purchases[key] else { return googleError(404, "The purchase token was not found.") }
                    guard purchase.purchaseState == 0 else { return googleError(400, "The purchase is not in a valid state to perform the desired operation.") }
                    guard purchase.consumptionState != 1 else { return googleError(400, "The purchase has already been consumed.") }
                    state.purchases[key]?.consumptionState = 1
                    return nil
                }
                return refusal ?? Response(status: .ok)
            }
        }
        router.get("/androidpublisher/v3/applications/:package/purchases/voidedpurchases") { request, context in
            try await handle(.voided, request, context) { request, context, _ in
                guard context.parameters.get("package") == shared.packageName else { return noSuchApp() }
                return voidedPage(request, shared: shared)
            }
        }
    }

    /// One page of voided purchases voided between `startTime` and `endTime` (milliseconds),
    /// oldest first, at most `maxResults` and the page size the test set.
    private static func voidedPage(_ request: Request, shared: Shared) -> Response {
        let parameters = request.uri.queryParameters
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        let start = parameters["startTime"].flatMap { Int64(String($0)) } ?? now - 30 * 86_400_000
        let end = parameters["endTime"].flatMap { Int64(String($0)) } ?? now
        let maxResults = parameters["maxResults"].flatMap { Int(String($0)) } ?? 1_000
        guard start <= end, (1...1_000).contains(maxResults) else { return googleError(400, "Invalid Value") }
        let offset = parameters["token"].map { Int($0.dropFirst("page-".count)) ?? -1 } ?? 0
        guard offset >= 0 else { return googleError(400, "Invalid page token.") }
        let (voided, pageSize) = shared.state.withLock { ($0.voided, $0.voidedPageSize) }
        let matching = voided.filter { (start...end).contains(Int64($0.voidedTimeMillis ?? "") ?? -1) }
            .sorted { (Int64($0.voidedTimeMillis ?? "") ?? 0) < (Int64($1.voidedTimeMillis ?? "") ?? 0) }
        let page = Array(matching.dropFirst(offset).prefix(min(maxResults, pageSize)))
        var answer: [String: Any] = [
            "pageInfo": ["totalResults": matching.count, "resultPerPage": page.count, "startIndex": offset],
            "voidedPurchases": page.map(voidedPurchase),
        ]
        if offset + page.count < matching.count { answer["tokenPagination"] = ["nextPageToken": "page-\(offset + page.count)"] }
        return json(answer)
    }

    /// Why Google would refuse the token request's assertion, or nil.
    static func assertionProblem(_ form: String, shared: Shared) -> String? {
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return "the form is not name=value pairs" }
            fields[String(parts[0])] = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return "Invalid grant_type" }
        guard let assertion = fields["assertion"], let jws = try? CompactJWS<AssertionHeader>(assertion, bytesMax: 16_384) else { return "Invalid JWT" }
        guard jws.header.alg == "RS256", jws.header.kid == privateKeyID, jws.header.typ == "JWT" else { return "Invalid JWT header" }
        guard shared.publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: jws.signature), for: jws.signingInput, padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard let claims = jws.payload(as: AssertionClaims.self) else { return "Invalid JWT claims" }
        let now = Int64(Date().timeIntervalSince1970)
        guard claims.iss == clientEmail else { return "Invalid issuer" }
        guard claims.scope == scope else { return "Invalid scope" }
        guard claims.aud == shared.tokenURI.withLock({ $0 }) else { return "Invalid audience" }
        guard claims.exp - claims.iat <= 3_600, claims.exp > now, claims.iat <= now + 60 else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        }
        return nil
    }

    /// Why the API would refuse the request's access token, or nil.
    static func accessTokenProblem(_ request: Request, shared: Shared) -> String? {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let token = String(authorization.dropFirst(7))
        guard let expiry = shared.state.withLock({ $0.issued[token] }) else { return "a token the stand-in did not issue (or revoked)" }
        guard expiry > Date() else { return "an expired token" }
        return nil
    }

    struct AssertionHeader: Decodable {
        var alg: String
        var kid: String?
        var typ: String?
    }

    struct AssertionClaims: Decodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }

    // MARK: Answers

    static func productPurchase(_ purchase: GoogleProductPurchase) -> [String: Any] {
        var object: [String: Any] = ["kind": "androidpublisher#productPurchase", "developerPayload": ""]
        object["purchaseState"] = purchase.purchaseState
        object["consumptionState"] = purchase.consumptionState
        object["purchaseType"] = purchase.purchaseType
        object["orderId"] = purchase.orderId
        object["obfuscatedExternalAccountId"] = purchase.obfuscatedExternalAccountId
        object["quantity"] = purchase.quantity
        object["regionCode"] = purchase.regionCode
        object["purchaseTimeMillis"] = purchase.purchaseTimeMillis
        object["acknowledgementState"] = purchase.acknowledgementState
        return object
    }

    static func voidedPurchase(_ voided: GoogleVoidedPurchase) -> [String: Any] {
        var object: [String: Any] = ["kind": "androidpublisher#voidedPurchase", "purchaseToken": voided.purchaseToken]
        object["orderId"] = voided.orderId
        object["purchaseTimeMillis"] = voided.voidedTimeMillis
        object["voidedTimeMillis"] = voided.voidedTimeMillis
        object["voidedSource"] = voided.voidedSource
        object["voidedReason"] = voided.voidedReason
        object["refundType"] = voided.refundType
        object["voidedQuantity"] = voided.voidedQuantity
        return object
    }

    static func json(_ object: [String: Any], status: Int = 200, headers: HTTPFields = [:]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        var fields = headers
        fields[.contentType] = "application/json; charset=UTF-8"
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func googleError(_ status: Int, _ message: String) -> Response {
        json(["error": ["code": status, "message": message, "errors": [["message": message, "domain": "androidpublisher", "reason": "standIn"]]]], status: status)
    }

    static func noSuchApp() -> Response {
        googleError(404, "No application was found for the given package name.")
    }
}

/// Answers every request with `Connection: close`. Tests start many stand-ins, one after another,
/// on ports the kernel hands out again; the wallet's one HTTP client keeps connections alive, and a
/// kept connection to a stopped stand-in still being drained would carry a later test's request to
/// the earlier stand-in's state (its rotated keys, its token counts). Each request opens its own.
struct CloseEachConnection<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.connection] = "close"
        return response
    }
}
