import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import WalletApple
import WalletGoogle
import WalletCore
import WalletSQL
import WalletServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the JSON API on the ledger's database (SQLite or PostgreSQL).",
        discussion: """
            Listens on 127.0.0.1:8080 unless told otherwise. Requests authenticate with an API key \
            (wallet keys create) or, when a secret or a public key is configured, a player's JWT \
            (HS256 or ES256). SIGTERM or SIGINT stops accepting connections and finishes in-flight \
            requests within 20 s; past that (a database that does not answer), it exits with \
            status 1.

            Connections: at most --max-connections are open, at most --max-connections-per-address \
            of them from one client address (more from that address are answered 503 and closed), \
            and each must send a complete request head within --request-head-timeout seconds of \
            opening or of its last response. Behind a reverse proxy every client shares the \
            proxy's address, so raise the per-address cap to the total, for example:

              wallet serve --max-connections 1024 --max-connections-per-address 1024

            Example:
              WALLET_DB=/var/lib/wallet/wallet.sqlite wallet serve --host 0.0.0.0 \\
                --port 8080
            """
    )

    @OptionGroup(title: "Listening") var listening: ListeningOptions
    @OptionGroup(title: "Database") var database: DatabaseOptions
    @OptionGroup(title: "Database") var writing: WriteModeOptions
    @OptionGroup(title: "Players' tokens") var playerTokens: PlayerTokenOptions
    @OptionGroup(title: "Apple") var apple: AppleOptions
    @OptionGroup(title: "Google") var google: GoogleOptions
    @OptionGroup(title: "Google") var googlePush: GooglePushOptions
    @OptionGroup(title: "Background work") var background: BackgroundWorkOptions
    @OptionGroup(title: "Webhooks") var webhooks: WebhookOptions
    @OptionGroup(title: "Observability") var observability: ObservabilityOptions

    @Flag(help: "Print errors as JSON, as every command does.")
    var json = false

    func validate() throws {
        _ = try apple.accountTokenBinding()
        if try background.appleCatchUpMinutes() != nil, try apple.serverAPI() == nil {
            throw ValidationError("--apple-catch-up-every needs the App Store Server API key: --apple-issuer-id, --apple-key-id and --apple-private-key.")
        }
        if try googlePush.authentication() != nil, try google.api() == nil {
            throw ValidationError("--google-push-audience needs --google-package-name and --google-service-account: pushes name purchases the wallet asks Google about.")
        }
        if try background.googleCatchUpMinutes() != nil, try google.api() == nil {
            throw ValidationError("--google-catch-up-every needs --google-package-name and --google-service-account.")
        }
    }

    func run() async throws {
        let logLevel = try observability.resolvedLogLevel()
        try observability.resolvedLogFormat().bootstrap(level: logLevel)
        var logger = Logger(label: "wallet")
        logger.logLevel = logLevel
        let drainSeconds = try listening.resolvedDrainSeconds()
        // Off unless an endpoint is given: then the tracer is the process's (the group commit's
        // spans find it there) and the exporter runs as a service below.
        let traces = try observability.resolvedTraceSettings().map { settings in
            let exporter = OTLPExporter(settings: settings, drainSeconds: drainSeconds, logger: logger)
            let tracer = WalletTracer(exporter: exporter)
            TraceExportSettings.bootstrap(tracer)
            return (exporter: exporter, tracer: tracer)
        }
        let writeMode = writing.writeMode
        let store = try await database.openStore(writeMode: writeMode == .grouped ? .default : .single)
        let playerTokens = try self.playerTokens.verifier()
        let apple = try self.apple.purchases(ledger: store)
        let google = try self.google.purchases(ledger: store, binding: try self.apple.accountTokenBinding())
        let push = try googlePush.authentication()
        let limits = try listening.resolvedLimits()
        var configuration = ServerConfiguration(
            host: listening.resolvedHost, port: try listening.resolvedPort(), playerTokens: playerTokens, applePurchases: apple, idleTimeoutSeconds: limits.idleTimeoutSeconds,
            connectionsMax: limits.connectionsMax, connectionsPerAddressMax: limits.connectionsPerAddressMax,
            requestHeadTimeoutSeconds: limits.requestHeadTimeoutSeconds, googlePurchases: google, googlePush: push)
        configuration.webhookAllowedHosts = webhooks.allowedHosts
        configuration.tracer = traces?.tracer
        logger.info(
            "starting",
            metadata: [
                "database": .string(store.location), "address": .string("\(configuration.host):\(configuration.port)"),
                "durability": .string(database.durability.rawValue), "write_mode": .string(writeMode.rawValue),
                "player_tokens": .string(playerTokens?.algorithm ?? "off"),
                "apple_bundle_id": .string(apple?.verifier.configuration.bundleID ?? "not configured"),
                "apple_server_api": .string(apple?.api?.configuration.productionURL ?? "not configured"),
                "apple_consumption_replies": .string(apple?.verifier.configuration.consumptionReplies == nil ? "off" : "on"),
                "google_package_name": .string(google?.configuration.packageName ?? "not configured"),
                "google_push": .string(push == nil ? "off" : "on"),
                "webhook_allowed_hosts": .string(configuration.webhookAllowedHosts.sorted().joined(separator: ",")),
                "traces": .string(traces?.exporter.settings.endpointForLogs ?? "off"),
            ])
        let app = buildApplication(store: store, configuration: configuration, logger: logger)
        // Expired lots are booked every minute; the ledger's events are pushed to the webhook
        // endpoints; what talks to Apple and Google follows, when configured.
        var backgroundWork: [any Service] = [
            LotExpirySweep(store: store, logger: logger),
            WebhookSender(store: store, settings: WebhookDeliverySettings(allowedHosts: configuration.webhookAllowedHosts), logger: logger),
        ]
        if let apple, let api = apple.api {
            if apple.verifier.configuration.consumptionReplies != nil {
                backgroundWork.append(ConsumptionReplySender(outbox: store, api: api, logger: logger))
            }
            if let minutes = try background.appleCatchUpMinutes() {
                backgroundWork.append(AppleCatchUpService(purchases: apple, interval: .seconds(minutes * 60), logger: logger))
            }
        }
        if let google {
            // Every credited purchase is consumed on Google's side, or Google refunds it in three days.
            backgroundWork.append(GooglePurchaseFinisher(outbox: store, api: google.api, logger: logger))
            if let minutes = try background.googleCatchUpMinutes() {
                backgroundWork.append(GoogleCatchUpService(purchases: google, interval: .seconds(minutes * 60), logger: logger))
            }
        }
        // Shut down in reverse order: the deadline is set first, the notice hears of it, then the
        // application drains its requests (and with them the writer), then the background work
        // stops, the exporter sends the last spans, and the store closes its pool last.
        let exporting: [any Service] = traces.map { [$0.exporter] } ?? []
        let services = ServiceGroup(
            configuration: .init(
                services: [store] + exporting + backgroundWork + [app, configuration.shutdown, DrainDeadline(seconds: drainSeconds, logger: logger)], gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await services.run()
        logger.info("stopped")
    }
}

/// Bounds the drain that SIGTERM or SIGINT starts: requests waiting on a database that hangs
/// would otherwise keep the process alive until the database answers, or forever. Past
/// `seconds` (`--drain-seconds`), the process exits with status 1 and says so: the writes still waiting
/// were not answered, may or may not have committed, and their clients retry them with the
/// same idempotency key.
struct DrainDeadline: Service {
    /// How long the drain may take: in-flight requests finish in milliseconds when the database
    /// answers, or fail within the pool's connection wait (10 s) when it is gone.
    static let drainSecondsDefault = 20
    let seconds: Int
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        let (logger, seconds) = (self.logger, self.seconds)
        logger.info("draining", metadata: ["drain_seconds_max": "\(seconds)"])
        // A thread of its own: the deadline must fire even if the cooperative pool is busy.
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) {
            logger.error(
                "drain not finished; exiting with status 1",
                metadata: [
                    "drain_seconds_max": "\(seconds)",
                    "unanswered": "requests still waiting (for a database that does not answer) may or may not have committed; clients retry them with the same idempotency key",
                ])
            exit(1)
        }
    }
}

/// What `wallet serve` tells about itself: its logs, their level and format, and its traces.
struct ObservabilityOptions: ParsableArguments {
    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (env WALLET_LOG_LEVEL; default info).", valueName: "level"))
    var logLevel: String?

    @Option(help: ArgumentHelp("text (lines for people, the default) or json (one JSON object a line, for log shippers) (env WALLET_LOG_FORMAT).", valueName: "format"))
    var logFormat: LogFormat?

    @Option(
        name: .customLong("otel-endpoint"),
        help: ArgumentHelp(
            "Send traces to this OpenTelemetry collector over OTLP/HTTP with JSON bodies, such as http://127.0.0.1:4318: a span per request and per group-commit batch (env OTEL_EXPORTER_OTLP_ENDPOINT; default off). OTEL_SERVICE_NAME and OTEL_EXPORTER_OTLP_TIMEOUT apply; OTEL_EXPORTER_OTLP_PROTOCOL may only be http/json.",
            valueName: "url"))
    var otelEndpoint: String?

    func validate() throws {
        _ = try resolvedLogLevel()
        _ = try resolvedLogFormat()
        _ = try resolvedTraceSettings()
    }

    /// Where traces go, or nil when they are off.
    func resolvedTraceSettings() throws -> TraceExportSettings? {
        do {
            return try TraceExportSettings.resolve(endpointOption: otelEndpoint, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func resolvedLogFormat() throws -> LogFormat {
        if let logFormat { return logFormat }
        let text = ProcessInfo.processInfo.environment["WALLET_LOG_FORMAT"] ?? LogFormat.text.rawValue
        guard let format = LogFormat(rawValue: text) else {
            throw ValidationError("WALLET_LOG_FORMAT must be text or json, not '\(text.prefix(40))'.")
        }
        return format
    }

    func resolvedLogLevel() throws -> Logger.Level {
        let text = logLevel ?? ProcessInfo.processInfo.environment["WALLET_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: text) else {
            throw ValidationError("log level must be one of trace, debug, info, notice, warning, error, critical; not '\(text)'.")
        }
        return level
    }
}
