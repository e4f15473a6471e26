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
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var apple: AppleOptions
    @OptionGroup var google: GoogleOptions
    @OptionGroup var googlePush: GooglePushOptions

    @Option(help: ArgumentHelp("Address to listen on (env WALLET_HOST; default 127.0.0.1).", valueName: "address"))
    var host: String?

    @Option(help: ArgumentHelp("Port to listen on, 1 to 65535 (env WALLET_PORT; default 8080).", valueName: "port"))
    var port: Int?

    @Option(
        help: ArgumentHelp(
            "HS256 secret of player tokens, at least 32 bytes (env WALLET_PLAYER_JWT_SECRET). Visible in ps: prefer the environment or --player-jwt-secret-file.",
            valueName: "secret"))
    var playerJWTSecret: String?

    @Option(help: ArgumentHelp("File holding the HS256 secret of player tokens (env WALLET_PLAYER_JWT_SECRET_FILE); one trailing newline is ignored.", valueName: "path"))
    var playerJWTSecretFile: String?

    @Option(help: ArgumentHelp("Close a connection stalled mid-request or not reading its response this many seconds, 1 to 3600 (env WALLET_IDLE_TIMEOUT; default 30); an idle one goes after --request-head-timeout if that is shorter.", valueName: "seconds"))
    var idleTimeout: Int?

    @Option(help: ArgumentHelp("After SIGTERM or SIGINT, exit with status 1 if requests are still unanswered after this many seconds, 1 to 600 (env WALLET_DRAIN_SECONDS; default 20).", valueName: "seconds"))
    var drainSeconds: Int?

    @Option(help: ArgumentHelp("Connections open at once, 1 to 100000; more wait in the backlog (env WALLET_MAX_CONNECTIONS; default 512).", valueName: "count"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Connections open at once from one client address, 1 to 100000; more are answered 503 and closed (env WALLET_MAX_CONNECTIONS_PER_ADDRESS; default 64).",
            valueName: "count"))
    var maxConnectionsPerAddress: Int?

    @Option(
        help: ArgumentHelp(
            "Close a connection that has not sent a complete request head this many seconds after opening or after its last response, 1 to 3600 (env WALLET_REQUEST_HEAD_TIMEOUT; default 10).",
            valueName: "seconds"))
    var requestHeadTimeout: Int?

    @Option(
        help: ArgumentHelp(
            "PEM file with the P-256 public key of ES256 player tokens (env WALLET_PLAYER_JWT_PUBLIC_KEY); instead of a secret.",
            valueName: "path"))
    var playerJWTPublicKey: String?

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (env WALLET_LOG_LEVEL; default info).", valueName: "level"))
    var logLevel: String?

    @Option(help: ArgumentHelp("grouped (group commit, the default) or single (one commit per write: only to measure against).", valueName: "mode"))
    var writeMode: WriteModeArgument = .grouped

    @Option(help: ArgumentHelp("Catch up on App Store notifications every this many minutes, 1 to 1440 (Get Notification History over the last day, then overlapping windows); needs the App Store Server API key (env WALLET_APPLE_CATCH_UP_EVERY; default off).", valueName: "minutes"))
    var appleCatchUpEvery: Int?

    @Option(help: ArgumentHelp("Apply the voided purchases Google lists every this many minutes, 1 to 1440 (env WALLET_GOOGLE_CATCH_UP_EVERY; default off).", valueName: "minutes"))
    var googleCatchUpEvery: Int?

    @Option(
        help: ArgumentHelp(
            "A host webhooks may be sent to over plain HTTP and at a private or loopback address, such as 127.0.0.1 for a receiver on this machine (repeatable; env WALLET_WEBHOOK_ALLOW_HOSTS, comma-separated).",
            valueName: "host"))
    var webhookAllowHost: [String] = []

    /// The hosts allowed to receive webhooks over plain HTTP or at private addresses, lowercase.
    var resolvedWebhookAllowedHosts: Set<String> {
        let listed = webhookAllowHost.isEmpty ? (environment["WALLET_WEBHOOK_ALLOW_HOSTS"] ?? "").split(separator: ",").map(String.init) : webhookAllowHost
        return Set(listed.map(WebhookURL.allowedHost).filter { !$0.isEmpty })
    }

    enum WriteModeArgument: String, ExpressibleByArgument, CaseIterable {
        case grouped, single
    }

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    func validate() throws {
        _ = try resolvedPort()
        _ = try resolvedLimits()
        if resolvedHost.isEmpty { throw ValidationError("--host (or WALLET_HOST) must not be empty.") }
        _ = try resolvedLogLevel()
        _ = try playerTokens()
        _ = try apple.accountTokenBinding()
        if try resolvedCatchUpMinutes() != nil, try apple.serverAPI() == nil {
            throw ValidationError("--apple-catch-up-every needs the App Store Server API key: --apple-issuer-id, --apple-key-id and --apple-private-key.")
        }
        if try googlePush.authentication() != nil, try google.api() == nil {
            throw ValidationError("--google-push-audience needs --google-package-name and --google-service-account: pushes name purchases the wallet asks Google about.")
        }
        if try resolvedGoogleCatchUpMinutes() != nil, try google.api() == nil {
            throw ValidationError("--google-catch-up-every needs --google-package-name and --google-service-account.")
        }
    }

    func resolvedGoogleCatchUpMinutes() throws -> Int? {
        try Self.number(googleCatchUpEvery, environment["WALLET_GOOGLE_CATCH_UP_EVERY"], name: "--google-catch-up-every (or WALLET_GOOGLE_CATCH_UP_EVERY)", range: 1...1_440)
    }

    func resolvedDrainSeconds() throws -> Int {
        try Self.number(drainSeconds, environment["WALLET_DRAIN_SECONDS"], name: "--drain-seconds (or WALLET_DRAIN_SECONDS)", range: 1...600)
            ?? DrainDeadline.drainSecondsDefault
    }

    func resolvedCatchUpMinutes() throws -> Int? {
        try Self.number(appleCatchUpEvery, environment["WALLET_APPLE_CATCH_UP_EVERY"], name: "--apple-catch-up-every (or WALLET_APPLE_CATCH_UP_EVERY)", range: 1...1_440)
    }

    var resolvedHost: String { host ?? environment["WALLET_HOST"] ?? "127.0.0.1" }

    /// The player token verifier: HS256 with a secret, ES256 with a public key, or none.
    func playerTokens() throws -> PlayerTokenVerifier? {
        let secret = try playerJWTSecret ?? environment["WALLET_PLAYER_JWT_SECRET"] ?? secretFromFile()
        let publicKeyPath = playerJWTPublicKey ?? environment["WALLET_PLAYER_JWT_PUBLIC_KEY"]
        switch (secret, publicKeyPath) {
        case (nil, nil):
            return nil
        case (_?, _?):
            throw ValidationError("give a player JWT secret (HS256) or a public key (ES256), not both.")
        case (let secret?, nil):
            guard secret.utf8.count >= PlayerTokenVerifier.secretBytesMin else {
                throw ValidationError("--player-jwt-secret (or WALLET_PLAYER_JWT_SECRET) must be at least \(PlayerTokenVerifier.secretBytesMin) bytes.")
            }
            return try PlayerTokenVerifier(secret: secret)
        case (nil, let path?):
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read the player JWT public key file '\(path)'.")
            }
            do {
                return try PlayerTokenVerifier(publicKeyPEM: pem)
            } catch {
                throw ValidationError("'\(path)' holds no PEM-encoded P-256 public key (-----BEGIN PUBLIC KEY-----).")
            }
        }
    }

    /// The HS256 secret from `--player-jwt-secret-file` (or its environment variable), if given.
    private func secretFromFile() throws -> String? {
        guard let path = playerJWTSecretFile ?? environment["WALLET_PLAYER_JWT_SECRET_FILE"] else { return nil }
        // A regular file of at most 4 KiB: a typo such as /dev/zero must not be read forever.
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= 4_096,
            var text = try? String(contentsOfFile: path, encoding: .utf8)
        else {
            throw ValidationError("cannot read the player JWT secret file '\(path)': it must be a readable regular file of at most 4096 bytes of UTF-8.")
        }
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// The connection limits: timeouts and caps, from flags, environment or defaults.
    struct Limits {
        var idleTimeoutSeconds: Int64
        var connectionsMax: Int
        var connectionsPerAddressMax: Int
        var requestHeadTimeoutSeconds: Int64
    }

    func resolvedLimits() throws -> Limits {
        let idle = try Self.number(idleTimeout, environment["WALLET_IDLE_TIMEOUT"], name: "--idle-timeout (or WALLET_IDLE_TIMEOUT)", range: 1...3_600)
        let connections = try Self.number(maxConnections, environment["WALLET_MAX_CONNECTIONS"], name: "--max-connections (or WALLET_MAX_CONNECTIONS)", range: 1...100_000)
        let perAddress = try Self.number(
            maxConnectionsPerAddress, environment["WALLET_MAX_CONNECTIONS_PER_ADDRESS"], name: "--max-connections-per-address (or WALLET_MAX_CONNECTIONS_PER_ADDRESS)",
            range: 1...100_000)
        let head = try Self.number(
            requestHeadTimeout, environment["WALLET_REQUEST_HEAD_TIMEOUT"], name: "--request-head-timeout (or WALLET_REQUEST_HEAD_TIMEOUT)", range: 1...3_600)
        return Limits(
            idleTimeoutSeconds: Int64(idle ?? Int(ServerConfiguration.idleTimeoutSecondsDefault)),
            connectionsMax: connections ?? ServerConfiguration.connectionsMaxDefault,
            connectionsPerAddressMax: perAddress ?? ServerConfiguration.connectionsPerAddressMaxDefault,
            requestHeadTimeoutSeconds: Int64(head ?? Int(ServerConfiguration.requestHeadTimeoutSecondsDefault)))
    }

    /// A whole-number setting from its flag, else its environment variable, within `range`;
    /// nil when neither is given.
    private static func number(_ flag: Int?, _ variable: String?, name: String, range: ClosedRange<Int>) throws -> Int? {
        guard let value = try flag ?? variable.map({ text in
            guard let value = Int(text) else { throw ValidationError("\(name) must be a whole number, not '\(text.prefix(40))'.") }
            return value
        }) else { return nil }
        guard range.contains(value) else { throw ValidationError("\(name) must be from \(range.lowerBound) to \(range.upperBound), not \(value).") }
        return value
    }

    func resolvedPort() throws -> Int {
        try Self.number(port, environment["WALLET_PORT"], name: "--port (or WALLET_PORT)", range: 1...65_535) ?? 8080
    }

    func resolvedLogLevel() throws -> Logger.Level {
        let text = logLevel ?? environment["WALLET_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: text) else {
            throw ValidationError("log level must be one of trace, debug, info, notice, warning, error, critical; not '\(text)'.")
        }
        return level
    }

    func run() async throws {
        var logger = Logger(label: "wallet")
        logger.logLevel = try resolvedLogLevel()
        let store = try await options.openStore(writeMode: writeMode == .grouped ? .default : .single)
        let playerTokens = try playerTokens()
        let apple = try self.apple.purchases(ledger: store)
        let google = try self.google.purchases(ledger: store, binding: try self.apple.accountTokenBinding())
        let push = try googlePush.authentication()
        let limits = try resolvedLimits()
        let drainSeconds = try resolvedDrainSeconds()
        var configuration = ServerConfiguration(
            host: resolvedHost, port: try resolvedPort(), playerTokens: playerTokens, applePurchases: apple, idleTimeoutSeconds: limits.idleTimeoutSeconds,
            connectionsMax: limits.connectionsMax, connectionsPerAddressMax: limits.connectionsPerAddressMax,
            requestHeadTimeoutSeconds: limits.requestHeadTimeoutSeconds, googlePurchases: google, googlePush: push)
        configuration.webhookAllowedHosts = resolvedWebhookAllowedHosts
        logger.info(
            "starting",
            metadata: [
                "database": .string(store.location), "address": .string("\(configuration.host):\(configuration.port)"),
                "durability": .string(options.durability.rawValue), "write_mode": .string(writeMode.rawValue),
                "player_tokens": .string(playerTokens?.algorithm ?? "off"),
                "apple_bundle_id": .string(apple?.verifier.configuration.bundleID ?? "not configured"),
                "apple_server_api": .string(apple?.api?.configuration.productionURL ?? "not configured"),
                "apple_consumption_replies": .string(apple?.verifier.configuration.consumptionReplies == nil ? "off" : "on"),
                "google_package_name": .string(google?.configuration.packageName ?? "not configured"),
                "google_push": .string(push == nil ? "off" : "on"),
                "webhook_allowed_hosts": .string(configuration.webhookAllowedHosts.sorted().joined(separator: ",")),
            ])
        let app = buildApplication(store: store, configuration: configuration, logger: logger)
        // Expired lots are booked every minute; the ledger's events are pushed to the webhook
        // endpoints; what talks to Apple and Google follows, when configured.
        var background: [any Service] = [
            LotExpirySweep(store: store, logger: logger),
            WebhookSender(store: store, settings: WebhookDeliverySettings(allowedHosts: configuration.webhookAllowedHosts), logger: logger),
        ]
        if let apple, let api = apple.api {
            if apple.verifier.configuration.consumptionReplies != nil {
                background.append(ConsumptionReplySender(outbox: store, api: api, logger: logger))
            }
            if let minutes = try resolvedCatchUpMinutes() {
                background.append(AppleCatchUpService(purchases: apple, interval: .seconds(minutes * 60), logger: logger))
            }
        }
        if let google {
            // Every credited purchase is consumed on Google's side, or Google refunds it in three days.
            background.append(GooglePurchaseFinisher(outbox: store, api: google.api, logger: logger))
            if let minutes = try resolvedGoogleCatchUpMinutes() {
                background.append(GoogleCatchUpService(purchases: google, interval: .seconds(minutes * 60), logger: logger))
            }
        }
        // Shut down in reverse order: the deadline is set first, the notice hears of it, then the
        // application drains its requests (and with them the writer), then the background work
        // stops, and the store closes its pool last.
        let services = ServiceGroup(
            configuration: .init(
                services: [store] + background + [app, configuration.shutdown, DrainDeadline(seconds: drainSeconds, logger: logger)], gracefulShutdownSignals: [.sigterm, .sigint],
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
