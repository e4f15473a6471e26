import Foundation
import Logging
import ServiceLifecycle
import WalletCore

/// Sends the consumption replies the ledger queued (its outbox) to Apple: each until Apple
/// accepts it, refuses it as malformed, or its deadline (12 hours after Apple asked) passes.
/// Claims keep two instances from sending one reply at once; a restart takes up where the last
/// run stopped, since the outbox is in the ledger.
public struct ConsumptionReplySender: Service {
    let outbox: any ConsumptionReplyOutbox
    let api: AppStoreServerAPI
    let clock: @Sendable () -> Date
    let interval: Duration
    let logger: Logger

    /// Replies one pass claims at most.
    static let batchMax = 50
    /// How long a claimed reply is held by its sender: longer than its request's attempts can
    /// take (4 tries of 15 s, and 3 waits of at most 30 s).
    static let lease: Duration = .seconds(300)

    public init(outbox: any ConsumptionReplyOutbox, api: AppStoreServerAPI, clock: @escaping @Sendable () -> Date = { Date() }, interval: Duration = .seconds(5), logger: Logger) {
        self.outbox = outbox
        self.api = api
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// What one pass did, by the status each reply ended in.
    public struct Pass: Codable, Sendable, Equatable {
        public var sent = 0
        public var retrying = 0
        public var expired = 0
        public var failed = 0
    }

    /// Sends every reply due now (up to `batchMax`), once. Each is claimed on its own just before
    /// it is sent, so its lease (longer than one send's attempts can take) covers its send only.
    public func sendDue() async throws(WalletError) -> Pass {
        var pass = Pass()
        for _ in 0..<Self.batchMax {
            guard let reply = try await outbox.claimConsumptionReplies(at: clock(), limit: 1, lease: Self.lease).first else { break }
            let attempt = await send(reply)
            let finished = try await outbox.finishConsumptionReply(reply, attempt, at: clock())
            switch finished.status {
            case .sent: pass.sent += 1
            case .pending: pass.retrying += 1
            case .expired: pass.expired += 1
            case .failed: pass.failed += 1
            }
            if finished.status != .sent {
                logger.warning(
                    "consumption reply not accepted",
                    metadata: ["notification_uuid": .string(reply.notificationUUID), "status": .string(finished.status.rawValue), "error": .string(finished.lastError ?? "")])
            }
        }
        return pass
    }

    private func send(_ reply: ConsumptionReply) async -> ConsumptionReply.Attempt {
        // Apple takes no answer after its deadline: not sent, and recorded as expired.
        let now = clock()
        guard Timestamp.format(now) < reply.deadline else { return .failed(error: "the deadline passed before Apple accepted the answer", retryAt: now) }
        guard reply.store == "apple", let environment = AppleConfiguration.Environment(rawValue: reply.environment) else {
            return .refused(error: "not an App Store reply (\(reply.store), \(reply.environment))")
        }
        let information = ConsumptionInformation(
            customerConsented: true, deliveryStatus: reply.delivered ? "DELIVERED" : "UNDELIVERED_OTHER", sampleContentProvided: reply.sampleContentProvided,
            consumptionPercentage: reply.delivered ? reply.spentShareMillipercent ?? 0 : nil, refundPreference: reply.refundPreference)
        do {
            try await api.sendConsumption(transactionID: reply.storeTransactionID, environment: environment, information)
            return .sent
        } catch .invalidRequest(let detail, _), .notFound(let detail) {
            // Malformed, or about a transaction Apple does not know there: never accepted.
            return .refused(error: detail)
        } catch {
            return .failed(error: error.detail, retryAt: clock().addingTimeInterval(OutboxRetry.delay(afterAttempts: reply.attempts)))
        }
    }


    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                _ = try await sendDue()
            } catch {
                logger.error("consumption replies could not be sent", metadata: ["error": .string(error.detail)])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}

/// Applies the notifications Apple failed to deliver over a sliding window, now and then,
/// through the same path as live ones: a notification missed while the service was down arrives
/// late, not never. The window never reaches back further than `lookBack`, so a pass that keeps
/// failing cannot grow it without bound.
public struct AppleCatchUpService: Service {
    let purchases: ApplePurchases
    let interval: Duration
    /// How far back the first pass looks, and how much each pass overlaps the last.
    let lookBack: TimeInterval
    let logger: Logger

    public init(purchases: ApplePurchases, interval: Duration, lookBack: TimeInterval = 24 * 3_600, logger: Logger) {
        self.purchases = purchases
        self.interval = interval
        self.lookBack = lookBack
        self.logger = logger
    }

    public func run() async throws {
        var since = Date().addingTimeInterval(-lookBack)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let until = Date()
            since = max(since, until.addingTimeInterval(-lookBack))
            do {
                let report = try await purchases.catchUp(since: since, until: until, onlyFailures: true)
                if report.applied > 0 || !report.refused.isEmpty {
                    logger.notice(
                        "apple catch-up", metadata: ["applied": .stringConvertible(report.applied), "refused": .stringConvertible(report.refused.count)])
                }
                // Overlap the next window with this one: notifications are idempotent.
                since = until.addingTimeInterval(-min(lookBack, 3_600))
            } catch {
                logger.error("apple catch-up failed; the next pass covers this window again", metadata: ["error": .string(error.detail)])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
