import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import WalletApple
import WalletCore
import WalletGoogle

/// What `wallet serve` needs beyond the store.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Verifies player tokens; nil when the server accepts API keys only.
    public var playerTokens: PlayerTokenVerifier?
    /// Redeems StoreKit 2 transactions; nil when no Apple bundle id is configured.
    public var applePurchases: ApplePurchases?
    /// Redeems Google Play purchases; nil when no package name and service account are configured.
    public var googlePurchases: GooglePurchases?
    /// Authenticates Pub/Sub pushes; nil when no push audience is configured.
    public var googlePush: (any GooglePushAuthenticating)?
    /// A connection that sends nothing for this long is closed: an idle keep-alive, or a request
    /// head or body left half-sent; so is one that stops reading its response for this long.
    /// (Idle connections and heads are cut sooner by `requestHeadTimeoutSeconds` when shorter.)
    public var idleTimeoutSeconds: Int64
    /// Connections open at once; beyond it new ones wait in the listen backlog, so idle
    /// clients cannot use up the process's file descriptors.
    public var connectionsMax: Int
    /// Connections open at once from one client address (IPv4-mapped IPv6 counts as IPv4); a
    /// new one beyond it is answered 503 and closed, so one client cannot fill `connectionsMax`.
    public var connectionsPerAddressMax: Int
    /// A connection that has not sent a complete request head this long after it opened, or
    /// after its last response, is closed: silent and trickling clients hold a slot for seconds.
    public var requestHeadTimeoutSeconds: Int64
    /// While more than 90% of `connectionsMax` is open, a keep-alive connection idle this long
    /// after its response is closed (when shorter than the request head timeout), keeping room
    /// for new clients.
    public var idleNearCapTimeoutSeconds: Int64
    /// Hosts webhooks may be sent to over plain HTTP and at private addresses (`--webhook-allow-host`).
    public var webhookAllowedHosts: Set<String> = []
    /// Tells responses that the server is shutting down; `wallet serve` runs it as a service.
    public var shutdown = ShutdownNotice()
    /// Records a span per request (`--otel-endpoint`); nil when traces are off.
    public var tracer: WalletTracer?

    public static let idleTimeoutSecondsDefault: Int64 = 30
    public static let connectionsMaxDefault = 512
    public static let connectionsPerAddressMaxDefault = 64
    public static let requestHeadTimeoutSecondsDefault: Int64 = 10
    public static let idleNearCapTimeoutSecondsDefault: Int64 = 1

    public init(
        host: String = "127.0.0.1", port: Int = 8080, playerTokens: PlayerTokenVerifier? = nil, applePurchases: ApplePurchases? = nil,
        idleTimeoutSeconds: Int64 = idleTimeoutSecondsDefault, connectionsMax: Int = connectionsMaxDefault,
        connectionsPerAddressMax: Int = connectionsPerAddressMaxDefault, requestHeadTimeoutSeconds: Int64 = requestHeadTimeoutSecondsDefault,
        idleNearCapTimeoutSeconds: Int64 = idleNearCapTimeoutSecondsDefault, googlePurchases: GooglePurchases? = nil,
        googlePush: (any GooglePushAuthenticating)? = nil
    ) {
        self.googlePurchases = googlePurchases
        self.googlePush = googlePush
        self.host = host
        self.port = port
        self.playerTokens = playerTokens
        self.applePurchases = applePurchases
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.connectionsMax = connectionsMax
        self.connectionsPerAddressMax = connectionsPerAddressMax
        self.requestHeadTimeoutSeconds = requestHeadTimeoutSeconds
        self.idleNearCapTimeoutSeconds = idleNearCapTimeoutSeconds
    }
}

/// Builds the router: middleware first (request id outermost, so even errors carry it; then the
/// request's span when traces are on, which records the id), then each controller's routes with
/// their access rules.
public func buildRouter(store: any LedgerStore, configuration: ServerConfiguration) -> (Router<WalletRequestContext>, RouteTable) {
    let router = Router(context: WalletRequestContext.self)
    let table = RouteTable()
    router.add(middleware: ShutdownMiddleware(notice: configuration.shutdown))
    router.add(middleware: RequestIDMiddleware())
    if let tracer = configuration.tracer { router.add(middleware: RequestSpanMiddleware(tracer: tracer)) }
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: ProblemMiddleware(routes: table))
    let routes = RouteRegistrar(router: router, authenticator: Authenticator(store: store, playerTokens: configuration.playerTokens), table: table)
    OperationsController(store: store).addRoutes(to: routes)
    ProductController(store: store).addRoutes(to: routes)
    PurchaseController(store: store, applePurchases: configuration.applePurchases).addRoutes(to: routes)
    GoogleController(google: configuration.googlePurchases, push: configuration.googlePush).addRoutes(to: routes)
    WalletController(store: store).addRoutes(to: routes)
    EntitlementController(store: store).addRoutes(to: routes)
    LedgerController(store: store).addRoutes(to: routes)
    EventController(store: store, allowedHosts: configuration.webhookAllowedHosts, shutdown: configuration.shutdown).addRoutes(to: routes)
    KeyController(store: store).addRoutes(to: routes)
    HoldController(store: store).addRoutes(to: routes)
    StaffController(store: store).addRoutes(to: routes)
    ConsoleController().addRoutes(to: router)
    return (router, table)
}

/// The wallet's HTTP application on `configuration.host:port`. Run it in a service group
/// followed by `configuration.shutdown`: SIGTERM or SIGINT then stops accepting connections,
/// lets in-flight requests finish, and their responses say `Connection: close`.
/// Each connection's handlers, in order: the per-address cap (so a refused connection's
/// request reaches nothing else), the request head deadline, the stalled reader's timeout.
/// `onServerRunning` hears of the listening channel (its port, when `configuration.port` is 0).
public func buildApplication(
    store: any LedgerStore, configuration: ServerConfiguration, logger: Logger, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let (router, _) = buildRouter(store: store, configuration: configuration)
    let counts = ConnectionCounts(
        connectionsMax: max(configuration.connectionsMax, 1), connectionsPerAddressMax: max(configuration.connectionsPerAddressMax, 1))
    return Application(
        router: router,
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    AddressCapHandler(counts: counts),
                    RequestHeadDeadlineHandler(
                        timeout: .seconds(configuration.requestHeadTimeoutSeconds), idleNearCapTimeout: .seconds(configuration.idleNearCapTimeoutSeconds),
                        counts: counts),
                    StalledReaderHandler(timeout: .seconds(configuration.idleTimeoutSeconds)),
                ],
                idleTimeout: .seconds(configuration.idleTimeoutSeconds))),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "CreditsWallet",
            availableConnectionsDelegate: CountedConnectionsDelegate(counts: counts)),
        onServerRunning: onServerRunning,
        logger: logger)
}
