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
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a text cell: prefixed if it would start a formula, quoted (with inner
    /// quotes doubled) if it holds a comma, a quote or a line break.
    static func append(_ value: String, to output: inout [UInt8]) {
        var value = value
        value.withUTF8 { bytes in
            let prefixed = bytes.first.map(startsFormula) ?? false
            let quoted = bytes.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
            if quoted { output.append(UInt8(ascii: "\"")) }
            if prefixed { output.append(UInt8(ascii: "'")) }
            if quoted {
                for byte in bytes {
                    if byte == UInt8(ascii: "\"") { output.append(byte) }
                    output.append(byte)
                }
                output.append(UInt8(ascii: "\""))
            } else {
                output.append(contentsOf: bytes)
            }
        }
    }

    /// The original text of a text cell read back from a file.
    static func untext(_ cell: String) -> String {
        cell.hasPrefix("'") ? String(cell.dropFirst()) : cell
    }
}

/// JSON string literals without a JSONEncoder per value: exports write millions of them.
enum JSONText {
    static func string(_ value: String) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a JSON string literal. Only `"`, `\\` and control characters are
    /// escaped; every other byte of the UTF-8 text is copied as it is.
    static func append(_ value: String, to output: inout [UInt8]) {
        var value = value
        output.append(UInt8(ascii: "\""))
        value.withUTF8 { bytes in
            // Most values need no escaping at all.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return output.append(contentsOf: bytes)
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
                case 0x0A: output.append(contentsOf: #"\n"#.utf8)
                case 0x0D: output.append(contentsOf: #"\r"#.utf8)
                case 0x09: output.append(contentsOf: #"\t"#.utf8)
                case ..<0x20:
                    output.append(contentsOf: #"\u00"#.utf8)
                    output.append(hexDigits[Int(byte >> 4)])
                    output.append(hexDigits[Int(byte & 0x0F)])
                default: output.append(byte)
                }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
