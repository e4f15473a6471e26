import ArgumentParser
import Foundation
import WalletApple
import WalletCore
import WalletGoogle
import WalletSQL
import WalletStores

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a deployment as support would before escalating: one line per check, OK, WARN or FAIL with the reason.",
        discussion: """
            Checks the database (reachable, its schema version, the durability it commits with, the \
            disk beside a SQLite file), the ledger's head, the outboxes (the oldest Apple \
            consumption answer, Google consumption and webhook event still waiting), and the Apple \
            and Google credentials where configured, by one harmless call to each (Get \
            Notification History over the last hour; the voided purchases of the last hour). It \
            never creates a database and changes nothing Apple or Google holds. A SQLite ledger of \
            an older schema is upgraded when opened, as any command would. Give it the settings \
            wallet serve runs with. Exit status 0 when nothing failed (warnings included), 1 when a \
            check failed.

            Example:
              WALLET_DB=/var/lib/wallet/wallet.sqlite wallet doctor \\
                --google-package-name com.example.game --google-service-account key.json
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup(title: "Apple") var apple: AppleOptions
    @OptionGroup(title: "Google") var google: GoogleOptions

    @Option(help: ArgumentHelp("An outbox whose oldest waiting entry is older than this many minutes fails the check, 1 to 10080 (default 60).", valueName: "minutes"))
    var stuckAfter: Int = 60

    /// The space a SQLite database needs free beside it: its WAL grows to about 64 MiB before it starts again from its first page.
    static let freeBytesMin: Int64 = 64 * 1_024 * 1_024
    /// Below this much free space the check warns.
    static let freeBytesWarning: Int64 = 1_024 * 1_024 * 1_024

    func validate() throws {
        guard (1...10_080).contains(stuckAfter) else { throw ValidationError("--stuck-after must be from 1 to 10080 minutes, not \(stuckAfter).") }
    }

    /// One check's outcome.
    struct Check: Encodable {
        enum Status: String, Encodable { case ok = "OK", warn = "WARN", fail = "FAIL" }
        var check: String
        var status: Status
        var detail: String
    }

    struct Report: Encodable {
        var healthy: Bool
        var checks: [Check]
    }

    func run() async throws {
        var checks = await databaseChecks()
        checks.append(await appleCheck())
        checks.append(await googleCheck())
        let healthy = !checks.contains { $0.status == .fail }
        try Output.result(Report(healthy: healthy, checks: checks), json: options.json) {
            checks.map { "\($0.status.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0))\($0.check.padding(toLength: 13, withPad: " ", startingAt: 0)) \($0.detail)" }
                .joined(separator: "\n")
        }
        if !healthy { throw ExitCode.failure }
    }

    /// The database and what lives in it; a database that cannot be opened fails, and the checks
    /// that need it are left out.
    private func databaseChecks() async -> [Check] {
        let path = options.database.resolvedDatabasePath
        if !LedgerDatabases.isServer(path) {
            var status = stat()
            guard stat(path, &status) == 0 else {
                return [Check(check: "database", status: .fail, detail: "no database at \(path) (wallet serve would create an empty one there): check --db or WALLET_DB")]
            }
        }
        let store: any LedgerDatabase
        do {
            store = try await options.openStore()
        } catch let error as WalletError {
            return [Check(check: "database", status: .fail, detail: "\(error.detail) [\(error.code)]")]
        } catch {
            return [Check(check: "database", status: .fail, detail: "\(error)")]
        }
        let checks: [Check]? = try? await store.run { store in
            var checks: [Check] = []
            do throws(WalletError) {
                let settings = try await store.databaseSettings()
                checks.append(Check(check: "database", status: .ok, detail: "\(store.location) (\(settings.engine)) answers"))
                checks.append(
                    settings.schemaVersion == settings.schemaVersionExpected
                        ? Check(check: "schema", status: .ok, detail: "version \(settings.schemaVersion), this build's")
                        : Check(check: "schema", status: .fail, detail: "version \(settings.schemaVersion); this build expects \(settings.schemaVersionExpected)"))
                let durability = settings.durability.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
                checks.append(
                    settings.durabilityRisks.isEmpty
                        ? Check(check: "durability", status: .ok, detail: durability)
                        : Check(check: "durability", status: .warn, detail: settings.durabilityRisks.joined(separator: "; ")))
            } catch {
                checks.append(Check(check: "database", status: .fail, detail: "\(error.detail) [\(error.code)]"))
                return checks
            }
            if !LedgerDatabases.isServer(path) { checks.append(Self.diskCheck(path)) }
            checks.append(await Self.headCheck(store))
            checks.append(contentsOf: await outboxChecks(store))
            return checks
        }
        return checks ?? [Check(check: "database", status: .fail, detail: "\(store.location) could not be read")]
    }

    static func diskCheck(_ path: String) -> Check {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var fileSystem = statvfs()
        guard statvfs(directory, &fileSystem) == 0 else {
            return Check(check: "disk", status: .warn, detail: "the free space of \(directory) cannot be read: \(String(cString: strerror(errno)))")
        }
        let free = Int64(fileSystem.f_bavail) * Int64(fileSystem.f_frsize)
        let mebibytes = free / 1_048_576
        if free < freeBytesMin {
            return Check(check: "disk", status: .fail, detail: "\(mebibytes) MiB free in \(directory): the WAL grows to about 64 MiB before it starts again, and writes fail once it cannot grow")
        }
        if free < freeBytesWarning {
            return Check(check: "disk", status: .warn, detail: "\(mebibytes) MiB free in \(directory): less than 1 GiB")
        }
        return Check(check: "disk", status: .ok, detail: "\(mebibytes) MiB free in \(directory)")
    }

    static func headCheck(_ store: any LedgerDatabase) async -> Check {
        do {
            let head = try await store.head()
            return Check(check: "ledger", status: .ok, detail: "head seq \(head.seq), hash \(head.hash.prefix(16))…\(head.at.map { ", at \($0)" } ?? " (empty ledger)") (wallet verify checks the chain)")
        } catch {
            return Check(check: "ledger", status: .fail, detail: "the head cannot be read: \(error.detail) [\(error.code)]")
        }
    }

    /// Each outbox's oldest waiting entry: older than `--stuck-after` fails.
    private func outboxChecks(_ store: any LedgerDatabase) async -> [Check] {
        let now = Date()
        func check(_ name: String, waiting: Int, oldest: String?, more: Bool) -> Check {
            guard let oldest, let date = try? Timestamp.date(oldest, field: "created_at") else {
                return Check(check: name, status: .ok, detail: "nothing waiting")
            }
            let minutes = Int(max(0, now.timeIntervalSince(date)) / 60)
            let count = "\(waiting)\(more ? "+" : "") waiting, the oldest since \(oldest) (\(minutes) min)"
            return minutes >= stuckAfter
                ? Check(check: name, status: .fail, detail: "\(count): stuck (over \(stuckAfter) min); see wallet \(name == "webhooks" ? "webhooks list" : "\(name.split(separator: "-")[0]) outbox")")
                : Check(check: name, status: .ok, detail: count)
        }
        var checks: [Check] = []
        do {
            let replies = try await store.consumptionReplies(status: .pending, limit: Limits.pageSizeMax)
            checks.append(check("apple-outbox", waiting: replies.count, oldest: replies.map(\.createdAt).min(), more: replies.count == Limits.pageSizeMax))
            let finishes = try await store.purchaseFinishes(store: "google", status: .pending, limit: Limits.pageSizeMax)
            checks.append(check("google-outbox", waiting: finishes.count, oldest: finishes.map(\.createdAt).min(), more: finishes.count == Limits.pageSizeMax))
            var waiting: Int64 = 0
            var oldest: String?
            for endpoint in try await store.webhooks() where endpoint.status != .disabled {
                let backlog = try await store.backlog(after: endpoint.cursorSeq, types: endpoint.types)
                waiting += backlog.count
                if let first = backlog.oldestCreatedAt, oldest.map({ first < $0 }) ?? true { oldest = first }
            }
            checks.append(check("webhooks", waiting: Int(waiting), oldest: oldest, more: false))
        } catch {
            checks.append(Check(check: "outboxes", status: .fail, detail: "cannot be read: \(error.detail) [\(error.code)]"))
        }
        return checks
    }

    /// One authenticated, harmless call to the App Store Server API, when a key is configured.
    private func appleCheck() async -> Check {
        let api: AppStoreServerAPI?
        let configuration: AppleConfiguration?
        do {
            configuration = try apple.configuration()
            api = try apple.serverAPI()
        } catch {
            return Check(check: "apple", status: .fail, detail: "\(error)")
        }
        guard let configuration else { return Check(check: "apple", status: .ok, detail: "not configured: Apple purchases are refused") }
        guard let api else { return Check(check: "apple", status: .ok, detail: "bundle id \(configuration.bundleID); no App Store Server API key to try") }
        let environment: AppleConfiguration.Environment = configuration.environments.contains(.production) ? .production : .sandbox
        let now = Date()
        do {
            _ = try await api.notificationHistory(environment: environment, start: now.addingTimeInterval(-3_600), end: now, onlyFailures: true, paginationToken: nil)
            return Check(check: "apple", status: .ok, detail: "the App Store Server API (\(environment.rawValue)) accepted the key \(api.configuration.credentials.keyID)")
        } catch {
            return Check(check: "apple", status: .fail, detail: "the App Store Server API (\(environment.rawValue)) refused a test call: \(error.detail) [\(error.code)]")
        }
    }

    /// One authenticated, harmless call to the Android Publisher API, when configured.
    private func googleCheck() async -> Check {
        let api: GooglePlayAPI?
        do {
            api = try google.api()
        } catch {
            return Check(check: "google", status: .fail, detail: "\(error)")
        }
        guard let api else { return Check(check: "google", status: .ok, detail: "not configured: Google purchases are refused") }
        let now = Date()
        do {
            _ = try await api.voidedPurchases(start: now.addingTimeInterval(-3_600), end: now, pageToken: nil)
            return Check(check: "google", status: .ok, detail: "Google Play accepted the service account \(api.configuration.serviceAccount.clientEmail) for \(api.configuration.packageName)")
        } catch {
            return Check(check: "google", status: .fail, detail: "Google Play refused a test call: \(error.detail) [\(error.code)]")
        }
    }
}
