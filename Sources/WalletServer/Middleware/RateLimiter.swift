import Foundation
import Synchronization

/// Counts requests per key in fixed windows: at most `limit` per `window` for each key. Used
/// where one caller's requests cost a shared allowance (StoreKit 1 receipts each page Apple's
/// transaction history, and Apple rate-limits the app, not the player). In memory, per instance.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    let limit: Int
    let window: TimeInterval
    /// Keys remembered at most; past it, expired windows are dropped (and if that is not enough,
    /// all of them: a flood of keys must not grow memory).
    let keysMax: Int
    private let windows = Mutex<[Key: (start: Date, count: Int)]>([:])

    init(limit: Int, window: TimeInterval, keysMax: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.keysMax = keysMax
    }

    /// Nil when `key` may go on now (and counts it); otherwise the seconds until it may.
    func wait(for key: Key, now: Date = Date()) -> Int? {
        windows.withLock { windows in
            if windows.count >= keysMax {
                windows = windows.filter { now.timeIntervalSince($0.value.start) < window }
                if windows.count >= keysMax { windows.removeAll() }
            }
            var entry = windows[key] ?? (now, 0)
            if now.timeIntervalSince(entry.start) >= window { entry = (now, 0) }
            guard entry.count < limit else {
                return max(1, Int((window - now.timeIntervalSince(entry.start)).rounded(.up)))
            }
            entry.count += 1
            windows[key] = entry
            return nil
        }
    }
}
