import Foundation
import NIOHTTP1
import WalletCore
import _CryptoExtras

/// Why a Pub/Sub push was refused. The controller answers 401 without it; the reason is for
/// the log.
public struct GooglePushRefused: Error, Sendable, Equatable {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }
}

/// Checks that a Pub/Sub push comes from Google on the wallet's subscription: its
/// `Authorization: Bearer` OIDC token must be an RS256 JWT signed by one of Google's keys (its
/// JWKS, cached as long as its `Cache-Control` says, within bounds), issued by Google to the
/// configured audience for the configured service account, with a verified email, and within
/// its lifetime. Anything else is refused before the body is read.
public actor GooglePushAuthentication {
    public static let googleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
    static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]
    /// The longest `Authorization` header read.
    public static let authorizationBytesMax = 8 * 1024
    /// The slack allowed between Google's clock and the wallet's.
    static let leewaySeconds: Int64 = 60
    /// How long keys are kept when Google's answer names no `max-age`, and the bounds on it.
    static let cacheSecondsDefault: TimeInterval = 3_600
    static let cacheSecondsMax: TimeInterval = 86_400
    /// No two fetches closer than this: a stream of tokens naming unknown keys, or Google
    /// failing, costs one fetch a minute.
    static let fetchIntervalMinSeconds: TimeInterval = 60
    static let jwksBytesMax = 256 * 1024
    static let keysMax = 100

    public nonisolated let audience: String
    public nonisolated let serviceAccountEmail: String
    public nonisolated let jwksURL: String
    let fetchTimeout: Duration

    /// Google's keys by `kid`, and until when they are trusted without asking again.
    private var keys: [String: _RSA.Signing.PublicKey] = [:]
    private var keysFreshUntil: Date?
    private var lastFetch: Date?
    private var fetch: Task<Fetched, any Error>?
    /// How many times the JWKS was fetched (for tests and metrics).
    public private(set) var fetchCount = 0

    struct Fetched: Sendable {
        var keys: [String: _RSA.Signing.PublicKey]
        var maxAgeSeconds: TimeInterval
    }

    /// - Throws: `invalidRequest` for an empty audience or service account email, or a JWKS URL
    ///   that is not http(s).
    public init(audience: String, serviceAccountEmail: String, jwksURL: String = GooglePushAuthentication.googleJWKSURL, fetchTimeout: Duration = .seconds(10))
        throws(WalletError)
    {
        guard !audience.isEmpty, audience.utf8.count <= 2_048 else { throw .invalidRequest("the Google push audience must be 1 to 2048 bytes") }
        guard !serviceAccountEmail.isEmpty, serviceAccountEmail.utf8.count <= 320, serviceAccountEmail.contains("@") else {
            throw .invalidRequest("the Google push service account must be an email address")
        }
        guard GoogleHTTP.isPlainHTTPURL(jwksURL, pathAllowed: true) else {
            throw .invalidRequest("the Google JWKS URL must be an http(s) URL without query or credentials")
        }
        self.audience = audience
        self.serviceAccountEmail = serviceAccountEmail
        self.jwksURL = jwksURL
        self.fetchTimeout = fetchTimeout
    }

    /// Verifies a push's `Authorization` header at `now`.
    /// - Throws: `GooglePushRefused` saying why; the push must then be answered 401 and nothing done.
    public func verify(authorization: String?, now: Date) async throws(GooglePushRefused) {
        guard let authorization else { throw GooglePushRefused(reason: "no Authorization header") }
        guard authorization.utf8.count <= Self.authorizationBytesMax else {
            throw GooglePushRefused(reason: "the Authorization header is longer than \(Self.authorizationBytesMax) bytes")
        }
        guard authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw GooglePushRefused(reason: "the Authorization header is not a bearer token")
        }
        let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let jws: CompactJWS<Header>
        do {
            jws = try CompactJWS<Header>(token, bytesMax: Self.authorizationBytesMax)
        } catch {
            throw GooglePushRefused(reason: "the bearer token is not a JWT (\(error))")
        }
        // Only RS256: `none`, HMAC (with a public key as its secret) and others are how forgeries pass.
        guard jws.header.alg == "RS256" else {
            throw GooglePushRefused(reason: "the token's alg '\(GoogleHTTP.quoted(jws.header.alg, charactersMax: 20))' is not RS256")
        }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw GooglePushRefused(reason: "the token names no key (kid)") }
        let key = try await key(kid, now: now)
        guard key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: jws.signature), for: jws.signingInput, padding: .insecurePKCS1v1_5) else {
            throw GooglePushRefused(reason: "the token's signature is not Google's key \(GoogleHTTP.quoted(kid, charactersMax: 64))'s")
        }
        guard let claims = jws.payload(as: Claims.self) else { throw GooglePushRefused(reason: "the token's claims are not the JSON expected") }
        try check(claims, now: now)
    }

    private func check(_ claims: Claims, now: Date) throws(GooglePushRefused) {
        guard Self.issuers.contains(claims.iss) else {
            throw GooglePushRefused(reason: "the token's issuer '\(GoogleHTTP.quoted(claims.iss, charactersMax: 100))' is not Google")
        }
        guard claims.aud.values.contains(audience) else {
            throw GooglePushRefused(reason: "the token's audience is not the configured push audience")
        }
        guard claims.email == serviceAccountEmail else {
            throw GooglePushRefused(reason: "the token's email '\(GoogleHTTP.quoted(claims.email ?? "", charactersMax: 100))' is not the configured push service account")
        }
        guard claims.email_verified == true else { throw GooglePushRefused(reason: "the token's email is not verified") }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard claims.exp > seconds - Self.leewaySeconds else { throw GooglePushRefused(reason: "the token expired") }
        guard claims.iat <= seconds + Self.leewaySeconds else { throw GooglePushRefused(reason: "the token is issued in the future") }
    }

    // MARK: Google's keys

    /// The key `kid` names: from the cache while it is fresh; otherwise, or for a kid the cache
    /// does not know, from a fetch (at most one a minute, one at a time).
    private func key(_ kid: String, now: Date) async throws(GooglePushRefused) -> _RSA.Signing.PublicKey {
        let fresh = keysFreshUntil.map { now < $0 } ?? false
        if fresh, let key = keys[kid] { return key }
        let mayFetch = lastFetch.map { now.timeIntervalSince($0) >= Self.fetchIntervalMinSeconds || now < $0 } ?? true
        if mayFetch || fetch != nil {
            await refresh(now: now)
        }
        guard let key = keys[kid] else {
            throw GooglePushRefused(reason: "the token's key \(GoogleHTTP.quoted(kid, charactersMax: 64)) is not in Google's JWKS")
        }
        return key
    }

    /// Fetches the keys, or waits for the fetch under way. A failed fetch keeps the keys held
    /// before: Google's keys overlap for days, so yesterday's still verify today's tokens.
    private func refresh(now: Date) async {
        let task: Task<Fetched, any Error>
        if let fetch {
            task = fetch
        } else {
            lastFetch = now
            fetchCount += 1
            let (url, timeout) = (jwksURL, fetchTimeout)
            task = Task { () async throws(GoogleCallFailure) -> Fetched in try await Self.fetchKeys(url: url, timeout: timeout) }
            fetch = task
        }
        let result = await task.result
        guard fetch == task else { return }
        fetch = nil
        // A set without one usable key is taken as a failed fetch, not as "trust nothing".
        if case .success(let fetched) = result, !fetched.keys.isEmpty {
            keys = fetched.keys
            keysFreshUntil = now.addingTimeInterval(fetched.maxAgeSeconds)
        }
    }

    static func fetchKeys(url: String, timeout: Duration) async throws(GoogleCallFailure) -> Fetched {
        let answer = try await GoogleHTTP.send(
            .GET, url: url, headers: [("Accept", "application/json")], body: nil, timeout: timeout, bytesMax: jwksBytesMax, service: "Google's JWKS")
        guard answer.status == 200 else { throw .answered(status: answer.status, message: nil, retryAfter: nil) }
        guard let set = WalletJSON.decodeStrictly(KeySet.self, from: answer.body) else { throw .malformed("Google's JWKS is not a JSON key set") }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for jwk in set.keys.prefix(keysMax) {
            // Keys of other kinds or uses are skipped, not refused: a set may hold them.
            guard jwk.kty == "RSA", jwk.alg == nil || jwk.alg == "RS256", jwk.use == nil || jwk.use == "sig", let kid = jwk.kid, !kid.isEmpty,
                let n = jwk.n.flatMap({ Base64URL.decode(Substring($0)) }), let e = jwk.e.flatMap({ Base64URL.decode(Substring($0)) }),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = key
        }
        return Fetched(keys: keys, maxAgeSeconds: maxAge(answer.headers.first(name: "Cache-Control")))
    }

    /// `max-age` of a `Cache-Control` value, within a minute and a day; an hour when absent.
    static func maxAge(_ cacheControl: String?) -> TimeInterval {
        let directives = (cacheControl ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let directive = directives.first(where: { $0.hasPrefix("max-age=") }), let seconds = Int64(directive.dropFirst(8)) else {
            return cacheSecondsDefault
        }
        return min(max(TimeInterval(seconds), fetchIntervalMinSeconds), cacheSecondsMax)
    }

    // MARK: Token and key set

    struct Header: Decodable {
        var alg: String
        var kid: String?
        var typ: String?
    }

    struct Claims: Decodable {
        var iss: String
        var aud: Audience
        var email: String?
        var email_verified: Bool?
        var iat: Int64
        var exp: Int64
    }

    /// `aud` as RFC 7519 allows it: one string, or an array of them.
    struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                values = [one]
            } else {
                values = try container.decode([String].self)
            }
        }
    }

    struct KeySet: Decodable {
        var keys: [JWK]
    }

    struct JWK: Decodable {
        var kty: String?
        var kid: String?
        var alg: String?
        var use: String?
        var n: String?
        var e: String?
    }
}

extension GooglePushAuthentication: GooglePushAuthenticating {
    public func refusal(authorization: String?, now: Date) async -> String? {
        do {
            try await verify(authorization: authorization, now: now)
            return nil
        } catch {
            return error.reason
        }
    }
}
