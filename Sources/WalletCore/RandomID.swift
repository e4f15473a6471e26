import Foundation
import Synchronization

/// Random identifiers (transaction, hold and webhook ids, lease holders): never secrets, but
/// unguessable and unique, from a cryptographically secure source.
public enum RandomID {
    /// A random version 4 UUID in lowercase. (Foundation's `UUID()` opens and reads
    /// `/dev/urandom` on every call here, on every request.)
    public static func uuid() -> String {
        var (high, low) = randomBits.withLock { $0.next128() }
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

    /// Random bytes drawn 4,096 at a time and handed out 16 at a time. The writer makes an id
    /// for every transaction: drawn 8 bytes a call (`SystemRandomNumberGenerator`, a
    /// `getrandom` system call each), they took 1.7% of its samples in a profile of `wallet bench`.
    private static let randomBits = Mutex(RandomBits())
}

/// A buffer of the kernel's cryptographically secure random bytes, each handed out once: read
/// from `/dev/urandom` (opened once; the same generator as `getrandom`, which Swift does not
/// expose for more than 8 bytes a call), or 8 bytes at a time from
/// `SystemRandomNumberGenerator` where that file cannot be read.
struct RandomBits {
    private var bytes: [UInt8] = []
    private var offset = 0
    private let source: FileHandle?

    /// Draws from `source`, or from `SystemRandomNumberGenerator` when it is nil or reads short.
    init(source: FileHandle? = FileHandle(forReadingAtPath: "/dev/urandom")) {
        self.source = source
    }
    /// Bytes drawn at a time.
    private static let refillBytes = 4_096

    /// The next 16 bytes, as two integers.
    mutating func next128() -> (UInt64, UInt64) {
        if offset + 16 > bytes.count {
            bytes = refill()
            offset = 0
        }
        var (high, low): (UInt64, UInt64) = (0, 0)
        for index in 0..<8 {
            high = high << 8 | UInt64(bytes[offset + index])
            low = low << 8 | UInt64(bytes[offset + 8 + index])
        }
        offset += 16
        return (high, low)
    }

    private func refill() -> [UInt8] {
        if let data = try? source?.read(upToCount: Self.refillBytes), data.count == Self.refillBytes { return Array(data) }
        var generator = SystemRandomNumberGenerator()
        return (0..<Self.refillBytes / 8).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } }
    }
}
