import Foundation
import Logging
import ServiceLifecycle
import WalletCore

/// Finishes on Google's side every purchase the wallet credited (the ledger's `purchase_finishes`
/// outbox, queued in each credit's own write), as its action says: consumes a consumable or a
/// pass, acknowledges a non-consumable; until Google takes it or answers that it was done
/// already. Neither consumed nor acknowledged, Google refunds a purchase after three days, and
/// an unconsumed one cannot be bought again. Claims keep two instances from sending one at once; a restart takes up
/// where the last run stopped, since the outbox is in the ledger.
public struct GooglePurchaseFinisher: Service {
    let outbox: any PurchaseFinishOutbox
    let api: any GooglePlayPurchasesAPI
    let clock: @Sendable () -> Date
    let interval: Duration
    let logger: Logger

    /// Purchases one pass consumes at most.
    static let batchMax = 50
    /// How long a claimed purchase is held by its sender: longer than a consume's attempts take.
    static let lease: Duration = .seconds(300)

    public init(
        outbox: any PurchaseFinishOutbox, api: any GooglePlayPurchasesAPI, clock: @escaping @Sendable () -> Date = { Date() }, interval: Duration = .seconds(5),
        logger: Logger
    ) {
        self.outbox = outbox
        self.api = api
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// What one pass did, by the status each purchase ended in.
    public struct Pass: Codable, Sendable, Equatable {
        public var consumed = 0
        /// Non-consumables acknowledged (never consumed).
        public var acknowledged = 0
        public var retrying = 0
        public var failed = 0
    }

    /// Consumes every purchase due now (up to `batchMax`), once, each claimed just before it is sent.
    public func consumeDue() async throws(WalletError) -> Pass {
        var pass = Pass()
        for _ in 0..<Self.batchMax {
            guard let finish = try await outbox.claimPurchaseFinishes(at: clock(), limit: 1, lease: Self.lease).first else { break }
            let attempt = await send(finish)
            let recorded = try await outbox.recordPurchaseFinish(finish, attempt, at: clock())
            switch recorded.status {
            case .done where recorded.action == .acknowledge: pass.acknowledged += 1
            case .done: pass.consumed += 1
            case .pending: pass.retrying += 1
            case .failed: pass.failed += 1
            }
            if recorded.status != .done {
                logger.warning(
                    "google purchase not finished",
                    metadata: [
                        "product_id": .string(finish.productID), "action": .string(finish.action.rawValue), "status": .string(recorded.status.rawValue),
                        "error": .string(recorded.lastError ?? ""),
                    ])
            }
        }
        return pass
    }

    /// Consumes or acknowledges the purchase, as its action says: never both, since a
    /// non-consumable consumed could be bought again.
    private func send(_ finish: PurchaseFinish) async -> PurchaseFinish.Attempt {
        guard finish.store == GooglePurchases.store else { return .refused(error: "not a Google Play purchase (\(finish.store))") }
        do {
            switch finish.action {
            case .consume: _ = try await api.consume(productID: finish.productID, purchaseToken: finish.storeTransactionID)
            case .acknowledge: _ = try await api.acknowledge(productID: finish.productID, purchaseToken: finish.storeTransactionID)
            }
            return .done
        } catch .notFound(let detail) {
            // Google no longer knows the purchase (voided and gone): sending again cannot help.
            return .refused(error: detail)
        } catch {
            return .failed(error: error.detail, retryAt: clock().addingTimeInterval(OutboxRetry.delay(afterAttempts: finish.attempts)))
        }
    }


    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                _ = try await consumeDue()
            } catch {
                logger.error("google purchases could not be consumed", metadata: ["error": .string(error.detail)])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}

/// Applies the voids Google lists, now and then, through the same path as live notifications: a
/// notification missed while the service was down is applied late, not never. Every instance
/// runs this; one at a time catches up (`GooglePurchases.catchUp` takes a lease), the others skip.
public struct GoogleCatchUpService: Service {
    let purchases: GooglePurchases
    let interval: Duration
    let logger: Logger

    public init(purchases: GooglePurchases, interval: Duration, logger: Logger) {
        self.purchases = purchases
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let report = try await purchases.catchUp(since: nil)
                if let skipped = report.skipped {
                    logger.info("google catch-up skipped", metadata: ["reason": .string(skipped)])
                } else if report.applied > 0 || !report.refused.isEmpty {
                    logger.notice("google catch-up", metadata: ["applied": .stringConvertible(report.applied), "refused": .stringConvertible(report.refused.count)])
                }
            } catch {
                logger.error("google catch-up failed; the next pass reads the voids again", metadata: ["error": .string(error.detail)])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
