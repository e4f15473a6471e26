import ArgumentParser
import WalletCore

struct EntitlementCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entitlement",
        abstract: "See, grant, revoke or extend a player's entitlements (non-consumables and passes).",
        discussion: """
            Every change is a new ledger entry with a reason code, a note and who made it; nothing is edited. \
            A player's store purchases grant entitlements on their own; these commands are for support.

            Example:
              wallet entitlement list --player p1
            """,
        subcommands: [Grant.self, Revoke.self, Extend.self, List.self, Show.self]
    )

    /// What every support change takes besides its action.
    struct ChangeOptions: ParsableArguments {
        @Option(help: "The player's id.")
        var player: String

        @Option(help: ArgumentHelp("The entitlement, such as vip or level_pack_2.", valueName: "name"))
        var entitlement: String

        @Option(help: "Why, as a code: goodwill, bug_compensation, chargeback, ...")
        var reasonCode: String

        @Option(help: "What happened, for the next person who reads the history.")
        var note: String

        @Option(help: "Support ticket reference.")
        var ticket: String?

        @Option(help: "Idempotency key for this change, such as the ticket and a counter.")
        var key: String

        @Option(help: "Who makes the change (your name or staff id).")
        var actor: String = cliActor

        /// Applies `action` and prints the entry and the entitlement after it.
        func run(_ action: EntitlementChangeRequest.Action, options: GlobalOptions, summary: String) async throws {
            let request = EntitlementChangeRequest(
                playerID: try PlayerID(player), entitlement: try EntitlementName(entitlement), action: action, reasonCode: reasonCode, note: note,
                ticket: ticket, idempotencyKey: key, actor: actor)
            let result = try await options.withStore { ledger in try await ledger.changeEntitlement(request) }
            try Output.result(result, json: options.json) {
                let replay = result.replayed ? " Replayed: the key was already used for this request; nothing changed." : ""
                return "\(summary) (seq \(result.transaction.seq), \(result.transaction.id)). \(EntitlementCommand.describe(result.entitlement, of: player)).\(replay)"
            }
        }
    }

    struct Grant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Grant an entitlement for ever, or for a period added after what the player already has.",
            discussion: """
                Example:
                  wallet entitlement grant --player p1 --entitlement vip --duration P7D \\
                    --reason-code goodwill --note "outage on 3 May" --ticket SUP-12 \\
                    --key SUP-12-1 --actor alice
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var change: ChangeOptions

        @Option(help: ArgumentHelp("A period, ISO 8601: P7D, P1M, P1Y (at most ten years); leave out to grant for ever.", valueName: "period"))
        var duration: String?

        func run() async throws {
            let period = try duration.map { text throws(WalletError) in try PassDuration(text) }
            try await change.run(.grant(period), options: options, summary: "Granted \(change.entitlement) to \(change.player) \(period.map { "for \($0.text)" } ?? "for ever")")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an entitlement: everything the player holds of it now ends.",
            discussion: """
                A store purchase redeemed afterwards counts again, even one bought before; so does a later grant.

                Example:
                  wallet entitlement revoke --player p1 --entitlement vip \\
                    --reason-code chargeback --note "bank chargeback" --key SUP-13-1 \\
                    --actor alice
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var change: ChangeOptions

        func run() async throws {
            try await change.run(.revoke, options: options, summary: "Revoked \(change.entitlement) of \(change.player)")
        }
    }

    struct Extend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add days to a pass, after what the player already has.",
            discussion: """
                Example:
                  wallet entitlement extend --player p1 --entitlement vip --days 3 \\
                    --reason-code goodwill --note "server down 3 days" --key SUP-14-1 \\
                    --actor alice
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var change: ChangeOptions

        @Option(help: ArgumentHelp("Days to add, 1 to \(EntitlementChangeRequest.extendDaysMax).", valueName: "count"))
        var days: Int64

        func run() async throws {
            try await change.run(.extend(days: days), options: options, summary: "Extended \(change.entitlement) of \(change.player) by \(days) day\(days == 1 ? "" : "s")")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a player's entitlements, with the purchases and changes behind each.",
            discussion: "Example:\n  wallet entitlement list --player p1 --json"
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The player's id.")
        var player: String

        func run() async throws {
            let playerID = try PlayerID(player)
            let list = try await options.withStore { ledger in try await ledger.entitlements(playerID: playerID) }
            try Output.result(list, json: options.json) {
                guard !list.entitlements.isEmpty else { return "\(player) has no entitlements." }
                return list.entitlements.map { entitlement in
                    let items = (entitlement.items ?? []).map { item in
                        let source = item.storeTransactionID.map { " \(item.store ?? "") \($0)" } ?? ""
                        return "  seq \(item.seq) \(item.change.rawValue) from \(item.startsAt)\(item.period.map { " for \($0)" } ?? "")\(source)\(item.active ? "" : " (refunded)")"
                    }
                    return ([EntitlementCommand.describe(entitlement, of: nil)] + items).joined(separator: "\n")
                }.joined(separator: "\n")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show whether a player holds an entitlement now, and until when.",
            discussion: "Example:\n  wallet entitlement show --player p1 --entitlement vip"
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The player's id.")
        var player: String

        @Option(help: ArgumentHelp("The entitlement, such as vip.", valueName: "name"))
        var entitlement: String

        func run() async throws {
            let playerID = try PlayerID(player)
            let name = try EntitlementName(entitlement)
            let found = try await options.withStore { ledger in try await ledger.entitlement(playerID: playerID, name: name) }
            try Output.result(found, json: options.json) { EntitlementCommand.describe(found, of: player) }
        }
    }

    /// `vip of p1: active until 2026-12-01T00:00:00.000Z`, `vip: active for ever`, `vip: not active`.
    static func describe(_ entitlement: Entitlement, of player: String?) -> String {
        let state: String
        if entitlement.active {
            state = entitlement.forever ? "active for ever" : "active until \(entitlement.expiresAt ?? "")"
        } else {
            state = entitlement.expiresAt.map { "not active (ended \($0))" } ?? "not active"
        }
        return "\(entitlement.name)\(player.map { " of \($0)" } ?? ""): \(state)"
    }
}
