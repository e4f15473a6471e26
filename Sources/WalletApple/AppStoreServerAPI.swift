import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import WalletCore

/// Where and how the wallet calls Apple's App Store Server API.
public struct AppStoreServerAPIConfiguration: Sendable {
    public static let productionURL = "https://api.storekit.itunes.apple.com"
    public static let sandboxURL = "https://api.storekit-sandbox.itunes.apple.com"

    public var credentials: AppStoreServerAPICredentials
    /// The base URLs: Apple's hosts, or a stand-in for tests and staging.
    public var productionURL: String
    public var sandboxURL: String
    /// How long one request may take, connection included.
    public var requestTimeout: Duration = .seconds(15)
    /// How many times a request is tried in all before its failure is reported.
    public var attempts = 4
    /// The first wait between attempts, doubled after each (with jitter).
    public var backoff: Duration = .milliseconds(500)
    /// The longest wait for a 429's `Retry-After`; Apple asking for more is reported instead.
    public var retryWaitMax: Duration = .seconds(30)

    /// - Throws: `invalidRequest` for a URL that is not `http(s)://host[:port]`.
    public init(credentials: AppStoreServerAPICredentials, productionURL: String = Self.productionURL, sandboxURL: String = Self.sandboxURL) throws(WalletError) {
        self.credentials = credentials
        self.productionURL = try Self.baseURL(productionURL, name: "the App Store Server API URL")
        self.sandboxURL = try Self.baseURL(sandboxURL, name: "the App Store Server API sandbox URL")
    }

    static func baseURL(_ text: String, name: String) throws(WalletError) -> String {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = components.host, !host.isEmpty, components.path.isEmpty, components.query == nil, components.fragment == nil,
            components.user == nil, components.password == nil
        else {
            throw .invalidRequest("\(name) must be http(s)://host[:port], without a path, not '\(text.prefix(200))'")
        }
        return trimmed
    }

    func baseURL(_ environment: AppleConfiguration.Environment) -> String {
        environment == .production ? productionURL : sandboxURL
    }
}

/// The wallet's client of Apple's App Store Server API: each request signed with a fresh token,
/// timed out, retried with backoff on 5xx, 429 and Apple's retryable error codes; failures mapped
/// to `WalletError`s a person can act on. Nothing it returns is trusted: the signed transactions
/// and notifications it hands back are verified by `AppleSignedDataVerifier` before use.
public struct AppStoreServerAPI: Sendable {
    public let configuration: AppStoreServerAPIConfiguration

    /// The most history pages one request reads for one customer (Apple sends 20 transactions a
    /// page), newest first. Past it the request fails rather than read on: Apple paging without
    /// end (or a stand-in doing so) must not make one receipt cost thousands of verifications.
    public static let historyPagesMax = 50
    /// The most signed transactions one history read accepts: `historyPagesMax` pages of
    /// Apple's 20, however many a page holds.
    public static let historyTransactionsMax = historyPagesMax * 20
    /// The longest answer accepted from Apple.
    static let answerBytesMax = 4 * 1024 * 1024

    /// One client for the process, with redirects off: a request token never follows a
    /// redirect to another host. Untraced: once `wallet serve --otel-endpoint` bootstraps a
    /// tracer, AsyncHTTPClient's own spans would carry each call's full URL (transaction and
    /// order ids) to the collector.
    private static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10)))
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init(configuration: AppStoreServerAPIConfiguration) {
        self.configuration = configuration
    }

    // MARK: Endpoints

    /// The kinds of product Get Transaction History v2 filters by (`productType`).
    public enum HistoryProductType: String, Sendable, CaseIterable {
        case consumable = "CONSUMABLE"
        case nonConsumable = "NON_CONSUMABLE"
        case nonRenewable = "NON_RENEWABLE"
        case autoRenewable = "AUTO_RENEWABLE"
    }

    /// A customer's consumable purchases (Get Transaction History v2, `productType=CONSUMABLE`),
    /// newest first: `history` of consumables.
    public func consumableHistory(
        transactionID: String, environments: Set<AppleConfiguration.Environment>, wanted: Set<String> = []
    ) async throws(WalletError) -> TransactionHistory {
        try await history(transactionID: transactionID, productTypes: [.consumable], environments: environments, wanted: wanted)
    }

    /// A customer's purchases of `productTypes` (Get Transaction History v2, one `productType`
    /// parameter each), newest first, from the environment that knows `transactionID`:
    /// production, then sandbox when `environments` allows it and production answers
    /// TransactionIdNotFound (4040010). With `wanted`, paging stops once every id of it has been
    /// seen (read from the payloads unverified: only to stop; every transaction is verified
    /// before use), so a long history costs only the pages back to the oldest purchase a receipt
    /// names; without, the whole history is read, at most `historyPagesMax` pages.
    public func history(
        transactionID: String, productTypes: [HistoryProductType], environments: Set<AppleConfiguration.Environment>, wanted: Set<String> = []
    ) async throws(WalletError) -> TransactionHistory {
        try Self.validatePathSegment(transactionID, field: "the transaction id")
        guard !productTypes.isEmpty else { throw .invalidRequest("a history read names at least one product type") }
        return try await firstEnvironment(environments) { environment throws(APIFailure) in
            var signed: [String] = []
            var unseen = wanted
            var revision: String?
            for _ in 0..<Self.historyPagesMax {
                var query = productTypes.map { ("productType", $0.rawValue) } + [("sort", "DESCENDING")]
                if let revision { query.append(("revision", revision)) }
                let page = try await self.decoded(
                    HistoryPage.self, .GET, environment: environment, path: "/inApps/v2/history/\(transactionID)", query: query)
                signed += page.signedTransactions ?? []
                guard signed.count <= Self.historyTransactionsMax else {
                    throw .tooLong("Apple's history for this customer holds more than \(Self.historyTransactionsMax) transactions in \(Self.historyPagesMax) pages")
                }
                for transaction in page.signedTransactions ?? [] { Self.unverifiedTransactionID(transaction).map { _ = unseen.remove($0) } }
                guard page.hasMore == true, let next = page.revision, !next.isEmpty, wanted.isEmpty || !unseen.isEmpty else {
                    return TransactionHistory(environment: environment, signedTransactions: signed)
                }
                revision = next
            }
            throw .tooLong("Apple's history for this customer runs past \(Self.historyPagesMax) pages; the wallet reads no further for one receipt")
        }
    }

    /// The `transactionId` a signed transaction's payload claims, unverified: only for knowing
    /// when to stop paging.
    static func unverifiedTransactionID(_ signed: String) -> String? {
        struct Header: Decodable {}
        struct Payload: Decodable { var transactionId: String }
        return (try? CompactJWS<Header>(signed, bytesMax: 64 * 1024))?.payload(as: Payload.self)?.transactionId
    }

    /// The signed transactions of an order id from Apple's emailed receipt (Look Up Order ID).
    /// - Throws: `notFound` when Apple answers that the order id is invalid.
    public func lookUpOrder(orderID: String) async throws(WalletError) -> [String] {
        try Self.validatePathSegment(orderID, field: "the order id")
        let answer: OrderLookup
        do {
            answer = try await decoded(OrderLookup.self, .GET, environment: .production, path: "/inApps/v1/lookup/\(orderID)")
        } catch {
            throw error.walletError
        }
        guard answer.status == 0 else { throw .notFound("Apple knows no order \(orderID) for this app (Look Up Order ID answered status \(answer.status ?? -1))") }
        return answer.signedTransactions ?? []
    }

    /// One page of the notifications Apple sent (or tried to send) between `start` and `end`.
    public func notificationHistory(
        environment: AppleConfiguration.Environment, start: Date, end: Date, onlyFailures: Bool, paginationToken: String?
    ) async throws(WalletError) -> NotificationHistoryPage {
        struct Body: Encodable {
            var startDate: Int64
            var endDate: Int64
            var onlyFailures: Bool?
        }
        let body = Body(
            startDate: Int64((start.timeIntervalSince1970 * 1_000).rounded(.down)), endDate: Int64((end.timeIntervalSince1970 * 1_000).rounded(.down)),
            onlyFailures: onlyFailures ? true : nil)
        do {
            let page = try await decoded(
                NotificationHistoryAnswer.self, .POST, environment: environment, path: "/inApps/v1/notifications/history",
                query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: try JSONEncoder().encode(body))
            return NotificationHistoryPage(
                signedPayloads: (page.notificationHistory ?? []).compactMap(\.signedPayload),
                nextPaginationToken: page.hasMore == true ? page.paginationToken : nil)
        } catch let failure as APIFailure {
            throw failure.walletError
        } catch {
            throw .invalidRequest("the notification history request could not be encoded: \(error)")
        }
    }

    /// Send Consumption Information (V2) for a purchase Apple asked about.
    public func sendConsumption(
        transactionID: String, environment: AppleConfiguration.Environment, _ information: ConsumptionInformation
    ) async throws(WalletError) {
        try Self.validatePathSegment(transactionID, field: "the transaction id")
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            _ = try await send(.PUT, environment: environment, path: "/inApps/v2/transactions/consumption/\(transactionID)", body: try encoder.encode(information))
        } catch let failure as APIFailure {
            throw failure.walletError
        } catch {
            throw .invalidRequest("the consumption information could not be encoded: \(error)")
        }
    }

    // MARK: Requests

    /// Runs `body` against production, then sandbox when allowed and production does not know
    /// the transaction.
    private func firstEnvironment<Result>(
        _ environments: Set<AppleConfiguration.Environment>, _ body: (AppleConfiguration.Environment) async throws(APIFailure) -> Result
    ) async throws(WalletError) -> Result {
        let order = [AppleConfiguration.Environment.production, .sandbox].filter(environments.contains)
        var lastFailure: APIFailure?
        for environment in order {
            do {
                return try await body(environment)
            } catch {
                guard error.isTransactionIDNotFound else { throw error.walletError }
                lastFailure = error
            }
        }
        throw lastFailure?.walletError ?? .notConfigured("no App Store environment is accepted")
    }

    private func decoded<Answer: Decodable>(
        _ type: Answer.Type, _ method: HTTPMethod, environment: AppleConfiguration.Environment, path: String, query: [(String, String)] = [],
        body: Data? = nil
    ) async throws(APIFailure) -> Answer {
        let data = try await send(method, environment: environment, path: path, query: query, body: body)
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw .malformed("Apple's answer to \(method) \(path) is not the JSON expected")
        }
    }

    /// Sends one request, trying again as Apple's rules allow; the answer's body on 2xx.
    func send(
        _ method: HTTPMethod, environment: AppleConfiguration.Environment, path: String, query: [(String, String)] = [], body: Data? = nil
    ) async throws(APIFailure) -> Data {
        var components = URLComponents(string: configuration.baseURL(environment) + path)
        if !query.isEmpty { components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components?.string else { throw .malformed("the request URL for \(path) could not be built") }
        var attempt = 1
        while true {
            let failure: APIFailure
            do {
                return try await sendOnce(method, url: url, body: body)
            } catch {
                failure = error
            }
            guard attempt < configuration.attempts, let wait = failure.retryWait(attempt: attempt, backoff: configuration.backoff) else { throw failure }
            if wait > configuration.retryWaitMax {
                throw .answered(status: 429, code: 4_290_000, message: "Apple asks the wallet to wait \(wait) before trying again")
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                throw .unreachable("the request was cancelled while waiting to try again")
            }
            attempt += 1
        }
    }

    private func sendOnce(_ method: HTTPMethod, url: String, body: Data?) async throws(APIFailure) -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = method
        do {
            request.headers.add(name: "Authorization", value: "Bearer \(try configuration.credentials.token(at: Date()))")
        } catch {
            throw .credentials(error.detail)
        }
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "CreditsWallet")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let timeout = TimeAmount.nanoseconds(Int64(configuration.requestTimeout.components.seconds) * 1_000_000_000
            + configuration.requestTimeout.components.attoseconds / 1_000_000_000)
        let status: Int
        let headers: HTTPHeaders
        var bytes: ByteBuffer
        do {
            let response = try await Self.http.execute(request, deadline: .now() + timeout)
            status = Int(response.status.code)
            headers = response.headers
            bytes = try await response.body.collect(upTo: Self.answerBytesMax)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw .unreachable("Apple's App Store Server API did not answer within \(configuration.requestTimeout)")
        } catch is NIOTooManyBytesError {
            throw .malformed("Apple's answer is longer than \(Self.answerBytesMax) bytes")
        } catch {
            throw .unreachable("Apple's App Store Server API could not be reached: \(error)")
        }
        let data = Data(bytes.readBytes(length: bytes.readableBytes) ?? [])
        if (200..<300).contains(status) { return data }
        let payload = try? JSONDecoder().decode(ErrorPayload.self, from: data)
        throw .answered(
            status: status, code: payload?.errorCode, message: payload?.errorMessage,
            retryAt: headers.first(name: "Retry-After").flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1_000) })
    }

    /// A path segment the wallet puts in a URL: Apple's ids are letters and digits.
    static func validatePathSegment(_ value: String, field: String) throws(WalletError) {
        let allowed = { (byte: UInt8) in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
        guard (1...64).contains(value.utf8.count), value.utf8.allSatisfy(allowed), value != ".", value != ".." else {
            throw .invalidRequest("\(field) must be 1 to 64 letters, digits, '-', '_' or '.'")
        }
    }

    // MARK: Answers

    private struct HistoryPage: Decodable {
        var revision: String?
        var hasMore: Bool?
        var signedTransactions: [String]?
    }

    private struct OrderLookup: Decodable {
        var status: Int?
        var signedTransactions: [String]?
    }

    private struct NotificationHistoryAnswer: Decodable {
        var paginationToken: String?
        var hasMore: Bool?
        var notificationHistory: [Item]?

        struct Item: Decodable {
            var signedPayload: String?
        }
    }

    private struct ErrorPayload: Decodable {
        var errorCode: Int64?
        var errorMessage: String?
    }
}

/// A customer's purchases as Apple signed them, unverified.
public struct TransactionHistory: Sendable {
    public var environment: AppleConfiguration.Environment
    public var signedTransactions: [String]
}

/// One page of Get Notification History, unverified.
public struct NotificationHistoryPage: Sendable {
    public var signedPayloads: [String]
    /// Set when Apple holds more pages.
    public var nextPaginationToken: String?
}

/// The body of Send Consumption Information (V2).
public struct ConsumptionInformation: Codable, Sendable, Equatable {
    public var customerConsented: Bool
    /// `DELIVERED`, or one of the `UNDELIVERED_…` reasons.
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    /// How much of the purchase was consumed, in thousandths of a percent (0 to 100000).
    public var consumptionPercentage: Int64?
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`; nil states no preference.
    public var refundPreference: String?

    public init(customerConsented: Bool, deliveryStatus: String, sampleContentProvided: Bool, consumptionPercentage: Int64?, refundPreference: String?) {
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// Why a request to Apple failed, before it becomes a `WalletError`.
enum APIFailure: Error {
    /// Apple answered with a status that is not 2xx, and perhaps an error code and message.
    case answered(status: Int, code: Int64?, message: String?, retryAt: Date? = nil)
    /// No answer: connection refused or reset, or the timeout passed.
    case unreachable(String)
    /// An answer the wallet cannot read.
    case malformed(String)
    /// The wallet's own key could not sign a token.
    case credentials(String)
    /// An answer longer than the wallet reads for one request (pages or transactions).
    case tooLong(String)

    /// Apple's error codes that ask the caller to try again.
    static let retryableCodes: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 4_290_000, 5_000_001]

    var isTransactionIDNotFound: Bool {
        if case .answered(_, 4_040_010?, _, _) = self { true } else { false }
    }

    /// How long to wait before attempt `attempt + 1`, or nil when trying again cannot help.
    func retryWait(attempt: Int, backoff: Duration) -> Duration? {
        let backoffWait = backoff * Double(1 << min(attempt - 1, 10)) * Double.random(in: 0.5...1.0)
        switch self {
        case .unreachable:
            return backoffWait
        case .answered(let status, let code, _, let retryAt):
            if status == 429 || code == 4_290_000 {
                guard let retryAt else { return backoffWait }
                // Any time Apple names, clamped before it becomes a whole number (a day is past any wait taken).
                let seconds = retryAt.timeIntervalSinceNow
                return .milliseconds(Int64((seconds.isFinite ? min(max(seconds, 0), 86_400) : 0) * 1_000))
            }
            if status >= 500 || code.map(Self.retryableCodes.contains) == true { return backoffWait }
            return nil
        case .malformed, .credentials, .tooLong:
            return nil
        }
    }

    /// Apple's codes the wallet explains; others are reported with Apple's own message.
    static let explanations: [Int64: String] = [
        4_000_006: "the transaction id is not one Apple issues",
        4_000_014: "the page token is not valid",
        4_000_017: "the page token expired; start again",
        4_000_012: "the start date is more than 180 days ago",
        4_000_013: "the start date is after the end date",
        4_000_043: "the transaction is not a consumable",
        4_040_001: "Apple knows no such customer account",
        4_040_003: "Apple knows no app with this bundle id",
        4_040_005: "Apple knows no such original transaction",
        4_040_010: "Apple knows no such transaction (in any environment the wallet accepts)",
        4_290_000: "Apple is rate-limiting the wallet's requests",
        5_000_000: "Apple's server failed",
        5_000_001: "Apple's server failed (temporarily)",
    ]

    var walletError: WalletError {
        switch self {
        case .answered(let status, let code, let message, _):
            let said = [code.map { "error \($0)" }, message.map { String($0.prefix(200)) }].compactMap { $0 }.joined(separator: ": ")
            let explained = code.flatMap { Self.explanations[$0] }
            let text = explained.map { said.isEmpty ? $0 : "\($0) (Apple said \(said))" } ?? (said.isEmpty ? "HTTP \(status)" : "Apple said \(said)")
            // Apple's code first: a retryable one that still fails is Apple's trouble, whatever the status.
            if let code, Self.retryableCodes.contains(code) {
                return .storeUnavailable("Apple's App Store Server API kept answering HTTP \(status): \(text)")
            }
            switch (status, code) {
            case (401, _):
                return .notConfigured(
                    "Apple's App Store Server API refused the wallet's credentials (401): check the issuer id, key id and private key, and that the key may use the App Store Server API")
            case (_, 4_040_003?):
                return .notConfigured("\(text): check the bundle id the wallet is configured with")
            case (404, _):
                return .notFound(text)
            case (400, _):
                return .invalidRequest("Apple refused the request: \(text)")
            default:
                return .storeUnavailable("Apple's App Store Server API answered HTTP \(status): \(text)")
            }
        case .unreachable(let detail), .malformed(let detail), .tooLong(let detail):
            return .storeUnavailable(detail)
        case .credentials(let detail):
            return .notConfigured(detail)
        }
    }
}
