import ArgumentParser
import WalletCore

struct StatementCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statement",
        abstract: "A player's statement: opening balance, each transaction, closing balance, per currency.",
        discussion: "What support sends a player who disputes a charge. The period is [from, to); both are optional.\n\nExample:\n  wallet statement --player p1 --from 2026-11-01T00:00:00Z \\\n    --to 2026-12-01T00:00:00Z"
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: ArgumentHelp("Start of the period, RFC 3339 (inclusive).", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("End of the period, RFC 3339 (exclusive).", valueName: "time"))
    var to: String?

    func run() async throws {
        let playerID = try PlayerID(player)
        let statement = try await options.withStore { ledger in try await ledger.statement(StatementQuery(playerID: playerID, from: from, to: to)) }
        try Output.result(statement, json: options.json) {
            var lines = ["Statement for \(player), \(statement.from ?? "the beginning") to \(statement.to ?? "now")"]
            for currency in statement.currencies {
                lines.append("\(currency.currency): opening balance \(currency.openingBalance)")
                for transaction in currency.transactions {
                    let detail = [transaction.reasonCode, transaction.note, transaction.storeTransactionID].compactMap { $0 }.joined(separator: " ")
                        .split(whereSeparator: \.isNewline).joined(separator: " ")
                    lines.append("  \(transaction.createdAt)  seq \(transaction.seq)  \(transaction.kind.rawValue)  \(Output.signed(transaction.amount, currency.currency))  \(detail)")
                }
                lines.append("\(currency.currency): closing balance \(currency.closingBalance)")
            }
            return lines.joined(separator: "\n")
        }
    }
}
