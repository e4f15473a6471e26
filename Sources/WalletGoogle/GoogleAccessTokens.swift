import Foundation
import NIOHTTP1
import WalletCore
import _CryptoExtras

/// Access tokens for the Android Publisher API, by OAuth 2.0 for service accounts (RFC 7523
/// JWT bearer): an RS256 assertion signed with the service account's key, exchanged at its
/// `token_uri`. One token is cached and renewed `renewalMargin` before it expires; callers
/// arriving while an exchange is under way wait for that one, so a burst of requests costs one
/// exchange, not one each.
public actor GoogleAccessTokens {
    /// The only scope the wallet asks for.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// How long an assertion is valid: Google's most.
    static let assertionLifetimeSeconds: Int64 = 3_600
    /// A token this close to its expiry is renewed before use.
    public static let renewalMargin: TimeInterval = 300
    /// The longest token answer read, and the longest token kept.
    static let answerBytesMax = 64 * 1024
    static let accessTokenBytesMax = 4_096

    public nonisolated let serviceAccount: GoogleServiceAccount
    let policy: GoogleRetryPolicy
    private let now: @Sendable () -> Date

    private struct Cached {
        var token: String
        var renewAt: Date
    }

    private var cached: Cached?
    private var exchange: Task<Cached, any Error>?

    /// - Parameter now: the clock tokens are aged by (tests move it on).
    public init(
        serviceAccount: GoogleServiceAccount, requestTimeout: Duration = .seconds(15), attempts: Int = 4, backoff: Duration = .milliseconds(500),
        retryWaitMax: Duration = .seconds(30), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.serviceAccount = serviceAccount
        policy = GoogleRetryPolicy(requestTimeout: requestTimeout, attempts: attempts, backoff: backoff, retryWaitMax: retryWaitMax)
        self.now = now
    }

    /// A token valid for at least `renewalMargin` more (unless Google grants shorter ones).
    /// - Throws: `notConfigured` when Google refuses the service account (Google's error and
    ///   description quoted), `storeUnavailable` when Google cannot be reached or keeps failing.
    public func token() async throws(WalletError) -> String {
        if let cached, cached.renewAt > now() { return cached.token }
        let task: Task<Cached, any Error>
        if let exchange {
            task = exchange
        } else {
            let (serviceAccount, policy, now) = (serviceAccount, policy, now)
            task = Task { () async throws(WalletError) -> Cached in
                let issuedAt = now()
                let (token, expiresIn) = try await Self.exchange(serviceAccount: serviceAccount, policy: policy, at: issuedAt)
                return Cached(token: token, renewAt: issuedAt.addingTimeInterval(TimeInterval(expiresIn) - Self.renewalMargin))
            }
            exchange = task
        }
        let result = await task.result
        // The first waiter back clears the exchange; later ones find another (or none) in its place.
        if exchange == task { exchange = nil }
        switch result {
        case .success(let fresh):
            if cached.map({ $0.renewAt < fresh.renewAt }) ?? true { cached = fresh }
            return fresh.token
        case .failure(let error as WalletError):
            throw error
        case .failure(let error):
            throw .storeUnavailable("the Google access token could not be had: \(error)")
        }
    }

    /// Forgets `token` if it is the one cached, after the API refused it: the next `token()`
    /// exchanges again. A token renewed meanwhile by another caller is kept.
    public func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    // MARK: The exchange

    /// The assertion for `now`: RS256, `kid` = the key's id; `iss`, `scope`, `aud` (the token
    /// URI), `iat` and `exp` an hour on.
    public nonisolated static func assertion(for serviceAccount: GoogleServiceAccount, at now: Date) throws(WalletError) -> String {
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let header = Assertion.Header(alg: "RS256", kid: serviceAccount.privateKeyID, typ: "JWT")
        let claims = Assertion.Claims(
            iss: serviceAccount.clientEmail, scope: scope, aud: serviceAccount.tokenURI, iat: issuedAt, exp: issuedAt + assertionLifetimeSeconds)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let signingInput = Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
            // RS256 is RSASSA-PKCS1-v1_5 with SHA-256: swift-crypto names that padding `insecurePKCS1v1_5`.
            let signature = try serviceAccount.privateKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
            return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        } catch {
            throw .notConfigured("the Google service account's key could not sign the OAuth assertion")
        }
    }

    /// Exchanges a fresh assertion for a token and its lifetime in seconds.
    static func exchange(serviceAccount: GoogleServiceAccount, policy: GoogleRetryPolicy, at now: Date) async throws(WalletError) -> (String, Int64) {
        let form = "grant_type=\(GoogleHTTP.queryEncoded(grantType))&assertion=\(GoogleHTTP.queryEncoded(try assertion(for: serviceAccount, at: now)))"
        let answer: GoogleHTTP.Answer
        do {
            answer = try await policy.run { () async throws(GoogleCallFailure) -> GoogleHTTP.Answer in
                let answer = try await GoogleHTTP.send(
                    .POST, url: serviceAccount.tokenURI, headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                    body: Data(form.utf8), timeout: policy.requestTimeout, bytesMax: answerBytesMax, service: "Google's OAuth token endpoint")
                guard (200..<300).contains(answer.status) else {
                    throw .answered(status: answer.status, message: refusal(answer.body), retryAfter: GoogleHTTP.retryAfter(answer.headers))
                }
                return answer
            }
        } catch {
            throw walletError(error, serviceAccount: serviceAccount)
        }
        guard let granted = WalletJSON.decodeStrictly(TokenAnswer.self, from: answer.body), !granted.access_token.isEmpty,
            granted.access_token.utf8.count <= accessTokenBytesMax, granted.access_token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw .storeUnavailable("Google's OAuth token endpoint answered without a usable access token")
        }
        if let type = granted.token_type, type.lowercased() != "bearer" {
            throw .storeUnavailable("Google's OAuth token endpoint answered a '\(GoogleHTTP.quoted(type, charactersMax: 40))' token, not a bearer token")
        }
        // No lifetime, or a nonsensical one, is taken as none left: used once, renewed next time.
        return (granted.access_token, min(max(granted.expires_in ?? 0, 0), 86_400))
    }

    /// Google's OAuth error (`error`, `error_description`) quoted, or nil.
    static func refusal(_ body: Data) -> String? {
        struct Refusal: Decodable {
            var error: String?
            var error_description: String?
        }
        guard let refusal = WalletJSON.decodeStrictly(Refusal.self, from: body) else { return nil }
        let said = [refusal.error, refusal.error_description].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
        return said.isEmpty ? nil : GoogleHTTP.quoted(said)
    }

    static func walletError(_ failure: GoogleCallFailure, serviceAccount: GoogleServiceAccount) -> WalletError {
        switch failure {
        case .answered(let status, let message, _) where (400..<500).contains(status) && status != 429:
            return .notConfigured(
                "Google refused the service account \(serviceAccount.clientEmail)'s token request (HTTP \(status)"
                    + (message.map { ": \($0)" } ?? "")
                    + "): check that the key file is current (not deleted in Google Cloud) and the server's clock is right")
        case .answered(let status, let message, _):
            return .storeUnavailable("Google's OAuth token endpoint answered HTTP \(status)" + (message.map { ": \($0)" } ?? ""))
        case .unavailable(let detail), .malformed(let detail):
            return .storeUnavailable(detail)
        case .wallet(let error):
            return error
        }
    }

    /// The token endpoint's answer, in its own field names.
    struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Int64?
        var token_type: String?
    }

    /// The assertion's parts, as they are written (and as the stand-in reads them back).
    enum Assertion {
        struct Header: Codable, Equatable {
            var alg: String
            var kid: String
            var typ: String
        }

        struct Claims: Codable, Equatable {
            var iss: String
            var scope: String
            var aud: String
            var iat: Int64
            var exp: Int64
        }
    }
}
