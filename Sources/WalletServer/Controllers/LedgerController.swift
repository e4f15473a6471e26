import Hummingbird
import WalletCore

/// The auditors' routes: streamed exports, verification and the head hash.
struct LedgerController {
    let store: any LedgerAuditing

    func addRoutes(to routes: RouteRegistrar) {
        let auditors = Access.roles([.auditor, .admin])
        routes.add(.get, "/v1/ledger/export", access: auditors, handler: export)
        routes.add(.get, "/v1/ledger/verify", access: auditors, handler: verify)
        routes.add(.get, "/v1/ledger/head", access: auditors, handler: head)
    }

    /// Streams the export: each page is read from the snapshot only when the client has taken
    /// the previous one, so memory stays flat and a slow client slows only its own export.
    @Sendable func export(request: Request, context: WalletRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let formatText = query.get("format") ?? ExportFormat.csv.rawValue
        guard let format = ExportFormat(rawValue: formatText) else { throw APIError.invalidRequest("format must be csv or jsonl") }
        let stream = try await store.export(
            ExportQuery(from: query.get("from"), to: query.get("to"), playerID: query.get("player"), currency: query.get("currency")), format: format)
        let contentType = format == .csv ? "text/csv; charset=utf-8" : "application/jsonl"
        return Response(
            status: .ok, headers: [.contentType: contentType, .contentDisposition: "attachment; filename=\"ledger.\(format.rawValue)\""],
            body: ResponseBody(asyncSequence: stream.map { ByteBuffer(bytes: $0.bytes) }))
    }

    @Sendable func verify(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.verify(), for: context)
    }

    @Sendable func head(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.head(), for: context)
    }
}
