import ArgumentParser
import Foundation
import WalletCore

@main
struct WalletCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wallet",
        abstract: "CreditsWallet: a consumable-credits ledger for game stores.",
        discussion: """
            Every command works on the ledger given by --db or WALLET_DB: a SQLite file (default \
            ./wallet.sqlite) or a postgres:// URL, created on first use. Add --json for \
            machine-readable output; errors then go to stderr as {"code", "detail"} with a non-zero \
            exit status.

            Example:
              wallet products set com.example.game.consume5credits --credits 5
              wallet serve
              wallet spend --help
            """,
        subcommands: [
            ServeCommand.self, KeysCommand.self, ProductsCommand.self, GrantCommand.self, RedeemAppleCommand.self, AppleCommand.self, RedeemGoogleCommand.self, GoogleCommand.self, SpendCommand.self, AdjustCommand.self, BonusCommand.self, EntitlementCommand.self, HoldCommand.self, RefundCommand.self,
            BalanceCommand.self, LotsCommand.self, HistoryCommand.self, StatementCommand.self, ExportCommand.self, VerifyCommand.self, ExpireCommand.self, CopyCommand.self, BenchCommand.self,
            WebhooksCommand.self, DoctorCommand.self,
        ]
    )

    /// Runs the command, so that every failure, a usage error included, is reported in the
    /// format the caller asked for: JSON on stderr with `--json`, a sentence otherwise.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let json = arguments.contains("--json")
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as WalletError {
            Output.report(error, json: json)
            Foundation.exit(ExitCode.failure.rawValue)
        } catch {
            let code = exitCode(for: error)
            if json, code != .success, !(error is ExitCode) {
                Output.report(code: "invalid_request", detail: message(for: error), json: true)
                Foundation.exit(code.rawValue)
            }
            exit(withError: error)
        }
    }
}
