/// A value a request carries, as a validation names it: the words a person reads in the error
/// (`reason code`) and, when the API carries the value in a body member or query parameter, that
/// member's name (`reason_code`), which the error carries as its `field` so that a client can show
/// it beside its input. A string literal names a value no request member carries (an actor).
public struct RequestField: Sendable, Equatable, ExpressibleByStringInterpolation {
    public let phrase: String
    public let member: String?

    public init(_ phrase: String, member: String?) {
        self.phrase = phrase
        self.member = member
    }

    public init(stringLiteral value: String) {
        self.init(value, member: nil)
    }

    /// A member whose name is also how messages name it (`amount`, `from`, `expires_at`).
    public static func member(_ name: String) -> RequestField { RequestField(name, member: name) }

    public static let idempotencyKey = RequestField("idempotency key", member: "idempotency_key")
    public static let storeTransactionID = RequestField("store transaction id", member: "store_transaction_id")
    public static let productID = RequestField("product id", member: "product_id")
    public static let reasonCode = RequestField("reason code", member: "reason_code")
    public static let playerID = RequestField("player id", member: "player_id")

    /// `invalidRequest` about this value.
    package func invalid(_ detail: String) -> WalletError { .invalidRequest(detail, field: member) }
}

/// Input checks shared by every request type, so the API and the CLI refuse the same things
/// with the same words. Each throws `WalletError.invalidRequest` naming the field, and carrying
/// its request member when it has one.
package enum Validate {
    /// A page's size: 1 to `Limits.pageSizeMax` (history, lots, notifications).
    package static func pageSize(_ limit: Int) throws(WalletError) {
        guard (1...Limits.pageSizeMax).contains(limit) else {
            throw .invalidRequest("limit must be between 1 and \(Limits.pageSizeMax)", field: "limit")
        }
    }

    /// An identifier: an idempotency key, a store transaction id or a product id; 1–255 bytes of
    /// visible ASCII.
    package static func asciiIdentifier(_ value: String, field: RequestField) throws(WalletError) {
        guard !value.isEmpty else { throw field.invalid("\(field.phrase) must not be empty") }
        guard value.utf8.count <= Limits.identifierBytesMax else {
            throw field.invalid("\(field.phrase) must be at most \(Limits.identifierBytesMax) characters")
        }
        guard value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw field.invalid("\(field.phrase) must be visible ASCII characters (no spaces)")
        }
    }

    /// A currency code: a lowercase letter, then up to 15 lowercase letters, digits or `_`.
    package static func currency(_ value: String) throws(WalletError) {
        try code(value, field: .member("currency"), bytesMax: Limits.currencyBytesMax, allowsHyphen: false)
    }

    /// A store name such as `apple` or `google_play`.
    package static func store(_ value: String) throws(WalletError) {
        try code(value, field: .member("store"), bytesMax: Limits.storeBytesMax, allowsHyphen: true)
    }

    /// An adjustment reason code such as `goodwill` or `chargeback`.
    package static func reasonCode(_ value: String) throws(WalletError) {
        try code(value, field: .reasonCode, bytesMax: Limits.reasonCodeBytesMax, allowsHyphen: false)
    }

    /// An amount one operation moves: 1 ... `Limits.amountPerOperationMax`.
    /// The share of a purchase a refund claims in all, in thousandths of a percent: 1 to
    /// `Limits.refundShareMax` (100%).
    package static func refundShare(_ value: Int64) throws(WalletError) {
        guard (1...Limits.refundShareMax).contains(value) else {
            throw .invalidRequest("the refunded share must be between 1 and \(Limits.refundShareMax) thousandths of a percent")
        }
    }

    package static func positiveAmount(_ value: Int64, field: RequestField = .member("amount")) throws(WalletError) {
        guard value >= 1 else { throw field.invalid("\(field.phrase) must be a positive whole number") }
        guard value <= Limits.amountPerOperationMax else {
            throw field.invalid("\(field.phrase) must be at most \(Limits.amountPerOperationMax)")
        }
    }

    /// Free text such as a note or a reason: not blank, bounded, no NUL or other control
    /// characters except newlines and tabs.
    package static func text(_ value: String, field: RequestField, bytesMax: Int) throws(WalletError) {
        guard value.utf8.count <= bytesMax else {
            throw field.invalid("\(field.phrase) must be at most \(bytesMax) bytes")
        }
        // Most text is printable ASCII with a letter in it: no need for Unicode properties.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), value.utf8.contains(where: { $0 != 0x20 }) { return }
        guard !value.allSatisfy(\.isWhitespace) else { throw field.invalid("\(field.phrase) must not be empty") }
        let allowed: Set<Unicode.Scalar> = ["\n", "\t", "\r"]
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !allowed.contains($0) })
        else { throw field.invalid("\(field.phrase) must not contain control characters") }
        try refuseFormatCharacters(value, field: field)
    }

    /// Refuses format characters (zero-width spaces, bidi overrides and isolates, ...), which
    /// hide or reorder text in a support tool; the zero-width joiner of emoji sequences stays.
    private static func refuseFormatCharacters(_ value: String, field: RequestField) throws(WalletError) {
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .format && $0 != "\u{200D}" }) else {
            throw field.invalid("\(field.phrase) must not contain invisible format characters (zero-width or bidi controls)")
        }
    }

    /// Text without whitespace or control characters, such as an id or a ticket reference.
    package static func visibleText(_ value: String, field: RequestField, bytesMax: Int) throws(WalletError) {
        guard !value.isEmpty else { throw field.invalid("\(field.phrase) must not be empty") }
        guard value.utf8.count <= bytesMax else {
            throw field.invalid("\(field.phrase) must be at most \(bytesMax) bytes")
        }
        // Visible ASCII needs no Unicode properties.
        if value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return }
        guard !value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else { throw field.invalid("\(field.phrase) must not contain spaces or control characters") }
        try refuseFormatCharacters(value, field: field)
    }

    private static func code(_ value: String, field: RequestField, bytesMax: Int, allowsHyphen: Bool) throws(WalletError) {
        let bytes = Array(value.utf8)
        let isLower = { (byte: UInt8) in byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard let first = bytes.first, isLower(first), bytes.count <= bytesMax,
            bytes.allSatisfy({ isLower($0) || isDigit($0) || $0 == UInt8(ascii: "_") || (allowsHyphen && $0 == UInt8(ascii: "-")) })
        else {
            let others = allowsHyphen ? "lowercase letters, digits, '_' or '-'" : "lowercase letters, digits or '_'"
            throw field.invalid("\(field.phrase) '\(value.prefix(40))' must start with a lowercase letter and hold at most \(bytesMax) \(others)")
        }
    }
}

