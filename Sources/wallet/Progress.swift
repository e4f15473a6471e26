import Foundation

/// Progress of long exports and verifications on stderr, only when stderr is a terminal, so
/// scripts and files see nothing but the data.
final class Progress: @unchecked Sendable {
    private let label: String
    private let started = Date()
    private let enabled = isatty(FileHandle.standardError.fileDescriptor) == 1
    private let lock = NSLock()
    private var lastReport = Date.distantPast

    init(_ label: String) {
        self.label = label
    }

    /// Reports `count` (rows or transactions) and the rate, at most a few times a second.
    func report(_ count: Int64) {
        guard enabled else { return }
        lock.withLock {
            let now = Date()
            guard now.timeIntervalSince(lastReport) >= 0.25 else { return }
            lastReport = now
            let rate = Double(count) / max(now.timeIntervalSince(started), 0.001)
            Output.standardError("\r\(label): \(count) (\(Int(rate.rounded()))/s)   ")
        }
    }

    /// Ends the progress line.
    func finish() {
        guard enabled, lastReport != .distantPast else { return }
        Output.standardError("\n")
    }
}
