import CoreMetrics
import Foundation
import Hummingbird
import Prometheus
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
        Counter(label: "wallet_ledger_transactions_total", dimensions: [("kind", kind.rawValue)]).increment()
    }

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
        let dimensions = [
            ("route", context.endpointPath ?? "unmatched"), ("method", request.method.rawValue), ("status", String(response.status.code)),
        ]
        Counter(label: "wallet_http_requests_total", dimensions: dimensions).increment()
        CoreMetrics.Timer(label: "wallet_http_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
            .recordNanoseconds(Int64((ContinuousClock.now - started).inSeconds * 1e9))
        return response
    }
}
