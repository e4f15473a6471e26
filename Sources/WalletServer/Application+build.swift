import Hummingbird
import HummingbirdCore
import Logging
import WalletApple
import WalletCore

/// What `wallet serve` needs beyond the store.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Verifies player tokens; nil when the server accepts API keys only.
    public var playerTokens: PlayerTokenVerifier?
    /// Redeems StoreKit 2 transactions; nil when no Apple bundle id is configured.
    public var applePurchases: ApplePurchases?
    /// A connection that sends nothing for this long is closed: an idle keep-alive, or a request
    /// head or body left half-sent; so is one that stops reading its response for this long.
    public var idleTimeoutSeconds: Int64
    /// Connections open at once; beyond it new ones wait in the listen backlog, so idle
    /// clients cannot use up the process's file descriptors.
    public var connectionsMax: Int
    /// Tells responses that the server is shutting down; `wallet serve` runs it as a service.
    public var shutdown = ShutdownNotice()

    public static let idleTimeoutSecondsDefault: Int64 = 30
    public static let connectionsMaxDefault = 512

    public init(
        host: String = "127.0.0.1", port: Int = 8080, playerTokens: PlayerTokenVerifier? = nil, applePurchases: ApplePurchases? = nil,
        idleTimeoutSeconds: Int64 = idleTimeoutSecondsDefault, connectionsMax: Int = connectionsMaxDefault
    ) {
        self.host = host
        self.port = port
        self.playerTokens = playerTokens
        self.applePurchases = applePurchases
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.connectionsMax = connectionsMax
    }
}

/// Builds the router: middleware first (request id outermost, so even errors carry it), then
/// each controller's routes with their access rules.
public func buildRouter(store: any LedgerStore, configuration: ServerConfiguration) -> (Router<WalletRequestContext>, RouteTable) {
    let router = Router(context: WalletRequestContext.self)
    let table = RouteTable()
    router.add(middleware: ShutdownMiddleware(notice: configuration.shutdown))
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: ProblemMiddleware(routes: table))
    let routes = RouteRegistrar(router: router, authenticator: Authenticator(store: store, playerTokens: configuration.playerTokens), table: table)
    OperationsController(store: store).addRoutes(to: routes)
    ProductController(store: store).addRoutes(to: routes)
    PurchaseController(store: store, applePurchases: configuration.applePurchases).addRoutes(to: routes)
    WalletController(store: store).addRoutes(to: routes)
    LedgerController(store: store).addRoutes(to: routes)
    KeyController(store: store).addRoutes(to: routes)
    HoldController(store: store).addRoutes(to: routes)
    ConsoleController().addRoutes(to: router)
    return (router, table)
}

/// The wallet's HTTP application on `configuration.host:port`. Run it in a service group
/// followed by `configuration.shutdown`: SIGTERM or SIGINT then stops accepting connections,
/// lets in-flight requests finish, and their responses say `Connection: close`.
public func buildApplication(store: any LedgerStore, configuration: ServerConfiguration, logger: Logger) -> some ApplicationProtocol {
    let (router, _) = buildRouter(store: store, configuration: configuration)
    return Application(
        router: router,
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [StalledReaderHandler(timeout: .seconds(configuration.idleTimeoutSeconds))],
                idleTimeout: .seconds(configuration.idleTimeoutSeconds))),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "CreditsWallet",
            availableConnectionsDelegate: MaximumAvailableConnections(configuration.connectionsMax, logger: logger)),
        logger: logger)
}
