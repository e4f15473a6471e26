import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport

@Suite("Grants: a store transaction credits exactly once", .throttled)
struct GrantTests {
    @Test("a grant credits credits × 1 and posts against the store account", arguments: TestBackend.all)
    func grant(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let result = try await ledger.grant("p1", "T1")
        #expect(result.balance == 5)
        #expect(result.replayed == false)
        #expect(result.transaction.kind == .purchase)
        #expect(result.transaction.seq == 1)
        #expect(result.transaction.prevHash == HashChain.genesis)
        #expect(result.transaction.postings == [
            Posting(account: "@store:apple", currency: "credits", amount: -5, balanceAfter: -5),
            Posting(account: "player:p1", currency: "credits", amount: 5, balanceAfter: 5),
        ])
        #expect(try await ledger.balance("p1") == 5)
    }

    @Test("quantity multiplies the product's credits", arguments: TestBackend.all)
    func quantity(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let result = try await ledger.grant("p1", "T1", quantity: 3)
        #expect(result.balance == 15)
        #expect(result.transaction.quantity == 3)
    }

    @Test("a replay answers the original result and changes nothing", arguments: TestBackend.all)
    func replay(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let first = try await ledger.grant("p1", "T1")
        try await ledger.spend("p1", 2, key: "k1")
        let again = try await ledger.grant("p1", "T1")
        #expect(again.replayed)
        #expect(again.transaction == first.transaction)
        #expect(again.balance == 5)
        #expect(try await ledger.balance("p1") == 3)
        #expect(try await ledger.transactionCount() == 2)
    }

    @Test("the same store transaction never credits a second player", arguments: TestBackend.all)
    func secondPlayer(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        let error = await walletError { try await ledger.grant("p2", "T1") }
        #expect(error?.code == "idempotency_key_reused")
        #expect(try await ledger.balance("p2") == 0)
        #expect(try await ledger.transactionCount() == 1)
    }

    @Test("the same store transaction with another product or quantity is refused", arguments: TestBackend.all)
    func otherProduct(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(await walletError { try await ledger.grant("p1", "T1", product: "com.example.gems10") }?.code == "idempotency_key_reused")
        #expect(await walletError { try await ledger.grant("p1", "T1", quantity: 2) }?.code == "idempotency_key_reused")
        #expect(try await ledger.balance("p1") == 5)
        #expect(try await ledger.balance("p1", "gems") == 0)
    }

    @Test("transaction ids are keyed per store", arguments: TestBackend.all)
    func perStore(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", store: "apple")
        let google = try await ledger.grant("p1", "T1", store: "google")
        #expect(google.replayed == false)
        #expect(google.balance == 10)
    }

    @Test("unknown and inactive products credit nothing", arguments: TestBackend.all)
    func unknownProduct(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { try await ledger.grant("p1", "T1", product: "com.example.nothing") }?.code == "unknown_product")
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5, active: false))
        #expect(await walletError { try await ledger.grant("p1", "T2") }?.code == "unknown_product")
        #expect(try await ledger.transactionCount() == 0)
        // The failed key was not recorded: once the product is active again, the same
        // store transaction credits.
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        #expect(try await ledger.grant("p1", "T2").balance == 5)
    }

    @Test("a product bound to a store refuses grants from another store", arguments: TestBackend.all)
    func productStore(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "steam.pack", credits: 7, store: "steam"))
        #expect(await walletError { try await ledger.grant("p1", "T1", product: "steam.pack", store: "apple") }?.code == "unknown_product")
        #expect(try await ledger.grant("p1", "T1", product: "steam.pack", store: "steam").balance == 7)
    }

    @Test("a replay still answers after the product was deactivated", arguments: TestBackend.all)
    func replayAfterDeactivation(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let first = try await ledger.grant("p1", "T1")
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5, active: false))
        let again = try await ledger.grant("p1", "T1")
        #expect(again.replayed && again.transaction.id == first.transaction.id)
    }

    @Test("a grant for an invalid player id is refused where the id is parsed, and credits nothing", arguments: TestBackend.all, ["", "p 1", String(repeating: "p", count: 256)])
    func invalidPlayer(_ backend: TestBackend, _ player: String) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { try await ledger.grant(try PlayerID(player), "T") }?.code == "invalid_request")
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("invalid grants are refused", arguments: TestBackend.all, [
        GrantRequest(playerID: "p1", store: "Apple", storeTransactionID: "T", productID: "com.example.consume5credits", actor: "t"),
        GrantRequest(playerID: "p1", store: "", storeTransactionID: "T", productID: "com.example.consume5credits", actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "", productID: "com.example.consume5credits", actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: String(repeating: "9", count: 256), productID: "com.example.consume5credits", actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T", productID: "", actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T", productID: "com.example.consume5credits", quantity: 0, actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T", productID: "com.example.consume5credits", quantity: -1, actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T", productID: "com.example.consume5credits", quantity: Int64.max, actor: "t"),
        GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T", productID: "com.example.consume5credits", actor: ""),
    ])
    func invalid(_ backend: TestBackend, _ request: GrantRequest) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { _ = try await ledger.store.grant(request) }?.code == "invalid_request")
        #expect(try await ledger.transactionCount() == 0)
    }

    @Test("a 255-character store transaction id is accepted", arguments: TestBackend.all)
    func longestKey(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(try await ledger.grant("p1", String(repeating: "9", count: 255)).balance == 5)
    }

    @Test("the catalog validates its entries and introduces currencies", arguments: TestBackend.all)
    func catalog(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        for update in [
            ProductUpdate(productID: "a", credits: 0), ProductUpdate(productID: "a", credits: -5),
            ProductUpdate(productID: "a", credits: Limits.productCreditsMax + 1), ProductUpdate(productID: "", credits: 5),
            ProductUpdate(productID: "a", credits: 5, currency: "Gems"), ProductUpdate(productID: "a", credits: 5, currency: "9lives"),
            ProductUpdate(productID: "a", credits: 5, store: "App Store"),
        ] {
            #expect(await walletError { _ = try await ledger.store.setProduct(update) }?.code == "invalid_request")
        }
        #expect(try await ledger.store.products().isEmpty)
        #expect(await walletError { try await ledger.spend("p1", 1, key: "k", currency: "gems") }?.code == "unknown_currency")
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "b", credits: 3, currency: "gems"))
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "a", credits: 5))
        let products = try await ledger.store.products()
        #expect(products.map(\.productID) == ["a", "b"])
        #expect(products[1].currency == "gems" && products[1].credits == 3 && products[1].active)
        #expect(await walletError { try await ledger.spend("p1", 1, key: "k", currency: "gems") }?.code == "insufficient_funds")
    }
}
