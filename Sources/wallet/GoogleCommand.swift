import ArgumentParser
import Foundation
import Logging
import WalletCore
import WalletGoogle

/// The account-token setting on the Google commands (`serve` takes it with the Apple options).
struct AccountTokenOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A UUID under which the game derives each player's account id, UUIDv5(namespace, player id): every purchase must then carry exactly that id for the player it credits (env WALLET_ACCOUNT_TOKEN_NAMESPACE; default: an id binds to the first player it credits).",
            valueName: "uuid"))
    var accountTokenNamespace: String?

    func binding() throws -> AccountTokenBinding {
        try AppleOptions.accountTokenBinding(namespace: accountTokenNamespace ?? ProcessInfo.processInfo.environment["WALLET_ACCOUNT_TOKEN_NAMESPACE"])
    }
}

struct RedeemGoogleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redeem-google",
        abstract: "Credit a Google Play purchase: the wallet asks Google for it, credits it once, and queues its consumption.",
        discussion: """
            The wallet asks the Android Publisher API for the purchase (purchases.products.get) and \
            credits credits × quantity of the catalog product only when Google reports it purchased: a \
            pending purchase is refused with purchase_pending and nothing recorded; a canceled one, a \
            license tester's (unless --google-allow-test-purchases) or one Google does not know is \
            purchase_invalid. A token redeemed again answers the original result; it can never credit a \
            second player. The purchase is consumed on Google's side from the outbox (wallet google outbox).

            Example:
              wallet redeem-google --player p42 \\
                --product com.example.game.consume5credits --token "$PURCHASE_TOKEN" \\
                --google-package-name com.example.game \\
                --google-service-account service-account.json
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var google: GoogleOptions
    @OptionGroup var accountTokens: AccountTokenOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: ArgumentHelp("The product id (Google Play's productId, as in the catalog).", valueName: "id"))
    var product: String

    @Option(help: ArgumentHelp("The purchase token the Play Billing Library gave the app.", valueName: "token"))
    var token: String

    func validate() throws {
        try google.requireAPI()
    }

    func run() async throws {
        let playerID = try PlayerID(player)
        let result = try await options.withStore { ledger in
            try await google.requirePurchases(ledger: ledger, binding: try accountTokens.binding())
                .redeem(playerID: playerID, productID: product, purchaseToken: token, actor: cliActor)
        }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Credited \(Output.signed(result.transaction.amount, result.transaction.currency)) for a Google Play purchase of \(product)")
        }
    }
}

/// What talks to Google Play's Android Publisher API.
struct GoogleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google",
        abstract: "Look up Google Play orders, catch up on voided purchases, and see the consumptions owed to Google.",
        discussion: """
            These commands call the Android Publisher API as the service account --google-service-account \
            names (its key file, or WALLET_GOOGLE_SERVICE_ACCOUNT), for the app --google-package-name names.

            Example:
              wallet google lookup --order-id GPA.3345-1234-5678-90123 \\
                --google-package-name com.example.game --google-service-account sa.json
            """,
        subcommands: [Lookup.self, CatchUp.self, Outbox.self]
    )

    struct Lookup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a Google Play order: the purchase, where it was credited, its refunds and consumption, and Google's voids.",
            discussion: """
                Example:
                  wallet google lookup --order-id GPA.3345-1234-5678-90123 \\
                    --google-package-name com.example.game --google-service-account sa.json
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var google: GoogleOptions

        @Option(help: ArgumentHelp("The order id (GPA.…) from Google's receipt email or the Play Console.", valueName: "id"))
        var orderID: String

        func validate() throws {
            try google.requireAPI()
        }

        func run() async throws {
            let result = try await options.withStore { ledger in
                try await google.requirePurchases(ledger: ledger, binding: .firstUse).lookUp(orderID: orderID)
            }
            try Output.result(result, json: options.json) {
                var lines = result.purchases.isEmpty ? ["Order \(result.orderID): the wallet credited no purchase under it."] : ["Order \(result.orderID):"]
                for entry in result.purchases {
                    let credit = entry.credit.map { "\(Output.signed($0.amount, $0.currency)) to \($0.playerID) (seq \($0.seq), \($0.createdAt))" } ?? "seq \(entry.purchase.seq)"
                    let finish = entry.purchase.finish.map { " consumption \($0.status.rawValue)\($0.lastError.map { " — \($0)" } ?? "")" } ?? ""
                    let refunds = entry.purchase.corrections.isEmpty ? "" : " refunds and reversals at seq \(entry.purchase.corrections.map(String.init).joined(separator: ", "))"
                    lines.append("  \(entry.purchase.purchaseType.rawValue) \(credit)\(finish)\(refunds)")
                }
                lines += result.voids.map { "  voided at \($0.voidedTimeMillis ?? "?") ms: refund type \($0.refundType.map(String.init) ?? "?"), quantity \($0.voidedQuantity.map(String.init) ?? "all")" }
                if let error = result.voidsError { lines.append("  (Google's voided purchases could not be read: \(error))") }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct CatchUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "catch-up",
            abstract: "Apply every voided purchase Google lists (its last 30 days) through the same path as a live notification.",
            discussion: """
                A void already applied, live or by an earlier pass, takes nothing more. One run at a time \
                reads Google's list: a run that finds another under way (this command, or wallet serve \
                --google-catch-up-every MINUTES on any instance) skips and says so.

                Example:
                  wallet google catch-up --since 2026-11-01T00:00:00Z \\
                    --google-package-name com.example.game --google-service-account sa.json
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var google: GoogleOptions

        @Option(help: ArgumentHelp("Only purchases voided since then, RFC 3339 (default: all Google keeps, 30 days).", valueName: "time"))
        var since: String?

        func validate() throws {
            try google.requireAPI()
        }

        func run() async throws {
            let start = try since.map { try Timestamp.date($0, field: "--since") }
            let report = try await options.withStore { ledger in
                try await google.requirePurchases(ledger: ledger, binding: .firstUse).catchUp(since: start)
            }
            try Output.result(report, json: options.json) {
                if let skipped = report.skipped { return "skipped: \(skipped)" }
                var lines = ["\(report.purchases) voided purchases: \(report.applied) applied now, \(report.alreadyApplied) applied before, \(report.refused.count) refused"]
                lines += report.outcomes.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }
                lines += report.refused.map { "  refused: \($0.code): \($0.detail)" }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the Google Play purchases to consume (the outbox), newest first; --send consumes those due now.",
            discussion: """
                Every credited purchase is queued in the credit's own write; wallet serve consumes it until \
                Google does (done) or no longer knows the purchase (failed). Pending ones wait for their next \
                attempt, 30 s after a failure and doubling, at most 30 minutes.

                Example:
                  wallet google outbox --status pending
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var google: GoogleOptions

        @Option(help: "Only purchases in this status: pending, done or failed.")
        var status: PurchaseFinish.Status?

        @Option(help: ArgumentHelp("How many to show, 1 to \(Limits.pageSizeMax).", valueName: "count"))
        var limit = 50

        @Flag(help: "Consume or acknowledge the purchases due now first (as wallet serve does every few seconds).")
        var send = false

        func validate() throws {
            if send { try google.requireAPI() }
        }

        struct Listing: Encodable {
            var sent: GooglePurchaseFinisher.Pass?
            var purchases: [PurchaseFinish]
        }

        func run() async throws {
            let listing = try await options.withStore { ledger in
                var pass: GooglePurchaseFinisher.Pass?
                if send {
                    guard let api = try google.api() else {
                        throw WalletError.notConfigured("finishing purchases needs --google-package-name and --google-service-account")
                    }
                    pass = try await GooglePurchaseFinisher(outbox: ledger, api: api, logger: Logger(label: "wallet")).consumeDue()
                }
                return Listing(sent: pass, purchases: try await ledger.purchaseFinishes(store: GooglePurchases.store, status: status, limit: limit))
            }
            try Output.result(listing, json: options.json) {
                var lines: [String] = []
                if let pass = listing.sent {
                    lines.append("Consumed \(pass.consumed), acknowledged \(pass.acknowledged), retrying \(pass.retrying), failed \(pass.failed).")
                }
                if listing.purchases.isEmpty { lines.append("No Google Play purchases to finish\(status.map { " \($0.rawValue)" } ?? "").") }
                lines += listing.purchases.map { finish in
                    "\(finish.status.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(finish.action.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)) \(finish.productID) token \(finish.storeTransactionID.prefix(24))… credited \(finish.createdAt), attempts \(finish.attempts)\(finish.lastError.map { " — \($0)" } ?? "")"
                }
                return lines.joined(separator: "\n")
            }
        }
    }
}

extension PurchaseFinish.Status: ExpressibleByArgument {}
