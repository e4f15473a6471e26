import Foundation
import WalletCore
import WalletSQL
import WalletStores

/// The one way every test target gets a store: a fresh database of `backend`, opened as
/// production opens it (`LedgerDatabases`' path), and the catalog the tests buy from.
package enum TestStores {
    package struct Opened: Sendable {
        package let store: SQLLedgerStore
        /// The SQLite file, or the PostgreSQL URL.
        package let location: String
        /// A temporary directory of the test's own (files a test writes go there).
        package let directory: URL
    }

    /// Connections a test's PostgreSQL store keeps at most.
    package static let postgresPoolSize = 4

    package static func open(
        _ backend: TestBackend, durability: Durability = .full, writeMode: WriteMode = .default, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> Opened {
        let directory = try Scratch.directory("store")
        let location = switch backend {
        case .sqlite: directory.appendingPathComponent("wallet.sqlite").path
        case .postgres: try await TestPostgres.freshDatabase()
        }
        let store = try await SQLLedgerStore.open(database: location, durability: durability, writeMode: writeMode, poolSize: postgresPoolSize, clock: clock)
        return Opened(store: store, location: location, directory: directory)
    }

    /// The tests' catalog: `com.example.consume5credits` (5 credits), `com.example.gems10`
    /// (10 gems) and `com.example.game.consume5credits` (5 credits, the Apple test receipts').
    package static func addCatalog(_ store: some LedgerWriting) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.gems10", credits: 10, currency: "gems"))
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
    }
}
