import ArgumentParser
import WalletCore

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute the hash chain and every balance; exit 1 if anything was altered.",
        discussion: """
            Without --export, checks the database: every transaction from genesis, the postings' sums \
            per currency and each balance. With --export FILE, checks an export file alone, from its \
            checkpoint; with --head HASH too, that the file ends at that published head hash. It never \
            repairs.

            Example:
              wallet verify
              wallet verify --export november.jsonl --head HEAD_HASH
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("An export file (CSV or JSON Lines) to verify instead of the database.", valueName: "file"))
    var export: String?

    @Option(help: ArgumentHelp("With --export: the head hash the file must end at.", valueName: "hash"))
    var head: String?

    func validate() throws {
        if head != nil, export == nil { throw ValidationError("--head needs --export: it is checked against an export file.") }
        if let head, head.count != 64 || !head.allSatisfy(\.isHexDigit) { throw ValidationError("--head must be 64 hex digits.") }
    }

    func run() async throws {
        if let export {
            let progress = Progress("transactions verified")
            let report = try ExportFileVerifier.verify(path: export, head: head?.lowercased(), progress: progress.report)
            progress.finish()
            try Output.result(report, json: options.json) {
                guard report.ok else { return "FAILED at seq \(report.firstBadSeq.map(String.init) ?? "?"): \(report.problem ?? "inconsistent export")." }
                let scope = report.filtered ? " (filtered export: each transaction checked, not the chain between them)" : ""
                return "OK: \(report.transactions) transactions after seq \(report.checkpointSeq), ending at hash \(report.headHash)\(scope)."
            }
            if !report.ok { throw ExitCode.failure }
            return
        }
        let progress = Progress("transactions verified")
        let report = try await options.withStore { ledger in try await ledger.verify(progress: progress.report) }
        progress.finish()
        try Output.result(report, json: options.json) {
            if report.ok { return "OK: \(report.transactions) transactions, head hash \(report.headHash)." }
            return "FAILED at seq \(report.firstBadSeq.map(String.init) ?? "?"): \(report.problem ?? "inconsistent ledger")."
        }
        if !report.ok { throw ExitCode.failure }
    }
}
