import Hummingbird
import Logging
import WalletCore

/// The feed of the ledger's events for game backends, and the webhook endpoints admins manage.
struct EventController {
    let store: any EventFeed & WebhookStore
    /// Hosts plain-HTTP and private-address webhooks may go to (`--webhook-allow-host`).
    let allowedHosts: Set<String>
    /// Ends long polls when the server shuts down, so the drain does not wait for them.
    let shutdown: ShutdownNotice
    /// How often a long poll looks for newer events.
    static let pollInterval: Duration = .milliseconds(200)

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.get, "/v1/events", access: .roles([.service, .auditor, .admin]), handler: events)
        let admins = Access.roles([.admin])
        routes.add(.get, "/v1/webhooks", access: admins, handler: list)
        routes.add(.post, "/v1/webhooks", access: admins, handler: create)
        routes.add(.get, "/v1/webhooks/{webhook_id}", access: admins, handler: show)
        routes.add(.delete, "/v1/webhooks/{webhook_id}", access: admins, handler: remove)
        routes.add(.post, "/v1/webhooks/{webhook_id}/disable", access: admins, handler: disable)
        routes.add(.post, "/v1/webhooks/{webhook_id}/enable", access: admins, handler: enable)
        routes.add(.post, "/v1/webhooks/{webhook_id}/rotate-secret", access: admins, handler: rotate)
        routes.add(.post, "/v1/webhooks/{webhook_id}/replay", access: admins, handler: replay)
    }

    /// A page of events after `after`; with `wait`, held until one commits or `wait` seconds pass
    /// (an empty page then, `next` unchanged).
    @Sendable func events(request: Request, context: WalletRequestContext) async throws -> Response {
        let parameters = request.uri.queryParameters
        let after = try QueryReader.integer(request, "after") ?? 0
        // Bounded before it becomes an Int: EventQuery checks the range once more.
        let limit = try QueryReader.integer(request, "limit").map { Int(clamping: $0) } ?? EventQuery.limitDefault
        let wait = try QueryReader.integer(request, "wait") ?? 0
        try EventQuery.validate(waitSeconds: wait)
        let types = try parameters.get("types").flatMap { text throws(WalletError) in try EventType.parseList(text) }
        var query = EventQuery(after: after, limit: limit, types: types)
        var page = try await store.events(query)
        let deadline = ContinuousClock.now + .seconds(wait)
        // Until an event of the asked types commits, or the wait ends: a page that only looked
        // through other types moves the cursor on and looks again at once; one that found nothing
        // new waits a little. A poll sees the commits of every instance on a shared database,
        // which a signal within this process would not.
        while page.events.isEmpty && ContinuousClock.now < deadline && !shutdown.isShuttingDown && !Task.isCancelled {
            if page.next == query.after { try? await Task.sleep(for: Self.pollInterval) }
            query.after = page.next
            page = try await store.events(query)
        }
        return try JSONBody.response(page, for: context, headers: [.cacheControl: "no-store"])
    }

    struct Endpoints: Encodable {
        var webhooks: [WebhookEndpoint]
    }

    @Sendable func list(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(Endpoints(webhooks: try await store.webhooks()), for: context)
    }

    struct EndpointBody: StrictBody {
        var url: String
        var types: [String]
        var description: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case url, types, description
        }
    }

    /// The endpoint with its secret, shown this once.
    @Sendable func create(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(EndpointBody.self, from: request)
        let types: Set<EventType>?
        do { types = try EventType.parse(body.types) } catch { throw error.about("types") }
        let created = try await store.createWebhook(WebhookEndpointRequest(url: body.url, types: types, description: body.description), allowedHosts: allowedHosts)
        log("webhook endpoint created", created.endpoint, context)
        return try JSONBody.response(created, for: context, status: .created, headers: [.cacheControl: "no-store"])
    }

    @Sendable func show(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(try await store.webhook(id: try Self.id(context)), for: context)
    }

    @Sendable func remove(request: Request, context: WalletRequestContext) async throws -> Response {
        let endpoint = try await store.deleteWebhook(id: try Self.id(context))
        log("webhook endpoint removed", endpoint, context)
        return try JSONBody.response(endpoint, for: context)
    }

    @Sendable func disable(request: Request, context: WalletRequestContext) async throws -> Response {
        let endpoint = try await store.setWebhook(id: try Self.id(context), enabled: false)
        log("webhook endpoint disabled", endpoint, context)
        return try JSONBody.response(endpoint, for: context)
    }

    @Sendable func enable(request: Request, context: WalletRequestContext) async throws -> Response {
        let endpoint = try await store.setWebhook(id: try Self.id(context), enabled: true)
        log("webhook endpoint enabled", endpoint, context)
        return try JSONBody.response(endpoint, for: context)
    }

    @Sendable func rotate(request: Request, context: WalletRequestContext) async throws -> Response {
        let rotated = try await store.rotateWebhookSecret(id: try Self.id(context))
        log("webhook secret rotated", rotated.endpoint, context)
        return try JSONBody.response(rotated, for: context, headers: [.cacheControl: "no-store"])
    }

    struct ReplayBody: StrictBody {
        var fromSeq: Int64

        enum CodingKeys: String, CodingKey, CaseIterable {
            case fromSeq = "from_seq"
        }
    }

    @Sendable func replay(request: Request, context: WalletRequestContext) async throws -> Response {
        let body = try await RequestBodyReader.decode(ReplayBody.self, from: request)
        let endpoint = try await store.replayWebhook(id: try Self.id(context), fromSeq: body.fromSeq)
        log("webhook replay", endpoint, context)
        return try JSONBody.response(endpoint, for: context)
    }

    private static func id(_ context: WalletRequestContext) throws -> String {
        guard let id = context.parameters.get("webhook_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the webhook id in the path is not valid percent-encoding")
        }
        return id
    }

    private func log(_ message: Logger.Message, _ endpoint: WebhookEndpoint, _ context: WalletRequestContext) {
        context.log(
            .notice, message,
            metadata: [
                "webhook_id": .string(endpoint.id), "status": .string(endpoint.status.rawValue), "cursor_seq": .stringConvertible(endpoint.cursorSeq),
                "by": .string((try? context.requireCaller().actor) ?? "?"),
            ])
    }
}
