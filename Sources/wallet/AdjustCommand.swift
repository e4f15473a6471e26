import ArgumentParser
import WalletCore

struct AdjustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adjust",
        abstract: "Credit or debit a wallet as support, with a reason, a note and who did it.",
        discussion: """
            The adjustment is a new ledger transaction; nothing is edited. Write a debit as --amount -2. \
            A debit below zero is refused unless --allow-negative is given.

            Example:
              wallet adjust --player p1 --amount -20 --reason-code chargeback \\
                --note "Bank reversed the top-up" --actor alice --key T-1042-1 \\
                --ticket T-1042
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    // Unconditional: the value may start with a minus sign, which would otherwise read as an option.
    @Option(parsing: .unconditional, help: "Credits to add, or to remove when negative (--amount -20 or --amount=-20).")
    var amount: Int64

    @Option(help: "Why, as a code: goodwill, bug_compensation, chargeback, ...")
    var reasonCode: String

    @Option(help: "What happened, for the next person who reads the history.")
    var note: String

    @Option(help: "Who is making the adjustment (your name or staff id).")
    var actor: String

    @Option(help: "Idempotency key for this adjustment, such as the ticket and a counter.")
    var key: String

    @Option(help: "Support ticket reference.")
    var ticket: String?

    @Option(help: "Currency to adjust.")
    var currency: String = defaultCurrency

    @Flag(help: "Allow a debit to take the balance below zero.")
    var allowNegative = false

    func run() async throws {
        let playerID = try PlayerID(player)
        let result = try await options.withStore { ledger in try await ledger.adjust(
            AdjustRequest(
                playerID: playerID, amount: amount, currency: currency, reasonCode: reasonCode, note: note, ticket: ticket,
                idempotencyKey: key, allowNegative: allowNegative, actor: actor)) }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Adjusted \(player) by \(Output.signed(amount, currency)) (\(reasonCode))")
        }
    }
}
