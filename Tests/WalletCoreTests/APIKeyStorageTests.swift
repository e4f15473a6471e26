import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

@Suite("API key storage", .throttled)
struct APIKeyStorageTests {
    @Test("revoking: an unknown or look-alike id is not_found and changes nothing; revoking twice answers the first revocation", arguments: TestBackend.all)
    func revoke(backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        let created = try await ledger.store.createAPIKey(role: .support, name: "desk")
        for unknown in ["key_nope", created.key.id.uppercased(), created.key.id + " "] where unknown != created.key.id {
            let error = await walletError { _ = try await ledger.store.revokeAPIKey(id: unknown) }
            #expect(error?.code == "not_found" || error?.code == "invalid_request", "\(unknown): \(String(describing: error))")
        }
        #expect(try await ledger.store.apiKeys().allSatisfy { $0.revokedAt == nil })
        let first = try await ledger.store.revokeAPIKey(id: created.key.id)
        let second = try await ledger.store.revokeAPIKey(id: created.key.id)
        #expect(first.revokedAt != nil && second == first)
        #expect(try await ledger.store.authenticate(secret: created.secret) == nil)
    }
}
