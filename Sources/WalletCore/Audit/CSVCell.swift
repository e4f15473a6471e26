/// RFC 4180 cells that are safe to open in a spreadsheet.
///
/// A text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return would run as a
/// formula, so it is written with a leading `'`; a cell that itself starts with `'` gets one
/// more, so the reader removes exactly one `'` from any text cell that starts with it and gets
/// the original back. Numbers are never prefixed.
enum CSVCell {
    /// Whether `byte` starts a formula (or is the escape itself): `=`, `+`, `-`, `@`, tab, CR, `'`.
    private static func startsFormula(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 0x09, 0x0D, UInt8(ascii: "'"): true
        default: false
        }
    }

    static func text(_ value: String) -> String {
        var value = value
        if let first = value.utf8.first, startsFormula(first) { value = "'" + value }
        return quoted(value)
    }

    /// The original text of a text cell read back from a file.
    static func untext(_ cell: String) -> String {
        cell.hasPrefix("'") ? String(cell.dropFirst()) : cell
    }

    private static func quoted(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// JSON string literals without a JSONEncoder per value: exports write millions of them.
enum JSONText {
    static func string(_ value: String) -> String {
        // Most values need no escaping at all.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + value + "\""
        }
        var result = "\""
        result.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
