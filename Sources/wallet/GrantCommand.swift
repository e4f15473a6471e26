import ArgumentParser
import WalletCore

struct GrantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grant",
        abstract: "Credit a purchase that the store already verified, exactly once per store transaction.",
        discussion: "A second grant of the same store transaction answers the original result and credits nothing.\n\nExample:\n  wallet grant --player p1 --store steam --store-transaction-id 7741002 \\\n    --product com.example.game.consume5credits"
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: "The store, such as apple, google or steam.")
    var store: String

    @Option(help: "The store's transaction id: the idempotency key, global and permanent.")
    var storeTransactionID: String

    @Option(help: "The product id in the catalog.")
    var product: String

    @Option(help: "Units bought (1 to 100).")
    var quantity: Int64 = 1

    func run() async throws {
        let playerID = try PlayerID(player)
        let result = try await options.withStore { ledger in try await ledger.grant(
            GrantRequest(playerID: playerID, store: store, storeTransactionID: storeTransactionID, productID: product, quantity: quantity, actor: cliActor)) }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Credited \(Output.signed(result.transaction.amount, result.transaction.currency)) for \(store) transaction \(storeTransactionID)")
        }
    }
}
