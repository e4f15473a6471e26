import ArgumentParser
import WalletCore

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute the hash chain and every balance; exit 1 if anything was altered.",
        discussion: "Checks every transaction from genesis, the postings' sums per currency and each balance. It never repairs."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let report = try await options.openStore().verify()
        Output.result(report, json: options.json) {
            if report.ok { return "OK: \(report.transactions) transactions, head hash \(report.headHash)." }
            return "FAILED at seq \(report.firstBadSeq.map(String.init) ?? "?"): \(report.problem ?? "inconsistent ledger")."
        }
        if !report.ok { throw ExitCode.failure }
    }
}
