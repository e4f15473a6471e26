import ArgumentParser
import WalletCore

struct SpendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spend",
        abstract: "Debit a player's wallet, once per idempotency key; never below zero.",
        discussion: "Retrying with the same --key and the same request answers the original result.\n\nExample:\n  wallet spend --player p1 --amount 3 --key order-2291 \\\n    --reason \"health potion\""
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: "Credits to spend (1 to 1000000000).")
    var amount: Int64

    @Option(help: "Idempotency key, unique per spend of this wallet (up to 255 visible ASCII characters).")
    var key: String

    @Option(help: "Currency to spend.")
    var currency: String = defaultCurrency

    @Option(help: "What the credits bought, for the history.")
    var reason: String?

    @Option(help: "A JSON object stored with the spend (up to 4096 bytes).")
    var metadata: String?

    func run() async throws {
        let metadata = try metadata.map { text throws(WalletError) in try Metadata(JSONValue.parse(text)) }
        let playerID = try PlayerID(player)
        let result = try await options.withStore { ledger in try await ledger.spend(
            SpendRequest(playerID: playerID, amount: amount, currency: currency, idempotencyKey: key, reason: reason, metadata: metadata, actor: cliActor)) }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Spent \(amount) \(currency) from \(player)")
        }
    }
}
