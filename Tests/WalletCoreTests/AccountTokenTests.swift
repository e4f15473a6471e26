import Foundation
import Testing
@testable import WalletCore
import WalletTestSupport

/// Account tokens derived from player ids (UUIDv5) and the two ways a token binds a purchase.
@Suite("Account tokens", .throttled)
struct AccountTokenTests {
    @Test("UUIDv5 matches RFC 9562 and Python's uuid.uuid5 (UTF-8 names, version 5, RFC variant)")
    func knownVectors() throws {
        let dns = try #require(UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"))
        // RFC 9562 appendix A.4, and Python's documentation example.
        #expect(AccountToken.derived(namespace: dns, playerID: "www.example.com") == UUID(uuidString: "2ed6657d-e927-568b-95e1-2665a8aea6a2"))
        #expect(AccountToken.derived(namespace: dns, playerID: "python.org") == UUID(uuidString: "886313e1-3b8a-5372-9b90-0c9aee199e5d"))
        let studio = try #require(UUID(uuidString: "0f6c2d52-6d1a-4c0e-9a57-3a8c4f1c2b7e"))
        // python3 -c "import uuid; print(uuid.uuid5(uuid.UUID('0f6c2d52-…'), 'Zoë'))"
        #expect(AccountToken.derived(namespace: studio, playerID: "kate") == UUID(uuidString: "95c9dc19-17fd-5374-bc70-be83f7c76475"))
        // No player id is non-ASCII; the derivation hashes UTF-8 bytes all the same.
        #expect(AccountToken.nameBased(namespace: studio, name: "Zoë") == UUID(uuidString: "0a0741f5-dd7f-5b19-9258-024ef64b5c29"))
    }

    @Test("derived binding: the player's own token passes in any case; none, another player's or a non-UUID is purchase_invalid")
    func derivedBinding() throws {
        let studio = UUID()
        let binding = AccountTokenBinding.derived(namespace: studio)
        let kate = AccountToken.derived(namespace: studio, playerID: "kate")
        #expect(try binding.boundToken(kate.uuidString.uppercased(), playerID: "kate") == kate.uuidString.lowercased())
        for token in [nil, "", AccountToken.derived(namespace: studio, playerID: "mallory").uuidString, AccountToken.derived(namespace: UUID(), playerID: "kate").uuidString, "kate"] {
            let error = #expect(throws: WalletError.self, "\(token ?? "nil")") { try binding.boundToken(token, playerID: "kate") }
            #expect(error?.code == "purchase_invalid")
        }
        // First use: any UUID binds, none is fine, a UUID player id must be its own token.
        #expect(try AccountTokenBinding.firstUse.boundToken(nil, playerID: "kate") == nil)
        #expect(try AccountTokenBinding.firstUse.boundToken(kate.uuidString, playerID: "kate") == kate.uuidString.lowercased())
        #expect(throws: WalletError.self) { try AccountTokenBinding.firstUse.boundToken(kate.uuidString, playerID: PlayerID(UUID().uuidString)) }
    }
}
