import ArgumentParser
import WalletCore

extension KeyRole: ExpressibleByArgument {}

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage API keys for the HTTP API.",
        discussion: "Example:\n  wallet keys create --role service --name \"game backend\"",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key and print its secret once.",
            // The roles' duties come from the table the server's routes are checked against.
            discussion: """
                What each role may do:
                \(RoleMatrix.rolesText)

                Only the SHA-256 of the secret is stored: keep the printed secret, it cannot be shown again.

                Example:
                  wallet keys create --role support --name "Alice (support)"
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "admin, service, support or auditor: see what each may do above.")
        var role: KeyRole

        @Option(help: "A label for people: which backend or person holds the key.")
        var name: String

        struct Created: Encodable {
            var id: String
            var role: KeyRole
            var name: String
            var key: String
        }

        func run() async throws {
            try await options.withStore { store in
                let created = try await store.createAPIKey(role: role, name: name)
                let output = Created(id: created.key.id, role: created.key.role, name: created.key.name, key: created.secret)
                do throws(WalletError) {
                    try Output.result(output, json: options.json) {
                        "Created \(role.rawValue) key \(created.key.id) (\(name)). Its secret, shown only now:\n\(created.secret)"
                    }
                } catch {
                    // Nobody saw the secret: a key nobody holds must not stay active.
                    _ = try? await store.revokeAPIKey(id: created.key.id)
                    throw WalletError.storage("\(error.detail); key \(created.key.id) was revoked, since its secret could not be shown")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List API keys (never their secrets).", discussion: "Example:\n  wallet keys list --json")

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let keys = try await options.withStore { ledger in try await ledger.apiKeys() }
            try Output.result(["keys": keys], json: options.json) {
                guard !keys.isEmpty else { return "No API keys. Create one with `wallet keys create`." }
                return keys.map { key in
                    "\(key.id)\t\(key.role.rawValue)\t\(key.name)\tcreated \(key.createdAt)\(key.revokedAt.map { "\trevoked \($0)" } ?? "")"
                }.joined(separator: "\n")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API key; it stops working at once.", discussion: "Example:\n  wallet keys revoke key_3f9a1c2b7d4e5f60")

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The key's id, as `wallet keys list` shows it.")
        var id: String

        func run() async throws {
            let key = try await options.withStore { ledger in try await ledger.revokeAPIKey(id: id) }
            try Output.result(key, json: options.json) { "Revoked \(key.id) (\(key.name)) at \(key.revokedAt ?? "?")." }
        }
    }
}
