import Foundation
import Synchronization

/// Transaction ids `…-000000000001`, `…-000000000002`, ... in order: with a fixed clock, two
/// ledgers built from the same operations can be compared hash for hash.
public final class SequentialIDs: Sendable {
    private let next = Mutex(0)

    public init() {}

    public func id() -> String {
        let value = next.withLock { value in
            value += 1
            return value
        }
        return String(format: "00000000-0000-4000-8000-%012d", value)
    }
}

/// A count shared by concurrent tasks (answers received, attempts made).
public final class Counter: Sendable {
    private let count = Mutex(0)

    public init() {}

    public var value: Int { count.withLock { $0 } }

    public func increment() { count.withLock { $0 += 1 } }
}
