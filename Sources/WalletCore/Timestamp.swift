import Foundation

/// RFC 3339 UTC timestamps with milliseconds, always 24 characters
/// (`2026-11-21T23:20:09.123Z`), so they sort as text.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        // Clamped, so that no Date, however far off, can trap the conversion.
        let milliseconds = (date.timeIntervalSince1970 * 1_000).rounded(.down)
        guard milliseconds.isFinite else { return format(milliseconds: millisecondsRange.lowerBound) }
        return format(milliseconds: Int64(min(max(milliseconds, Double(millisecondsRange.lowerBound)), Double(millisecondsRange.upperBound))))
    }

    /// The timestamp of `milliseconds` since 1970, within `millisecondsRange`.
    package static func format(milliseconds: Int64) -> String {
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
    /// The earliest and latest instants the ledger's format can write, in milliseconds since
    /// 1970: years 0001 to 9999.
    public static let millisecondsRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// Parses an RFC 3339 timestamp (`2026-11-01T00:00:00Z`, `2026-11-01T01:00:00.5+01:00`) into
    /// the ledger's UTC format, so it compares as text with stored timestamps. Strict: every field
    /// is range-checked (no February 30, no 24:00, no leap second), the year has four digits,
    /// and the instant must fall in years 0001 to 9999 once in UTC — nothing is wrapped around.
    public static func parse(_ text: String, field: RequestField) throws(WalletError) -> String {
        guard let milliseconds = milliseconds(rfc3339: Array(text.utf8.prefix(65))), text.utf8.count <= 64 else {
            throw field.invalid("\(field.phrase) must be an RFC 3339 timestamp between years 0001 and 9999, such as 2026-11-01T00:00:00Z")
        }
        return format(milliseconds: milliseconds)
    }

    /// The instant an RFC 3339 timestamp names, as strictly as `parse`.
    public static func date(_ text: String, field: RequestField) throws(WalletError) -> Date {
        guard let milliseconds = milliseconds(rfc3339: Array(text.utf8.prefix(65))), text.utf8.count <= 64 else {
            throw field.invalid("\(field.phrase) must be an RFC 3339 timestamp between years 0001 and 9999, such as 2026-11-01T00:00:00Z")
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }

    /// A store's purchase date (milliseconds since 1970, as Apple and Google state them) in the
    /// ledger's form; refused as `purchase_invalid` outside the years the ledger writes.
    package static func purchaseDate(milliseconds: Int64, store: String) throws(WalletError) -> String {
        guard millisecondsRange.contains(milliseconds) else {
            throw .purchaseInvalid("\(store) reports a purchase date out of range; nothing was credited")
        }
        return format(milliseconds: milliseconds)
    }

    /// Milliseconds since 1970 of an RFC 3339 date-time, nil unless every field is in range.
    package static func milliseconds(rfc3339 bytes: [UInt8]) -> Int64? {
        var reader = DigitReader(bytes: bytes)
        guard let year = reader.number(digits: 4), reader.take("-"), let month = reader.number(digits: 2), reader.take("-"),
            let day = reader.number(digits: 2), reader.take("T") || reader.take("t"), let hour = reader.number(digits: 2), reader.take(":"),
            let minute = reader.number(digits: 2), reader.take(":"), let second = reader.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...59).contains(second)
        else { return nil }
        var milliseconds: Int64 = 0
        if reader.take(".") {
            // Up to nine digits (nanoseconds); the ledger keeps milliseconds, rounded down.
            var count = 0
            while let digit = reader.digit() {
                if count < 3 { milliseconds = milliseconds * 10 + digit }
                count += 1
                guard count <= 9 else { return nil }
            }
            guard count >= 1 else { return nil }
            for _ in 0..<max(0, 3 - count) { milliseconds *= 10 }
        }
        var offsetMinutes: Int64 = 0
        if reader.take("Z") || reader.take("z") {
        } else if let sign: Int64 = reader.take("+") ? 1 : reader.take("-") ? -1 : nil {
            guard let offsetHour = reader.number(digits: 2), reader.take(":"), let offsetMinute = reader.number(digits: 2), (0...23).contains(offsetHour),
                (0...59).contains(offsetMinute)
            else { return nil }
            offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
        } else {
            return nil
        }
        guard reader.atEnd else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offsetMinutes * 60
        let result = seconds * 1_000 + milliseconds
        return millisecondsRange.contains(result) ? result : nil
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `milliseconds` since 1970 moved by whole calendar months, then days, in UTC: a month
    /// later than January 31 is the last day of February (the day clamped to the month's length),
    /// the time of day kept. Nil when the result leaves `millisecondsRange`.
    package static func adding(months: Int64, days: Int64, to milliseconds: Int64) -> Int64? {
        let dayMilliseconds: Int64 = 86_400_000
        let day = milliseconds >= 0 ? milliseconds / dayMilliseconds : (milliseconds - dayMilliseconds + 1) / dayMilliseconds
        let timeOfDay = milliseconds - day * dayMilliseconds
        // Howard Hinnant's `civil_from_days`.
        let shifted = day + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let monthsSinceYearZero = year * 12 + (month - 1) + months
        let newYear = monthsSinceYearZero >= 0 ? monthsSinceYearZero / 12 : (monthsSinceYearZero - 11) / 12
        let newMonth = monthsSinceYearZero - newYear * 12 + 1
        guard (1...9999).contains(newYear) else { return nil }
        let newDay = min(dayOfMonth, daysIn(month: newMonth, year: newYear))
        let result = (daysSince1970(year: newYear, month: newMonth, day: newDay) + days) * dayMilliseconds + timeOfDay
        return millisecondsRange.contains(result) ? result : nil
    }

    /// Reads ASCII digits and punctuation off a byte string.
    private struct DigitReader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int64? {
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return Int64(bytes[index] - UInt8(ascii: "0"))
        }

        /// Exactly `digits` digits as a number.
        mutating func number(digits: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }
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
