import Hummingbird
import WalletCore

/// Open routes for operators and tools: liveness, readiness, metrics and the API description.
struct OperationsController {
    let store: any ReadinessCheck

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.get, "/healthz", access: .open, handler: health)
        routes.add(.get, "/readyz", access: .open, handler: ready)
        routes.add(.get, "/metrics", access: .open, handler: metrics)
        routes.add(.get, "/openapi.json", access: .open, handler: openAPI)
    }

    struct Status: Encodable {
        var status: String
    }

    @Sendable func health(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(Status(status: "ok"), for: context)
    }

    /// Ready when the database answers a read; 503 otherwise, so a balancer stops sending traffic.
    @Sendable func ready(request: Request, context: WalletRequestContext) async throws -> Response {
        try await store.checkReadiness()
        return try JSONBody.response(Status(status: "ready"), for: context)
    }

    @Sendable func metrics(request: Request, context: WalletRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: .init(byteBuffer: WalletMetrics.exposition()))
    }

    @Sendable func openAPI(request: Request, context: WalletRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.bytes)))
    }
}
