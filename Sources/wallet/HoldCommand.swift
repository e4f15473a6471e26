import ArgumentParser
import Foundation
import WalletCore

extension Hold.Status: ExpressibleByArgument {}

struct HoldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold",
        abstract: "Reserve credits until an outcome is known, then capture or release them, once.",
        discussion: """
            A hold moves credits to @holds at once (drawn from lots in burn order; never below zero). A capture \
            spends all or part of it and gives the rest back to the lots it came from; a release gives all back. A \
            hold is resolved once: the same key replays the first answer, another gets hold_captured, hold_released \
            or hold_expired. A hold past its expiry cannot be captured; wallet serve releases it in the background.

            Example:
              wallet hold create --player p1 --amount 10 --expires-in 300 --key match-881
            """,
        subcommands: [Create.self, Capture.self, Release.self, List.self]
    )

    static func describe(_ result: HoldResult) -> String {
        let hold = result.hold
        let replay = result.replayed ? " Replayed: the key was already used for this request; nothing changed." : ""
        return "Hold \(hold.id) of \(hold.amount) \(hold.currency) for \(hold.playerID): \(hold.status.rawValue)"
            + (hold.captured.map { ", \($0) captured" } ?? "") + ", expires \(hold.expiresAt) (seq \(result.transaction.seq)). Balance: \(result.balance).\(replay)"
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reserve credits of a player's wallet.", discussion: "Example:\n  wallet hold create --player p1 --amount 10 --expires-in 300 \\\n    --key match-881 --reason \"match entry\"")

        @OptionGroup var options: GlobalOptions

        @Option(help: "The player's id.")
        var player: String

        @Option(help: "Credits to reserve.")
        var amount: Int64

        @Option(help: ArgumentHelp("When the hold expires, in seconds from now: 1 to 604800.", valueName: "seconds"))
        var expiresIn: Int64

        @Option(help: "Why (shown in the history).")
        var reason: String?

        @Option(help: "Idempotency key for this hold.")
        var key: String

        @Option(help: "Currency to reserve.")
        var currency: String = defaultCurrency

        func run() async throws {
            let playerID = try PlayerID(player)
            let result = try await options.withStore { ledger in
                try await ledger.createHold(
                    HoldRequest(playerID: playerID, amount: amount, currency: currency, expiresInSeconds: expiresIn, reason: reason, idempotencyKey: key, actor: cliActor))
            }
            try Output.result(result, json: options.json) { HoldCommand.describe(result) }
        }
    }

    struct Capture: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Capture a hold: all of it, or --amount of it; the rest goes back to the player.", discussion: "Example:\n  wallet hold capture HOLD_ID --amount 6 --key match-881-capture")

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The hold's id.")
        var id: String

        @Option(help: "Credits to capture (default: the whole hold).")
        var amount: Int64?

        @Option(help: "Idempotency key for this capture.")
        var key: String

        func run() async throws {
            let result = try await options.withStore { ledger in
                try await ledger.resolveHold(HoldResolution(holdID: id, action: .capture(amount: amount), idempotencyKey: key, actor: cliActor))
            }
            try Output.result(result, json: options.json) { HoldCommand.describe(result) }
        }
    }

    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Release a hold: everything goes back to the player.", discussion: "Example:\n  wallet hold release HOLD_ID --key match-881-release")

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The hold's id.")
        var id: String

        @Option(help: "Idempotency key for this release.")
        var key: String

        func run() async throws {
            let result = try await options.withStore { ledger in
                try await ledger.resolveHold(HoldResolution(holdID: id, action: .release, idempotencyKey: key, actor: cliActor))
            }
            try Output.result(result, json: options.json) { HoldCommand.describe(result) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A player's open holds, then the most recent resolved ones.", discussion: "Example:\n  wallet hold list --player p1 --json")

        @OptionGroup var options: GlobalOptions

        @Option(help: "The player's id.")
        var player: String

        func run() async throws {
            let playerID = try PlayerID(player)
            let holds = try await options.withStore { ledger in try await ledger.holds(playerID: playerID) }
            try Output.result(PlayerHolds(playerID: playerID, holds: holds), json: options.json) {
                guard !holds.isEmpty else { return "\(player) has no holds." }
                return holds.map { hold in
                    "\(hold.id) \(hold.status.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(hold.amount) \(hold.currency)"
                        + (hold.captured.map { ", \($0) captured" } ?? "") + ", expires \(hold.expiresAt)"
                }.joined(separator: "\n")
            }
        }
    }
}
