import Foundation
import Testing
import WalletCore
import WalletTestSupport

@Suite("Entitlements in the CLI", .throttled)
struct EntitlementCLITests {
    @Test("products set takes a type, an entitlement and a duration; products list shows them; bad ones are refused")
    func catalog() async throws {
        let cli = try CLI()
        let pass = try await cli.json("products", "set", "com.example.vip30", "--credits", "0", "--type", "non_renewing", "--entitlement", "vip", "--duration", "P30D")
        #expect(pass["type"] as? String == "non_renewing" && pass["entitlement"] as? String == "vip" && pass["duration"] as? String == "P30D" && pass["credits"] as? Int == 0)
        let levels = try await cli.run("products", "set", "com.example.levels2", "--credits", "5", "--type", "non_consumable", "--entitlement", "level_pack_2")
        #expect(levels.status == 0 && levels.stdout.contains("non_consumable level_pack_2"), "\(levels.stdout)")
        let list = try await cli.json("products", "list")["products"] as? [[String: Any]]
        #expect(list?.map { $0["type"] as? String } == ["non_consumable", "non_renewing"])
        let human = try await cli.run("products", "list")
        #expect(human.stdout == "com.example.levels2\t5 credits\tany store\tactive\tnon_consumable level_pack_2\ncom.example.vip30\t0 credits\tany store\tactive\tnon_renewing vip P30D\n")
        for (arguments, detail) in [
            (["--credits", "0", "--type", "non_renewing", "--entitlement", "vip", "--duration", "30 days"], "duration '30 days'"),
            (["--credits", "0", "--type", "non_renewing", "--entitlement", "vip"], "needs an entitlement and a duration"),
            (["--credits", "0", "--type", "non_consumable", "--entitlement", "VIP"], "entitlement 'VIP'"),
            (["--credits", "5", "--entitlement", "vip"], "a consumable grants credits only"),
            (["--credits", "0"], "credits must be between 1"),
        ] {
            let bad = await CLI.finish(try cli.start(["products", "set", "com.example.bad"] + arguments + ["--json"]))
            #expect(bad.status == 1 && bad.errorCode() == "invalid_request" && bad.stderr.contains(detail) && bad.stdout.isEmpty, "\(arguments): \(bad.stderr)")
        }
        let badType = try await cli.run("products", "set", "com.example.bad", "--credits", "0", "--type", "subscription", "--json")
        #expect(badType.status == 64 && badType.errorCode() == "invalid_request")
        #expect((try await cli.json("products", "list")["products"] as? [Any])?.count == 2)
    }

    @Test("entitlement grant, extend, revoke, list and show: each change once under its key, with the state it leaves")
    func changes() async throws {
        let cli = try CLI()
        let before = Timestamp.format(Date())
        let grant = ["entitlement", "grant", "--player", "p1", "--entitlement", "vip", "--duration", "P7D", "--reason-code", "goodwill", "--note", "outage", "--ticket", "SUP-1", "--key", "SUP-1-1", "--actor", "alice"]
        let granted = try await cli.json(grant)
        let transaction = try #require(granted["transaction"] as? [String: Any])
        #expect(transaction["kind"] as? String == "entitlement" && transaction["actor"] as? String == "alice" && transaction["ticket"] as? String == "SUP-1")
        let vip = try #require(granted["entitlement"] as? [String: Any])
        let expiresAt = try #require(vip["expires_at"] as? String)
        #expect(vip["active"] as? Bool == true && vip["forever"] as? Bool == false && granted["replayed"] as? Bool == false)
        #expect(try expiresAt >= #require(PassDuration("P7D").end(from: before)))
        let replay = try await cli.json(grant)
        #expect(replay["replayed"] as? Bool == true && (replay["transaction"] as? [String: Any])?["seq"] as? Int == transaction["seq"] as? Int)
        let reused = await CLI.finish(try cli.start(grant.map { $0 == "P7D" ? "P8D" : $0 } + ["--json"]))
        #expect(reused.status == 1 && reused.errorCode() == "idempotency_key_reused" && reused.stdout.isEmpty)

        let extended = try await cli.json(["entitlement", "extend", "--player", "p1", "--entitlement", "vip", "--days", "3", "--reason-code", "goodwill", "--note", "more", "--key", "SUP-1-2"])
        let extendedTo = (extended["entitlement"] as? [String: Any])?["expires_at"] as? String
        #expect(try extendedTo == PassDuration("P3D").end(from: expiresAt))
        #expect((extended["transaction"] as? [String: Any])?["actor"] as? String == "cli")
        let shown = try await cli.json(["entitlement", "show", "--player", "p1", "--entitlement", "vip"])
        #expect(shown["active"] as? Bool == true && shown["expires_at"] as? String == extendedTo && shown["items"] == nil)
        let human = try await cli.run("entitlement", "show", "--player", "p1", "--entitlement", "vip")
        #expect(human.status == 0 && human.stdout == "vip of p1: active until \(extendedTo ?? "")\n")

        let revoke = try await cli.run(
            "entitlement", "revoke", "--player", "p1", "--entitlement", "vip", "--reason-code", "chargeback", "--note", "bank", "--key", "SUP-1-3", "--actor", "alice")
        #expect(revoke.status == 0 && revoke.stdout.hasPrefix("Revoked vip of p1 (seq 3, ") && revoke.stdout.contains("vip of p1: not active"), "\(revoke.stdout)")
        #expect(try await cli.json(["entitlement", "show", "--player", "p1", "--entitlement", "vip"])["active"] as? Bool == false)
        let forever = try await cli.json(["entitlement", "grant", "--player", "p1", "--entitlement", "level_pack_2", "--reason-code", "goodwill", "--note", "n", "--key", "SUP-1-4"])
        #expect((forever["entitlement"] as? [String: Any])?["forever"] as? Bool == true)

        let list = try await cli.json(["entitlement", "list", "--player", "p1"])
        let entitlements = try #require(list["entitlements"] as? [[String: Any]])
        #expect(list["player_id"] as? String == "p1" && entitlements.map { $0["name"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == ["level_pack_2", "vip"])
        #expect((entitlements.first { $0["name"] as? String == "vip" }?["items"] as? [[String: Any]])?.map { $0["change"] as? String } == ["grant", "extend", "revoke"])
        let listed = try await cli.run("entitlement", "list", "--player", "p1")
        #expect(listed.stdout.contains("level_pack_2: active for ever") && listed.stdout.contains("  seq 1 grant from ") && listed.stdout.contains(" for P7D"), "\(listed.stdout)")
        let none = try await cli.run("entitlement", "list", "--player", "p2")
        #expect(none.stdout == "p2 has no entitlements.\n")

        let report = try await cli.json(["verify"])
        #expect(report["ok"] as? Bool == true && report["transactions"] as? Int == 4)
    }

    @Test("bad names, periods, days and missing fields are refused with the API's code, and write nothing")
    func refusals() async throws {
        let cli = try CLI()
        let common = ["--player", "p1", "--reason-code", "goodwill", "--note", "n", "--key", "k"]
        for (arguments, status, detail) in [
            (["entitlement", "grant", "--entitlement", "VIP"] + common, Int32(1), "entitlement 'VIP'"),
            (["entitlement", "grant", "--entitlement", "vip", "--duration", "P0D"] + common, 1, "duration 'P0D'"),
            (["entitlement", "extend", "--entitlement", "vip", "--days", "0"] + common, 1, "days must be between 1 and 3660"),
            (["entitlement", "extend", "--entitlement", "vip", "--days", "3661"] + common, 1, "days must be between 1 and 3660"),
            (["entitlement", "extend", "--entitlement", "vip"] + common, 64, "--days"),
            (["entitlement", "revoke", "--entitlement", "vip", "--days", "3"] + common, 64, "--days"),
            (["entitlement", "grant", "--entitlement", "vip", "--player", "p1", "--note", "n", "--key", "k"], 64, "--reason-code"),
            (["entitlement", "show", "--player", "p1", "--entitlement", "v\u{131}p"], 1, "entitlement 'v\u{131}p'"),
            (["entitlement", "list", "--player", "p 1"], 1, "player id may hold only"),
            (["entitlement", "grant", "--entitlement", "vip", "--player", "p1", "--reason-code", "goodwill", "--note", "n", "--key", String(repeating: "k", count: 256)], 1, "idempotency key"),
        ] {
            let output = await CLI.finish(try cli.start(arguments + ["--json"]))
            #expect(output.status == status && output.errorCode() == "invalid_request" && output.stderr.contains(detail) && output.stdout.isEmpty, "\(arguments): \(output.stderr)")
        }
        let human = try await cli.run("entitlement", "extend", "--entitlement", "vip", "--days", "0", "--player", "p1", "--reason-code", "goodwill", "--note", "n", "--key", "k")
        #expect(human.status == 1 && human.stderr == "error: days must be between 1 and 3660 [invalid_request]\n")
        #expect(try await cli.json(["verify"])["transactions"] as? Int == 0)
    }
}
