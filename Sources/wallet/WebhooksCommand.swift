import ArgumentParser
import Foundation
import WalletCore
import WalletSQL

struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Manage the endpoints the ledger's events are pushed to.",
        discussion: """
            Each endpoint gets every event of its types committed after it was added, in seq order, at \
            least once, signed with its secret (Wallet-Signature: t=...,v1=...). A running `wallet serve` \
            delivers; these commands change what it delivers.

            Example:
              wallet webhooks add --url https://game.example.com/wallet-events \\
                --types refund.applied,purchase.credited
            """,
        subcommands: [Add.self, List.self, Disable.self, Enable.self, Rotate.self, Replay.self, Remove.self]
    )

    /// The endpoint a command acts on.
    struct EndpointID: ParsableArguments {
        @Argument(help: "The endpoint's id, as `wallet webhooks list` shows it.")
        var id: String
    }

    /// Changes one endpoint and prints it: as JSON with `--json`, else `summary` of it.
    static func change(
        _ options: GlobalOptions, _ body: @escaping (any LedgerDatabase) async throws -> WebhookEndpoint, summary: @escaping (WebhookEndpoint) -> String
    ) async throws {
        let endpoint = try await options.withStore(body)
        try Output.result(endpoint, json: options.json) { summary(endpoint) }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint and print its signing secret once.",
            discussion: """
                The URL is https:// (plain http:// and private addresses only to a host allowed with \
                --webhook-allow-host, as `wallet serve` allows them). Types: a comma-separated list, or * for all: \
                \(EventType.allCases.map(\.rawValue).joined(separator: ", ")).

                Example:
                  wallet webhooks add --url https://game.example.com/wallet-events \\
                    --types '*' --description "game backend"
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: ArgumentHelp("Where events are POSTed.", valueName: "url"))
        var url: String

        @Option(help: ArgumentHelp("Event types, comma-separated, or * for all.", valueName: "types"))
        var types: String

        @Option(help: ArgumentHelp("What the endpoint is for, at most 200 bytes.", valueName: "text"))
        var description: String?

        @Option(help: ArgumentHelp("A host that may be sent to over plain HTTP or at a private address (repeatable).", valueName: "host"))
        var webhookAllowHost: [String] = []

        func run() async throws {
            let request = WebhookEndpointRequest(url: url, types: try EventType.parseList(types), description: description)
            let created = try await options.withStore { ledger in
                try await ledger.createWebhook(request, allowedHosts: Set(webhookAllowHost.map(WebhookURL.allowedHost)))
            }
            try Output.result(created, json: options.json) {
                "Added webhook endpoint \(created.endpoint.id) for \(created.endpoint.typeNames.joined(separator: ", ")) at \(created.endpoint.url); "
                    + "it gets events after seq \(created.endpoint.cursorSeq). Its signing secret, shown only now:\n\(created.secret)"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the endpoints: status, how far delivery has come, the last error (never their secrets).",
            discussion: "Example:\n  wallet webhooks list --json")

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let endpoints = try await options.withStore { ledger in try await ledger.webhooks() }
            try Output.result(["webhooks": endpoints], json: options.json) {
                guard !endpoints.isEmpty else { return "No webhook endpoints. Add one with `wallet webhooks add`." }
                return endpoints.map { endpoint in
                    var line = "\(endpoint.id)\t\(endpoint.status.rawValue)\t\(endpoint.url)\t\(endpoint.typeNames.joined(separator: ","))"
                    line += "\tafter seq \(endpoint.cursorSeq)\tdelivered \(endpoint.delivered)"
                    if endpoint.attempts > 0 { line += "\t\(endpoint.attempts) failed attempts since \(endpoint.failingSince ?? "?"), next at \(endpoint.nextAttemptAt)" }
                    if let error = endpoint.lastError { line += "\tlast error: \(error)" }
                    return line
                }.joined(separator: "\n")
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop delivering to an endpoint; its events wait, and `enable` resumes where it stopped.",
            discussion: "Example:\n  wallet webhooks disable wh_0b5e4c1e-3f0e-4d55-9a43-2b1f1c0e7a10")

        @OptionGroup var options: GlobalOptions

        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            try await WebhooksCommand.change(options) { ledger in try await ledger.setWebhook(id: endpoint.id, enabled: false) } summary: {
                "Disabled \($0.id); its events wait after seq \($0.cursorSeq)."
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliver to a disabled or failing endpoint again, from where it stopped.",
            discussion: "Example:\n  wallet webhooks enable wh_0b5e4c1e-3f0e-4d55-9a43-2b1f1c0e7a10")

        @OptionGroup var options: GlobalOptions

        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            try await WebhooksCommand.change(options) { ledger in try await ledger.setWebhook(id: endpoint.id, enabled: true) } summary: {
                "Enabled \($0.id); delivery resumes after seq \($0.cursorSeq)."
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an endpoint a new signing secret; the old one keeps signing for 24 hours.",
            discussion: """
                Meanwhile every delivery carries both signatures (v1=...,v1=...), so the receiver can switch \
                to the new secret at any time in those 24 hours.

                Example:
                  wallet webhooks rotate wh_0b5e4c1e-3f0e-4d55-9a43-2b1f1c0e7a10
                """)

        @OptionGroup var options: GlobalOptions

        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            let rotated = try await options.withStore { ledger in try await ledger.rotateWebhookSecret(id: endpoint.id) }
            try Output.result(rotated, json: options.json) {
                "Rotated the secret of \(rotated.endpoint.id); the previous one signs too until \(rotated.endpoint.previousSecretExpiresAt ?? "?"). "
                    + "The new secret, shown only now:\n\(rotated.secret)"
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an endpoint every event of its types again, from a seq on.",
            discussion: """
                The receiver sees the same event ids again (and may drop the ones it has).

                Example:
                  wallet webhooks replay wh_0b5e4c1e-3f0e-4d55-9a43-2b1f1c0e7a10 \\
                    --from-seq 1200
                """)

        @OptionGroup var options: GlobalOptions

        @OptionGroup var endpoint: EndpointID

        @Option(help: ArgumentHelp("The first seq sent again.", valueName: "seq"))
        var fromSeq: Int64

        func run() async throws {
            try await WebhooksCommand.change(options) { ledger in try await ledger.replayWebhook(id: endpoint.id, fromSeq: fromSeq) } summary: {
                "\($0.id) gets every event of its types after seq \($0.cursorSeq) again" + ($0.status == .disabled ? " once enabled (it is disabled)." : ".")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a disabled endpoint (disable it first); its signing secret is gone with it.",
            discussion: "Disable it first (wallet webhooks disable).\n\nExample:\n  wallet webhooks remove wh_0b5e4c1e-3f0e-4d55-9a43-2b1f1c0e7a10")

        @OptionGroup var options: GlobalOptions

        @OptionGroup var endpoint: EndpointID

        func run() async throws {
            try await WebhooksCommand.change(options) { ledger in try await ledger.deleteWebhook(id: endpoint.id) } summary: {
                "Removed \($0.id) (\($0.url)); it had been sent the events up to seq \($0.cursorSeq)."
            }
        }
    }
}
