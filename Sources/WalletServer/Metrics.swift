import CoreMetrics
import Foundation
import Hummingbird
import Prometheus
import Synchronization
import WalletCore

/// The process's metrics, through swift-metrics into one Prometheus registry. The metrics
/// system can be bootstrapped once per process, so every application of the process (tests
/// build many) shares this registry.
public enum WalletMetrics {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// Counts a ledger transaction the API created (replays are not new transactions).
    static func recordTransaction(_ kind: TransactionKind) {
        transactionCounters[kind]?.increment()
    }

    /// One counter per kind, made once: making one looks it up in the registry under a lock.
    private static let transactionCounters: [TransactionKind: CoreMetrics.Counter] = {
        _ = registry
        return Dictionary(uniqueKeysWithValues: TransactionKind.allCases.map { kind in
            (kind, CoreMetrics.Counter(label: "wallet_ledger_transactions_total", dimensions: [("kind", kind.rawValue)]))
        })
    }()

    /// The Prometheus text exposition of every metric.
    static func exposition() -> ByteBuffer {
        ByteBuffer(bytes: registry.emitToBuffer())
    }
}

/// Request counts and latency by route, method and status.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext

    init() {
        _ = WalletMetrics.registry
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        let metrics = Self.metrics.of(route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: response.status.code)
        metrics.requests.increment()
        metrics.duration.recordNanoseconds(Int64((ContinuousClock.now - started).inSeconds * 1e9))
        return response
    }

    private static let metrics = RouteMetrics()
}

/// The request counter and timer of each route, method and status, made once each: making one
/// per request looked it up in the registry under a lock, with its dimensions built as strings.
/// At most `capacity` are kept (a client may send any method); beyond, each request makes its own.
final class RouteMetrics: Sendable {
    static let capacity = 1_024

    struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private let known = Mutex<[Key: (requests: CoreMetrics.Counter, duration: CoreMetrics.Timer)]>([:])

    func of(route: String, method: String, status: Int) -> (requests: CoreMetrics.Counter, duration: CoreMetrics.Timer) {
        let key = Key(route: route, method: method, status: status)
        if let found = known.withLock({ $0[key] }) { return found }
        let dimensions = [("route", route), ("method", method), ("status", String(status))]
        let made = (
            requests: CoreMetrics.Counter(label: "wallet_http_requests_total", dimensions: dimensions),
            duration: CoreMetrics.Timer(label: "wallet_http_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
        )
        known.withLock { known in
            if known.count < Self.capacity { known[key] = made }
        }
        return made
    }
}
