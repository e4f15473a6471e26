import Foundation
import NIOHTTP1
import WalletCore

/// Where and how the wallet calls Google's Android Publisher API.
public struct GooglePlayAPIConfiguration: Sendable {
    public static let productionURL = "https://androidpublisher.googleapis.com"

    public var serviceAccount: GoogleServiceAccount
    /// The app's package name (`com.example.game`): the only app the wallet asks about.
    public var packageName: String
    /// The API's base URL: Google's, or a stand-in for tests and staging.
    public var baseURL: String
    /// How long one request may take, connection included.
    public var requestTimeout: Duration = .seconds(15)
    /// How many times a request is tried in all before its failure is reported.
    public var attempts = 4
    /// The first wait between attempts, doubled after each (with jitter).
    public var backoff: Duration = .milliseconds(500)
    /// The longest wait for a 429's `Retry-After`; Google asking for more is reported instead.
    public var retryWaitMax: Duration = .seconds(30)

    /// - Throws: `invalidRequest` for a package name that is not a Java package name, or a URL
    ///   that is not `http(s)://host[:port]`.
    public init(serviceAccount: GoogleServiceAccount, packageName: String, baseURL: String = Self.productionURL) throws(WalletError) {
        self.serviceAccount = serviceAccount
        self.packageName = try Self.packageName(packageName)
        let trimmed = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        guard GoogleHTTP.isPlainHTTPURL(trimmed, pathAllowed: false) else {
            throw .invalidRequest("the Google Play API URL must be http(s)://host[:port], without a path, not '\(GoogleHTTP.quoted(baseURL, charactersMax: 200))'")
        }
        self.baseURL = trimmed
    }

    /// A Java package name as Android application ids are: two or more segments separated by
    /// dots, each a letter then letters, digits or `_`.
    static func packageName(_ value: String) throws(WalletError) -> String {
        let segments = value.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            value.utf8.count <= Limits.identifierBytesMax && segments.count >= 2
            && segments.allSatisfy { segment in
                guard let first = segment.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) else { return false }
                return segment.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                        || byte == UInt8(ascii: "_")
                }
            }
        guard valid else {
            throw .invalidRequest(
                "the Google Play package name must be a Java package name such as com.example.game (letters, digits and '_', in two or more parts separated by '.'), not '\(GoogleHTTP.quoted(value, charactersMax: 200))'")
        }
        return value
    }
}

/// The wallet's client of Google's Android Publisher API v3: each request carries a cached
/// service-account access token (renewed once if Google refuses it), is timed out, and is tried
/// again with backoff on 5xx, 429 and no answer; failures become `WalletError`s a person can act
/// on. Nothing it returns is trusted beyond being what Google answered over TLS.
public struct GooglePlayAPI: GooglePlayPurchasesAPI {
    public let configuration: GooglePlayAPIConfiguration
    public let tokens: GoogleAccessTokens

    /// The longest answer accepted from Google.
    static let answerBytesMax = 4 * 1024 * 1024
    /// Voided purchases asked for per page: Google's most.
    static let voidedPageSizeMax = 1_000
    /// The longest page token the wallet sends back.
    static let pageTokenBytesMax = 4_096

    /// - Parameter tokens: where access tokens come from; by default a cache of the
    ///   configuration's service account with its timeouts and retries.
    public init(configuration: GooglePlayAPIConfiguration, tokens: GoogleAccessTokens? = nil) {
        self.configuration = configuration
        self.tokens =
            tokens
            ?? GoogleAccessTokens(
                serviceAccount: configuration.serviceAccount, requestTimeout: configuration.requestTimeout, attempts: configuration.attempts,
                backoff: configuration.backoff, retryWaitMax: configuration.retryWaitMax)
    }

    var policy: GoogleRetryPolicy {
        GoogleRetryPolicy(
            requestTimeout: configuration.requestTimeout, attempts: configuration.attempts, backoff: configuration.backoff,
            retryWaitMax: configuration.retryWaitMax)
    }

    // MARK: Calls

    public func productPurchase(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleProductPurchase {
        let path = try purchasePath(productID: productID, purchaseToken: purchaseToken)
        do {
            return try await decoded(GoogleProductPurchase.self, .GET, path: path)
        } catch {
            throw Self.walletError(error, call: .purchase)
        }
    }

    /// Consumes the purchase. A refusal (4xx) is checked against the purchase itself: one that
    /// Google shows as consumed answers `.alreadyConsumed` (an earlier attempt or the app did
    /// it), so a retried consume ends.
    public func consume(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleConsumeOutcome {
        let path = try purchasePath(productID: productID, purchaseToken: purchaseToken)
        do {
            _ = try await send(.POST, path: path + ":consume")
            return .consumed
        } catch {
            guard case .answered(let status, _, _) = error, (400..<500).contains(status), ![401, 403, 429].contains(status) else {
                throw Self.walletError(error, call: .purchase)
            }
            if let purchase = try? await decoded(GoogleProductPurchase.self, .GET, path: path), purchase.consumptionState == 1 {
                return .alreadyConsumed
            }
            throw Self.walletError(error, call: .purchase)
        }
    }

    /// Acknowledges the purchase. A refusal (4xx) is checked against the purchase itself: one
    /// that Google shows as acknowledged answers `.alreadyAcknowledged`, so a retried
    /// acknowledgement ends.
    public func acknowledge(productID: String, purchaseToken: String) async throws(WalletError) -> GoogleAcknowledgeOutcome {
        let path = try purchasePath(productID: productID, purchaseToken: purchaseToken)
        do {
            _ = try await send(.POST, path: path + ":acknowledge")
            return .acknowledged
        } catch {
            guard case .answered(let status, _, _) = error, (400..<500).contains(status), ![401, 403, 429].contains(status) else {
                throw Self.walletError(error, call: .purchase)
            }
            if let purchase = try? await decoded(GoogleProductPurchase.self, .GET, path: path), purchase.acknowledgementState == 1 {
                return .alreadyAcknowledged
            }
            throw Self.walletError(error, call: .purchase)
        }
    }

    public func voidedPurchases(start: Date, end: Date, pageToken: String?) async throws(WalletError) -> GoogleVoidedPurchasePage {
        guard let startMillis = Self.millis(start), let endMillis = Self.millis(end), startMillis <= endMillis else {
            throw .invalidRequest("the voided purchases' start must be a time after 1970 and not after their end")
        }
        var query = [
            ("startTime", String(startMillis)), ("endTime", String(endMillis)), ("maxResults", String(Self.voidedPageSizeMax)), ("type", "0"),
            ("includeQuantityBasedPartialRefund", "true"),
        ]
        if let pageToken {
            guard !pageToken.isEmpty, pageToken.utf8.count <= Self.pageTokenBytesMax, pageToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalidRequest("the voided purchases' page token must be 1 to \(Self.pageTokenBytesMax) visible ASCII characters")
            }
            query.append(("token", pageToken))
        }
        let path = "/androidpublisher/v3/applications/\(configuration.packageName)/purchases/voidedpurchases?"
            + query.map { "\($0.0)=\(GoogleHTTP.queryEncoded($0.1))" }.joined(separator: "&")
        let answer: VoidedAnswer
        do {
            answer = try await decoded(VoidedAnswer.self, .GET, path: path)
        } catch {
            throw Self.walletError(error, call: .voided(packageName: configuration.packageName))
        }
        let next = answer.tokenPagination?.nextPageToken
        return GoogleVoidedPurchasePage(voidedPurchases: answer.voidedPurchases ?? [], nextPageToken: next?.isEmpty == false ? next : nil)
    }

    static func millis(_ date: Date) -> Int64? {
        let millis = (date.timeIntervalSince1970 * 1_000).rounded(.down)
        guard millis.isFinite, millis >= 0, millis < 1e15 else { return nil }
        return Int64(millis)
    }

    // MARK: Requests

    private func purchasePath(productID: String, purchaseToken: String) throws(WalletError) -> String {
        try Self.validatePathSegment(productID, field: "the Google product id")
        try Self.validatePathSegment(purchaseToken, field: "the Google purchase token")
        return "/androidpublisher/v3/applications/\(configuration.packageName)/purchases/products/\(productID)/tokens/\(purchaseToken)"
    }

    /// A path segment the wallet puts in a URL: Google's product ids and purchase tokens are
    /// letters, digits, `.`, `_` and `-`.
    static func validatePathSegment(_ value: String, field: String) throws(WalletError) {
        let allowed = { (byte: UInt8) in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
        guard (1...Limits.identifierBytesMax).contains(value.utf8.count), value.utf8.allSatisfy(allowed), value != ".", value != ".." else {
            throw .invalidRequest("\(field) must be 1 to \(Limits.identifierBytesMax) letters, digits, '-', '_' or '.'")
        }
    }

    private func decoded<Answer: Decodable>(_ type: Answer.Type, _ method: HTTPMethod, path: String) async throws(GoogleCallFailure) -> Answer {
        let data = try await send(method, path: path)
        // Unknown members are ignored; a member of the wrong type, or named twice, is refused.
        guard let answer = WalletJSON.decodeStrictly(Answer.self, from: data) else {
            throw .malformed("Google's answer to \(method) \(path.prefix { $0 != "?" }) is not the JSON expected")
        }
        return answer
    }

    /// Sends one request with the current access token, trying again as Google's answers
    /// allow; on a 401, once more with a freshly exchanged token. The answer's body on 2xx.
    func send(_ method: HTTPMethod, path: String) async throws(GoogleCallFailure) -> Data {
        let url = configuration.baseURL + path
        var renewed = false
        while true {
            let token: String
            do {
                token = try await tokens.token()
            } catch {
                throw .wallet(error)
            }
            do {
                return try await policy.run { () async throws(GoogleCallFailure) -> Data in
                    let answer = try await GoogleHTTP.send(
                        method, url: url, headers: [("Authorization", "Bearer \(token)"), ("Accept", "application/json")], body: nil,
                        timeout: configuration.requestTimeout, bytesMax: Self.answerBytesMax, service: "Google's Android Publisher API")
                    guard (200..<300).contains(answer.status) else {
                        throw .answered(status: answer.status, message: Self.googleMessage(answer.body), retryAfter: GoogleHTTP.retryAfter(answer.headers))
                    }
                    return answer.body
                }
            } catch {
                // An access token can be revoked before it expires: one fresh token is worth a try.
                guard case .answered(401, _, _) = error, !renewed else { throw error }
                renewed = true
                await tokens.invalidate(token)
            }
        }
    }

    /// Google's `error.message`, quoted, or nil.
    static func googleMessage(_ body: Data) -> String? {
        struct Payload: Decodable {
            var error: Detail?
            struct Detail: Decodable {
                var message: String?
            }
        }
        guard let message = WalletJSON.decodeStrictly(Payload.self, from: body)?.error?.message, !message.isEmpty else { return nil }
        return GoogleHTTP.quoted(message)
    }

    // MARK: Failures

    /// Which call failed: a 404 or a 400 means something else for each.
    enum Call {
        case purchase
        case voided(packageName: String)
    }

    static let permissionAdvice =
        "the service account is refused: check the key and that it has the 'View financial data' and 'Manage orders' permissions in Play Console"

    static func walletError(_ failure: GoogleCallFailure, call: Call) -> WalletError {
        switch failure {
        case .answered(let status, let message, _):
            let said = message.map { " (Google said: \($0))" } ?? ""
            switch (status, call) {
            case (401, _), (403, _):
                return .notConfigured("\(permissionAdvice); HTTP \(status)\(said)")
            case (404, .voided(let packageName)), (410, .voided(let packageName)):
                return .notConfigured("Google knows no app \(packageName) for this service account (HTTP \(status))\(said)")
            case (404, .purchase), (410, .purchase):
                return .notFound("Google knows no such purchase (HTTP \(status))\(said)")
            case (400, .purchase):
                return .purchaseInvalid("Google refused the purchase token or product id\(said)")
            case (400, .voided):
                return .invalidRequest("Google refused the voided purchases request\(said)")
            default:
                return .storeUnavailable("Google's Android Publisher API answered HTTP \(status)\(said)")
            }
        case .unavailable(let detail), .malformed(let detail):
            return .storeUnavailable(detail)
        case .wallet(let error):
            return error
        }
    }

    // MARK: Answers

    struct VoidedAnswer: Decodable {
        var voidedPurchases: [GoogleVoidedPurchase]?
        var tokenPagination: TokenPagination?

        struct TokenPagination: Decodable {
            var nextPageToken: String?
        }
    }
}
