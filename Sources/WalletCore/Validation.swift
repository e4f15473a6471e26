/// Input checks shared by every request type, so the API and the CLI refuse the same things
/// with the same words. Each throws `WalletError.invalidRequest` naming the field.
package enum Validate {
    /// An identifier: an idempotency key, a store transaction id or a product id; 1–255 bytes of
    /// visible ASCII.
    package static func asciiIdentifier(_ value: String, field: String) throws(WalletError) {
        guard !value.isEmpty else { throw .invalidRequest("\(field) must not be empty") }
        guard value.utf8.count <= Limits.identifierBytesMax else {
            throw .invalidRequest("\(field) must be at most \(Limits.identifierBytesMax) characters")
        }
        guard value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw .invalidRequest("\(field) must be visible ASCII characters (no spaces)")
        }
    }

    /// A currency code: a lowercase letter, then up to 15 lowercase letters, digits or `_`.
    package static func currency(_ value: String) throws(WalletError) {
        try code(value, field: "currency", bytesMax: Limits.currencyBytesMax, allowsHyphen: false)
    }

    /// A store name such as `apple` or `google_play`.
    package static func store(_ value: String) throws(WalletError) {
        try code(value, field: "store", bytesMax: Limits.storeBytesMax, allowsHyphen: true)
    }

    /// An adjustment reason code such as `goodwill` or `chargeback`.
    package static func reasonCode(_ value: String) throws(WalletError) {
        try code(value, field: "reason code", bytesMax: Limits.reasonCodeBytesMax, allowsHyphen: false)
    }

    /// An amount one operation moves: 1 ... `Limits.amountPerOperationMax`.
    /// The share of a purchase a refund claims in all, in thousandths of a percent: 1 to
    /// `Limits.refundShareMax` (100%).
    package static func refundShare(_ value: Int64) throws(WalletError) {
        guard (1...Limits.refundShareMax).contains(value) else {
            throw .invalidRequest("the refunded share must be between 1 and \(Limits.refundShareMax) thousandths of a percent")
        }
    }

    package static func positiveAmount(_ value: Int64, field: String = "amount") throws(WalletError) {
        guard value >= 1 else { throw .invalidRequest("\(field) must be a positive whole number") }
        guard value <= Limits.amountPerOperationMax else {
            throw .invalidRequest("\(field) must be at most \(Limits.amountPerOperationMax)")
        }
    }

    /// Free text such as a note or a reason: not blank, bounded, no NUL or other control
    /// characters except newlines and tabs.
    package static func text(_ value: String, field: String, bytesMax: Int) throws(WalletError) {
        guard value.utf8.count <= bytesMax else {
            throw .invalidRequest("\(field) must be at most \(bytesMax) bytes")
        }
        // Most text is printable ASCII with a letter in it: no need for Unicode properties.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), value.utf8.contains(where: { $0 != 0x20 }) { return }
        guard !value.allSatisfy(\.isWhitespace) else { throw .invalidRequest("\(field) must not be empty") }
        let allowed: Set<Unicode.Scalar> = ["\n", "\t", "\r"]
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !allowed.contains($0) })
        else { throw .invalidRequest("\(field) must not contain control characters") }
        try refuseFormatCharacters(value, field: field)
    }

    /// Refuses format characters (zero-width spaces, bidi overrides and isolates, ...), which
    /// hide or reorder text in a support tool; the zero-width joiner of emoji sequences stays.
    private static func refuseFormatCharacters(_ value: String, field: String) throws(WalletError) {
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .format && $0 != "\u{200D}" }) else {
            throw .invalidRequest("\(field) must not contain invisible format characters (zero-width or bidi controls)")
        }
    }

    /// Text without whitespace or control characters, such as an id or a ticket reference.
    package static func visibleText(_ value: String, field: String, bytesMax: Int) throws(WalletError) {
        guard !value.isEmpty else { throw .invalidRequest("\(field) must not be empty") }
        guard value.utf8.count <= bytesMax else {
            throw .invalidRequest("\(field) must be at most \(bytesMax) bytes")
        }
        // Visible ASCII needs no Unicode properties.
        if value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return }
        guard !value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else { throw .invalidRequest("\(field) must not contain spaces or control characters") }
        try refuseFormatCharacters(value, field: field)
    }

    private static func code(_ value: String, field: String, bytesMax: Int, allowsHyphen: Bool) throws(WalletError) {
        let bytes = Array(value.utf8)
        let isLower = { (byte: UInt8) in byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard let first = bytes.first, isLower(first), bytes.count <= bytesMax,
            bytes.allSatisfy({ isLower($0) || isDigit($0) || $0 == UInt8(ascii: "_") || (allowsHyphen && $0 == UInt8(ascii: "-")) })
        else {
            let others = allowsHyphen ? "lowercase letters, digits, '_' or '-'" : "lowercase letters, digits or '_'"
            throw .invalidRequest("\(field) '\(value.prefix(40))' must start with a lowercase letter and hold at most \(bytesMax) \(others)")
        }
    }
}

