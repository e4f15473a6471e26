import ArgumentParser
import WalletCore

struct RefundCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refund",
        abstract: "Take back the credits of a refunded purchase, once per store transaction.",
        discussion: """
            Policy debt (default) lets the balance go negative when the credits were already spent; \
            spending is then refused until it is positive again. Policy floor stops at zero and records \
            the rest as uncollected.

            Example:
              wallet refund --store apple --store-transaction-id 2000000123456789 \\
                --percentage 50
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The store of the purchase.")
    var store: String

    @Option(help: "The store transaction id of the purchase.")
    var storeTransactionID: String

    @Option(help: "Share of the purchase refunded, 1 to 100.")
    var percentage: Int64 = 100

    @Option(help: "debt or floor.")
    var policy: RefundPolicy = .debt

    func run() async throws {
        let request = try RefundRequest(store: store, storeTransactionID: storeTransactionID, percentage: percentage, policy: policy, actor: cliActor)
        let result = try await options.withStore { ledger in try await ledger.refund(request) }
        try Output.result(result, json: options.json) {
            let transaction = result.transaction
            let uncollected = transaction.uncollected > 0 ? " (\(transaction.uncollected) uncollected: the balance reached zero)" : ""
            return Output.mutation(result, "Took back \(-transaction.amount) \(transaction.currency)\(uncollected) for \(store) transaction \(storeTransactionID)")
        }
    }
}
