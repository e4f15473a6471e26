import HTTPTypes
import Hummingbird
import Tracing

/// A server span per request, named by its route template (`POST /v1/wallets/{player_id}/spend`),
/// with the request id as an attribute so that a trace leads to the request's log lines and back.
/// Only what the access log shows is recorded: the method, the route template (never the path,
/// which may carry an export link's token or a player id), the status and the request id. A
/// caller's `traceparent` continues its trace.
/// Added to the router only when traces are on: without it a request allocates nothing for traces.
struct RequestSpanMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext
    let tracer: WalletTracer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = InstrumentationContext.current ?? .topLevel
        tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let method = request.method.rawValue
        let span = tracer.startSpan(method, context: parent, ofKind: .server)
        var attributes: SpanAttributes = ["http.request.method": .string(method), "wallet.request_id": .string(context.requestID)]
        do {
            var response = try await InstrumentationContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            Self.finish(span, &attributes, route: context.endpointPath, method: method, status: Int(response.status.code))
            // The span ends once the body is written (or its writing failed): a streamed export's
            // span covers the stream.
            let body = response.body
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer { span.end() }
                try await body.write(writer)
            }
            return response
        } catch {
            Self.finish(span, &attributes, route: context.endpointPath, method: method, status: Int((error as? any HTTPResponseError)?.status.code ?? 500))
            span.recordError(error)
            span.end()
            throw error
        }
    }

    /// Names the span by its route once the router has matched one, and records the status; a
    /// server error (5xx) marks the span failed, a client's error (4xx) does not.
    private static func finish(_ span: WalletSpan, _ attributes: inout SpanAttributes, route: String?, method: String, status: Int) {
        if let route {
            span.operationName = "\(method) \(route)"
            attributes["http.route"] = route
        }
        attributes["http.response.status_code"] = status
        span.attributes = attributes
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads a header of a request for `Instrument.extract`.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from headers: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { headers.value($0) }
    }
}
