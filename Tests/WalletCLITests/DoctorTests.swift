import Foundation
import Testing
import WalletCore
import WalletStores
import WalletTestSupport

/// `wallet doctor`, run as a separate process on a healthy deployment and on broken ones.
@Suite("wallet doctor", .throttled)
struct DoctorTests {
    /// The checks of a `doctor --json` run, by name.
    static func checks(_ output: CommandOutput) throws -> [String: (status: String, detail: String)] {
        let report = try output.json()
        var checks: [String: (status: String, detail: String)] = [:]
        for check in report["checks"] as? [[String: Any]] ?? [] {
            checks[check["check"] as? String ?? "?"] = (check["status"] as? String ?? "?", check["detail"] as? String ?? "")
        }
        return checks
    }

    @Test("a healthy deployment: every check OK, the Apple and Google credentials accepted by a test call, exit status 0")
    func healthy() async throws {
        let apple = try await AppStoreStandIn()
        defer { apple.stop() }
        let google = try await GoogleStandIn()
        defer { google.stop() }
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let appleKey = directory.appendingPathComponent("AuthKey.p8").path
        try apple.privateKey.pemRepresentation.write(toFile: appleKey, atomically: true, encoding: .utf8)
        let googleKey = directory.appendingPathComponent("service-account.json").path
        try google.serviceAccountJSON().write(toFile: googleKey, atomically: true, encoding: .utf8)
        let flags = [
            "--apple-bundle-id", AppStoreStandIn.bundleID, "--apple-issuer-id", AppStoreStandIn.issuerID, "--apple-key-id", AppStoreStandIn.keyID,
            "--apple-private-key", appleKey, "--apple-api-url", apple.productionURL, "--apple-sandbox-api-url", apple.sandboxURL,
            "--google-package-name", GoogleStandIn.packageName, "--google-service-account", googleKey, "--google-api-url", google.url,
        ]
        let output = try await cli.run(["doctor", "--json"] + flags)
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(try output.json()["healthy"] as? Bool == true)
        let checks = try Self.checks(output)
        for name in ["database", "schema", "durability", "disk", "ledger", "apple-outbox", "google-outbox", "webhooks", "apple", "google"] {
            #expect(checks[name]?.status == "OK", "\(name): \(String(describing: checks[name]))")
        }
        #expect(checks["durability"]?.detail == "synchronous=FULL")
        #expect(checks["ledger"]?.detail.hasPrefix("head seq 1, hash ") == true)
        #expect(checks["apple"]?.detail.contains(AppStoreStandIn.keyID) == true && checks["google"]?.detail.contains(GoogleStandIn.clientEmail) == true)
        #expect(apple.seen.contains { $0.path == "/inApps/v1/notifications/history" && $0.tokenProblem == nil }, "Apple was asked, with a valid token")
        #expect(!google.seen(.voided).isEmpty, "Google was asked")

        // For people: one line per check.
        let text = try await cli.run(["doctor"] + flags)
        #expect(text.status == 0 && text.stdout.split(separator: "\n").count == checks.count)
        #expect(text.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("OK ") }, "\(text.stdout)")
    }

    @Test("no database file: FAIL, exit 1, and no file is created")
    func missingFile() async throws {
        let cli = try CLI()
        let output = try await cli.run("doctor", "--json")
        #expect(output.status == 1)
        #expect(try output.json()["healthy"] as? Bool == false)
        #expect(try Self.checks(output)["database"]?.status == "FAIL")
        #expect(!FileManager.default.fileExists(atPath: cli.databasePath))
    }

    @Test("a database of another schema: FAIL, exit 1")
    func wrongSchema() async throws {
        let cli = try CLI()
        try await cli.sqlite3("CREATE TABLE notes (body TEXT); PRAGMA user_version = 99;")
        let output = try await cli.run("doctor", "--json")
        #expect(output.status == 1)
        let database = try Self.checks(output)["database"]
        #expect(database?.status == "FAIL" && database?.detail.contains("unsupported_database") == true, "\(String(describing: database))")
    }

    @Test("PostgreSQL that does not answer: FAIL, exit 1")
    func unreachablePostgres() async throws {
        let port = try LoopbackSocket.freePort()
        let cli = CLI(database: "postgres://wallet@127.0.0.1:\(port)/wallet")
        let output = try await cli.run(["doctor", "--json"])
        #expect(output.status == 1)
        let database = try Self.checks(output)["database"]
        #expect(database?.status == "FAIL" && database?.detail.contains("127.0.0.1:\(port)") == true, "\(String(describing: database))")
        #expect(!output.stdout.contains("password"))
    }

    @Test("Google refuses the service account: the google check fails, the others pass, exit 1")
    func googleRefused() async throws {
        let google = try await GoogleStandIn()
        defer { google.stop() }
        // Refused on every attempt: a first one that timed out under a busy suite and was sent again
        // must not find a token on its second try.
        google.script(.token, .failure(status: 400, message: "invalid_grant"), .failure(status: 400, message: "invalid_grant"),
            .failure(status: 400, message: "invalid_grant"), .failure(status: 400, message: "invalid_grant"))
        let cli = try await CLI.withCatalog()
        let googleKey = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("service-account.json").path
        try google.serviceAccountJSON().write(toFile: googleKey, atomically: true, encoding: .utf8)
        let output = try await cli.run([
            "doctor", "--json", "--google-package-name", GoogleStandIn.packageName, "--google-service-account", googleKey, "--google-api-url", google.url,
        ])
        #expect(output.status == 1)
        let checks = try Self.checks(output)
        #expect(checks["google"]?.status == "FAIL", "\(String(describing: checks["google"]))")
        #expect(checks["database"]?.status == "OK" && checks["apple"]?.status == "OK")
        #expect(!output.stdout.contains("PRIVATE KEY"), "the key is never printed")
    }

    @Test("a webhook endpoint whose oldest undelivered event is two days old is a stuck outbox: FAIL, exit 1")
    func stuckOutbox() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.json("webhooks", "add", "--url", "http://127.0.0.1:9/hook", "--types", "*", "--webhook-allow-host", "127.0.0.1")
        // A purchase credited two days ago that no server has delivered since.
        let twoDaysAgo = Date().addingTimeInterval(-2 * 86_400)
        let store = try await LedgerDatabases.open(cli.databasePath, clock: { twoDaysAgo })
        _ = try await store.run { store in
            try await store.grant(
                GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "old-1", productID: "com.example.consume5credits", quantity: 1, actor: "test"))
        }
        let output = try await cli.run("doctor", "--json")
        #expect(output.status == 1)
        let webhooks = try Self.checks(output)["webhooks"]
        #expect(webhooks?.status == "FAIL" && webhooks?.detail.hasPrefix("1 waiting") == true, "\(String(describing: webhooks))")
        // A longer --stuck-after lets it pass.
        let patient = try await cli.run("doctor", "--json", "--stuck-after", "\(3 * 24 * 60)")
        let patientWebhooks = try Self.checks(patient)["webhooks"]
        #expect(patient.status == 0 && patientWebhooks?.status == "OK")
    }
}
