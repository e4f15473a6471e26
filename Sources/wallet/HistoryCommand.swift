import ArgumentParser
import WalletCore

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show a player's transactions, newest first, a page at a time.",
        discussion: "The last line names the --after value of the next page.\n\nExample:\n  wallet history --player p1 --limit 20 --kind spend"
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: "Transactions per page (1 to 500).")
    var limit: Int = Limits.pageSizeDefault

    @Option(help: "Continue after this seq: the previous page's next.")
    var after: Int64?

    @Option(help: "Only this kind: purchase, spend, adjustment, refund, refund_reversal.")
    var kind: TransactionKind?

    @Option(help: ArgumentHelp("Only transactions created at or after this RFC 3339 time.", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("Only transactions created before this RFC 3339 time.", valueName: "time"))
    var to: String?

    func run() async throws {
        let playerID = try PlayerID(player)
        let page = try await options.withStore { ledger in try await ledger.history(HistoryQuery(playerID: playerID, limit: limit, after: after, kind: kind, from: from, to: to)) }
        try Output.result(page, json: options.json) {
            var lines = page.transactions.map { transaction in
                var line = "\(transaction.seq)\t\(transaction.createdAt)\t\(transaction.kind.rawValue)\t\(Output.signed(transaction.amount, transaction.currency))"
                let player = AccountOwner.player(transaction.playerID).text
                if let posting = transaction.postings.first(where: { $0.account == player }) { line += "\tbalance \(posting.balanceAfter)" }
                if let reasonCode = transaction.reasonCode { line += "\t\(reasonCode)" }
                if let note = transaction.note { line += "\t\(note.split(whereSeparator: \.isNewline).joined(separator: " "))" }
                return line
            }
            if page.transactions.isEmpty { lines.append("No transactions for \(player).") }
            if let next = page.next { lines.append("More: wallet history --player \(player) --after \(next)") }
            return lines.joined(separator: "\n")
        }
    }
}
