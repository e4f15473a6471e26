import Crypto

/// Unambiguous bytes for hashing: each field is written with its length (or as absent), so no
/// two different field lists produce the same bytes. Used for the ledger's hash chain and for
/// idempotency request hashes — one encoding for both.
package struct CanonicalBytes {
    private(set) var bytes: [UInt8] = []

    package init() {
        bytes.reserveCapacity(512)
    }

    package mutating func append(_ text: String?) {
        guard let text else {
            bytes.append(0)
            return
        }
        bytes.append(1)
        appendLength(UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    package mutating func append(_ number: Int64?) {
        guard let number else {
            bytes.append(0)
            return
        }
        bytes.append(2)
        withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A transaction field's value: text and JSON text as text, integers as integers.
    package mutating func append(_ value: TransactionField.Value) {
        switch value {
        case .text(let text), .json(let text): append(text)
        case .integer(let integer): append(integer)
        }
    }

    private mutating func appendLength(_ length: UInt32) {
        withUnsafeBytes(of: length.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The SHA-256 of the bytes, as 64 lowercase hex digits.
    package func sha256Hex(prefixedBy prefix: [UInt8] = []) -> String {
        var hasher = SHA256()
        hasher.update(data: prefix)
        hasher.update(data: bytes)
        return Hex.encode(hasher.finalize())
    }
}

package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    package static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var characters: [UInt8] = []
        characters.reserveCapacity(64)
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// Decodes lowercase or uppercase hex; nil when `text` is not hex of even length.
    package static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = value(characters[index]), let low = value(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit, either case.
    package static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The audit hash chain of DESIGN.md: `hash = SHA-256(prev_hash || canonical transaction)`.
public enum HashChain {
    /// The `prev_hash` of `seq` 1.
    public static let genesis = String(repeating: "0", count: 64)

    /// The hash of `transaction` given the hash before it. Covers every stored field of the
    /// transaction (`TransactionField`, in order) and every posting (account, currency, amount,
    /// balance after), in order.
    public static func hash(of transaction: LedgerTransaction, previous: String) -> String {
        var canonical = CanonicalBytes()
        for field in TransactionField.allCases where field.isHashed {
            canonical.append(field.value(of: transaction))
        }
        canonical.append(Int64(transaction.postings.count))
        for posting in transaction.postings {
            canonical.append(posting.account)
            canonical.append(posting.currency)
            canonical.append(posting.amount)
            canonical.append(posting.balanceAfter)
        }
        // A malformed previous hash (only possible in a tampered database) still hashes
        // deterministically, and verify reports the broken link before it matters.
        let previousBytes = Hex.decode(previous) ?? Array(previous.utf8)
        return canonical.sha256Hex(prefixedBy: previousBytes)
    }
}
