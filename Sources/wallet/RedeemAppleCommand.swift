import ArgumentParser
import Foundation
import WalletApple
import WalletCore

struct RedeemAppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redeem-apple",
        abstract: "Credit an Apple purchase: a StoreKit 2 signed transaction (--jws), or a StoreKit 1 app receipt (--receipt).",
        discussion: """
            A JWS is checked offline as Apple's libraries do: ES256 by the leaf of its x5c chain, the chain \
            valid at signedDate up to Apple Root CA - G3 (or a configured root), the bundle id, environment, \
            consumable type and revocation. A transaction redeemed again answers the original result.

            A receipt (base64, or Unity IAP's JSON wrapper) is not trusted: the wallet reads a transaction \
            id from it, asks the App Store Server API for that customer's consumable purchases (this needs \
            --apple-issuer-id, --apple-key-id and --apple-private-key), verifies each signed transaction the \
            same way, and credits to the player, in one write, every one not yet credited. It lists what \
            was credited now, what was credited before, and what was refused.

            Example:
              WALLET_APPLE_BUNDLE_ID=com.example.game wallet redeem-apple --player p1 \\
                --jws transaction.jws
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var apple: AppleOptions

    @Option(help: "The player's id.")
    var player: String

    @Option(help: ArgumentHelp("A file holding the signedTransaction JWS, or - for stdin.", valueName: "file"))
    var jws: String?

    @Option(help: ArgumentHelp("A file holding the app receipt (base64, or Unity IAP's receipt JSON), or - for stdin.", valueName: "file"))
    var receipt: String?

    func validate() throws {
        guard (jws == nil) != (receipt == nil) else { throw ValidationError("give either --jws or --receipt.") }
    }

    func run() async throws {
        let text = try Self.read(jws ?? receipt ?? "-", bytesMax: AppReceipt.base64BytesMax + 1_024)
        let playerID = try PlayerID(player)
        if jws != nil {
            let result = try await withPurchases { purchases in try await purchases.redeem(playerID: playerID, signedTransaction: text, actor: cliActor) }
            try Output.result(result, json: options.json) {
                Output.mutation(result, "Credited \(Output.signed(result.transaction.amount, result.transaction.currency)) for apple transaction \(result.transaction.storeTransactionID ?? "")")
            }
        } else {
            let result = try await withPurchases { purchases in try await purchases.redeemReceipt(playerID: playerID, receipt: text, actor: cliActor) }
            try Output.result(result, json: options.json) { Self.describe(result) }
        }
    }

    private func withPurchases<Result: Sendable>(_ body: @escaping (ApplePurchases) async throws -> Result) async throws -> Result {
        try await options.withStore { ledger in
            guard let purchases = try apple.purchases(ledger: ledger) else {
                throw WalletError.notConfigured("Apple purchases need a bundle id: --apple-bundle-id or WALLET_APPLE_BUNDLE_ID")
            }
            return try await body(purchases)
        }
    }

    /// A file's text, or stdin's for `-`, trimmed; refused past `bytesMax`.
    static func read(_ path: String, bytesMax: Int) throws -> String {
        let opened = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
        guard let handle = opened else { throw WalletError.notFound("cannot read \(path)") }
        defer { if path != "-" { try? handle.close() } }
        let data: Data
        do {
            data = try handle.read(upToCount: bytesMax + 1) ?? Data()
        } catch {
            // A directory opens but cannot be read: refused here, never a crash.
            throw WalletError.invalidRequest("cannot read \(path == "-" ? "stdin" : path): not a readable file")
        }
        guard data.count <= bytesMax else { throw WalletError.invalidRequest("\(path == "-" ? "stdin" : path) is longer than \(bytesMax) bytes") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func describe(_ result: ReceiptRedemption) -> String {
        var lines = ["\(result.environment) receipt for \(result.playerID): \(result.credited.count) credited now, \(result.alreadyCredited.count) before, \(result.refused.count) refused"]
        lines += result.credited.map { "  credited   \(describe($0))" }
        lines += result.alreadyCredited.map { "  before     \(describe($0))" }
        lines += result.refused.map { "  refused    \($0.storeTransactionID ?? "(unverified)"): \($0.code): \($0.detail)" }
        if !result.complete { lines.append("  (the customer's history is longer than the wallet reads at once: older purchases were not examined)") }
        return lines.joined(separator: "\n")
    }

    static func describe(_ credit: StoreTransactionCredit) -> String {
        "\(credit.storeTransactionID) \(credit.productID) × \(credit.quantity): \(Output.signed(credit.amount, credit.currency)) to \(credit.playerID) (seq \(credit.seq), \(credit.createdAt))"
    }
}
