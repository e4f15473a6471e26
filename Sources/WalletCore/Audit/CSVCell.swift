/// RFC 4180 cells that are safe to open in a spreadsheet.
///
/// A text cell that a spreadsheet could run as a formula is written with a leading `'`: one
/// starting with `=`, `+`, `-`, `@`, a tab, a line break or a space (spreadsheets skip leading
/// spaces before `=`), or with the full-width `＝`, `＋`, `－` or `＠`. A cell that itself starts
/// with `'` gets one more. The reader removes one leading `'`; `verify --export` then writes
/// every line again and requires the very bytes of the file, so a `'` the exporter did not
/// write, an unescaped formula or a byte that is not UTF-8 fails verification. Numbers are
/// never prefixed.
package enum CSVCell {
    /// Whether a text cell starting with `bytes` must be prefixed with `'`.
    private static func needsPrefix(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first else { return false }
        switch first {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), UInt8(ascii: "'"), UInt8(ascii: " "), 0x09, 0x0A, 0x0D:
            return true
        case 0xEF:
            // U+FF0B ＋, U+FF0D －, U+FF1D ＝ (EF BC 8B/8D/9D) and U+FF20 ＠ (EF BC A0).
            guard bytes.count >= 3, bytes[1] == 0xBC else { return false }
            return [0x8B, 0x8D, 0x9D, 0xA0].contains(bytes[2])
        default:
            return false
        }
    }

    package static func text(_ value: String) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a text cell: prefixed if it would start a formula, quoted (with inner
    /// quotes doubled) if it holds a comma, a quote or a line break.
    package static func append(_ value: String, to output: inout [UInt8]) {
        var value = value
        value.withUTF8 { bytes in
            let prefixed = needsPrefix(bytes)
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

    /// The text of a cell read back from a file, without the exporter's `'`.
    package static func untext(_ cell: String) -> String {
        cell.hasPrefix("'") ? String(cell.dropFirst()) : cell
    }
}

/// JSON string literals without a JSONEncoder per value: exports write millions of them, and
/// every answer of the API (`JSONWriter`) some.
package enum JSONText {
    package static func string(_ value: String) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a JSON string literal. Only `"`, `\\` and control characters are
    /// escaped, each as Foundation's `JSONEncoder` escapes it (so answers keep their bytes);
    /// every other byte of the UTF-8 text is copied as it is.
    package static func append(_ value: String, to output: inout [UInt8]) {
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
                case 0x08: output.append(contentsOf: #"\b"#.utf8)
                case 0x0C: output.append(contentsOf: #"\f"#.utf8)
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
