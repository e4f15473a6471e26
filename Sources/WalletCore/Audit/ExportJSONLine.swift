/// Reads one line of a JSON Lines export: a JSON object (RFC 8259) whose members become
/// `FieldValue`s. `metadata` is kept as the text the file holds — the canonical text that was
/// hashed — as a CSV cell keeps it, so a reformatted or edited metadata object is caught by
/// the hash. `JSONParser` reads it: fast (an export has a line per posting, millions of them)
/// and strict with hostile files.
package enum ExportJSONLine {
    package static func fields(_ line: [UInt8]) throws(WalletError) -> [String: FieldValue] {
        let parsed: [String: FieldValue]? = line.withUnsafeBufferPointer { bytes in
            var parser = JSONParser(bytes)
            guard let fields = try? parser.topLevelObject(), parser.atEnd() else { return nil }
            return fields
        }
        guard let parsed else { throw .invalidRequest("a line of the JSON Lines export is not a JSON object") }
        return parsed
    }
}

extension JSONParser {
    /// The members of the object the text is; `metadata` as its text.
    package mutating func topLevelObject() throws(Invalid) -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        try members { (parser: inout JSONParser, name: String) throws(Invalid) in
            if name == "metadata" {
                parser.skipWhitespace()
                let start = parser.index
                _ = try parser.value()
                let text = String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]), as: UTF8.self)
                guard fields.updateValue(text == "null" ? .json(.null) : .jsonText(text), forKey: name) == nil else { throw Invalid() }
            } else {
                guard fields.updateValue(.json(try parser.value()), forKey: name) == nil else { throw Invalid() }
            }
        }
        return fields
    }
}
