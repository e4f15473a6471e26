import ArgumentParser
import Foundation
import Logging
import Synchronization

/// How `wallet serve` writes its logs to stderr: lines for people, or JSON for log shippers.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json

    /// Makes every logger of the process write in this format at `level` and above. Called once,
    /// before the first logger is made.
    func bootstrap(level: Logger.Level) {
        switch self {
        case .text:
            LoggingSystem.bootstrap { label in TextLogHandler(label: label, logLevel: level) }
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, logLevel: level) }
        }
    }

    /// A line's metadata, as both formats write it: the handler's, then the provider's, then the
    /// line's own, each overriding the one before (swift-log's `StreamLogHandler` order).
    static func merged(_ handler: Logger.Metadata, _ provider: Logger.MetadataProvider?, _ event: LogEvent) -> Logger.Metadata {
        var merged = handler
        merged.merge(provider?.get() ?? [:]) { _, provided in provided }
        merged.merge(event.metadata ?? [:]) { _, explicit in explicit }
        return merged
    }
}

/// swift-log's `StreamLogHandler` lines on stderr, byte for byte, with the metadata kept here
/// and formatted only when a line is written: `StreamLogHandler` formats its metadata again on
/// every change, and every request makes one (its request id), which took 3% of `wallet serve`'s
/// CPU under `Tests/Load/http-spend.sh` while nothing was logged.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider

    init(label: String, logLevel: Logger.Level) {
        // The provider is applied here, in its place between this handler's metadata and the line's.
        stream = StreamLogHandler.standardError(label: label, metadataProvider: nil)
        stream.logLevel = logLevel
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Hands the line to `StreamLogHandler` with all its metadata (`LogFormat.merged`).
    func log(event: LogEvent) {
        let merged = LogFormat.merged(metadata, metadataProvider, event)
        var event = event
        event.metadata = merged.isEmpty ? nil : merged
        stream.log(event: event)
    }
}

/// One JSON object a line on stderr: `timestamp` (RFC 3339, UTC, microseconds), `level`, `label`,
/// `message`, `metadata` (the request id among it) and `source`. Each line is written whole, in
/// one locked write, so that concurrent requests never interleave within a line.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = LogFormat.merged(metadata, metadataProvider, event)
        var line = "{\"timestamp\":"
        JSONLogHandler.appendString(Self.timestamp(), to: &line)
        line += ",\"level\":"
        JSONLogHandler.appendString(event.level.rawValue, to: &line)
        line += ",\"label\":"
        JSONLogHandler.appendString(label, to: &line)
        line += ",\"message\":"
        JSONLogHandler.appendString("\(event.message)", to: &line)
        line += ",\"metadata\":"
        Self.append(.dictionary(merged), to: &line)
        line += ",\"source\":"
        JSONLogHandler.appendString(event.source, to: &line)
        line += "}\n"
        Self.write(line)
    }

    /// Serialises writes of whole lines: a line longer than the pipe's atomic size would
    /// otherwise interleave with another thread's.
    private static let writing = Mutex(())

    private static func write(_ line: String) {
        let bytes = Array(line.utf8)
        writing.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(STDERR_FILENO, base + offset, buffer.count - offset)
                    if written < 0, errno == EINTR { continue }
                    // A closed or full stderr has nowhere left to report to.
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }

    /// Now, as `2026-11-24T17:39:15.123456Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour),
            Int(parts.tm_min), Int(parts.tm_sec), Int(now.tv_nsec / 1_000))
    }

    static func append(_ value: Logger.MetadataValue, to line: inout String) {
        switch value {
        case .string(let text):
            appendString(text, to: &line)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                append(element, to: &line)
            }
            line += "]"
        case .dictionary(let members):
            line += "{"
            // Sorted: the same entry always prints the same bytes.
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { line += "," }
                appendString(key, to: &line)
                line += ":"
                if let member = members[key] { append(member, to: &line) }
            }
            line += "}"
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    static func appendString(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                line += String(format: "\\u%04x", scalar.value)
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}
