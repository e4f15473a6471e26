import Crypto
import Foundation
import SwiftASN1
import Testing
@testable import WalletApple
@testable import WalletCore
import WalletTestSupport
import X509

@Suite("Apple StoreKit 2 transactions, verified offline", .throttled)
struct AppleTests {
    static let authority = try! AppleTestAuthority()

    static func purchases(_ backend: TestBackend, environments: Set<AppleConfiguration.Environment> = [.production]) async throws -> (ApplePurchases, TestLedger) {
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.old", credits: 5, active: false))
        return (ApplePurchases(configuration: try authority.configuration(environments: environments), ledger: ledger.store), ledger)
    }

    func rejection(_ backend: TestBackend, _ jws: String, player: PlayerID = "p1", environments: Set<AppleConfiguration.Environment> = [.production]) async throws -> WalletError? {
        let (purchases, ledger) = try await Self.purchases(backend, environments: environments)
        let error = await walletError { _ = try await purchases.redeem(playerID: player, signedTransaction: jws, actor: "t") }
        #expect(try await ledger.transactionCount() == 0, "a rejected transaction credits nothing")
        return error
    }

    @Test("the bundled Apple Root CA - G3 parses and has Apple's fingerprint")
    func bundledRoot() throws {
        let root = try AppleConfiguration.appleRootCertificate()
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(fingerprint == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(try AppleConfiguration(bundleID: "a.b").trustedRoots == [root])
    }

    @Test("a valid consumable credits credits × quantity once; a re-delivery replays; another player is refused", arguments: TestBackend.all)
    func redeem(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.purchases(backend)
        let jws = try Self.authority.transaction("2000000000000001", quantity: 3)
        let first = try await purchases.redeem(playerID: "p1", signedTransaction: jws, actor: "player:p1")
        #expect(first.balance == 15 && !first.replayed)
        #expect(first.transaction.store == "apple" && first.transaction.storeTransactionID == "2000000000000001" && first.transaction.quantity == 3)
        let again = try await purchases.redeem(playerID: "p1", signedTransaction: jws, actor: "player:p1")
        #expect(again.replayed && again.transaction.id == first.transaction.id)
        let other = await walletError { _ = try await purchases.redeem(playerID: "p2", signedTransaction: jws, actor: "player:p2") }
        #expect(other?.code == "idempotency_key_reused")
        #expect(try await ledger.balance("p2") == 0)
        #expect(try await ledger.balance("p1") == 15)
    }

    @Test("a transaction outlives its leaf certificate: the chain is checked at signedDate", arguments: TestBackend.all)
    func signedWhileValid(backend: TestBackend) async throws {
        var options = AppleTestAuthority.Options()
        options.leafValidFor = -3_600 * 24
        let expired = try AppleTestAuthority(options, name: "Expired")
        let ledger = try await TestLedger(backend)
        _ = try await ledger.store.setProduct(ProductUpdate(productID: "com.example.game.consume5credits", credits: 5))
        let purchases = ApplePurchases(configuration: try expired.configuration(), ledger: ledger.store)
        let twoDaysAgo = AppleTestAuthority.milliseconds(Date() - 3_600 * 48)
        let old = try expired.transaction("T-old", changes: ["signedDate": twoDaysAgo])
        #expect(try await purchases.redeem(playerID: "p1", signedTransaction: old, actor: "t").balance == 5)
        let late = try expired.transaction("T-late")
        let error = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: late, actor: "t") }
        #expect(error?.code == "purchase_invalid" && error?.detail.contains("not valid at the signing date") == true)
    }

    @Test("tampered, truncated and mis-signed tokens are refused", arguments: TestBackend.all, ["payload", "signature", "truncated", "alg", "two", "four", "garbage", "header"])
    func tampered(_ backend: TestBackend, _ kind: String) async throws {
        let authority = Self.authority
        let valid = try authority.transaction("T1")
        let parts = valid.split(separator: ".").map(String.init)
        let jws: String
        switch kind {
        case "payload":
            let payload = try authority.transaction("T1", quantity: 50).split(separator: ".")[1]
            jws = parts[0] + "." + payload + "." + parts[2]
        case "signature":
            var signature = Array(parts[2])
            signature[10] = signature[10] == "A" ? "B" : "A"
            jws = parts[0] + "." + parts[1] + "." + String(signature)
        case "truncated": jws = String(valid.dropLast(20))
        case "alg": jws = try authority.sign(["transactionId": "T1"], alg: "HS256")
        case "two": jws = try authority.sign(["transactionId": "T1"], x5c: Array(authority.chain.prefix(2)))
        case "four": jws = try authority.sign(["transactionId": "T1"], x5c: authority.chain + [authority.chain[2]])
        case "header": jws = "e30." + parts[1] + "." + parts[2]
        default: jws = "not a token"
        }
        #expect(try await rejection(backend, jws)?.code == "purchase_invalid", "\(kind)")
    }

    @Test("chains to an untrusted root or without Apple's markers are refused", arguments: TestBackend.all, ["untrusted", "leaf", "intermediate", "swapped-root"])
    func chains(_ backend: TestBackend, _ kind: String) async throws {
        var options = AppleTestAuthority.Options()
        switch kind {
        case "leaf": options.leafOID = false
        case "intermediate": options.intermediateOID = false
        default: break
        }
        let other = try AppleTestAuthority(options, name: "Other")
        var jws = try other.transaction("T1")
        if kind == "swapped-root" {
            // Our trusted root pasted at the end of another authority's chain.
            jws = try other.sign(["transactionId": "T1", "signedDate": AppleTestAuthority.milliseconds(Date())], x5c: Array(other.chain.prefix(2)) + [Self.authority.chain[2]])
        }
        let error: WalletError?
        if kind == "leaf" || kind == "intermediate" {
            // Trusted root, missing marker: configure the wallet to trust this authority.
            let ledger = try await TestLedger(backend)
            let purchases = ApplePurchases(configuration: try other.configuration(), ledger: ledger.store)
            error = await walletError { _ = try await purchases.redeem(playerID: "p1", signedTransaction: jws, actor: "t") }
            #expect(error?.detail.contains("marker") == true, "\(error?.detail ?? "")")
        } else {
            error = try await rejection(backend, jws)
        }
        #expect(error?.code == "purchase_invalid", "\(kind)")
    }

    @Test("claims: bundle, environment, type, revocation, quantity, product", arguments: TestBackend.all, [
        ("bundle", "purchase_invalid"), ("sandbox", "purchase_invalid"), ("type", "purchase_invalid"), ("revoked", "purchase_invalid"),
        ("quantity", "purchase_invalid"), ("inactive", "unknown_product"), ("unknown", "unknown_product"), ("token", "purchase_invalid"),
        ("date", "purchase_invalid"),
    ])
    func claims(_ backend: TestBackend, _ kindAndCode: (String, String)) async throws {
        let (kind, code) = kindAndCode
        let authority = Self.authority
        var player: PlayerID = "p1"
        let jws: String = switch kind {
        case "bundle": try authority.transaction("T1", changes: ["bundleId": "com.other.game"])
        case "sandbox": try authority.transaction("T1", changes: ["environment": "Sandbox"])
        case "type": try authority.transaction("T1", changes: ["type": "Non-Consumable"])
        case "revoked": try authority.transaction("T1", changes: ["revocationDate": AppleTestAuthority.milliseconds(Date())])
        case "quantity": try authority.transaction("T1", quantity: 0)
        case "inactive": try authority.transaction("T1", product: "com.example.game.old")
        case "unknown": try authority.transaction("T1", product: "com.example.game.nothing")
        case "date": try authority.transaction("T1", changes: ["purchaseDate": Int64(300_000_000_000_000)])
        default: try authority.transaction("T1", changes: ["appAccountToken": UUID().uuidString])
        }
        if kind == "token" { player = try PlayerID(UUID().uuidString) }
        let error = try await rejection(backend, jws, player: player)
        #expect(error?.code == code, "\(kind): \(error?.detail ?? "")")
    }

    @Test("sandbox is accepted when configured, and a matching appAccountToken passes", arguments: TestBackend.all)
    func sandboxAndToken(backend: TestBackend) async throws {
        let (purchases, _) = try await Self.purchases(backend, environments: [.production, .sandbox])
        let player = UUID()
        let jws = try Self.authority.transaction("T1", changes: ["environment": "Sandbox", "appAccountToken": player.uuidString.lowercased()])
        #expect(try await purchases.redeem(playerID: try PlayerID(player.uuidString), signedTransaction: jws, actor: "t").balance == 5)
    }

    @Test("an appAccountToken belongs to the first player it credits, whatever the player id looks like; case variants are one token", arguments: TestBackend.all)
    func accountTokenBinding(backend: TestBackend) async throws {
        let (purchases, ledger) = try await Self.purchases(backend)
        let token = UUID()
        let first = try Self.authority.transaction("T1", changes: ["appAccountToken": token.uuidString.lowercased()])
        #expect(try await purchases.redeem(playerID: "auth0|kate", signedTransaction: first, actor: "t").balance == 5)
        // The account's next purchase, its token in capitals, is the same token: it credits Kate, never Mallory.
        let second = try Self.authority.transaction("T2", changes: ["appAccountToken": token.uuidString.uppercased()])
        let stolen = await walletError { _ = try await purchases.redeem(playerID: "auth0|mallory", signedTransaction: second, actor: "t") }
        #expect(stolen?.code == "purchase_invalid" && stolen?.detail.contains("another player") == true, "\(stolen?.detail ?? "")")
        #expect(try await purchases.redeem(playerID: "auth0|kate", signedTransaction: second, actor: "t").balance == 10)
        // A token that is not a UUID is refused; a UUID player id must equal its token, in any case.
        let malformed = try Self.authority.transaction("T3", changes: ["appAccountToken": "kate"])
        #expect(await walletError { _ = try await purchases.redeem(playerID: "auth0|kate", signedTransaction: malformed, actor: "t") }?.code == "purchase_invalid")
        let uuidPlayer = UUID()
        let own = try Self.authority.transaction("T4", changes: ["appAccountToken": uuidPlayer.uuidString.uppercased()])
        #expect(try await purchases.redeem(playerID: try PlayerID(uuidPlayer.uuidString.lowercased()), signedTransaction: own, actor: "t").balance == 5)

        // Many players race to redeem purchases of one new account: one player gets them all.
        let raced = UUID().uuidString
        let jws = try (0..<16).map { index in try Self.authority.transaction("R\(index)", changes: ["appAccountToken": raced]) }
        let winners = await withTaskGroup(of: String?.self) { group in
            for (index, transaction) in jws.enumerated() {
                group.addTask { try? await purchases.redeem(playerID: try PlayerID("racer-\(index % 4)"), signedTransaction: transaction, actor: "t").transaction.playerID }
            }
            return await group.reduce(into: [String]()) { winners, player in if let player { winners.append(player) } }
        }
        #expect(Set(winners).count == 1 && !winners.isEmpty, "\(winners)")
        var credited: [Int64] = []
        for index in 0..<4 { credited.append(try await ledger.store.balances(playerID: try PlayerID("racer-\(index)")).balances["credits"] ?? 0) }
        #expect(credited.reduce(0, +) == Int64(winners.count) * 5 && credited.filter { $0 > 0 }.count == 1)
        #expect(try await ledger.store.balances(playerID: "auth0|mallory").balances["credits"] == 0)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("configuration refuses bad values")
    func configuration() {
        #expect(throws: WalletError.self) { try AppleConfiguration(bundleID: "") }
        #expect(throws: WalletError.self) { try AppleConfiguration(bundleID: "a", environments: []) }
        #expect(throws: WalletError.self) { try AppleConfiguration(bundleID: "a", extraRootsPEM: ["not a pem"]) }
    }
}
