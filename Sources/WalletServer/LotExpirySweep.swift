import Logging
import ServiceLifecycle
import WalletCore

/// Books expired lots and releases expired holds in the background, every `interval`: bounded batches, each one write of
/// the group commit, until none is left. Debits do not wait for it (they book a wallet's own
/// expired lots first), but balances and exports show the breakage sooner.
public struct LotExpirySweep: Service {
    let store: any LedgerWriting
    let interval: Duration
    let logger: Logger

    /// Lots one write books at most.
    static let batchMax = 200

    public init(store: any LedgerWriting, interval: Duration = .seconds(60), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                var booked = 0
                while true {
                    let count = try await store.expireLots(limit: Self.batchMax)
                    booked += count
                    if count < Self.batchMax || Task.isShuttingDownGracefully { break }
                }
                var released = 0
                while true {
                    let count = try await store.expireHolds(limit: Self.batchMax)
                    released += count
                    if count < Self.batchMax || Task.isShuttingDownGracefully { break }
                }
                if booked > 0 || released > 0 {
                    logger.info("expiries booked", metadata: ["lots": .stringConvertible(booked), "holds": .stringConvertible(released)])
                }
            } catch {
                logger.error("expired lots could not be booked; the next pass tries again", metadata: ["error": .string(error.detail)])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
