/// Writes JSON straight into bytes, as the export does (`JSONText`), for the answers the API
/// sends most: Foundation's `JSONEncoder` took a tenth of the server's CPU writing a spend's
/// answer (issue 28). A value that conforms (`JSONWritable`) writes exactly the bytes
/// `WalletJSON.data` gives for it: members in sorted key order, the same escapes, absent optionals
/// left out; `JSONWriterTests` compares both on hostile values.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    public let audience: Audience
    /// Whether the next value needs a comma before it (not after `{`, `[` or a key).
    private var separated = false

    public init(for audience: Audience, capacity: Int = 1_024) {
        self.audience = audience
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if separated { bytes.append(UInt8(ascii: ",")) }
        separated = true
    }

    /// An object whose members `members` writes; what it throws (a rare member's encoding)
    /// passes through, the answer then abandoned.
    public mutating func object<Failure: Error>(_ members: (inout JSONWriter) throws(Failure) -> Void) throws(Failure) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        separated = false
        try members(&self)
        bytes.append(UInt8(ascii: "}"))
        separated = true
    }

    public mutating func array<Element, Failure: Error>(
        _ elements: some Sequence<Element>, _ element: (inout JSONWriter, Element) throws(Failure) -> Void
    ) throws(Failure) {
        separate()
        bytes.append(UInt8(ascii: "["))
        separated = false
        for value in elements { try element(&self, value) }
        bytes.append(UInt8(ascii: "]"))
        separated = true
    }

    /// A member's name; its value is written next.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: #"":"#.utf8)
        separated = false
    }

    public mutating func string(_ value: String) {
        separate()
        JSONText.append(value, to: &bytes)
    }

    public mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    /// A value this writer does not know, encoded by `WalletJSON` (rare members: metadata,
    /// an entitlement), whose bytes are the same inside an object as alone.
    public mutating func encoded(_ value: some Encodable) throws(WalletError) {
        separate()
        bytes.append(contentsOf: try WalletJSON.data(value, for: audience))
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    public mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        member(name, value)
    }

    public mutating func member(_ name: StaticString, _ value: Int64) {
        key(name)
        integer(value)
    }

    public mutating func member(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        member(name, value)
    }

    /// A `[String: Int64]` as an object, its keys sorted as `JSONEncoder` sorts them.
    public mutating func member(_ name: StaticString, _ value: [String: Int64]) {
        key(name)
        object { writer in
            for (key, amount) in value.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                writer.separate()
                JSONText.append(key, to: &writer.bytes)
                writer.bytes.append(UInt8(ascii: ":"))
                writer.separated = false
                writer.integer(amount)
            }
        }
    }
}

/// A value that writes its own JSON (`JSONWriter`), byte for byte what `WalletJSON.data` gives.
public protocol JSONWritable: Encodable {
    func write(to writer: inout JSONWriter) throws(WalletError)
}

extension WalletJSON {
    /// The JSON bytes of `value`: written straight into bytes when it can (`JSONWritable`),
    /// through `JSONEncoder` otherwise. Either way the same bytes.
    public static func bytes<Value: Encodable>(_ value: Value, for audience: Audience = .staff) throws(WalletError) -> [UInt8] {
        if let writable = value as? any JSONWritable {
            var writer = JSONWriter(for: audience)
            try writable.write(to: &writer)
            return writer.bytes
        }
        return Array(try data(value, for: audience))
    }
}

extension Posting: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.member("account", account)
            writer.member("amount", amount)
            writer.member("balance_after", balanceAfter)
            writer.member("currency", currency)
        }
    }
}

extension LedgerTransaction: JSONWritable {
    /// The members of `encode(to:)`, for the same audience, in sorted key order.
    public func write(to writer: inout JSONWriter) throws(WalletError) {
        let audience = writer.audience
        let staff = audience == .staff
        let ownKey = showsKeyAndNote(to: audience)
        try writer.object { (writer: inout JSONWriter) throws(WalletError) in
            if staff { writer.member("actor", actor) }
            writer.member("amount", amount)
            writer.member("created_at", createdAt)
            writer.member("currency", currency)
            if staff { writer.member("hash", hash) }
            writer.member("id", id)
            if ownKey { writer.member("idempotency_key", idempotencyKey) }
            writer.member("kind", kind.rawValue)
            if let shown = metadata(for: audience) {
                writer.key("metadata")
                try writer.encoded(shown)
            }
            if ownKey { writer.member("note", note) }
            writer.member("player_id", playerID)
            writer.key("postings")
            writer.array(postings(for: audience)) { writer, posting in posting.write(to: &writer) }
            if staff { writer.member("prev_hash", prevHash) }
            writer.member("product_id", productID)
            writer.member("quantity", quantity)
            if staff { writer.member("reason_code", reasonCode) }
            writer.member("refund_of_seq", refundOfSeq)
            writer.member("seq", seq)
            writer.member("store", store)
            writer.member("store_transaction_id", storeTransactionID)
            if staff { writer.member("ticket", ticket) }
            writer.member("uncollected", uncollected)
        }
    }
}

extension WalletBalances: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.member("balances", balances)
            writer.member("expiring_within_7_days", expiringWithin7Days)
            writer.member("held", held)
            writer.member("player_id", playerID)
        }
    }
}

extension HistoryPage: JSONWritable {
    public func write(to writer: inout JSONWriter) throws(WalletError) {
        try writer.object { (writer: inout JSONWriter) throws(WalletError) in
            writer.member("next", next)
            writer.key("transactions")
            try writer.array(transactions) { (writer: inout JSONWriter, transaction: LedgerTransaction) throws(WalletError) in
                try transaction.write(to: &writer)
            }
        }
    }
}
