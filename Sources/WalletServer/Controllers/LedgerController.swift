import Hummingbird
import WalletCore

/// The auditors' routes: streamed exports, verification and the head hash.
struct LedgerController {
    let store: any LedgerAuditing & StaffReading
    let links = ExportLinks()

    func addRoutes(to routes: RouteRegistrar) {
        let auditors = Access.roles([.auditor, .admin])
        routes.add(.get, "/v1/ledger/export", access: auditors, handler: export)
        routes.add(.post, "/v1/ledger/export/links", access: auditors, handler: makeLink)
        // Open: the token in the path is the credential (made by an auditor's key, used once).
        routes.add(.get, "/v1/ledger/export/links/{token}", access: .open, handler: followLink)
        routes.add(.get, "/v1/ledger/verify", access: auditors, handler: verify)
        routes.add(.get, "/v1/ledger/head", access: auditors, handler: head)
        routes.add(.get, "/v1/ledger/volume", access: auditors, handler: volume)
    }

    /// Streams the export: each page is read from the snapshot only when the client has taken
    /// the previous one, so memory stays flat and a slow client slows only its own export.
    @Sendable func export(request: Request, context: WalletRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let format = try Self.format(query.get("format"))
        let playerID = try query.get("player").map { text throws(WalletError) in try PlayerID(text) }
        return try await stream(ExportQuery(from: query.get("from"), to: query.get("to"), playerID: playerID, currency: query.get("currency")), format: format)
    }

    static func format(_ text: String?) throws -> ExportFormat {
        guard let format = ExportFormat(rawValue: text ?? ExportFormat.csv.rawValue) else { throw APIError.invalidRequest("format must be csv or jsonl", field: "format") }
        return format
    }

    private func stream(_ query: ExportQuery, format: ExportFormat) async throws -> Response {
        let stream = try await store.export(query, format: format)
        let contentType = format == .csv ? "text/csv; charset=utf-8" : "application/jsonl"
        return Response(
            status: .ok,
            headers: [.contentType: contentType, .contentDisposition: "attachment; filename=\"ledger.\(format.rawValue)\"", .cacheControl: "no-store"],
            body: ResponseBody(asyncSequence: stream.map { ByteBuffer(bytes: $0.bytes) }))
    }

    struct LinkBody: StrictBody {
        var from: String?
        var to: String?
        var player: PlayerID?
        var currency: String?
        var format: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case from, to, player, currency, format
        }
    }

    struct LinkAnswer: Encodable {
        var url: String
        var expiresInSeconds: Int64

        enum CodingKeys: String, CodingKey {
            case url
            case expiresInSeconds = "expires_in_seconds"
        }
    }

    /// A one-time download link for an export, checked now (bad dates are refused here, not
    /// when the browser follows the link).
    @Sendable func makeLink(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(LinkBody.self, from: request)
        let query = ExportQuery(from: body.from, to: body.to, playerID: body.player, currency: body.currency)
        _ = try query.bounds()
        let token = try links.make(query, format: try Self.format(body.format), createdBy: try context.requireCaller().actor)
        return try JSONBody.response(
            LinkAnswer(url: "/v1/ledger/export/links/\(token)", expiresInSeconds: links.lifetime.components.seconds), for: context, status: .created,
            headers: [.cacheControl: "no-store"])
    }

    @Sendable func followLink(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let token = context.parameters.get("token"), let link = links.take(token) else {
            throw APIError.notFound("this export link is unknown, used or expired: ask for a new one")
        }
        context.log(.info, "export link followed", metadata: ["created_by": .string(link.createdBy)])
        return try await stream(link.query, format: link.format)
    }

    @Sendable func verify(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.verify(), for: context)
    }

    /// Daily volume by kind for a period (at most a year), for charts, with the period's totals
    /// per kind and its breakage, and the debt outstanding now.
    @Sendable func volume(request: Request, context: WalletRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        guard let from = query.get("from"), let to = query.get("to") else {
            throw APIError.invalidRequest("from and to are required (RFC 3339)", field: query.get("from") == nil ? "from" : "to")
        }
        let days = try await store.volume(VolumeQuery(from: from, to: to))
        return try JSONBody.response(VolumeReport(days: days, debt: try await store.outstandingDebt()), for: context)
    }

    @Sendable func head(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.head(), for: context)
    }
}
