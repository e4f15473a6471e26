import Foundation

/// RFC 3339 UTC timestamps with milliseconds, always 24 characters
/// (`2026-11-21T23:20:09.123Z`), so they sort as text.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1_000).rounded(.down))
        var seconds = time_t(milliseconds.floorDivided(by: 1_000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds.floorModulo(1_000)))
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }

    fileprivate func floorModulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}

extension Timestamp {
    /// Parses an RFC 3339 timestamp with any offset and optional fractional seconds into the
    /// ledger's UTC format, so it compares as text with stored timestamps.
    public static func parse(_ text: String, field: String) throws(WalletError) -> String {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let withoutFraction = ISO8601DateFormatter()
        withoutFraction.formatOptions = [.withInternetDateTime]
        guard text.utf8.count <= 64, let date = withFraction.date(from: text) ?? withoutFraction.date(from: text) else {
            throw .invalidRequest("\(field) must be an RFC 3339 timestamp such as 2026-11-01T00:00:00Z")
        }
        return format(date)
    }
}
