import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import WalletCore
@testable import WalletServer
import WalletTestSupport

/// `invalid_request` problems name the request member at fault in `errors`, from the
/// validation that knows it, so a client can show each beside its input.
@Suite("Field errors", .throttled)
struct FieldErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var body: String
        var role: KeyRole
        /// The member `errors` must name; nil: the problem names none and carries no `errors`.
        var field: String?
        var testDescription: String { "\(method.rawValue) \(path) \(body.prefix(70)) → \(field ?? "no field")" }
    }

    static let adjust = "/v1/wallets/p1/adjustments"
    static let bonus = "/v1/wallets/p1/bonuses"

    static let cases: [Case] = [
        // The body reader: a fraction, null, an unknown member, a wrong type, a missing member.
        Case(method: .post, path: adjust, body: #"{"amount": 1.5, "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "amount"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": null, "idempotency_key": "k"}"#, role: .support, field: "note"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n", "idempotency_key": "k", "tiket": "T-1"}"#, role: .support, field: "tiket"),
        Case(method: .post, path: adjust, body: #"{"amount": "5", "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "amount"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "idempotency_key": "k"}"#, role: .support, field: "note"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n", "allow_negative": "yes", "idempotency_key": "k"}"#, role: .support, field: "allow_negative"),
        // Core's validations of the forms.
        Case(method: .post, path: adjust, body: #"{"amount": 0, "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "amount"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "Good Will", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "reason_code"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "   ", "idempotency_key": "k"}"#, role: .support, field: "note"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n", "ticket": "T 1", "idempotency_key": "k"}"#, role: .support, field: "ticket"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n", "currency": "Gold", "idempotency_key": "k"}"#, role: .support, field: "currency"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n"}"#, role: .support, field: "idempotency_key"),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "reason_code": "goodwill", "note": "n", "idempotency_key": "has space"}"#, role: .support, field: "idempotency_key"),
        Case(method: .post, path: bonus, body: #"{"amount": 5, "reason_code": "event", "expires_at": "tomorrow", "idempotency_key": "k"}"#, role: .support, field: "expires_at"),
        Case(method: .post, path: bonus, body: #"{"amount": 5, "reason_code": "event", "expires_at": "2020-01-01T00:00:00Z", "idempotency_key": "k"}"#, role: .support, field: "expires_at"),
        Case(method: .post, path: bonus, body: #"{"amount": 5, "reason_code": "event", "campaign": "spring sale", "idempotency_key": "k"}"#, role: .support, field: "campaign"),
        Case(method: .post, path: bonus, body: #"{"amount": 1000000001, "reason_code": "event", "idempotency_key": "k"}"#, role: .support, field: "amount"),
        Case(method: .post, path: "/v1/refunds", body: #"{"store": "apple", "store_transaction_id": "T1", "percentage": 0}"#, role: .support, field: "percentage"),
        Case(method: .post, path: "/v1/refunds", body: #"{"store": "Apple", "store_transaction_id": "T1"}"#, role: .support, field: "store"),
        Case(method: .post, path: "/v1/refunds", body: #"{"store": "apple", "store_transaction_id": "T 1"}"#, role: .support, field: "store_transaction_id"),
        Case(method: .post, path: "/v1/refunds", body: #"{"store": "apple", "store_transaction_id": "T1", "policy": "forgive"}"#, role: .support, field: "policy"),
        Case(method: .post, path: "/v1/wallets/p1/entitlements", body: #"{"action": "give", "entitlement": "vip", "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "action"),
        Case(method: .post, path: "/v1/wallets/p1/entitlements", body: #"{"action": "grant", "entitlement": "VIP!", "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "entitlement"),
        Case(method: .post, path: "/v1/wallets/p1/entitlements", body: #"{"action": "grant", "entitlement": "vip", "duration": "P0", "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "duration"),
        Case(method: .post, path: "/v1/wallets/p1/entitlements", body: #"{"action": "extend", "entitlement": "vip", "days": 0, "reason_code": "goodwill", "note": "n", "idempotency_key": "k"}"#, role: .support, field: "days"),
        Case(method: .post, path: "/v1/keys", body: #"{"role": "boss", "name": "n"}"#, role: .admin, field: "role"),
        Case(method: .post, path: "/v1/keys", body: #"{"role": "auditor", "name": ""}"#, role: .admin, field: "name"),
        Case(method: .put, path: "/v1/products/new.product", body: #"{"credits": 0}"#, role: .admin, field: "credits"),
        Case(method: .put, path: "/v1/products/new.product", body: #"{"credits": 5, "type": "subscription"}"#, role: .admin, field: "type"),
        Case(method: .put, path: "/v1/products/new.product", body: #"{"credits": 5, "type": "non_consumable"}"#, role: .admin, field: "entitlement"),
        Case(method: .post, path: "/v1/webhooks", body: #"{"url": "ftp://example.com/", "types": ["*"]}"#, role: .admin, field: "url"),
        Case(method: .post, path: "/v1/webhooks", body: #"{"url": "https://example.com/", "types": ["coin.minted"]}"#, role: .admin, field: "types"),
        Case(method: .post, path: "/v1/ledger/export/links", body: #"{"player": "bad id", "format": "csv"}"#, role: .auditor, field: "player"),
        Case(method: .post, path: "/v1/ledger/export/links", body: #"{"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}"#, role: .auditor, field: "to"),
        // Query parameters and the player id in the path (the console's find-player form).
        Case(method: .get, path: "/v1/wallets/p1/transactions?limit=0", body: "", role: .support, field: "limit"),
        Case(method: .get, path: "/v1/wallets/p1/transactions?after=x", body: "", role: .support, field: "after"),
        Case(method: .get, path: "/v1/wallets/p1/transactions?kind=gift", body: "", role: .support, field: "kind"),
        Case(method: .get, path: "/v1/wallets/p1/lots?limit=501", body: "", role: .support, field: "limit"),
        Case(method: .get, path: "/v1/wallets/p1/lots?after=0", body: "", role: .support, field: "after"),
        Case(method: .get, path: "/v1/wallets/p1/notifications?limit=0", body: "", role: .support, field: "limit"),
        Case(method: .get, path: "/v1/wallets/p1/statement?from=yesterday", body: "", role: .support, field: "from"),
        Case(method: .get, path: "/v1/ledger/volume?from=2026-01-01T00:00:00Z", body: "", role: .auditor, field: "to"),
        Case(method: .get, path: "/v1/ledger/volume?from=2026-01-01T00:00:00Z&to=2028-01-01T00:00:00Z", body: "", role: .auditor, field: "to"),
        Case(method: .get, path: "/v1/ledger/export?format=xml", body: "", role: .auditor, field: "format"),
        Case(method: .get, path: "/v1/ledger/export?from=soon", body: "", role: .auditor, field: "from"),
        Case(method: .get, path: "/v1/wallets/p%201", body: "", role: .support, field: "player_id"),
        // Errors that concern no one member carry no `errors`.
        Case(method: .post, path: adjust, body: #"[1, 2]"#, role: .support, field: nil),
        Case(method: .post, path: adjust, body: #"{"amount": 5, "amount": 6}"#, role: .support, field: nil),
        // A member named by the empty string names no field (schemathesis found it named "").
        Case(method: .post, path: adjust, body: #"{"": null, "amount": 5}"#, role: .support, field: nil),
    ]

    @Test("each bad request names the member at fault", arguments: TestBackend.all, cases)
    func names(backend: TestBackend, _ bad: Case) async throws {
        let server = try await TestServer(backend)
        try await server.test { client in
            let headers = bad.body.isEmpty ? server.bearer(bad.role) : server.bearer(bad.role) + .jsonContent
            let response = try await client.execute(uri: bad.path, method: bad.method, headers: headers, body: bad.body.isEmpty ? nil : json(bad.body))
            #expect(response.status == .badRequest)
            #expect(try response.problemCode() == "invalid_request")
            let problem = try JSONDecoder().decode(Problem.self, from: Data(buffer: response.body))
            if let field = bad.field {
                #expect(problem.errors == [Problem.FieldError(field: field, detail: problem.detail)])
            } else {
                #expect(problem.errors == nil)
                #expect(try response.object()["errors"] == nil)
            }
        }
        // Nothing was written by any of them.
        #expect(try await server.store.head().seq == 0)
    }

    @Test("Core's validations carry the member, and keep their words, for the CLI as for the API")
    func core() throws {
        let adjust = AdjustRequest(playerID: "p1", amount: 5, reasonCode: "Bad Code", note: "n", idempotencyKey: "k", actor: "support")
        #expect(throws: WalletError.invalidRequest(
            "reason code 'Bad Code' must start with a lowercase letter and hold at most 64 lowercase letters, digits or '_'", field: "reason_code")) {
            try adjust.validate()
        }
        let bonus = BonusRequest(playerID: "p1", amount: 5, reasonCode: "event", campaign: "a b", idempotencyKey: "k", actor: "support")
        #expect(throws: WalletError.self) { try bonus.validate() }
        do { try bonus.validate() } catch { #expect(error.field == "campaign" && error.code == "invalid_request") }
        // An actor is no request member: its error names none.
        let spend = SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", actor: "")
        do { try spend.validate() } catch { #expect(error.field == nil && error.code == "invalid_request") }
        #expect(WalletError.invalidRequest("x").about("amount") == .invalidRequest("x", field: "amount"))
        #expect(WalletError.invalidRequest("x", field: "note").about("amount") == .invalidRequest("x", field: "note"))
        #expect(WalletError.notFound("x").about("amount") == .notFound("x"))
    }
}
