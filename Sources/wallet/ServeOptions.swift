import ArgumentParser
import Foundation
import Logging
import WalletCore
import WalletServer

/// Where `wallet serve` listens and how it treats connections.
struct ListeningOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Address to listen on (env WALLET_HOST; default 127.0.0.1).", valueName: "address"))
    var host: String?

    @Option(help: ArgumentHelp("Port to listen on, 1 to 65535 (env WALLET_PORT; default 8080).", valueName: "port"))
    var port: Int?

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

    @Option(help: ArgumentHelp("Close a connection stalled mid-request or not reading its response this many seconds, 1 to 3600 (env WALLET_IDLE_TIMEOUT; default 30); an idle one goes after --request-head-timeout if that is shorter.", valueName: "seconds"))
    var idleTimeout: Int?

    @Option(help: ArgumentHelp("After SIGTERM or SIGINT, exit with status 1 if requests are still unanswered after this many seconds, 1 to 600 (env WALLET_DRAIN_SECONDS; default 20).", valueName: "seconds"))
    var drainSeconds: Int?

    var resolvedHost: String { host ?? ProcessInfo.processInfo.environment["WALLET_HOST"] ?? "127.0.0.1" }

    func resolvedPort() throws -> Int {
        try wholeNumberSetting(port, "WALLET_PORT", name: "--port (or WALLET_PORT)", range: 1...65_535) ?? 8080
    }

    func resolvedDrainSeconds() throws -> Int {
        try wholeNumberSetting(drainSeconds, "WALLET_DRAIN_SECONDS", name: "--drain-seconds (or WALLET_DRAIN_SECONDS)", range: 1...600)
            ?? DrainDeadline.drainSecondsDefault
    }

    /// The connection limits: timeouts and caps, from flags, environment or defaults.
    struct Limits {
        var idleTimeoutSeconds: Int64
        var connectionsMax: Int
        var connectionsPerAddressMax: Int
        var requestHeadTimeoutSeconds: Int64
    }

    func resolvedLimits() throws -> Limits {
        let idle = try wholeNumberSetting(idleTimeout, "WALLET_IDLE_TIMEOUT", name: "--idle-timeout (or WALLET_IDLE_TIMEOUT)", range: 1...3_600)
        let connections = try wholeNumberSetting(maxConnections, "WALLET_MAX_CONNECTIONS", name: "--max-connections (or WALLET_MAX_CONNECTIONS)", range: 1...100_000)
        let perAddress = try wholeNumberSetting(
            maxConnectionsPerAddress, "WALLET_MAX_CONNECTIONS_PER_ADDRESS", name: "--max-connections-per-address (or WALLET_MAX_CONNECTIONS_PER_ADDRESS)",
            range: 1...100_000)
        let head = try wholeNumberSetting(
            requestHeadTimeout, "WALLET_REQUEST_HEAD_TIMEOUT", name: "--request-head-timeout (or WALLET_REQUEST_HEAD_TIMEOUT)", range: 1...3_600)
        return Limits(
            idleTimeoutSeconds: Int64(idle ?? Int(ServerConfiguration.idleTimeoutSecondsDefault)),
            connectionsMax: connections ?? ServerConfiguration.connectionsMaxDefault,
            connectionsPerAddressMax: perAddress ?? ServerConfiguration.connectionsPerAddressMaxDefault,
            requestHeadTimeoutSeconds: Int64(head ?? Int(ServerConfiguration.requestHeadTimeoutSecondsDefault)))
    }

    func validate() throws {
        _ = try resolvedPort()
        _ = try resolvedLimits()
        _ = try resolvedDrainSeconds()
        if resolvedHost.isEmpty { throw ValidationError("--host (or WALLET_HOST) must not be empty.") }
    }
}

/// How `wallet serve` writes: grouped with the database options in its help.
struct WriteModeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("grouped (group commit, the default) or single (one commit per write: only to measure against).", valueName: "mode"))
    var writeMode: WriteModeArgument = .grouped

    enum WriteModeArgument: String, ExpressibleByArgument, CaseIterable {
        case grouped, single
    }
}

/// How players' tokens (JWTs the game's auth signs) are verified.
struct PlayerTokenOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "HS256 secret of player tokens, at least 32 bytes (env WALLET_PLAYER_JWT_SECRET). Visible in ps: prefer the environment or --player-jwt-secret-file.",
            valueName: "secret"))
    var playerJWTSecret: String?

    @Option(help: ArgumentHelp("File holding the HS256 secret of player tokens (env WALLET_PLAYER_JWT_SECRET_FILE); one trailing newline is ignored.", valueName: "path"))
    var playerJWTSecretFile: String?

    @Option(
        help: ArgumentHelp(
            "PEM file with the P-256 public key of ES256 player tokens (env WALLET_PLAYER_JWT_PUBLIC_KEY); instead of a secret.",
            valueName: "path"))
    var playerJWTPublicKey: String?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    func validate() throws {
        _ = try verifier()
    }

    /// The player token verifier: HS256 with a secret, ES256 with a public key, or none.
    func verifier() throws -> PlayerTokenVerifier? {
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
}

/// What `wallet serve` does on its own schedule, beside answering requests.
struct BackgroundWorkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Catch up on App Store notifications every this many minutes, 1 to 1440 (Get Notification History over the last day, then overlapping windows); needs the App Store Server API key (env WALLET_APPLE_CATCH_UP_EVERY; default off).", valueName: "minutes"))
    var appleCatchUpEvery: Int?

    @Option(help: ArgumentHelp("Apply the voided purchases Google lists every this many minutes, 1 to 1440 (env WALLET_GOOGLE_CATCH_UP_EVERY; default off).", valueName: "minutes"))
    var googleCatchUpEvery: Int?

    func appleCatchUpMinutes() throws -> Int? {
        try wholeNumberSetting(appleCatchUpEvery, "WALLET_APPLE_CATCH_UP_EVERY", name: "--apple-catch-up-every (or WALLET_APPLE_CATCH_UP_EVERY)", range: 1...1_440)
    }

    func googleCatchUpMinutes() throws -> Int? {
        try wholeNumberSetting(googleCatchUpEvery, "WALLET_GOOGLE_CATCH_UP_EVERY", name: "--google-catch-up-every (or WALLET_GOOGLE_CATCH_UP_EVERY)", range: 1...1_440)
    }
}

/// Where webhooks may go.
struct WebhookOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A host webhooks may be sent to over plain HTTP and at a private or loopback address, such as 127.0.0.1 for a receiver on this machine (repeatable; env WALLET_WEBHOOK_ALLOW_HOSTS, comma-separated).",
            valueName: "host"))
    var webhookAllowHost: [String] = []

    /// The hosts allowed to receive webhooks over plain HTTP or at private addresses, lowercase.
    var allowedHosts: Set<String> {
        let listed = webhookAllowHost.isEmpty ? (ProcessInfo.processInfo.environment["WALLET_WEBHOOK_ALLOW_HOSTS"] ?? "").split(separator: ",").map(String.init) : webhookAllowHost
        return Set(listed.map(WebhookURL.allowedHost).filter { !$0.isEmpty })
    }
}
