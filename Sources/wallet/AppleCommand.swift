import ArgumentParser
import Foundation
import WalletApple
import Logging
import WalletCore

/// What talks to Apple's App Store Server API.
struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Look up App Store orders, catch up on missed App Store notifications, and see the consumption answers owed to Apple.",
        discussion: """
            These commands call Apple's App Store Server API with the in-app purchase key given by \
            --apple-issuer-id, --apple-key-id and --apple-private-key (or their WALLET_APPLE_* variables), \
            for the app --apple-bundle-id names. Every transaction Apple returns is verified before it is \
            shown as Apple's or credited.

            The App Store Server API key comes from --apple-* options or WALLET_APPLE_BUNDLE_ID, \
            WALLET_APPLE_ISSUER_ID, WALLET_APPLE_KEY_ID and WALLET_APPLE_PRIVATE_KEY.

            Example:
              wallet apple lookup --order-id MK5TTTVWJH
            """,
        subcommands: [Lookup.self, CatchUp.self, Outbox.self]
    )

    struct Lookup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an order's transactions (from the order id on Apple's emailed receipt) and whether, and to whom, each was credited.",
            discussion: "With --credit-to, the transactions not yet credited are credited to that player, in one write.\n\nExample:\n  wallet apple lookup --order-id MK5TTTVWJH --credit-to p1"
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var apple: AppleOptions

        @Option(help: ArgumentHelp("The order id the player quotes from Apple's receipt email.", valueName: "id"))
        var orderID: String

        @Option(help: ArgumentHelp("Credit the order's uncredited transactions to this player.", valueName: "player"))
        var creditTo: String?

        func run() async throws {
            let creditTo = try creditTo.map { text throws(WalletError) in try PlayerID(text) }
            let result = try await options.withStore { ledger in
                try await AppleCommand.purchases(apple, ledger: ledger).lookUpOrder(orderID: orderID, creditTo: creditTo, actor: cliActor)
            }
            try Output.result(result, json: options.json) {
                guard !result.transactions.isEmpty else { return "Order \(result.orderID) holds no in-app purchase." }
                return (["Order \(result.orderID):"] + result.transactions.map { entry in
                    let id = entry.storeTransactionID ?? "(unverified)"
                    if let credit = entry.credit { return "  \(entry.status.padding(toLength: 12, withPad: " ", startingAt: 0)) \(RedeemAppleCommand.describe(credit))" }
                    if let refusal = entry.refusal { return "  refused      \(id): \(refusal.code): \(refusal.detail)" }
                    return "  not_credited \(id) \(entry.productID ?? "")"
                }).joined(separator: "\n")
            }
        }
    }

    struct CatchUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "catch-up",
            abstract: "Apply the App Store notifications of a period that the wallet may have missed (Get Notification History).",
            discussion: """
                Each notification goes through the same path as a live one, idempotent by its UUID: one \
                already applied is only counted, so overlapping periods are harmless. Apple keeps 180 days.

                Example:
                  wallet apple catch-up --since 2026-11-01T00:00:00Z --only-failures
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var apple: AppleOptions

        @Option(help: ArgumentHelp("The period's start, RFC 3339 (2026-11-01T00:00:00Z).", valueName: "time"))
        var since: String

        @Option(help: ArgumentHelp("The period's end, RFC 3339 (default now).", valueName: "time"))
        var until: String?

        @Flag(help: "Only the notifications Apple failed to deliver.")
        var onlyFailures = false

        func run() async throws {
            let start = try Timestamp.date(since, field: "--since")
            let end = try until.map { try Timestamp.date($0, field: "--until") } ?? Date()
            let report = try await options.withStore { ledger in
                try await AppleCommand.purchases(apple, ledger: ledger).catchUp(since: start, until: end, onlyFailures: onlyFailures)
            }
            try Output.result(report, json: options.json) {
                var lines = ["\(report.notifications) notifications: \(report.applied) applied now, \(report.alreadyApplied) applied before, \(report.refused.count) refused"]
                lines += report.outcomes.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }
                lines += report.refused.map { "  refused: \($0.code): \($0.detail)" }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the consumption answers owed to Apple (the outbox), newest first; --send sends those due now.",
            discussion: """
                With --apple-send-consumption, each CONSUMPTION_REQUEST queues its answer in the same write \
                that records it; `wallet serve` sends it until Apple accepts it (sent), refuses it as \
                malformed (failed), or 12 hours pass (expired). Pending answers wait for their next attempt.

                Example:
                  wallet apple outbox --status pending --limit 20
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var apple: AppleOptions

        @Option(help: "Only answers in this status: pending, sent, expired or failed.")
        var status: ConsumptionReply.Status?

        @Option(help: ArgumentHelp("How many to show, 1 to \(Limits.pageSizeMax).", valueName: "count"))
        var limit = 50

        @Flag(help: "Send the answers due now first (as wallet serve does every few seconds).")
        var send = false

        struct Listing: Encodable {
            var sent: ConsumptionReplySender.Pass?
            var replies: [ConsumptionReply]
        }

        func run() async throws {
            let listing = try await options.withStore { ledger in
                var pass: ConsumptionReplySender.Pass?
                if send {
                    guard let api = try apple.serverAPI() else {
                        throw WalletError.notConfigured("sending needs the App Store Server API key: --apple-issuer-id, --apple-key-id and --apple-private-key")
                    }
                    pass = try await ConsumptionReplySender(outbox: ledger, api: api, logger: Logger(label: "wallet")).sendDue()
                }
                return Listing(sent: pass, replies: try await ledger.consumptionReplies(status: status, limit: limit))
            }
            try Output.result(listing, json: options.json) {
                var lines: [String] = []
                if let pass = listing.sent {
                    lines.append("Sent \(pass.sent), retrying \(pass.retrying), expired \(pass.expired), failed \(pass.failed).")
                }
                if listing.replies.isEmpty { lines.append("No consumption answers\(status.map { " \($0.rawValue)" } ?? "").") }
                lines += listing.replies.map { reply in
                    let share = reply.delivered ? "delivered, \(reply.spentShareMillipercent ?? 0) millipercent spent" : "not delivered"
                    let error = reply.lastError.map { " — \($0)" } ?? ""
                    return "\(reply.status.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(reply.storeTransactionID) (\(reply.environment), \(share)) asked \(reply.createdAt), attempts \(reply.attempts), deadline \(reply.deadline)\(error)"
                }
                return lines.joined(separator: "\n")
            }
        }
    }

    static func purchases(_ apple: AppleOptions, ledger: any LedgerWriting & LedgerReading) throws -> ApplePurchases {
        guard let purchases = try apple.purchases(ledger: ledger) else {
            throw WalletError.notConfigured("Apple commands need a bundle id: --apple-bundle-id or WALLET_APPLE_BUNDLE_ID")
        }
        return purchases
    }
}
extension ConsumptionReply.Status: ExpressibleByArgument {}
