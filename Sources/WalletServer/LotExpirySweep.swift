import Logging
import ServiceLifecycle
import WalletCore

/// Releases expired holds and books expired lots in the background, every `interval`, in
/// bounded batches (`ExpirySweep`), each one write of the group commit. Debits do not wait for it (they book a wallet's own
/// expired lots first), but balances and exports show the breakage sooner.
public struct LotExpirySweep: Service {
    let store: any LedgerWriting
    let interval: Duration
    let logger: Logger

    public init(store: any LedgerWriting, interval: Duration = .seconds(60), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // Holds first: what they give back to a lot that has expired is booked with it.
                let released = try await ExpirySweep.all(stop: { Task.isShuttingDownGracefully }) { limit throws(WalletError) in try await store.expireHolds(limit: limit) }
                let booked = try await ExpirySweep.all(stop: { Task.isShuttingDownGracefully }) { limit throws(WalletError) in try await store.expireLots(limit: limit) }
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
