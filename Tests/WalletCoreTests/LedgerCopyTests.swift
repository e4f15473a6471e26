import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

@Suite("Ledger copy")
struct LedgerCopyTests {
    @Test("a ledger longer than a copy page is copied whole, page by page, to either store and ends at the same head", arguments: TestBackend.all, TestBackend.all)
    func pages(source sourceBackend: TestBackend, target backend: TestBackend) async throws {
        let source = try await TestLedger.withCatalog(sourceBackend)
        let count = Int(SQLLedgerStore.copyPageSize) + 150
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { try await source.grant(PlayerID("p\(index % 40)"), "T\(index)") }
            }
            try await group.waitForAll()
        }
        _ = try await source.spend("p1", 3, key: "after")
        let target = try await TestStores.open(backend).store
        let report = try await source.store.copy(to: target, progress: nil)
        let head = try await source.store.head()
        #expect(report.transactions == Int64(count + 1) && report.headHash == head.hash)
        #expect(report.rows["postings"] == Int64(2 * (count + 1)) && report.rows["idempotency_keys"] == Int64(count + 1))
        #expect(try await target.head() == head)
        #expect(try await target.verify().ok)
        #expect(try await target.balances(playerID: "p1") == source.store.balances(playerID: "p1"))
        // The same purchase again is a replay on the copy: its keys came along.
        #expect(try await target.grant(GrantRequest(playerID: "p0", store: "apple", storeTransactionID: "T0", productID: "com.example.consume5credits", quantity: 1, actor: "t")).replayed)
    }
}
