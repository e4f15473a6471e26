import Foundation

/// RFC 3339 UTC timestamps with milliseconds, always 24 characters
/// (`2026-11-21T23:20:09.123Z`), so they sort as text.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1_000).rounded(.down))
        var seconds = time_t(milliseconds.floorDivided(by: 1_000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Written digit by digit: this runs for every transaction, and String(format:) is slow.
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, _ offset: Int, _ width: Int) {
            var value = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, 0, 4)
        bytes[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, 5, 2)
        bytes[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), 8, 2)
        bytes[10] = UInt8(ascii: "T")
        put(Int(parts.tm_hour), 11, 2)
        bytes[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), 14, 2)
        bytes[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), 17, 2)
        bytes[19] = UInt8(ascii: ".")
        put(Int(milliseconds.floorModulo(1_000)), 20, 3)
        bytes[23] = UInt8(ascii: "Z")
        return String(decoding: bytes, as: UTF8.self)
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

extension Duration {
    /// The duration in seconds, for rates and statistics (not for money or ledger times).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in milliseconds, for latencies.
    public var inMilliseconds: Double { inSeconds * 1_000 }
}
