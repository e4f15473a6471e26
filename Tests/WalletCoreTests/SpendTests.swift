import Testing
@testable import WalletCore
import WalletTestSupport

@Suite("Spends: idempotent, never below zero", .throttled)
struct SpendTests {
    @Test("a spend debits the wallet and credits @spend", arguments: TestBackend.all)
    func spend(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        let result = try await ledger.store.spend(
            SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "k1", reason: "sword", metadata: Metadata(.object(["item": .string("sword")])), actor: "test"))
        #expect(result.balance == 2)
        #expect(result.transaction.amount == -3)
        #expect(result.transaction.note == "sword")
        #expect(result.transaction.metadata?.canonicalText == #"{"item":"sword"}"#)
        #expect(result.transaction.postings.map(\.account) == ["@spend", "player:p1"])
        #expect(try await ledger.balance("p1") == 2)
    }

    @Test("spending the whole balance reaches exactly zero", arguments: TestBackend.all)
    func exactBalance(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(try await ledger.spend("p1", 5, key: "k1").balance == 0)
    }

    @Test("a replay answers the original result, even after later spends", arguments: TestBackend.all)
    func replay(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1", quantity: 2)
        let first = try await ledger.spend("p1", 3, key: "k1")
        try await ledger.spend("p1", 1, key: "k2")
        let again = try await ledger.spend("p1", 3, key: "k1")
        #expect(again.replayed)
        #expect(again.transaction == first.transaction)
        #expect(again.balance == 7)
        #expect(try await ledger.balance("p1") == 6)
    }

    @Test("metadata in another key order is the same request", arguments: TestBackend.all)
    func metadataOrder(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        let a = try Metadata(JSONValue.parse(#"{"a": 1, "b": [true, null]}"#))
        let b = try Metadata(JSONValue.parse(#"{"b": [true, null], "a": 1}"#))
        _ = try await ledger.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", metadata: a, actor: "t"))
        #expect(try await ledger.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", metadata: b, actor: "t")).replayed)
    }

    @Test("a key reused for another request is refused and changes nothing", arguments: TestBackend.all, [
        SpendRequest(playerID: "p1", amount: 2, idempotencyKey: "k1", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, currency: "gems", idempotencyKey: "k1", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k1", reason: "other", actor: "t"),
    ])
    func reused(_ backend: TestBackend, _ request: SpendRequest) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.grant("p1", "T2", product: "com.example.gems10")
        try await ledger.spend("p1", 1, key: "k1")
        #expect(await walletError { _ = try await ledger.store.spend(request) }?.code == "idempotency_key_reused")
        #expect(try await ledger.balance("p1") == 4)
        #expect(try await ledger.balance("p1", "gems") == 10)
    }

    @Test("keys are scoped to the wallet", arguments: TestBackend.all)
    func keyScope(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.grant("p2", "T2")
        try await ledger.spend("p1", 1, key: "same")
        #expect(try await ledger.spend("p2", 2, key: "same").replayed == false)
        #expect(try await ledger.balance("p2") == 3)
    }

    @Test("an overdraft fails with the balance, writes nothing, and the key stays free", arguments: TestBackend.all)
    func overdraft(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        let error = await walletError { try await ledger.spend("p1", 6, key: "k1") }
        #expect(error == .insufficientFunds(balance: 5, currency: "credits"))
        #expect(try await ledger.transactionCount() == 1)
        // Top up, then the same key applies: business failures are not recorded under the key.
        try await ledger.grant("p1", "T2")
        let retried = try await ledger.spend("p1", 6, key: "k1")
        #expect(retried.replayed == false && retried.balance == 4)
    }

    @Test("a player without an account has nothing to spend", arguments: TestBackend.all)
    func emptyWallet(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { try await ledger.spend("nobody", 1, key: "k") } == .insufficientFunds(balance: 0, currency: "credits"))
        #expect(try await ledger.store.balances(playerID: "nobody").balances == ["credits": 0])
    }

    @Test("currencies are isolated", arguments: TestBackend.all)
    func currencies(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        try await ledger.grant("p1", "T2", product: "com.example.gems10")
        #expect(await walletError { try await ledger.spend("p1", 6, key: "k1") }?.code == "insufficient_funds")
        try await ledger.spend("p1", 8, key: "k2", currency: "gems")
        #expect(try await ledger.store.balances(playerID: "p1").balances == ["credits": 5, "gems": 2])
        #expect(try await ledger.store.verify().ok)
    }

    @Test("invalid spends are refused", arguments: TestBackend.all, [
        SpendRequest(playerID: "p1", amount: 0, idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: -1, idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: Int64.min, idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: Int64.max, idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: Limits.amountPerOperationMax + 1, idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: String(repeating: "k", count: 256), actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "two words", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "clé", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, currency: "", idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, currency: "CREDITS", idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, currency: String(repeating: "c", count: 17), idempotencyKey: "k", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", reason: " ", actor: "t"),
        SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", reason: String(repeating: "r", count: 256), actor: "t"),
    ])
    func invalid(_ backend: TestBackend, _ request: SpendRequest) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(await walletError { _ = try await ledger.store.spend(request) }?.code == "invalid_request")
        #expect(try await ledger.balance("p1") == 5)
    }

    @Test("a spend for an invalid player id is refused where the id is parsed, and takes nothing", arguments: TestBackend.all, ["", "p\u{0}1"])
    func invalidPlayer(_ backend: TestBackend, _ player: String) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        #expect(await walletError { try await ledger.spend(try PlayerID(player), 1, key: "k") }?.code == "invalid_request")
        #expect(try await ledger.balance("p1") == 5)
    }

    @Test("a well-formed but unknown currency is its own error", arguments: TestBackend.all)
    func unknownCurrency(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(await walletError { try await ledger.spend("p1", 1, key: "k", currency: "gold") }?.code == "unknown_currency")
    }

    @Test("metadata must be a bounded JSON object")
    func metadataLimits() throws {
        #expect(throws: WalletError.self) { try Metadata(.array([])) }
        #expect(throws: WalletError.self) { try Metadata(.object(["k": .string(String(repeating: "x", count: Limits.metadataBytesMax))])) }
        #expect(throws: WalletError.self) { try JSONValue.parse("{not json") }
        #expect(try Metadata(.object(["n": .integer(Int64.max)])).canonicalText == #"{"n":9223372036854775807}"#)
    }

    @Test("the longest key and the largest amount are accepted", arguments: TestBackend.all)
    func boundaries(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: Limits.amountPerOperationMax, reasonCode: "test", note: "n", idempotencyKey: "a", actor: "t"))
        let result = try await ledger.spend("p1", Limits.amountPerOperationMax, key: String(repeating: "k", count: 255))
        #expect(result.balance == 0)
    }
}
