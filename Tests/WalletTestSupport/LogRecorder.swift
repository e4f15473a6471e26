import Logging
import Synchronization

/// Log entries kept in memory instead of printed. Servers and background work started by tests
/// log their warnings and errors here: most are the expected outcome of a failure the test
/// provokes (a refused push, a store answering 500), and a passing `swift test` prints test
/// results only. A test about logging reads the entries back.
public final class LogRecorder: Sendable {
    public struct Entry: Sendable {
        public var label: String
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    /// Entries kept at most: the shared recorder lives as long as the test process.
    public static let entriesMax = 10_000

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// Every entry recorded so far, oldest first (the newest `entriesMax`).
    public var recorded: [Entry] { entries.withLock { $0 } }

    /// A logger at `level` and above whose entries go to this recorder.
    public func logger(label: String, level: Logger.Level = .warning) -> Logger {
        var logger = Logger(label: label) { label in RecordingLogHandler(label: label, recorder: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func record(_ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= Self.entriesMax { entries.removeFirst(entries.count / 2) }
            entries.append(entry)
        }
    }
}

/// The loggers tests hand to servers and background work: warning and above, recorded, not printed.
public enum TestLogs {
    public static let shared = LogRecorder()

    public static func quiet(_ label: String) -> Logger {
        shared.logger(label: label)
    }
}

private struct RecordingLogHandler: LogHandler {
    let label: String
    let recorder: LogRecorder
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        recorder.record(
            LogRecorder.Entry(label: label, level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
    }
}
