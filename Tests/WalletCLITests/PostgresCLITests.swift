import Foundation
import GRDB
import Testing
import WalletTestSupport

/// The CLI on PostgreSQL: every ledger command takes a postgres:// URL, and `wallet copy` moves a
/// ledger between SQLite and PostgreSQL and back, ending at the same head hash.
@Suite("The CLI on PostgreSQL, and wallet copy", .enabled(if: TestBackend.all.contains(.postgres)), .throttled)
struct PostgresCLITests {
    @Test("SQLite → PostgreSQL → SQLite ends at the same head hash, and each copy runs the ledger commands")
    func roundTrip() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.json("grant", "--player", "p1", "--store", "apple", "--store-transaction-id", "T1", "--product", "com.example.consume5credits", "--quantity", "3")
        _ = try await cli.json("spend", "--player", "p1", "--amount", "4", "--key", "k1")
        _ = try await cli.json("adjust", "--player", "p2", "--amount", "7", "--reason-code", "goodwill", "--note", "sorry", "--actor", "alice", "--key", "a1")
        _ = try await cli.json("keys", "create", "--role", "support", "--name", "desk")
        let head = try await cli.json("verify")["head_hash"] as? String
        let postgres = try await TestPostgres.freshDatabase()
        let copied = try await cli.json("copy", "--from", cli.databasePath, "--to", postgres)
        #expect(copied["head_hash"] as? String == head && copied["transactions"] as? Int == 3, "\(copied)")
        #expect((copied["target"] as? String)?.hasPrefix("postgres://") == true)
        // The commands work on the copy: a replayed spend, a new one, the same keys.
        let onPostgres = ["WALLET_DB": postgres]
        let replay = try await cli.run("spend", "--player", "p1", "--amount", "4", "--key", "k1", "--json", environment: onPostgres)
        let replayed = try replay.json()["replayed"] as? Bool
        #expect(replay.status == 0 && replayed == true, "\(replay.stderr)")
        let keys = try await cli.run("keys", "list", "--json", environment: onPostgres)
        #expect(keys.status == 0 && keys.stdout.contains("desk"), "\(keys.stderr)")
        let spend = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k2", "--json", environment: onPostgres)
        let balance = try spend.json()["balance"] as? Int
        #expect(spend.status == 0 && balance == 10, "\(spend.stderr)")
        let verified = try await cli.run("verify", "--json", environment: onPostgres)
        let newHead = try verified.json()["head_hash"] as? String
        #expect(verified.status == 0 && newHead != head)
        // And back into a new SQLite file, for an audit on a laptop.
        let back = try CLI()
        let returned = try await back.json("copy", "--from", postgres, "--to", back.databasePath)
        #expect(returned["head_hash"] as? String == newHead)
        await #expect(try back.json("verify")["head_hash"] as? String == newHead)
        await #expect(try back.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 10])
        // A target that holds a ledger already is refused, and keeps what it had.
        let again = try await cli.run("copy", "--from", cli.databasePath, "--to", postgres, "--json")
        #expect(again.status != 0 && again.errorCode() == "invalid_request" && again.stderr.contains("not empty"), "\(again.stderr)")
    }

    @Test("a corrupted source is refused before anything is written")
    func corruptedSource() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.json("grant", "--player", "p1", "--store", "apple", "--store-transaction-id", "T1", "--product", "com.example.consume5credits")
        _ = try await cli.json("spend", "--player", "p1", "--amount", "2", "--key", "k1")
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let raw = try DatabaseQueue(path: cli.databasePath, configuration: configuration)
        try await raw.write { db in
            try db.execute(sql: "DROP TRIGGER postings_append_only_update")
            try db.execute(sql: "UPDATE postings SET amount = amount + 1 WHERE seq = 2")
        }
        try raw.close()
        let postgres = try await TestPostgres.freshDatabase()
        let refused = try await cli.run("copy", "--from", cli.databasePath, "--to", postgres, "--json")
        #expect(refused.status != 0 && refused.errorCode() == "invalid_request" && refused.stderr.contains("does not verify"), "\(refused.stderr)")
        let target = try await cli.run("verify", "--json", environment: ["WALLET_DB": postgres])
        let count = try target.json()["transactions"] as? Int
        #expect(target.status == 0 && count == 0, "\(target.stderr)")
    }

    @Test("a URL with a password is never printed: the error names the server with ***")
    func redacted() async throws {
        let cli = try CLI()
        let port = try LoopbackSocket.freePort()
        let output = try await cli.run("balance", "--player", "p1", "--json", environment: ["WALLET_DB": "postgres://wallet:hunter2-secret@127.0.0.1:\(port)/wallet?sslmode=disable"])
        #expect(output.status != 0 && output.errorCode() == "storage_error", "\(output.stderr)")
        #expect(!output.stderr.contains("hunter2-secret") && !output.stdout.contains("hunter2-secret"))
        let bad = try await cli.run("balance", "--player", "p1", "--json", environment: ["WALLET_DB": "postgres://u:hunter2-secret@h/d?sslmode=nope"])
        #expect(bad.errorCode() == "invalid_request" && bad.stderr.contains("sslmode") && !bad.stderr.contains("hunter2-secret"), "\(bad.stderr)")
    }

    @Test("three wallet serve instances on one database, 64 clients, one instance killed mid-load: every acknowledged operation once, none twice, verify ok")
    func threeInstances() async throws {
        let cli = CLI(database: try await TestPostgres.freshDatabase())
        #expect(try await cli.run("products", "set", "com.example.consume5credits", "--credits", "5").status == 0)
        for player in 0..<4 { _ = try await cli.grant("p\(player)", "seed-\(player)", quantity: 10) }
        let key = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "load")["key"] as? String)
        var servers: [((ChildProcess, ChildPipe, ChildPipe), String)] = []
        for _ in 0..<3 { servers.append(try await ServeTests.serve(cli)) }
        let bases = servers.map(\.1)
        let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
        let answered = Counter()
        let victim = servers[0].0.0.processIdentifier
        // Each client sends grants (each purchase to two instances), spends (each replayed on
        // another instance) and overdrafts, spread over the three instances.
        let acknowledged = await withTaskGroup(of: [String].self) { group in
            group.addTask {
                for _ in 0..<4_000 where answered.value < 100 { try? await Task.sleep(for: .milliseconds(5)) }
                kill(victim, SIGKILL)
                return []
            }
            for client in 0..<64 {
                group.addTask {
                    var done: [String] = []
                    for step in 0..<12 {
                        let player = "p\((client + step) % 4)"
                        let base = bases[(client + step) % 3]
                        let other = bases[(client + step + 1) % 3]
                        switch step % 4 {
                        case 0:
                            let body = #"{"player_id": "\#(player)", "store": "apple", "store_transaction_id": "T-\#(client)-\#(step)", "product_id": "com.example.consume5credits", "quantity": 1}"#
                            for target in [base, other] {
                                let response = await send("POST", "\(target)/v1/purchases", headers: headers, body: body)
                                if response?.status == 201 || response?.status == 200 { done.append("grant \(player) T-\(client)-\(step)") }
                            }
                        case 3:
                            let response = await send(
                                "POST", "\(base)/v1/wallets/\(player)/spend", headers: headers.merging(["Idempotency-Key": "over-\(client)-\(step)"]) { $1 },
                                body: #"{"amount": 1000000}"#)
                            if let status = response?.status { #expect(status == 409, "an overdraft answered \(status)") }
                        default:
                            let spendHeaders = headers.merging(["Idempotency-Key": "k-\(client)-\(step)"]) { $1 }
                            for target in [base, other] {
                                let response = await send("POST", "\(target)/v1/wallets/\(player)/spend", headers: spendHeaders, body: #"{"amount": 1}"#)
                                if response?.status == 201 || response?.status == 200 { done.append("spend \(player) k-\(client)-\(step)") }
                                if let status = response?.status { #expect([200, 201, 409, 503].contains(status), "a spend answered \(status)") }
                            }
                        }
                        answered.increment()
                    }
                    return done
                }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        for (index, server) in servers.enumerated() {
            if index > 0 { server.0.0.terminate() }
            let exit = await CLI.finish(server.0)
            if index == 0 { #expect(exit.status == SIGKILL) }
        }
        #expect(acknowledged.count >= 100)
        // Every acknowledged operation is stored once: its replay says so and changes nothing.
        for operation in Set(acknowledged) {
            let parts = operation.split(separator: " ").map(String.init)
            let replay = parts[0] == "grant"
                ? try await cli.grant(parts[1], parts[2])
                : try await cli.json("spend", "--player", parts[1], "--amount", "1", "--key", parts[2])
            #expect(replay["replayed"] as? Bool == true, "\(operation) was acknowledged but not stored")
        }
        let report = try await cli.json("verify")
        #expect(report["ok"] as? Bool == true, "\(report)")
        for player in 0..<4 {
            let balance = try await cli.json("balance", "--player", "p\(player)")["balances"] as? [String: Int]
            #expect((balance?["credits"] ?? -1) >= 0)
        }
    }
}
