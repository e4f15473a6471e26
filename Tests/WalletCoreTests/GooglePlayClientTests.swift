import Crypto
import Foundation
import Testing
@testable import WalletCore
@testable import WalletGoogle
import WalletTestSupport
import _CryptoExtras

/// The Google Play client against a stand-in Google on 127.0.0.1: the service-account key
/// file, access tokens (one exchange for concurrent callers, renewal, refusals), the three
/// Android Publisher calls with their retries and refusals, and push authentication.
@Suite("Google Play client (stand-in Google)", .throttled)
struct GooglePlayClientTests {
    static let productID = "com.example.game.gems100"

    /// A pending-free, unconsumed purchase of `productID`, registered under a fresh token.
    static func purchased(_ google: GoogleStandIn, _ changes: (inout GoogleProductPurchase) -> Void = { _ in }) -> String {
        let token = "tok." + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var purchase = GoogleProductPurchase(orderId: "GPA.3372-1234-5678-9012", quantity: 2, regionCode: "FR", purchaseTimeMillis: "1767225600000")
        changes(&purchase)
        google.add(purchase: purchase, token: token, productID: productID)
        return token
    }

    // MARK: The key file

    @Test("the key file Google Cloud issues loads from its JSON and from its path; its descriptions never show the key")
    func keyFileLoads() throws {
        let json = try GoogleStandIn.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token")
        let account = try GoogleServiceAccount.load("  " + json)
        #expect(account.clientEmail == GoogleStandIn.clientEmail && account.privateKeyID == GoogleStandIn.privateKeyID)
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("google-key-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try GoogleServiceAccount.load(path).clientEmail == GoogleStandIn.clientEmail)
        let keyBody = try Self.keyBody()
        var dumped = ""
        dump(account, to: &dumped)
        for text in [account.description, account.debugDescription, "\(account)", String(reflecting: account), dumped] {
            #expect(!text.contains("PRIVATE KEY") && !text.contains(keyBody), "\(text.prefix(200))")
        }
    }

    /// A line from the middle of the test service account's PEM: no error may quote it.
    static func keyBody() throws -> String {
        let lines = try GoogleTestKeys.serviceAccount().pkcs8PEMRepresentation.split(separator: "\n")
        return String(lines[lines.count / 2])
    }

    @Test("bad key files are refused with invalid_request naming the problem, never quoting the key")
    func badKeyFiles() async throws {
        let tokenURI = "https://oauth2.googleapis.com/token"
        let ecKey = P256.Signing.PrivateKey().pemRepresentation
        let smallRSA = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).pkcs8PEMRepresentation
        let cases: [(String, String)] = [
            ("not JSON " + (try GoogleTestKeys.serviceAccount().pkcs8PEMRepresentation), "the value given could not be read"),
            ("{\"type\": \"service_account\", " + (try GoogleTestKeys.serviceAccount().pkcs8PEMRepresentation), "is refused"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["client_email": nil]), "no 'client_email'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["private_key": nil]), "no 'private_key'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["private_key_id": nil]), "no 'private_key_id'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["token_uri": nil]), "no 'token_uri'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["type": "authorized_user"]), "'service_account'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: "ftp://oauth2.googleapis.com/token"), "'token_uri'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["client_email": "not-an-email"]), "'client_email'"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["private_key": ecKey]), "not an RSA private key"),
            (try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["private_key": smallRSA]), "at least 2048 bits"),
            (
                try GoogleStandIn.serviceAccountJSON(tokenURI: tokenURI, changes: ["private_key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"]),
                "unencrypted PKCS#8 PEM"
            ),
            ("{\"x\": \"" + String(repeating: "a", count: GoogleServiceAccount.fileBytesMax) + "\"}", "longer than"),
            ("/nonexistent/google-key.json", "could not be read"),
        ]
        let array = await walletError { _ = try GoogleServiceAccount(json: "[1, 2]") }
        #expect(array?.code == "invalid_request" && array?.detail.contains("not a JSON object") == true, "\(array?.detail ?? "loaded")")
        let keyBody = try Self.keyBody()
        let ecBody = String(ecKey.split(separator: "\n")[1])
        for (input, expected) in cases {
            let error = await walletError { _ = try GoogleServiceAccount.load(input) }
            #expect(error?.code == "invalid_request", "\(expected): \(error?.description.prefix(300) ?? "loaded")")
            let detail = error?.detail ?? ""
            #expect(detail.contains(expected), "\(detail.prefix(300))")
            #expect(!detail.contains(keyBody) && !detail.contains(ecBody) && !detail.contains("BEGIN"), "the key is quoted: \(detail.prefix(300))")
        }
    }

    // MARK: Access tokens

    @Test("the assertion is RS256 with the key id, and claims iss, scope, aud = token URI, iat, exp = iat + 3600; the stand-in accepts it")
    func assertionShape() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let account = try google.serviceAccount()
        let now = Date()
        let assertion = try GoogleAccessTokens.assertion(for: account, at: now)
        let jws = try CompactJWS<GoogleAccessTokens.Assertion.Header>(assertion, bytesMax: 16_384)
        #expect(jws.header == .init(alg: "RS256", kid: GoogleStandIn.privateKeyID, typ: "JWT"))
        let claims = try #require(jws.payload(as: GoogleAccessTokens.Assertion.Claims.self))
        let issuedAt = Int64(now.timeIntervalSince1970)
        #expect(claims == .init(iss: GoogleStandIn.clientEmail, scope: GoogleStandIn.scope, aud: google.tokenURI, iat: issuedAt, exp: issuedAt + 3_600))
        let publicKey = try GoogleTestKeys.serviceAccount().publicKey
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jws.signature)
        #expect(publicKey.isValidSignature(signature, for: jws.signingInput, padding: .insecurePKCS1v1_5))
        #expect(!publicKey.isValidSignature(signature, for: Data("x".utf8) + jws.signingInput, padding: .insecurePKCS1v1_5))
        // Through the client: the stand-in checked signature and claims, and the call went through.
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let token = Self.purchased(google)
        #expect(try await api.productPurchase(productID: Self.productID, purchaseToken: token).orderId == "GPA.3372-1234-5678-9012")
        #expect(google.seen(.token).map(\.tokenProblem) == [nil])
        #expect(google.seen(.token).first?.body.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey") == true)
        #expect(google.seen(.purchase).map(\.tokenProblem) == [nil])
    }

    @Test("concurrent calls share one token exchange")
    func oneExchangeForConcurrentCalls() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let token = Self.purchased(google)
        // A slow token endpoint: every call arrives while the exchange is under way.
        google.script(.token, .delay(.milliseconds(300)))
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let states = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<16 { group.addTask { try await api.productPurchase(productID: Self.productID, purchaseToken: token).purchaseState } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(states == Array(repeating: 0, count: 16))
        // One exchange served all sixteen: they carried one token. (Counting the token endpoint's
        // requests instead would also count a retry of that one exchange, which a suite keeping
        // both cores busy once caused: the first answer was issued but lost on its way.)
        let purchases = google.seen(.purchase)
        #expect(purchases.count == 16 && purchases.allSatisfy { $0.tokenProblem == nil })
        #expect(Set(purchases.map(\.bearer)).count == 1 && purchases.first?.bearer != nil, "\(Set(purchases.map(\.bearer)))")
        #expect((1...api.configuration.attempts).contains(google.seen(.token).count))
    }

    @Test("a token is reused until five minutes before it expires, then renewed; a token shorter-lived than that is renewed at each use")
    func renewal() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        // The test clock starts in the past, so that assertions made as it moves on stay within Google's window.
        let clock = TestClock(Date().addingTimeInterval(-3_500))
        let tokens = GoogleAccessTokens(serviceAccount: try google.serviceAccount(), requestTimeout: .seconds(60), now: { clock.now })
        let api = GooglePlayAPI(configuration: try google.apiConfiguration(), tokens: tokens)
        google.setTokenLifetime(seconds: 3_600)
        _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase)
        clock.advance(3_000)
        _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase)
        #expect(google.tokensIssued == 1)
        clock.advance(400)
        _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase)
        #expect(google.tokensIssued == 2)
        let used = google.seen(.purchase).map { $0.tokenProblem }
        #expect(used == [nil, nil, nil])
        // Tokens living less than the renewal margin are renewed at each use.
        google.setTokenLifetime(seconds: 200)
        let shortLived = GooglePlayAPI(configuration: try google.apiConfiguration())
        _ = try await shortLived.productPurchase(productID: Self.productID, purchaseToken: purchase)
        _ = try await shortLived.productPurchase(productID: Self.productID, purchaseToken: purchase)
        #expect(google.tokensIssued == 4)
    }

    @Test("the token endpoint refusing the service account is not_configured with Google's words, not retried, never the key")
    func tokenRefused() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        // A key file whose key is not the service account's: the stand-in finds the signature wrong.
        let otherKey = try GoogleTestKeys.pushNext().pkcs8PEMRepresentation
        var configuration = try google.apiConfiguration()
        configuration.serviceAccount = try GoogleServiceAccount(json: try google.serviceAccountJSON(changes: ["private_key": otherKey]))
        let error = await walletError { _ = try await GooglePlayAPI(configuration: configuration).productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(error?.code == "not_configured")
        #expect(error?.detail.contains("invalid_grant: Invalid JWT Signature.") == true, "\(error?.detail ?? "")")
        #expect(error?.detail.contains(GoogleStandIn.clientEmail) == true)
        #expect(error.map { !$0.detail.contains(String(otherKey.split(separator: "\n")[2])) && !$0.detail.contains("BEGIN") } == true)
        #expect(google.seen(.token).count == 1 && google.seen(.token).first?.tokenProblem == "Invalid JWT Signature.")
        #expect(google.seen(.purchase).isEmpty)
        // Google failing rather than refusing: retried, then store_unavailable.
        google.script(.token, .failure(status: 500), .failure(status: 503), .failure(status: 500), .failure(status: 500))
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let failing = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(failing?.code == "store_unavailable", "\(failing?.detail ?? "")")
        #expect(google.seen(.token).count == 5)
        // Nothing was cached from the failure: the next call exchanges again and succeeds.
        #expect(try await api.productPurchase(productID: Self.productID, purchaseToken: purchase).purchaseState == 0)
    }

    // MARK: The API's refusals and retries

    @Test("a 401 from the API drops the token and tries once more with a fresh one; a second 401 is not_configured")
    func unauthorizedRenewsOnce() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase)
        google.revokeAccessTokens()
        #expect(try await api.productPurchase(productID: Self.productID, purchaseToken: purchase).quantity == 2)
        #expect(google.tokensIssued == 2)
        #expect(google.seen(.purchase).map { $0.tokenProblem != nil } == [false, true, false])
        google.script(.purchase, .failure(status: 401), .failure(status: 401))
        let error = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(error?.code == "not_configured" && error?.detail.contains("'View financial data' and 'Manage orders'") == true, "\(error?.detail ?? "")")
        #expect(google.tokensIssued == 3, "one renewal for the two 401s, not one per attempt")
        #expect(google.seen(.purchase).count == 5)
    }

    @Test("403 is not_configured with the Play Console advice and Google's message; 404 and 410 are not_found; 400 is purchase_invalid", arguments: [403, 404, 410, 400])
    func refusals(status: Int) async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        google.script(.purchase, .failure(status: status, message: "The current user has insufficient permissions \(status)"))
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let error = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        let expected = [403: "not_configured", 404: "not_found", 410: "not_found", 400: "purchase_invalid"][status]
        #expect(error?.code == expected, "\(error?.description ?? "")")
        #expect(error?.detail.contains("The current user has insufficient permissions \(status)") == true, "\(error?.detail ?? "")")
        if status == 403 { #expect(error?.detail.contains("Play Console") == true) }
        if status == 404 || status == 410 { #expect(error?.detail.contains("Google knows no such purchase") == true) }
        #expect(google.seen(.purchase).count == 1, "a refusal is not retried")
    }

    @Test("a purchase Google does not hold, or held for another package, is not_found")
    func unknownPurchase() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let unknown = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: "tok.unknown") }
        #expect(unknown?.code == "not_found")
        let otherProduct = await walletError { _ = try await api.productPurchase(productID: "com.example.game.other", purchaseToken: purchase) }
        #expect(otherProduct?.code == "not_found")
        let otherApp = GooglePlayAPI(configuration: try google.apiConfiguration(packageName: "com.example.othergame"))
        let error = await walletError { _ = try await otherApp.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(error?.code == "not_found" && error?.detail.contains("No application was found") == true, "\(error?.detail ?? "")")
        let voided = await walletError { _ = try await otherApp.voidedPurchases(start: Date().addingTimeInterval(-86_400), end: Date(), pageToken: nil) }
        #expect(voided?.code == "not_configured" && voided?.detail.contains("com.example.othergame") == true, "\(voided?.detail ?? "")")
    }

    @Test("429 (with Retry-After), 500 and 503 are tried again and the call succeeds; a Retry-After past retryWaitMax is store_unavailable at once")
    func retried() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        google.script(.purchase, .failure(status: 429, headers: ["Retry-After": "0"]), .failure(status: 500), .failure(status: 503))
        #expect(try await api.productPurchase(productID: Self.productID, purchaseToken: purchase).orderId == "GPA.3372-1234-5678-9012")
        #expect(google.seen(.purchase).count == 4)
        google.script(.purchase, .failure(status: 429, headers: ["Retry-After": "120"]))
        let error = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(error?.code == "store_unavailable" && error?.detail.contains("wait") == true, "\(error?.detail ?? "")")
        #expect(google.seen(.purchase).count == 5)
        google.script(.purchase, .failure(status: 500), .failure(status: 500), .failure(status: 500), .failure(status: 500))
        let failing = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(failing?.code == "store_unavailable" && failing?.detail.contains("HTTP 500") == true, "\(failing?.detail ?? "")")
        #expect(google.seen(.purchase).count == 9, "four attempts in all")
    }

    @Test("an answer slower than the request timeout is store_unavailable once the attempts are spent")
    func slowAnswer() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        var configuration = try google.apiConfiguration(requestTimeout: .milliseconds(300))
        configuration.attempts = 2
        // The token exchange has time enough: only the purchase is slow.
        let tokens = GoogleAccessTokens(serviceAccount: configuration.serviceAccount, requestTimeout: .seconds(10))
        let api = GooglePlayAPI(configuration: configuration, tokens: tokens)
        google.script(.purchase, .delay(.seconds(3)), .delay(.seconds(3)))
        let error = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(error?.code == "store_unavailable" && error?.detail.contains("did not answer within") == true, "\(error?.detail ?? "")")
        #expect(google.seen(.purchase).count <= 2, "no more than the attempts configured")
    }

    @Test("an answer over 4 MiB, or of the wrong types, is refused as store_unavailable; unknown members are ignored")
    func answersChecked() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let purchase = Self.purchased(google)
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        google.script(.purchase, .raw(status: 200, body: "{\"orderId\":\"" + String(repeating: "x", count: 5 * 1024 * 1024) + "\"}"))
        let long = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
        #expect(long?.code == "store_unavailable" && long?.detail.contains("longer than 4194304 bytes") == true, "\(long?.detail ?? "")")
        for body in [#"{"purchaseState":"0"}"#, #"{"purchaseState":0,"purchaseState":2}"#, "not json"] {
            google.script(.purchase, .raw(status: 200, body: body))
            let error = await walletError { _ = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase) }
            #expect(error?.code == "store_unavailable" && error?.detail.contains("not the JSON expected") == true, "\(body): \(error?.detail ?? "")")
        }
        google.script(.purchase, .raw(status: 200, body: #"{"purchaseState":2,"somethingNew":{"a":[1]},"quantity":3}"#))
        let read = try await api.productPurchase(productID: Self.productID, purchaseToken: purchase)
        #expect(read.purchaseState == 2 && read.quantity == 3 && read.orderId == nil)
    }

    @Test("ids that are not Google's alphabet are invalid_request before any request")
    func pathSegments() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        for (product, token) in [
            (Self.productID, "tok/../../voidedpurchases"), (Self.productID, "tok:consume"), (Self.productID, ""), (Self.productID, ".."),
            (Self.productID, String(repeating: "a", count: 256)), ("com.example.game gems", "tok"), ("com.example.gamé", "tok"),
            (Self.productID, "tok?x=1"),
        ] {
            let error = await walletError { _ = try await api.productPurchase(productID: product, purchaseToken: token) }
            #expect(error?.code == "invalid_request", "\(product) \(token.prefix(40))")
            let consume = await walletError { _ = try await api.consume(productID: product, purchaseToken: token) }
            #expect(consume?.code == "invalid_request")
        }
        #expect(google.seen.isEmpty)
        #expect(try await api.productPurchase(productID: Self.productID, purchaseToken: Self.purchased(google)).purchaseState == 0)
    }

    @Test("the configuration refuses package names that are not Java package names and base URLs with a path")
    func configurationChecked() async throws {
        let account = try GoogleServiceAccount(json: try GoogleStandIn.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token"))
        for name in ["game", "com..game", "com.example.", "1com.example", "com.example.game-x", "com.exämple.game", ""] {
            let error = await walletError { _ = try GooglePlayAPIConfiguration(serviceAccount: account, packageName: name) }
            #expect(error?.code == "invalid_request", "\(name)")
        }
        for url in ["https://androidpublisher.googleapis.com/v3", "ftp://example.com", "https://user:pw@example.com", "androidpublisher.googleapis.com"] {
            let error = await walletError { _ = try GooglePlayAPIConfiguration(serviceAccount: account, packageName: "com.example.game", baseURL: url) }
            #expect(error?.code == "invalid_request", "\(url)")
        }
        let configuration = try GooglePlayAPIConfiguration(serviceAccount: account, packageName: "com.Example.game_2")
        #expect(configuration.baseURL == "https://androidpublisher.googleapis.com" && configuration.attempts == 4)
    }

    // MARK: Consume and voided purchases

    @Test("acknowledge acknowledges and never consumes; a second answers alreadyAcknowledged; a pending purchase's refusal is purchase_invalid; an unknown one not_found")
    func acknowledge() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let purchase = Self.purchased(google)
        #expect(try await api.acknowledge(productID: Self.productID, purchaseToken: purchase) == .acknowledged)
        let held = google.purchase(token: purchase, productID: Self.productID)
        #expect(held?.acknowledgementState == 1 && held?.consumptionState == 0)
        #expect(google.seen(.acknowledge).first?.path.hasSuffix("/purchases/products/\(Self.productID)/tokens/\(purchase):acknowledge") == true)
        #expect(google.seen(.acknowledge).first?.method == "POST" && google.seen(.consume).isEmpty)
        #expect(try await api.acknowledge(productID: Self.productID, purchaseToken: purchase) == .alreadyAcknowledged)
        #expect(google.seen(.acknowledge).count == 2 && google.seen(.purchase).count == 1, "the refusal was checked against the purchase")
        let pending = Self.purchased(google) { $0.purchaseState = 2 }
        let error = await walletError { _ = try await api.acknowledge(productID: Self.productID, purchaseToken: pending) }
        #expect(error?.code == "purchase_invalid" && error?.detail.contains("not in a valid state") == true, "\(error?.detail ?? "")")
        let unknown = await walletError { _ = try await api.acknowledge(productID: Self.productID, purchaseToken: "tok.unknown") }
        #expect(unknown?.code == "not_found")
        let next = Self.purchased(google)
        google.script(.acknowledge, .failure(status: 503))
        #expect(try await api.acknowledge(productID: Self.productID, purchaseToken: next) == .acknowledged)
    }

    @Test("consume consumes; a second consume answers alreadyConsumed; a pending purchase's refusal is purchase_invalid; an unknown one not_found")
    func consume() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let purchase = Self.purchased(google)
        #expect(try await api.consume(productID: Self.productID, purchaseToken: purchase) == .consumed)
        #expect(google.purchase(token: purchase, productID: Self.productID)?.consumptionState == 1)
        #expect(google.seen(.consume).first?.path.hasSuffix("/purchases/products/\(Self.productID)/tokens/\(purchase):consume") == true)
        #expect(google.seen(.consume).first?.method == "POST" && google.seen(.consume).first?.body == "")
        #expect(try await api.consume(productID: Self.productID, purchaseToken: purchase) == .alreadyConsumed)
        #expect(google.seen(.consume).count == 2 && google.seen(.purchase).count == 1, "the refusal was checked against the purchase")
        let pending = Self.purchased(google) { $0.purchaseState = 2 }
        let error = await walletError { _ = try await api.consume(productID: Self.productID, purchaseToken: pending) }
        #expect(error?.code == "purchase_invalid" && error?.detail.contains("not in a valid state") == true, "\(error?.detail ?? "")")
        #expect(google.purchase(token: pending, productID: Self.productID)?.consumptionState == 0)
        let unknown = await walletError { _ = try await api.consume(productID: Self.productID, purchaseToken: "tok.unknown") }
        #expect(unknown?.code == "not_found")
        // Google failing is retried like any call.
        let next = Self.purchased(google)
        google.script(.consume, .failure(status: 503))
        #expect(try await api.consume(productID: Self.productID, purchaseToken: next) == .consumed)
    }

    @Test("voided purchases page through Google's token pagination, within the window, with the query Google expects")
    func voidedPaging() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let api = GooglePlayAPI(configuration: try google.apiConfiguration())
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let end = start.addingTimeInterval(86_400)
        let inside = (0..<5).map { index in
            GoogleVoidedPurchase(
                purchaseToken: "tok.void\(index)", orderId: "GPA.0000-0000-0000-000\(index)", voidedTimeMillis: String(1_767_225_600_000 + Int64(index) * 3_600_000),
                voidedSource: 0, voidedReason: 1, refundType: index == 3 ? 2 : 1, voidedQuantity: index == 3 ? 1 : nil)
        }
        for voided in inside.reversed() { google.addVoided(voided) }
        google.addVoided(GoogleVoidedPurchase(purchaseToken: "tok.before", voidedTimeMillis: "1767225599999", refundType: 1))
        google.addVoided(GoogleVoidedPurchase(purchaseToken: "tok.after", voidedTimeMillis: "1767312000001", refundType: 1))
        google.setVoidedPageSize(2)
        var read: [GoogleVoidedPurchase] = []
        var pageToken: String?
        repeat {
            let page = try await api.voidedPurchases(start: start, end: end, pageToken: pageToken)
            read += page.voidedPurchases
            pageToken = page.nextPageToken
        } while pageToken != nil
        #expect(read == inside)
        let queries = google.seen(.voided).map(\.query)
        #expect(queries.count == 3)
        #expect(queries.map { $0["token"] } == [nil, "page-2", "page-4"])
        for query in queries {
            #expect(query["startTime"] == "1767225600000" && query["endTime"] == "1767312000000" && query["maxResults"] == "1000")
            #expect(query["type"] == "0" && query["includeQuantityBasedPartialRefund"] == "true")
        }
        let backwards = await walletError { _ = try await api.voidedPurchases(start: end, end: start, pageToken: nil) }
        #expect(backwards?.code == "invalid_request")
        google.script(.voided, .failure(status: 400, message: "startTime is too far in the past"))
        let old = await walletError { _ = try await api.voidedPurchases(start: start, end: end, pageToken: nil) }
        #expect(old?.code == "invalid_request" && old?.detail.contains("startTime is too far in the past") == true)
    }

    // MARK: Push authentication

    @Test("a push token Google signed for the configured audience and service account is accepted")
    func pushAccepted() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let push = try google.pushAuthentication()
        let now = Date()
        try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: now)), now: now)
        try await push.verify(authorization: "bearer " + (try GoogleStandIn.pushToken(now: now)), now: now.addingTimeInterval(30))
        #expect(await push.fetchCount == 1)
    }

    @Test("forged or wrong push tokens are refused", arguments: GoogleStandIn.PushForgery.allCases)
    func pushForged(forgery: GoogleStandIn.PushForgery) async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let push = try google.pushAuthentication()
        let now = Date()
        // The genuine token passes first, so a refusal below is the forgery's alone.
        try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: now)), now: now)
        let refused = await Self.refusal(push, "Bearer " + (try GoogleStandIn.pushToken(forgery, now: now)), now: now)
        let expected: [GoogleStandIn.PushForgery: String] = [
            .wrongKey: "signature", .unknownKeyID: "not in Google's JWKS", .wrongAudience: "audience", .wrongIssuer: "issuer", .wrongEmail: "email",
            .unverifiedEmail: "not verified", .expired: "expired", .issuedInFuture: "future", .algorithmNone: "not RS256", .hmacWithPublicKey: "not RS256",
        ]
        #expect(refused?.reason.contains(expected[forgery] ?? "?") == true, "\(forgery): \(refused?.reason ?? "accepted")")
    }

    @Test("a missing, non-bearer, oversized or garbled Authorization header is refused")
    func pushHeaders() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let push = try google.pushAuthentication()
        let valid = try GoogleStandIn.pushToken()
        for (header, reason) in [
            (nil, "no Authorization"), ("Basic " + valid, "not a bearer"), ("Bearer " + valid + String(repeating: "A", count: 8_200), "longer than"),
            ("Bearer abc.def", "not a JWT"), ("Bearer " + valid.split(separator: ".").dropLast().joined(separator: ".") + ".", "signature"),
        ] as [(String?, String)] {
            let refused = await Self.refusal(push, header, now: Date())
            #expect(refused?.reason.contains(reason) == true, "\(reason): \(refused?.reason ?? "accepted")")
        }
    }

    @Test("a token naming an unknown key refetches the JWKS, at most once a minute; a rotated key is then accepted")
    func pushUnknownKeyRefetch() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let push = try google.pushAuthentication()
        let start = Date()
        try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: start)), now: start)
        try google.rotatePushKeys(only: true)
        let rotated = try GoogleStandIn.pushToken(kid: "push-key-2", now: start)
        let early = await Self.refusal(push, "Bearer " + rotated, now: start.addingTimeInterval(10))
        #expect(early?.reason.contains("not in Google's JWKS") == true, "\(early?.reason ?? "accepted")")
        #expect(await push.fetchCount == 1, "no second fetch within a minute")
        try await push.verify(authorization: "Bearer " + rotated, now: start.addingTimeInterval(61))
        #expect(await push.fetchCount == 2 && google.seen(.jwks).count == 2)
        // The first key left the set: its tokens are refused now.
        let retired = await Self.refusal(push, "Bearer " + (try GoogleStandIn.pushToken(now: start)), now: start.addingTimeInterval(62))
        #expect(retired?.reason.contains("not in Google's JWKS") == true)
    }

    @Test("the JWKS is kept as long as Cache-Control's max-age says (an hour without one, a day at most); a failed fetch keeps the keys held")
    func pushKeyCache() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        for (cacheControl, seconds) in [("public, max-age=600, must-revalidate", 600.0), (nil, 3_600), ("max-age=999999", 86_400)] as [(String?, Double)] {
            google.setJWKSCacheControl(cacheControl)
            let push = try google.pushAuthentication()
            let start = Date()
            let before = google.seen(.jwks).count
            for offset in [0, 30, seconds - 1] {
                let now = start.addingTimeInterval(offset)
                try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: now)), now: now)
            }
            #expect(google.seen(.jwks).count == before + 1, "\(cacheControl ?? "none"): one fetch while fresh")
            let later = start.addingTimeInterval(seconds + 1)
            try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: later)), now: later)
            #expect(google.seen(.jwks).count == before + 2, "\(cacheControl ?? "none"): fetched again once stale")
            // Google failing: the keys held still verify.
            google.script(.jwks, .failure(status: 500))
            let stale = later.addingTimeInterval(seconds + 1)
            try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: stale)), now: stale)
            #expect(google.seen(.jwks).count == before + 3)
            // A set without a usable key is no better than a failure.
            google.script(.jwks, .raw(status: 200, body: #"{"keys":[{"kty":"EC","kid":"push-key-1"}]}"#))
            let emptied = stale.addingTimeInterval(seconds + 1)
            try await push.verify(authorization: "Bearer " + (try GoogleStandIn.pushToken(now: emptied)), now: emptied)
            #expect(google.seen(.jwks).count == before + 4)
        }
        // With no keys ever fetched, a failing JWKS refuses the push.
        google.script(.jwks, .failure(status: 503))
        let refused = await Self.refusal(try google.pushAuthentication(), "Bearer " + (try GoogleStandIn.pushToken()), now: Date())
        #expect(refused?.reason.contains("not in Google's JWKS") == true, "\(refused?.reason ?? "accepted")")
    }

    static func refusal(_ push: GooglePushAuthentication, _ authorization: String?, now: Date) async -> GooglePushRefused? {
        do {
            try await push.verify(authorization: authorization, now: now)
            return nil
        } catch {
            return error
        }
    }
}
