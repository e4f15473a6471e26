import Foundation
import Synchronization
import Testing

/// At most `Throttle.width` test cases of the process run at once; the rest wait their turn.
///
/// Swift Testing starts every test case of the process together (about 1,500 here), and they share
/// the few threads of the concurrency pool: two on a two-core machine, with every store, stand-in
/// server and PostgreSQL connection pool of the process. Unthrottled, a job waited 1 to 3 s for one
/// of those threads in a full run, and a lease of a PostgreSQL connection, which takes several such
/// hops, overran its 10 s wait: dozens of PostgreSQL tests then failed together with "no connection
/// to PostgreSQL within 10 s". Eight test cases per core kept a job's longest wait at 1.5 s in a
/// full run, and made the run shorter (295 s, not 420 s): most test cases spend their time waiting
/// for a child process, a server or a timeout. Every suite carries `.throttled`.
public struct Throttle: SuiteTrait, TestTrait, TestScoping {
    /// How many test cases run at once.
    public static let width = 8 * max(1, ProcessInfo.processInfo.activeProcessorCount)

    public var isRecursive: Bool { true }

    /// Only around a test case: a suite only groups its tests.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // A nested suite carries the trait too: its test cases take one place, not two.
        if Self.holding {
            try await function()
            return
        }
        await Self.places.acquire()
        defer { Self.places.release() }
        try await Self.$holding.withValue(true) { try await function() }
    }

    @TaskLocal private static var holding = false
    private static let places = Places(Self.width)
}

extension Trait where Self == Throttle {
    /// Runs the suite's test cases within the process's limit (`Throttle.width`).
    public static var throttled: Self { Throttle() }
}

/// A counting semaphore for tasks: `acquire` waits, first come first served, for a free place.
private final class Places: Sendable {
    private let state: Mutex<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) {
        state = Mutex((free: count, waiting: []))
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Hands the place to the first waiting task, or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
