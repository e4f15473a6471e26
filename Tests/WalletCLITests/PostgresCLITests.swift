import Foundation
import GRDB
import Testing
import WalletTestSupport

/// The CLI on PostgreSQL: every ledger command takes a postgres:// URL, and `wallet copy` moves a
/// ledger between SQLite and PostgreSQL and back, ending at the same head hash.
@Suite("The CLI on PostgreSQL, and wallet copy", .enabled(if: TestBackend.all.contains(.postgres)))
struct PostgresCLITests {
    @Test("SQLite → PostgreSQL → SQLite ends at the same head hash, and each copy runs the ledger commands")
    func roundTrip() throws {
        let cli = try CLI.withCatalog()
        _ = try cli.json("grant", "--player", "p1", "--store", "apple", "--transaction-id", "T1", "--product", "com.example.consume5credits", "--quantity", "3")
        _ = try cli.json("spend", "--player", "p1", "--amount", "4", "--key", "k1")
        _ = try cli.json("adjust", "--player", "p2", "--amount", "7", "--reason-code", "goodwill", "--note", "sorry", "--actor", "alice", "--key", "a1")
        _ = try cli.json("keys", "create", "--role", "support", "--name", "desk")
        let head = try cli.json("verify")["head_hash"] as? String
        let postgres = try TestPostgres.freshDatabase()
        let copied = try cli.json("copy", "--from", cli.databasePath, "--to", postgres)
        #expect(copied["head_hash"] as? String == head && copied["transactions"] as? Int == 3, "\(copied)")
        #expect((copied["target"] as? String)?.hasPrefix("postgres://") == true)
        // The commands work on the copy: a replayed spend, a new one, the same keys.
        let onPostgres = ["WALLET_DB": postgres]
        let replay = try cli.run("spend", "--player", "p1", "--amount", "4", "--key", "k1", "--json", environment: onPostgres)
        let replayed = try replay.json()["replayed"] as? Bool
        #expect(replay.status == 0 && replayed == true, "\(replay.stderr)")
        let keys = try cli.run("keys", "list", "--json", environment: onPostgres)
        #expect(keys.status == 0 && keys.stdout.contains("desk"), "\(keys.stderr)")
        let spend = try cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k2", "--json", environment: onPostgres)
        let balance = try spend.json()["balance"] as? Int
        #expect(spend.status == 0 && balance == 10, "\(spend.stderr)")
        let verified = try cli.run("verify", "--json", environment: onPostgres)
        let newHead = try verified.json()["head_hash"] as? String
        #expect(verified.status == 0 && newHead != head)
        // And back into a new SQLite file, for an audit on a laptop.
        let back = try CLI()
        let returned = try back.json("copy", "--from", postgres, "--to", back.databasePath)
        #expect(returned["head_hash"] as? String == newHead)
        #expect(try back.json("verify")["head_hash"] as? String == newHead)
        #expect(try back.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 10])
        // A target that holds a ledger already is refused, and keeps what it had.
        let again = try cli.run("copy", "--from", cli.databasePath, "--to", postgres, "--json")
        #expect(again.status != 0 && again.errorCode() == "invalid_request" && again.stderr.contains("not empty"), "\(again.stderr)")
    }

    @Test("a corrupted source is refused before anything is written")
    func corruptedSource() throws {
        let cli = try CLI.withCatalog()
        _ = try cli.json("grant", "--player", "p1", "--store", "apple", "--transaction-id", "T1", "--product", "com.example.consume5credits")
        _ = try cli.json("spend", "--player", "p1", "--amount", "2", "--key", "k1")
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let raw = try DatabaseQueue(path: cli.databasePath, configuration: configuration)
        try raw.write { db in
            try db.execute(sql: "DROP TRIGGER postings_append_only_update")
            try db.execute(sql: "UPDATE postings SET amount = amount + 1 WHERE seq = 2")
        }
        try raw.close()
        let postgres = try TestPostgres.freshDatabase()
        let refused = try cli.run("copy", "--from", cli.databasePath, "--to", postgres, "--json")
        #expect(refused.status != 0 && refused.errorCode() == "invalid_request" && refused.stderr.contains("does not verify"), "\(refused.stderr)")
        let target = try cli.run("verify", "--json", environment: ["WALLET_DB": postgres])
        let count = try target.json()["transactions"] as? Int
        #expect(target.status == 0 && count == 0, "\(target.stderr)")
    }

    @Test("a URL with a password is never printed: the error names the server with ***")
    func redacted() throws {
        let cli = try CLI()
        let port = try LoopbackSocket.freePort()
        let output = try cli.run("balance", "--player", "p1", "--json", environment: ["WALLET_DB": "postgres://wallet:hunter2-secret@127.0.0.1:\(port)/wallet?sslmode=disable"])
        #expect(output.status != 0 && output.errorCode() == "storage_error", "\(output.stderr)")
        #expect(!output.stderr.contains("hunter2-secret") && !output.stdout.contains("hunter2-secret"))
        let bad = try cli.run("balance", "--player", "p1", "--json", environment: ["WALLET_DB": "postgres://u:hunter2-secret@h/d?sslmode=nope"])
        #expect(bad.errorCode() == "invalid_request" && bad.stderr.contains("sslmode") && !bad.stderr.contains("hunter2-secret"), "\(bad.stderr)")
    }
}
