import Foundation
import Testing
import WalletCore
import WalletTestSupport

@Suite("Help texts", .throttled)
struct HelpTests {
    /// Every command's path (`["keys", "create"]`), from the parser's own description of the tree.
    static func commandPaths() async throws -> [[String]] {
        let output = try await CLI().run("--experimental-dump-help")
        let tree = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        func walk(_ command: [String: Any], _ path: [String]) -> [[String]] {
            let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter { ($0["commandName"] as? String) != "help" }
            return [path] + subcommands.flatMap { sub in walk(sub, path + [sub["commandName"] as? String ?? "?"]) }
        }
        return walk(try #require(tree["command"] as? [String: Any]), [])
    }

    @Test("every command's help shows an example")
    func examples() async throws {
        let paths = try await Self.commandPaths()
        #expect(paths.count > 30 && paths.contains(["keys", "create"]) && paths.contains(["webhooks", "replay"]))
        for path in paths {
            let help = await CLI.finish(try CLI().start(path + ["--help"]))
            #expect(help.status == 0, "\(path)")
            let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard let example = lines.firstIndex(where: { ["Example:", "Examples:"].contains($0) }) else {
                Issue.record("wallet \(path.joined(separator: " ")) --help shows no example")
                continue
            }
            // The commands under it are indented and unwrapped (a long one continues with " \\"),
            // so that they paste into a shell as they are.
            let commands = lines[(example + 1)...].prefix { !$0.isEmpty }
            #expect(!commands.isEmpty && commands.allSatisfy { $0.hasPrefix("  ") }, "wallet \(path.joined(separator: " ")): \(commands)")
            #expect(commands.contains { $0.contains("wallet ") }, "\(path)")
        }
    }

    @Test("serve's options come in titled groups, listening first")
    func serveGroups() async throws {
        let help = try await CLI().run("serve", "--help").stdout
        let titles = ["LISTENING:", "DATABASE:", "PLAYERS' TOKENS:", "APPLE:", "GOOGLE:", "BACKGROUND WORK:", "WEBHOOKS:", "OBSERVABILITY:"]
        let positions = titles.map { title in help.range(of: "\n\(title)\n")?.lowerBound }
        #expect(!positions.contains(nil), "missing a group: \(zip(titles, positions).filter { $0.1 == nil }.map(\.0))")
        let found = positions.compactMap { $0 }
        #expect(found == found.sorted(), "the groups are out of order")
        func group(of option: String) -> String? {
            guard let at = help.range(of: "\n  \(option) ")?.lowerBound else { return nil }
            return Array(zip(titles, positions)).last { $0.1.map { $0 < at } ?? false }?.0
        }
        #expect(group(of: "--host") == "LISTENING:" && group(of: "--port") == "LISTENING:")
        #expect(group(of: "--db") == "DATABASE:" && group(of: "--write-mode") == "DATABASE:")
        #expect(group(of: "--player-jwt-secret") == "PLAYERS' TOKENS:")
        #expect(group(of: "--apple-bundle-id") == "APPLE:" && group(of: "--google-push-audience") == "GOOGLE:")
        #expect(group(of: "--apple-catch-up-every") == "BACKGROUND WORK:" && group(of: "--webhook-allow-host") == "WEBHOOKS:")
        #expect(group(of: "--log-level") == "OBSERVABILITY:")
    }

    @Test("keys create describes the roles from the role matrix")
    func roles() async throws {
        let help = try await CLI().run("keys", "create", "--help").stdout
        let flattened = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for role in KeyRole.allCases {
            let line = "\(role.rawValue): \(RoleMatrix.duties(of: role).joined(separator: "; "))."
            #expect(flattened.contains(line), "\(role)")
        }
    }

    @Test("adjust takes a negative amount after a space or an equals sign", arguments: [["--amount", "-20"], ["--amount=-20"]])
    func negativeAmount(_ amount: [String]) async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "neg-1", quantity: 5)
        let base = ["adjust", "--player", "p1", "--reason-code", "chargeback", "--note", "reversed", "--actor", "alice", "--key", "adj-\(amount.count)", "--json"]
        let output = await CLI.finish(try cli.start(base + amount))
        #expect(output.status == 0, "\(output.stderr)")
        let transaction = try output.json()["transaction"] as? [String: Any]
        #expect(transaction?["amount"] as? Int == -20)
        #expect(try output.json()["balance"] as? Int == 5)
    }
}
