import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletGoogle
@testable import WalletSQL
@testable import WalletSQLite
@testable import WalletPostgres
@testable import WalletServer
import WalletTestSupport

let playerSecret = "test-secret-that-is-at-least-32-bytes-long"

/// A server on a fresh ledger with one key per role and the catalog of the core tests.
struct TestServer: @unchecked Sendable {
    let store: SQLLedgerStore
    let router: Router<WalletRequestContext>
    let routes: RouteTable
    let keys: [KeyRole: String]

    static let apple = try! AppleTestAuthority()
    /// What a push must carry with `google:` (Google's OIDC tokens themselves: `GooglePlayClientTests`).
    static let googlePushToken = "push-token-for-tests"

    /// `tokens` replaces the HS256 verifier of `playerTokens` (an ES256 one, say).
    /// `appleAPI` is the App Store Server API the Apple routes ask (a stand-in's). `clock` is the
    /// store's (when transactions are written, when lots and holds expire).
    init(
        _ backend: TestBackend, playerTokens: Bool = true, tokens: PlayerTokenVerifier? = nil, apple: Bool = true,
        appleAPI: AppStoreServerAPIConfiguration? = nil, google: InMemoryGooglePlay? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        store = try await TestStores.open(backend, clock: clock).store
        var keys: [KeyRole: String] = [:]
        for role in KeyRole.allCases { keys[role] = try await store.createAPIKey(role: role, name: "test \(role.rawValue)").secret }
        self.keys = keys
        try await TestStores.addCatalog(store)
        let applePurchases = apple ? ApplePurchases(configuration: try Self.apple.configuration(), ledger: store, api: appleAPI.map(AppStoreServerAPI.init)) : nil
        let verifier = try tokens ?? (playerTokens ? PlayerTokenVerifier(secret: playerSecret) : nil)
        let ledger = store
        let googlePurchases = try google.map { api in
            GooglePurchases(configuration: try GoogleConfiguration(packageName: "com.example.game"), api: api, ledger: ledger)
        }
        let configuration = ServerConfiguration(
            playerTokens: verifier, applePurchases: applePurchases, googlePurchases: googlePurchases,
            googlePush: google == nil ? nil : FixedGooglePushToken(Self.googlePushToken))
        (router, routes) = buildRouter(store: store, configuration: configuration)
    }

    var application: some ApplicationProtocol { Application(router: router, logger: Self.quietLogger) }

    /// Tests log at warning and above, recorded rather than printed: a passing run prints test
    /// results only, and the warnings a test provokes are its expected outcome.
    static let quietLogger = TestLogs.quiet("test-server")

    func test(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await application.test(.router) { client in try await body(client) }
    }

    func bearer(_ role: KeyRole) -> HTTPFields { [.authorization: "Bearer \(keys[role]!)"] }

    /// Credits `player` through the store, outside the API.
    func credit(_ player: PlayerID, quantity: Int64 = 1, transactionID: String = UUID().uuidString) async throws {
        _ = try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: transactionID, productID: "com.example.consume5credits", quantity: quantity, actor: "test"))
    }
}

/// An HS256 player token, signed with `secret`.
func playerToken(_ subject: String, expiresIn seconds: Double = 300, secret: String = playerSecret, alg: String = "HS256", extraClaims: String = "") -> String {
    let claims = #"{"sub":"\#(subject)","exp":\#(Int(Date().timeIntervalSince1970 + seconds))\#(extraClaims)}"#
    // HS256 signing cannot fail.
    return (try? TestJWS.sign(header: #"{"alg":"\#(alg)","typ":"JWT"}"#, payload: claims, key: .hs256(secret: secret))) ?? ""
}

/// An ES256 player token signed with `key`.
func es256PlayerToken(_ subject: String, key: P256.Signing.PrivateKey, alg: String = "ES256", expiresIn seconds: Double = 300) throws -> String {
    let claims = #"{"sub":"\#(subject)","exp":\#(Int(Date().timeIntervalSince1970 + seconds))}"#
    return try TestJWS.sign(header: #"{"alg":"\#(alg)","typ":"JWT"}"#, payload: claims, key: .es256(key))
}

func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

extension HTTPFields {
    static func + (lhs: HTTPFields, rhs: HTTPFields) -> HTTPFields {
        var result = lhs
        for field in rhs { result[field.name] = field.value }
        return result
    }

    static let jsonContent: HTTPFields = [.contentType: "application/json"]
}

extension TestResponse {
    func object() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] ?? [:]
    }

    /// The problem document's `code`, after checking the document's shape.
    func problemCode() throws -> String? {
        #expect(headers[.contentType] == "application/problem+json")
        let problem = try JSONDecoder().decode(Problem.self, from: Data(buffer: body))
        #expect(problem.status == Int(status.code))
        #expect(problem.type == "urn:creditswallet:problem:\(problem.code)")
        #expect(!problem.title.isEmpty && !problem.detail.isEmpty)
        return problem.code
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        self.init(buffer.readableBytesView)
    }
}

