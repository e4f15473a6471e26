import ArgumentParser
import Foundation
import WalletApple
import WalletCore

struct RedeemAppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redeem-apple",
        abstract: "Verify a StoreKit 2 signed transaction offline and credit it, once per Apple transaction id.",
        discussion: """
            The JWS is checked as Apple's libraries do: ES256 by the leaf of its x5c chain, the chain valid \
            at signedDate up to Apple Root CA - G3 (or a configured root), the bundle id, environment, \
            consumable type and revocation. A transaction redeemed again answers the original result.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var apple: AppleOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: ArgumentHelp("A file holding the signedTransaction JWS, or - for stdin.", valueName: "file"))
    var jws: String

    func run() async throws {
        guard let configuration = try apple.configuration() else {
            throw WalletError.notConfigured("Apple purchases need a bundle id: --apple-bundle-id or WALLET_APPLE_BUNDLE_ID")
        }
        let text: String
        if jws == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let contents = try? String(contentsOfFile: jws, encoding: .utf8) else { throw WalletError.notFound("cannot read \(jws)") }
            text = contents
        }
        let result = try await options.withStore { ledger in
            try await ApplePurchases(configuration: configuration, ledger: ledger)
                .redeem(playerID: player, signedTransaction: text.trimmingCharacters(in: .whitespacesAndNewlines), actor: cliActor)
        }
        try Output.result(result, json: options.json) {
            Output.mutation(result, "Credited \(Output.signed(result.transaction.amount, result.transaction.currency)) for apple transaction \(result.transaction.storeTransactionID ?? "")")
        }
    }
}
