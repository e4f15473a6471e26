import ArgumentParser
import WalletCore

struct BalanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "balance", abstract: "Show a player's balances.", discussion: "Example:\n  wallet balance --player p1 --json")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The player's id.")
    var player: String

    func run() async throws {
        let playerID = try PlayerID(player)
        let wallet = try await options.withStore { ledger in try await ledger.balances(playerID: playerID) }
        try Output.result(wallet, json: options.json) {
            let balances = wallet.balances.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            return "\(player): \(balances.joined(separator: ", "))"
        }
    }
}
