import Foundation
import GRDB
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletPostgres
@testable import WalletSQL
@testable import WalletSQLite
import WalletTestSupport

/// A ledger on a fresh database of `backend`, as production opens it: a SQLite file in its own
/// temporary directory, or a new PostgreSQL database (`TestPostgres`).
struct TestLedger {
    let store: SQLLedgerStore
    let backend: TestBackend
    /// The SQLite file, or the PostgreSQL URL.
    let path: String
    /// A temporary directory of the test's own (exports are written there).
    let directory: URL

    init(_ backend: TestBackend, durability: Durability = .full, clock: TestClock? = nil) async throws {
        self.backend = backend
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        let opened = try await TestStores.open(backend, durability: durability, clock: now)
        (store, path, directory) = (opened.store, opened.location, opened.directory)
    }

    /// A ledger with the tests' catalog (`TestStores.addCatalog`).
    static func withCatalog(_ backend: TestBackend, clock: TestClock? = nil) async throws -> TestLedger {
        let ledger = try await TestLedger(backend, clock: clock)
        try await TestStores.addCatalog(ledger.store)
        return ledger
    }

    @discardableResult
    func grant(_ player: PlayerID, _ transactionID: String, product: String = "com.example.consume5credits", quantity: Int64 = 1, store: String = "apple") async throws -> MutationResult {
        try await self.store.grant(GrantRequest(playerID: player, store: store, storeTransactionID: transactionID, productID: product, quantity: quantity, actor: "test"))
    }

    @discardableResult
    func spend(_ player: PlayerID, _ amount: Int64, key: String, currency: String = "credits") async throws -> MutationResult {
        try await store.spend(SpendRequest(playerID: player, amount: amount, currency: currency, idempotencyKey: key, actor: "test"))
    }

    func balance(_ player: PlayerID, _ currency: String = "credits") async throws -> Int64 {
        try await store.balances(playerID: player).balances[currency] ?? 0
    }

    func transactionCount() async throws -> Int64 {
        try await store.verify().transactions
    }

    /// A raw connection to the same file, as an attacker with file access would have: foreign
    /// keys off, so rows can be deleted or moved.
    // SQLite only: the file itself, for the tests that edit it behind the wallet's back.
    func rawConnection() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}

/// Runs `body` and returns the `WalletError` it threw; records a test failure if it threw nothing.
func walletError(_ body: () async throws -> Void) async -> WalletError? {
    do {
        try await body()
        Issue.record("expected a WalletError, but the operation succeeded")
        return nil
    } catch let error as WalletError {
        return error
    } catch {
        Issue.record("expected a WalletError, got \(error)")
        return nil
    }
}

/// A clock the test sets: `now` is what the ledger stamps on the next transaction.
final class TestClock: Sendable {
    private let time: Mutex<Date>

    init(_ start: String) {
        time = Mutex(ISO8601DateFormatter().date(from: start)!)
    }

    var now: Date { time.withLock { $0 } }

    init(_ start: Date) {
        time = Mutex(start)
    }

    func set(_ text: String) {
        let date = ISO8601DateFormatter().date(from: text)!
        time.withLock { $0 = date }
    }

    func advance(_ seconds: TimeInterval) {
        time.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

extension TestLedger {
    /// `verify` passes: the chain, every sum, every lot and hold; a failure names the problem.
    func expectIntact(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let report = try await store.verify()
        #expect(report.ok, "\(report.problem ?? "")", sourceLocation: sourceLocation)
    }
}
