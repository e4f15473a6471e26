import ArgumentParser
import Foundation
import WalletCore

struct BonusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bonus",
        abstract: "Give a player bonus credits (daily login, an event, compensation), optionally expiring.",
        discussion: """
            A bonus is a lot of its own: debits spend expiring lots first (soonest expiry first), then other free \
            credits, purchases last. Purchased credits never expire; only bonuses may. An expired bonus is booked as \
            an expiry transaction to @expired (wallet expire, or wallet serve in the background).

            Example:
              wallet bonus --player p1 --amount 10 --reason-code daily_login \\
                --expires-at 2026-12-31T23:59:59Z --key daily-p1-2026-11-24
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: "Credits to give.")
    var amount: Int64

    @Option(help: ArgumentHelp("When what is left of it expires, RFC 3339, in the future (default: never).", valueName: "time"))
    var expiresAt: String?

    @Option(help: "Why, as a code: daily_login, event, compensation, ...")
    var reasonCode: String

    @Option(help: "A note for the history.")
    var note: String?

    @Option(help: "The campaign it belongs to.")
    var campaign: String?

    @Option(help: "Idempotency key for this bonus.")
    var key: String

    @Option(help: "Who gives it (your name or staff id).")
    var actor: String = cliActor

    @Option(help: "Currency to give.")
    var currency: String = defaultCurrency

    func run() async throws {
        let playerID = try PlayerID(player)
        let result = try await options.withStore { ledger in
            try await ledger.bonus(
                BonusRequest(
                    playerID: playerID, amount: amount, currency: currency, expiresAt: expiresAt, reasonCode: reasonCode, note: note, campaign: campaign,
                    idempotencyKey: key, actor: actor))
        }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Gave \(player) a bonus of \(Output.signed(amount, currency)) (\(reasonCode))\(expiresAt.map { ", expiring at \($0)" } ?? "")")
        }
    }
}

struct LotsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lots",
        abstract: "List a player's open lots: what remains of each credit, and when it expires.",
        discussion: "Per currency, in the order debits spend them; expired lots whose expiry is not booked yet come last.\n\nExample:\n  wallet lots --player p1"
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    func run() async throws {
        let playerID = try PlayerID(player)
        let lots = try await options.withStore { ledger in try await ledger.allLots(playerID: playerID) }
        try Output.result(PlayerLots(playerID: playerID, lots: lots), json: options.json) {
            guard !lots.isEmpty else { return "\(player) has no open lots." }
            return lots.map { lot in
                let expiry = lot.expired ? "expired at \(lot.expiresAt ?? "")" : lot.expiresAt.map { "expires \($0)" } ?? "never expires"
                return "\(lot.currency) \(lot.category.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(lot.remaining) of \(lot.amount), from seq \(lot.sourceSeq), \(expiry)"
            }.joined(separator: "\n")
        }
    }
}

struct ExpireCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expire",
        abstract: "Book every expired lot and release every expired hold now (for cron and tests).",
        discussion: """
            Each expired lot that still holds credits is booked as an expiry transaction to @expired; each open hold \
            past its expiry is released with status expired (its credits back to the wallet, or booked as expired \
            with their lot). wallet serve does the same in the background every minute, and a debit does it for its \
            own wallet first. Nothing is booked twice, however often this runs.

            Example:
              wallet expire --db ./wallet.sqlite --json
            """
    )

    @OptionGroup var options: GlobalOptions

    struct Booked: Encodable {
        var expired: Int
        var holdsReleased: Int

        enum CodingKeys: String, CodingKey {
            case expired
            case holdsReleased = "holds_released"
        }
    }

    func run() async throws {
        let booked = try await options.withStore { ledger in
            // Holds first: what they give back to an expired lot is booked with it.
            let holds = try await ExpirySweep.all { limit throws(WalletError) in try await ledger.expireHolds(limit: limit) }
            let lots = try await ExpirySweep.all { limit throws(WalletError) in try await ledger.expireLots(limit: limit) }
            return Booked(expired: lots, holdsReleased: holds)
        }
        try Output.result(booked, json: options.json) {
            "Booked \(booked.expired) expired lot\(booked.expired == 1 ? "" : "s"); released \(booked.holdsReleased) expired hold\(booked.holdsReleased == 1 ? "" : "s")."
        }
    }
}
