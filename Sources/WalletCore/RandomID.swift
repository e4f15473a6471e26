/// Random identifiers: ledger transaction ids and request ids.
public enum RandomID {
    /// A random version 4 UUID in lowercase, from the system's random source. (Foundation's
    /// `UUID()` opens and reads `/dev/urandom` on every call here, on every request.)
    public static func uuid() -> String {
        var generator = SystemRandomNumberGenerator()
        var high = generator.next()
        var low = generator.next()
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
        var id = Array(Hex.encode(bytes).utf8)
        for index in [20, 16, 12, 8] { id.insert(UInt8(ascii: "-"), at: index) }
        return String(decoding: id, as: UTF8.self)
    }
}
