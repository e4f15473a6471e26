import Foundation
import Testing
@testable import wallet
import WalletCore
import WalletTestSupport

@Suite("The wallet CLI, run as a process", .throttled)
struct CLITests {
    @Test("products set and list")
    func products() async throws {
        let cli = try CLI()
        let set = try await cli.json("products", "set", "gems.pack", "--credits", "10", "--currency", "gems", "--store", "google", "--inactive")
        #expect(set["product_id"] as? String == "gems.pack" && set["credits"] as? Int == 10 && set["active"] as? Bool == false)
        let list = try await cli.json("products", "list")
        let products = list["products"] as? [[String: Any]]
        #expect(products?.count == 1 && products?.first?["store"] as? String == "google")
        let human = try await cli.run("products", "list")
        #expect(human.stdout == "gems.pack\t10 gems\tgoogle\tinactive\tconsumable\n")
        let bad = try await cli.run("products", "set", "x", "--credits", "0", "--json")
        #expect(bad.status == 1 && bad.errorCode() == "invalid_request" && bad.stdout.isEmpty)
    }

    @Test("grant credits once and replays")
    func grant() async throws {
        let cli = try await CLI.withCatalog()
        let first = try await cli.grant("p1", "T1", quantity: 3)
        #expect(first["balance"] as? Int == 15 && first["replayed"] as? Bool == false)
        let transaction = first["transaction"] as? [String: Any]
        #expect(transaction?["kind"] as? String == "purchase" && transaction?["seq"] as? Int == 1)
        let again = try await cli.grant("p1", "T1", quantity: 3)
        #expect(again["replayed"] as? Bool == true && again["balance"] as? Int == 15)
        #expect((again["transaction"] as? [String: Any])?["id"] as? String == transaction?["id"] as? String)
        let other = try await cli.run("grant", "--player", "p2", "--store", "apple", "--store-transaction-id", "T1", "--product", "com.example.consume5credits", "--json")
        #expect(other.status == 1 && other.errorCode() == "idempotency_key_reused")
        let unknown = try await cli.run("grant", "--player", "p2", "--store", "apple", "--store-transaction-id", "T2", "--product", "nope", "--json")
        #expect(unknown.status == 1 && unknown.errorCode() == "unknown_product")
        let human = try await cli.run("grant", "--player", "p1", "--store", "apple", "--store-transaction-id", "T1", "--product", "com.example.consume5credits", "--quantity", "3")
        #expect(human.stdout.contains("Replayed") && human.stdout.contains("Balance of p1: 15 credits."))
    }

    @Test("spend: success, replay, conflict, overdraft and bad amounts")
    func spend() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let spent = try await cli.json("spend", "--player", "p1", "--amount", "3", "--key", "k1", "--reason", "sword", "--metadata", #"{"item":"sword"}"#)
        #expect(spent["balance"] as? Int == 2)
        #expect(((spent["transaction"] as? [String: Any])?["metadata"] as? [String: Any])?["item"] as? String == "sword")
        let replay = try await cli.json("spend", "--player", "p1", "--amount", "3", "--key", "k1", "--reason", "sword", "--metadata", #"{"item": "sword"}"#)
        #expect(replay["replayed"] as? Bool == true && replay["balance"] as? Int == 2)
        let conflict = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k1", "--json")
        #expect(conflict.status == 1 && conflict.errorCode() == "idempotency_key_reused")
        let overdraft = try await cli.run("spend", "--player", "p1", "--amount", "3", "--key", "k2", "--json")
        #expect(overdraft.status == 1 && overdraft.errorCode() == "insufficient_funds" && overdraft.stdout.isEmpty)
        #expect(overdraft.stderr.contains("the balance is 2 credits"))
        for amount in ["0", "-1", "1000000001"] {
            let bad = try await cli.run("spend", "--player", "p1", "--amount=\(amount)", "--key", "k3", "--json")
            #expect(bad.status == 1 && bad.errorCode() == "invalid_request", "amount \(amount)")
        }
        for amount in ["abc", "9223372036854775808", "1.5"] {
            let bad = try await cli.run("spend", "--player", "p1", "--amount", amount, "--key", "k3", "--json")
            #expect(bad.status == 64 && bad.errorCode() == "invalid_request", "amount \(amount)")
        }
        let longKey = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", String(repeating: "k", count: 256), "--json")
        #expect(longKey.errorCode() == "invalid_request")
        let badMetadata = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k4", "--metadata", "[1]", "--json")
        #expect(badMetadata.errorCode() == "invalid_request")
        let unknownCurrency = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k4", "--currency", "gold", "--json")
        #expect(unknownCurrency.errorCode() == "unknown_currency")
        let human = try await cli.run("spend", "--player", "p1", "--amount", "9", "--key", "k5")
        #expect(human.status == 1 && human.stderr == "error: insufficient funds: the balance is 2 credits [insufficient_funds]\n")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 2])
    }

    @Test("every command that names a player refuses a bad id with the id rule's words, and writes nothing")
    func badPlayerIDs() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let onlyASCII = "player id may hold only ASCII letters, digits and - _ . : @ + = | ~"
        for (player, detail) in [("", "player id must not be empty"), ("\u{212A}ate", onlyASCII), ("p 1", onlyASCII), ("..", "player id must not be '.' or '..'")] {
            for command in [
                ["grant", "--player", player, "--store", "apple", "--store-transaction-id", "T2", "--product", "com.example.consume5credits"],
                ["spend", "--player", player, "--amount", "1", "--key", "k"],
                ["adjust", "--player", player, "--amount", "1", "--reason-code", "goodwill", "--note", "n", "--actor", "sam", "--key", "k"],
                ["bonus", "--player", player, "--amount", "1", "--reason-code", "event", "--key", "k"],
                ["hold", "create", "--player", player, "--amount", "1", "--expires-in", "60", "--key", "k"],
                ["hold", "list", "--player", player], ["balance", "--player", player], ["lots", "--player", player],
                ["history", "--player", player], ["statement", "--player", player], ["export", "--player", player],
            ] {
                let output = await CLI.finish(try cli.start(command + ["--json"]))
                let error = try JSONSerialization.jsonObject(with: Data(output.stderr.utf8)) as? [String: String]
                #expect(output.status == 1 && error == ["code": "invalid_request", "detail": detail] && output.stdout.isEmpty, "\(command): \(output.stderr)")
            }
        }
        #expect(try await cli.json("verify")["transactions"] as? Int == 1)
    }

    @Test("adjust takes negative amounts and requires its fields")
    func adjust() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let debit = try await cli.json("adjust", "--player", "p1", "--amount=-2", "--reason-code", "chargeback", "--note", "duplicate, \"charged\"", "--actor", "alice", "--key", "a1", "--ticket", "SUP-7")
        let transaction = debit["transaction"] as? [String: Any]
        #expect(debit["balance"] as? Int == 3)
        #expect(transaction?["actor"] as? String == "alice" && transaction?["ticket"] as? String == "SUP-7" && transaction?["reason_code"] as? String == "chargeback")
        let missingNote = try await cli.run("adjust", "--player", "p1", "--amount", "1", "--reason-code", "goodwill", "--actor", "alice", "--key", "a2", "--json")
        #expect(missingNote.status == 64 && missingNote.errorCode() == "invalid_request" && missingNote.stderr.contains("--note"))
        let missingActor = try await cli.run("adjust", "--player", "p1", "--amount", "1", "--reason-code", "goodwill", "--note", "n", "--key", "a2")
        #expect(missingActor.status == 64 && missingActor.stderr.contains("--actor"))
        let belowZero = try await cli.run("adjust", "--player", "p1", "--amount=-5", "--reason-code", "goodwill", "--note", "n", "--actor", "alice", "--key", "a3", "--json")
        #expect(belowZero.errorCode() == "insufficient_funds")
        let allowed = try await cli.json("adjust", "--player", "p1", "--amount=-5", "--reason-code", "goodwill", "--note", "n", "--actor", "alice", "--key", "a3", "--allow-negative")
        #expect(allowed["balance"] as? Int == -2)
    }

    @Test("refund under both policies, and its errors")
    func refund() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        _ = try await cli.grant("p2", "T2")
        _ = try await cli.json("spend", "--player", "p1", "--amount", "4", "--key", "k1")
        _ = try await cli.json("spend", "--player", "p2", "--amount", "4", "--key", "k1")
        let debt = try await cli.json("refund", "--store", "apple", "--store-transaction-id", "T1")
        #expect(debt["balance"] as? Int == -4)
        let floor = try await cli.json("refund", "--store", "apple", "--store-transaction-id", "T2", "--policy", "floor")
        #expect(floor["balance"] as? Int == 0 && (floor["transaction"] as? [String: Any])?["uncollected"] as? Int == 4)
        let unknown = try await cli.run("refund", "--store", "apple", "--store-transaction-id", "T9", "--json")
        #expect(unknown.status == 1 && unknown.errorCode() == "not_found")
        for percentage in ["0", "101"] {
            let bad = try await cli.run("refund", "--store", "apple", "--store-transaction-id", "T1", "--percentage", percentage, "--json")
            #expect(bad.errorCode() == "invalid_request")
        }
        let badPolicy = try await cli.run("refund", "--store", "apple", "--store-transaction-id", "T1", "--policy", "forgive", "--json")
        #expect(badPolicy.status == 64 && badPolicy.errorCode() == "invalid_request")
        let blocked = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "k2", "--json")
        #expect(blocked.errorCode() == "insufficient_funds")
    }

    @Test("history pages with a cursor; balance and verify report in JSON and text")
    func readCommands() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 2)
        for index in 1...3 { _ = try await cli.json("spend", "--player", "p1", "--amount", "1", "--key", "k\(index)") }
        let first = try await cli.json("history", "--player", "p1", "--limit", "2")
        #expect((first["transactions"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [4, 3])
        #expect(first["next"] as? Int == 3)
        let second = try await cli.json("history", "--player", "p1", "--limit", "2", "--after", "3")
        #expect((second["transactions"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [2, 1])
        #expect(second["next"] == nil)
        let human = try await cli.run("history", "--player", "p1", "--limit", "1")
        #expect(human.stdout.contains("\tspend\t-1 credits\tbalance 7") && human.stdout.contains("--after 4"))
        #expect(try await cli.run("history", "--player", "p1", "--limit", "501", "--json").errorCode() == "invalid_request")
        #expect(try await cli.run("history", "--player", "p1", "--kind", "gift", "--json").status == 64)
        #expect(try await cli.run("balance", "--player", "p1").stdout == "p1: 7 credits\n")
        let report = try await cli.json("verify")
        #expect(report["ok"] as? Bool == true && report["transactions"] as? Int == 4 && report.keys.contains("first_bad_seq"))
        #expect(try await cli.run("verify").stdout.hasPrefix("OK: 4 transactions, head hash "))
    }

    @Test("verify fails with the first bad seq after tampering")
    func verifyTampered() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        _ = try await cli.json("spend", "--player", "p1", "--amount", "1", "--key", "k1")
        try await cli.sqlite3("DROP TRIGGER postings_append_only_update; UPDATE postings SET amount = 2 WHERE seq = 2 AND amount = 1;")
        let output = try await cli.run("verify", "--json")
        #expect(output.status == 1)
        let report = try output.json()
        #expect(report["ok"] as? Bool == false && report["first_bad_seq"] as? Int == 2)
        #expect(try await cli.run("verify").stdout.hasPrefix("FAILED at seq 2: "))
    }

    @Test("--db overrides WALLET_DB, and bad paths are clear errors")
    func databasePath() async throws {
        let cli = try await CLI.withCatalog()
        let other = try CLI()
        let output = try await cli.run("products", "list", "--json", "--db", other.databasePath)
        #expect(try output.json()["products"] as? [Any] != nil)
        #expect((try output.json()["products"] as? [Any])?.isEmpty == true)
        let missing = try await cli.run("balance", "--player", "p1", "--json", "--db", "/nonexistent-dir/w.sqlite")
        #expect(missing.status == 1 && missing.errorCode() == "storage_error")
        let empty = try await cli.run("balance", "--player", "p1", "--json", "--db", "")
        #expect(empty.status == 64)
        let junk = try CLI()
        try Data("not a database, not at all".utf8).write(to: URL(fileURLWithPath: junk.databasePath))
        #expect(try await junk.run("verify", "--json").errorCode() == "unsupported_database")
    }

    @Test("every command has help text")
    func help() async throws {
        let cli = try CLI()
        for command in [
            ["products", "set"], ["products", "list"], ["grant"], ["spend"], ["adjust"], ["refund"], ["balance"], ["history"], ["verify"],
            ["statement"], ["export"], ["redeem-apple"], ["serve"], ["keys", "create"], ["keys", "list"], ["keys", "revoke"], ["bench"], ["copy"],
            ["entitlement", "grant"], ["entitlement", "revoke"], ["entitlement", "extend"], ["entitlement", "list"], ["entitlement", "show"],
        ] {
            let output = await CLI.finish(try cli.start(command + ["--help"]))
            #expect(output.status == 0 && output.stdout.contains("USAGE: wallet \(command.joined(separator: " "))"), "\(command)")
            let database = command == ["copy"] ? "--from <path|url>" : "--db <path|url>"
            #expect(output.stdout.contains(database) && output.stdout.contains("--json"), "\(command)")
        }
    }

    @Test("16 concurrent processes with one key debit once; with 16 keys, all apply")
    func concurrentProcesses() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 10)
        let sameKey = await CLI.finish(try (0..<16).map { _ in try cli.start(["spend", "--player", "p1", "--amount", "2", "--key", "shared", "--json"]) })
        #expect(sameKey.allSatisfy { $0.status == 0 }, "\(sameKey.map(\.stderr))")
        let replayed = try sameKey.map { try $0.json()["replayed"] as? Bool }
        #expect(replayed.filter { $0 == false }.count == 1)
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 48])
        let distinct = await CLI.finish(try (0..<16).map { try cli.start(["spend", "--player", "p1", "--amount", "2", "--key", "key-\($0)", "--json"]) })
        #expect(distinct.allSatisfy { $0.status == 0 }, "\(distinct.map(\.stderr))")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 16])
        #expect(try await cli.json("verify")["transactions"] as? Int == 18)
    }
}

@Suite("Argument parsing", .throttled)
struct ParsingTests {
    @Test("options parse into the commands' fields")
    func parse() throws {
        let spend = try #require(try WalletCommand.parseAsRoot(["spend", "--player", "p1", "--amount", "3", "--key", "k", "--currency", "gems", "--db", "/tmp/x.sqlite"]) as? SpendCommand)
        #expect(spend.player == "p1" && spend.amount == 3 && spend.key == "k" && spend.currency == "gems")
        #expect(spend.options.resolvedDatabasePath == "/tmp/x.sqlite" && spend.options.durability == .full && !spend.options.json)
        let adjust = try #require(try WalletCommand.parseAsRoot(["adjust", "--player", "p1", "--amount=-2", "--reason-code", "r", "--note", "n", "--actor", "a", "--key", "k", "--durability", "normal"]) as? AdjustCommand)
        #expect(adjust.amount == -2 && adjust.options.durability == .normal && adjust.ticket == nil && !adjust.allowNegative)
        let refund = try #require(try WalletCommand.parseAsRoot(["refund", "--store", "apple", "--store-transaction-id", "T", "--policy", "floor", "--percentage", "40"]) as? RefundCommand)
        #expect(refund.policy == .floor && refund.percentage == 40)
        let set = try #require(try WalletCommand.parseAsRoot(["products", "set", "p", "--credits", "5"]) as? ProductsCommand.Set)
        #expect(set.currency == "credits" && !set.inactive && set.store == nil)
        let history = try #require(try WalletCommand.parseAsRoot(["history", "--player", "p1"]) as? HistoryCommand)
        #expect(history.limit == Limits.pageSizeDefault && history.after == nil)
        #expect(throws: (any Error).self) { try WalletCommand.parseAsRoot(["spend", "--player", "p1", "--amount", "99999999999999999999", "--key", "k"]) }
        #expect(throws: (any Error).self) { try WalletCommand.parseAsRoot(["grant", "--player", "p1"]) }
        #expect(throws: (any Error).self) { try WalletCommand.parseAsRoot(["balance", "--player", "p1", "--durability", "fast"]) }
    }
}

@Suite("Auditors' CLI", .throttled)
struct AuditCLITests {
    @Test("export to a file, verify it offline against the head, catch an edit, and a statement")
    func exportAndVerify() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 2)
        _ = try await cli.json("adjust", "--player", "p1", "--amount=-1", "--reason-code", "chargeback", "--note", "=SUM(A1), \"x\"\nsecond line", "--actor", "alice", "--key", "a1")
        _ = try await cli.json("spend", "--player", "p1", "--amount", "4", "--key", "k1")
        let head = try #require(try await cli.json("verify")["head_hash"] as? String)
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        for format in ["csv", "jsonl"] {
            let file = directory.appendingPathComponent("ledger.\(format)").path
            let exported = try await cli.json("export", "--format", format, "--output", file)
            #expect(exported["transactions"] as? Int == 3 && exported["postings"] as? Int == 6 && exported["last_hash"] as? String == head)
            let report = try await cli.json("verify", "--export", file, "--head", head)
            #expect(report["ok"] as? Bool == true && report["transactions"] as? Int == 3 && report["format"] as? String == format)
            let human = try await cli.run("verify", "--export", file, "--head", head)
            #expect(human.stdout.hasPrefix("OK: 3 transactions after seq 0, ending at hash \(head)"))
            var text = try String(contentsOfFile: file, encoding: .utf8)
            text = text.replacingOccurrences(of: "second line", with: "second lime")
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let tampered = try await cli.run("verify", "--export", file, "--json")
            #expect(tampered.status == 1)
            #expect(try tampered.json()["first_bad_seq"] as? Int == 2)
        }
        let stdout = try await cli.run("export", "--format", "csv")
        #expect(stdout.status == 0 && stdout.stdout.hasPrefix("type,seq,transaction_id,") && stdout.stderr.isEmpty)
        #expect(stdout.stdout.contains(#""'=SUM(A1), ""x"""#))
        let statement = try await cli.json("statement", "--player", "p1")
        let credits = try #require((statement["currencies"] as? [[String: Any]])?.first)
        #expect(credits["opening_balance"] as? Int == 0 && credits["closing_balance"] as? Int == 5)
        #expect(try await cli.run("statement", "--player", "p1").stdout.contains("credits: closing balance 5"))
    }

    @Test("bad audit arguments are clear errors")
    func badArguments() async throws {
        let cli = try await CLI.withCatalog()
        #expect(try await cli.run("export", "--from", "last week", "--json").errorCode() == "invalid_request")
        #expect(try await cli.run("export", "--format", "xml", "--json").status == 64)
        #expect(try await cli.run("verify", "--head", String(repeating: "a", count: 64), "--json").status == 64)
        #expect(try await cli.run("verify", "--export", "/nonexistent.csv", "--json").errorCode() == "not_found")
        #expect(try await cli.run("verify", "--export", cli.databasePath, "--head", "xyz").status == 64)
        #expect(try await cli.run("export", "--output", "/nonexistent-dir/x.csv", "--json").errorCode() == "storage_error")
        // A directory is refused and left alone; an existing file is replaced whole.
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let folder = directory.appendingPathComponent("exports")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "keep".write(to: folder.appendingPathComponent("inside.txt"), atomically: true, encoding: .utf8)
        #expect(try await cli.run("export", "--output", folder.path, "--json").errorCode() == "invalid_request")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("inside.txt").path))
        let file = directory.appendingPathComponent("old.csv").path
        try "an older, longer file that must not survive in any part".write(toFile: file, atomically: true, encoding: .utf8)
        _ = try await cli.json("export", "--output", file)
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("type,seq,"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains(".partial-") })
    }
}

@Suite("wallet bench", .throttled)
struct BenchCLITests {
    @Test("bench runs both paths on fresh databases and reports rates, latencies and verify")
    func bench() async throws {
        let cli = try CLI()
        let report = try await cli.json("bench", "--operations", "1000", "--concurrency", "8", "--players", "20")
        for key in ["grouped_ops_per_second", "single_ops_per_second", "ratio", "p50_ms", "p99_ms", "max_ms", "average_batch"] {
            #expect((report[key] as? Double ?? 0) > 0, "\(key)")
        }
        #expect(report["verify_ok"] as? Bool == true && report["operations"] as? Int == 1000)
        // Where the grouped writer's time went: running the operations (tens of microseconds
        // each, never rounded to 0), committing and between batches (present; never negative).
        let writerTime = report["writer_time"] as? [String: Any] ?? [:]
        #expect((writerTime["running_us_per_operation"] as? Double ?? 0) > 0, "\(writerTime)")
        for key in ["commit_ms_per_batch", "between_ms_per_batch"] {
            #expect((writerTime[key] as? Double ?? -1) >= 0, "\(key): \(writerTime)")
        }
        #expect(try await cli.run("bench", "--operations", "10", "--json").status == 64)
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().path
        _ = try await cli.json("bench", "--operations", "1000", "--no-single", "--db", directory)
        #expect(FileManager.default.fileExists(atPath: directory + "/grouped.sqlite"))
        #expect(try await cli.run("bench", "--operations", "1000", "--db", directory, "--json").status == 64, "a used directory is refused")
    }

    @Test("the spends mix runs only spends, every one covered even when one player takes them all")
    func spendsMix() async throws {
        let cli = try CLI()
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent("spends").path
        // One player takes all 1,000 spends of 3 credits: the seed must cover 3,000 credits, or a
        // refused spend fails the run.
        let report = try await cli.json("bench", "--operations", "1000", "--concurrency", "8", "--players", "1", "--mix", "spends", "--no-single", "--db", directory)
        #expect(report["mix"] as? String == "spends" && report["verify_ok"] as? Bool == true)
        // 8 seed grants of 100 × 5 credits (3 × (1,000 spends + six standard deviations + 1) = 3,573 credits, rounded up), then the 1,000 spends.
        let ledger = await CLI.finish(try cli.start(["verify", "--json"], environment: ["WALLET_DB": directory + "/grouped.sqlite"]))
        #expect(try ledger.json()["transactions"] as? Int == 1_008)
        let balance = try await cli.json("balance", "--player", "player-0", "--db", directory + "/grouped.sqlite")
        #expect((balance["balances"] as? [String: Any])?["credits"] as? Int == 8 * 500 - 1_000 * 3)
        #expect(try await cli.run("bench", "--mix", "mostly-spends", "--json").status == 64)
    }

    /// `wallet bench` of 1,000 spends by 8 callers for 2 players with `lotOptions` (and
    /// `--covering-lot` unless told not), into a directory named `name` beside the CLI's
    /// database: its report, and its grouped database's path.
    private static func spendsWithLots(
        _ cli: CLI, into name: String, _ lotOptions: [String], coveringLot: Bool = true
    ) async throws -> (report: [String: Any], database: String) {
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent().appendingPathComponent(name).path
        let report = try await cli.json(
            ["bench", "--operations", "1000", "--concurrency", "8", "--players", "2", "--mix", "spends", "--no-single", "--db", directory]
                + (coveringLot ? ["--covering-lot"] : []) + lotOptions)
        return (report, directory + "/grouped.sqlite")
    }

    @Test("--covering-lot: every spend draws the one lot that expires first, and the wallet's other lots stay whole")
    func coveringLot() async throws {
        let cli = try CLI()
        let (report, database) = try await Self.spendsWithLots(cli, into: "covering", ["--lots-per-wallet", "5"])
        #expect(report["covering_lot"] as? Bool == true && report["verify_ok"] as? Bool == true)
        for player in ["player-0", "player-1"] {
            // Left open: the four one-credit lots and the seed's paid lots, all untouched; the
            // covering lot held exactly what the player's spends took, so it is gone.
            let lots = try #require(try await cli.json(["lots", "--player", player, "--db", database])["lots"] as? [[String: Any]])
            let bonuses = lots.filter { $0["category"] as? String == "bonus" }
            let paid = lots.filter { $0["category"] as? String == "paid" }
            #expect(bonuses.count == 4 && bonuses.allSatisfy { $0["amount"] as? Int == 1 && $0["remaining"] as? Int == 1 }, "\(bonuses)")
            #expect(!paid.isEmpty && paid.allSatisfy { $0["remaining"] as? Int == 500 && $0["amount"] as? Int == 500 }, "\(paid)")
            #expect(lots.count == bonuses.count + paid.count)
            let balance = try await cli.json("balance", "--player", player, "--db", database)
            #expect((balance["balances"] as? [String: Any])?["credits"] as? Int == 4 + 500 * paid.count)
        }
        #expect(try await cli.run("bench", "--covering-lot", "--json").status == 64, "--covering-lot needs --lots-per-wallet")
    }

    @Test("--ledger-lots: the rest of the lots go to idle wallets, so that the ledger holds as many whatever --lots-per-wallet; too few or too many are refused")
    func ledgerLots() async throws {
        let cli = try CLI()
        let (report, database) = try await Self.spendsWithLots(cli, into: "ledger-lots", ["--lots-per-wallet", "2", "--ledger-lots", "11"])
        #expect(report["ledger_lots"] as? Int == 11 && report["verify_ok"] as? Bool == true)
        // 11 in all: the players' 2 each (one of them the covering lot, spent), the other 7
        // split between the two idle wallets, one credit each, untouched.
        for (player, count) in [("idle-0", 4), ("idle-1", 3)] {
            let lots = try #require(try await cli.json(["lots", "--player", player, "--db", database])["lots"] as? [[String: Any]])
            #expect(lots.count == count && lots.allSatisfy { $0["category"] as? String == "bonus" && $0["remaining"] as? Int == 1 }, "\(player): \(lots)")
            let balance = try await cli.json("balance", "--player", player, "--db", database)
            #expect((balance["balances"] as? [String: Any])?["credits"] as? Int == count)
        }
        #expect((try await cli.json(["lots", "--player", "idle-2", "--db", database])["lots"] as? [[String: Any]])?.isEmpty == true, "a third idle wallet for two players")
        let ledger = try await cli.run("verify", "--db", database, "--json")
        // The 8 seed grants, the 4 players' lots and 7 idle ones, each with its bonus, and the 1,000 spends.
        #expect(ledger.status == 0, "\(ledger.stderr)")
        #expect(try ledger.json()["transactions"] as? Int == 1_019, "\(ledger.stdout)")
        // An idle wallet's history: its four bonuses, and nothing of the timed run.
        let bonuses = try await cli.json("history", "--player", "idle-0", "--db", database)
        let idleHistory = try #require(bonuses["transactions"] as? [[String: Any]])
        #expect(idleHistory.count == 4 && idleHistory.allSatisfy { $0["kind"] as? String == "bonus" && $0["amount"] as? Int == 1 }, "\(idleHistory)")

        let tooFew = try await cli.run("bench", "--players", "2", "--lots-per-wallet", "2", "--ledger-lots", "3", "--json")
        #expect(tooFew.status == 64 && tooFew.stderr.contains("fewer than the 4 lots"), "\(tooFew.stderr)")
        // 200,001 idle lots for two idle wallets: idle-0 would get 100,001, one over the cap (it
        // rounds up, so the odd lot counts).
        let tooMany = try await cli.run("bench", "--players", "2", "--ledger-lots", "200001", "--json")
        #expect(tooMany.status == 64 && tooMany.stderr.contains("would give idle-0 100001 lots, more than the 100000"), "\(tooMany.stderr)")
        // Without --lots-per-wallet every lot is an idle one, and the players keep only their grants' lots.
        let (idleOnly, idleOnlyDatabase) = try await Self.spendsWithLots(cli, into: "idle-only", ["--ledger-lots", "3"], coveringLot: false)
        #expect(idleOnly["ledger_lots"] as? Int == 3 && idleOnly["verify_ok"] as? Bool == true)
        for (player, bonusLots) in [("idle-0", 2), ("idle-1", 1), ("player-0", 0), ("player-1", 0)] {
            let lots = try #require(try await cli.json(["lots", "--player", player, "--db", idleOnlyDatabase])["lots"] as? [[String: Any]])
            #expect(lots.filter { $0["category"] as? String == "bonus" }.count == bonusLots, "\(player): \(lots)")
        }
        for outOfRange in ["--ledger-lots=10000001", "--ledger-lots=-1"] {
            let refused = try await cli.run("bench", outOfRange, "--json")
            #expect(refused.status == 64 && refused.stderr.contains("must be from 0 to 10000000"), "\(outOfRange): \(refused.stderr)")
        }
    }
}

@Suite("wallet redeem-apple", .throttled)
struct RedeemAppleCLITests {
    @Test("verifies and credits once from a file or stdin, with the root and bundle from flags or environment")
    func redeem() async throws {
        let authority = try AppleTestAuthority()
        let cli = try CLI()
        _ = try await cli.json("products", "set", "com.example.game.consume5credits", "--credits", "5")
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let root = directory.appendingPathComponent("root.pem").path
        try authority.rootPEM.write(toFile: root, atomically: true, encoding: .utf8)
        let jwsFile = directory.appendingPathComponent("transaction.jws").path
        try (try authority.transaction("2000000000000077", quantity: 2) + "\n").write(toFile: jwsFile, atomically: true, encoding: .utf8)
        let flags = ["--apple-bundle-id", "com.example.game", "--apple-root-certs", root]
        let first = try await cli.json(["redeem-apple", "--player", "p1", "--jws", jwsFile] + flags)
        #expect(first["balance"] as? Int == 10 && first["replayed"] as? Bool == false)
        let environment = ["WALLET_APPLE_BUNDLE_ID": "com.example.game", "WALLET_APPLE_ROOT_CERTS": root]
        let again = await CLI.finish(try cli.start(["redeem-apple", "--player", "p1", "--jws", jwsFile, "--json"], environment: environment))
        #expect(try again.status == 0 && (again.json()["replayed"] as? Bool) == true)
        let otherPlayer = await CLI.finish(try cli.start(["redeem-apple", "--player", "p2", "--jws", jwsFile, "--json"] + flags))
        #expect(otherPlayer.errorCode() == "idempotency_key_reused")
        let untrusted = await CLI.finish(try cli.start(["redeem-apple", "--player", "p1", "--jws", jwsFile, "--json", "--apple-bundle-id", "com.example.game"]))
        #expect(untrusted.status == 1 && untrusted.errorCode() == "purchase_invalid")
        let unconfigured = await CLI.finish(try cli.start(["redeem-apple", "--player", "p1", "--jws", jwsFile, "--json"]))
        #expect(unconfigured.errorCode() == "not_configured")
        let badEnvironment = await CLI.finish(try cli.start(["redeem-apple", "--player", "p1", "--jws", jwsFile, "--json", "--apple-environments", "staging"] + flags))
        #expect(badEnvironment.status == 64)
        let badPolicy = await CLI.finish(try cli.start(["redeem-apple", "--player", "p1", "--jws", jwsFile, "--json"] + flags, environment: ["WALLET_APPLE_REFUND_POLICY": "forgive"]))
        #expect(badPolicy.status == 64 && badPolicy.stderr.contains("WALLET_APPLE_REFUND_POLICY"))
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 10])
    }
}

extension CLI {
    func json(_ arguments: [String]) async throws -> [String: Any] {
        let output = await Self.finish(try start(arguments + ["--json"]))
        #expect(output.status == 0, "wallet \(arguments.joined(separator: " ")) failed: \(output.stderr)")
        return try output.json()
    }
}

@Suite("Bonuses, lots and expiry from the CLI", .throttled)
struct LotsCLITests {
    @Test("wallet bonus gives an expiring lot and wallet lots lists it first; wallet expire books nothing before its time (the booking itself is tested with a controlled clock in the core suites)")
    func bonusLotsExpire() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1")
        let soon = Timestamp.format(Date().addingTimeInterval(3_600))
        let bonus = try await cli.json(["bonus", "--player", "p1", "--amount", "3", "--expires-at", soon, "--reason-code", "event", "--key", "b1"])
        #expect(bonus["balance"] as? Int == 8)
        let lots = try #require(try await cli.json(["lots", "--player", "p1"])["lots"] as? [[String: Any]])
        #expect(lots.map { $0["category"] as? String } == ["bonus", "paid"])
        let text = try await cli.run("lots", "--player", "p1")
        #expect(text.stdout.contains("credits bonus") && text.stdout.contains("expires \(soon)"), "\(text.stdout)")
        #expect(try await cli.json(["expire"])["expired"] as? Int == 0)
        let balance = try await cli.json(["balance", "--player", "p1"])
        #expect(balance["balances"] as? [String: Int] == ["credits": 8] && balance["expiring_within_7_days"] as? [String: Int] == ["credits": 3])
        #expect(try await cli.json(["verify"])["ok"] as? Bool == true)
        let past = try await cli.run("bonus", "--player", "p1", "--amount", "1", "--expires-at", "2020-01-01T00:00:00Z", "--reason-code", "event", "--key", "b2", "--json")
        #expect(past.status == 1 && past.errorCode() == "invalid_request")
    }

    @Test("wallet hold create, capture and list: once, with the rest given back")
    func holds() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "T1", quantity: 2)
        let created = try await cli.json(["hold", "create", "--player", "p1", "--amount", "6", "--expires-in", "600", "--key", "h1"])
        let id = try #require((created["hold"] as? [String: Any])?["id"] as? String)
        #expect(created["balance"] as? Int == 4)
        let captured = try await cli.json(["hold", "capture", id, "--amount", "2", "--key", "c1"])
        #expect((captured["hold"] as? [String: Any])?["status"] as? String == "captured" && captured["balance"] as? Int == 8)
        let again = try await cli.run("hold", "release", id, "--key", "r1", "--json")
        #expect(again.status == 1 && again.errorCode() == "hold_captured")
        let text = try await cli.run("hold", "list", "--player", "p1")
        #expect(text.stdout.contains("\(id) captured 6 credits, 2 captured"), "\(text.stdout)")
        #expect(try await cli.json(["verify"])["ok"] as? Bool == true)
        // The new kinds go through exports and their offline check like every other.
        _ = try await cli.json(["bonus", "--player", "p1", "--amount", "3", "--reason-code", "event", "--key", "b1"])
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        for format in ["csv", "jsonl"] {
            let file = directory.appendingPathComponent("export.\(format)").path
            #expect(try await cli.run("export", "--format", format, "--output", file).status == 0)
            let checked = try await cli.run("verify", "--export", file, "--json")
            #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("capture"))
        }
    }
}

