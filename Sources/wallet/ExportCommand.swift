import ArgumentParser
import Foundation
import WalletCore

extension ExportFormat: ExpressibleByArgument {}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the ledger, one line per posting, as CSV or JSON Lines.",
        discussion: """
            The first line after the CSV header (or the first JSON object) is a checkpoint: the seq and \
            hash the export continues from, then the opening balance of each account it covers. Every \
            posting line carries its transaction's fields and hashes, so `wallet verify --export FILE \
            --head HASH` can check the file without the database. --from/--to select the contiguous run \
            of transactions created in [from, to); --player and --currency select transactions (the file \
            is then marked filtered). Nothing but the data goes to stdout.

            Example:
              wallet export --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z \\
                --format jsonl --output november.jsonl
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("Start of the period, RFC 3339 (inclusive).", valueName: "time"))
    var from: String?

    @Option(help: ArgumentHelp("End of the period, RFC 3339 (exclusive).", valueName: "time"))
    var to: String?

    @Option(help: "Only this player's transactions.")
    var player: String?

    @Option(help: "Only transactions in this currency.")
    var currency: String?

    @Option(help: "csv or jsonl.")
    var format: ExportFormat = .csv

    @Option(help: ArgumentHelp("Write to this file instead of stdout (replaced only once the export is complete).", valueName: "file"))
    var output: String?

    func run() async throws {
        let query = ExportQuery(from: from, to: to, playerID: try player.map { text throws(WalletError) in try PlayerID(text) }, currency: currency)
        let progress = Progress("postings exported")
        let sink = try ExportSink(path: output)
        let summary: ExportSummary
        do {
            summary = try await options.withStore { store in try await store.export(query, format: format).write(progress: progress.report, to: sink.write) }
            try sink.finish()
        } catch {
            sink.abandon()
            throw error
        }
        progress.finish()
        if output != nil, options.json {
            try Output.json(summary)
        } else if let output {
            try Output.line("Exported \(summary.transactions) transactions (\(summary.postings) postings) to \(output); last hash \(summary.lastHash).")
        }
    }
}

/// Stdout, or a temporary file renamed over the destination once complete, so a failed
/// export never leaves a half-written file that looks whole.
final class ExportSink: @unchecked Sendable {
    private let handle: FileHandle
    private let destination: String?
    private let temporaryPath: String?

    init(path: String?) throws(WalletError) {
        guard let path else {
            handle = FileHandle.standardOutput
            destination = nil
            temporaryPath = nil
            return
        }
        // Only a regular file (not followed through a symlink) or a new path is replaced: a
        // typo of /dev/null, a FIFO or a link must not be swapped for an export.
        var existing = stat()
        var mode: mode_t = 0o644
        if lstat(path, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFREG else {
                throw .invalidRequest("--output \(path) exists and is not a regular file (a directory, device, FIFO, socket or symlink); give a file path")
            }
            mode = existing.st_mode & 0o7777
        } else if errno != ENOENT {
            throw .storage("cannot inspect \(path): \(String(cString: strerror(errno)))")
        }
        let temporary = path + ".partial-\(ProcessInfo.processInfo.processIdentifier)"
        // O_EXCL: never write through something already at the temporary path.
        let descriptor = Foundation.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw .storage("cannot create \(path): check that the directory exists and is writable")
        }
        // The replaced file keeps its mode (0600 stays 0600), whatever the umask.
        _ = fchmod(descriptor, mode)
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        self.handle = handle
        destination = path
        temporaryPath = temporary
    }

    func write(_ bytes: [UInt8]) throws {
        try handle.write(contentsOf: bytes)
    }

    func finish() throws {
        guard let destination, let temporaryPath else { return }
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces an existing file atomically: the destination is the old file or the
        // whole new one, never neither.
        guard rename(temporaryPath, destination) == 0 else {
            throw WalletError.storage("cannot move the export into \(destination): \(String(cString: strerror(errno)))")
        }
    }

    func abandon() {
        guard let temporaryPath else { return }
        try? handle.close()
        try? FileManager.default.removeItem(atPath: temporaryPath)
    }
}
