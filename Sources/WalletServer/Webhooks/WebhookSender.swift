import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import WalletCore
import WalletGoogle

/// How webhooks are delivered: the limits of one attempt and how often the sender looks for work.
public struct WebhookDeliverySettings: Sendable {
    /// Hosts that may be sent to over plain HTTP and at any address (`--webhook-allow-host`).
    public var allowedHosts: Set<String>
    /// One attempt (resolving the host, connecting, sending, and reading the answer) must end
    /// within this; anything but a 2xx within it is a failed attempt.
    public var timeout: Duration
    /// How often the sender looks for endpoints with events waiting.
    public var interval: Duration
    /// How long a claim on an endpoint lasts without progress: a sender that died holds it no longer.
    public var lease: Duration
    /// Endpoints delivered to at once; each is sent to by one task, so a slow one delays only itself.
    public var endpointsAtOnce: Int
    /// The most of an answer's body read (the rest is dropped).
    public var answerBytesMax: Int
    /// A number in 0..<1 for the retry's jitter.
    public var random: @Sendable () -> Double
    /// The time endpoints are due by: the store's clock (tests move both).
    public var clock: @Sendable () -> Date
    /// A host name's addresses: the system's resolver (tests stand in for DNS).
    public var resolve: @Sendable (String) async throws(WalletError) -> [NetworkAddress]

    public init(
        allowedHosts: Set<String> = [], timeout: Duration = .seconds(10), interval: Duration = .seconds(1), lease: Duration = .seconds(30),
        endpointsAtOnce: Int = 16, answerBytesMax: Int = 64 * 1_024, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        clock: @escaping @Sendable () -> Date = { Date() },
        resolve: @escaping @Sendable (String) async throws(WalletError) -> [NetworkAddress] = { host throws(WalletError) in try await WebhookTarget.resolve(host) }
    ) {
        self.clock = clock
        self.resolve = resolve
        self.allowedHosts = allowedHosts
        self.timeout = timeout
        self.interval = interval
        self.lease = lease
        self.endpointsAtOnce = endpointsAtOnce
        self.answerBytesMax = answerBytesMax
        self.random = random
    }
}

/// Delivers the ledger's events to the webhook endpoints: to each endpoint in seq order, one
/// event at a time, at least once (its cursor moves only once the endpoint answered 2xx). Each
/// endpoint is claimed in the database while it is sent to, so one instance at a time sends to
/// it; a claim that is not renewed lapses after `lease`, so a killed instance's endpoints are
/// taken up by the others (or by itself, restarted). Runs in `wallet serve`'s service group.
public final class WebhookSender: Service, Sendable {
    let store: any EventFeed & WebhookStore & LedgerAuditing
    let settings: WebhookDeliverySettings
    let logger: Logger
    /// This sender's name in claims: random per process.
    let holder: String
    /// The endpoints this process is sending to now.
    private let busy = Mutex<Set<String>>([])
    /// Endpoints this process leaves alone until then: their delivery stopped on a database error.
    private let paused = Mutex<[String: ContinuousClock.Instant]>([:])
    /// When the gauges were last recorded: every `gaugeInterval`, not every pass.
    private let gaugesRecorded = Mutex<ContinuousClock.Instant?>(nil)
    static let gaugeInterval: Duration = .seconds(10)

    public init(store: any EventFeed & WebhookStore & LedgerAuditing, settings: WebhookDeliverySettings, logger: Logger) {
        self.store = store
        self.settings = settings
        self.logger = logger
        holder = "sender-" + RandomID.uuid()
        _ = WalletMetrics.registry
    }

    /// What delivering to one endpoint did.
    public struct Outcome: Sendable, Equatable {
        public var delivered: Int64 = 0
        /// The attempt that failed, if one did (the endpoint then waits for its retry).
        public var failure: String?
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do throws(WalletError) {
                    for endpoint in try await dueEndpoints() where reserve(endpoint.id) {
                        group.addTask {
                            _ = await self.deliver(endpoint)
                            self.unreserve(endpoint.id)
                        }
                    }
                    try await recordGauges()
                } catch {
                    logger.error("webhook endpoints could not be read", metadata: ["error": .string(error.detail)])
                }
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.settings.interval) }
            }
        }
    }

    /// Delivers to every endpoint due now, at once, and waits until each is caught up or has
    /// failed an attempt: one pass, for tests and the CLI.
    public func deliverDue() async throws(WalletError) -> [String: Outcome] {
        let due = try await dueEndpoints().filter { reserve($0.id) }
        let outcomes = await withTaskGroup(of: (String, Outcome).self) { group in
            for endpoint in due {
                group.addTask {
                    let outcome = await self.deliver(endpoint)
                    self.unreserve(endpoint.id)
                    return (endpoint.id, outcome)
                }
            }
            var outcomes: [String: Outcome] = [:]
            for await (id, outcome) in group { outcomes[id] = outcome }
            return outcomes
        }
        try? await recordGauges(force: true)
        return outcomes
    }

    /// Active endpoints whose next attempt is due and that are behind the ledger's head,
    /// at most `endpointsAtOnce` less those being sent to.
    private func dueEndpoints() async throws(WalletError) -> [WebhookEndpoint] {
        let endpoints = try await store.webhooks()
        let now = Timestamp.format(settings.clock())
        let sending = busy.withLock { $0 }
        let instant = ContinuousClock.now
        let waiting = paused.withLock { paused in
            paused = paused.filter { $0.value > instant }
            return Set(paused.keys)
        }
        let candidates = endpoints.filter { $0.status == .active && $0.nextAttemptAt <= now && !sending.contains($0.id) && !waiting.contains($0.id) }
        guard !candidates.isEmpty else { return [] }
        // One read of the head for every endpoint: one behind it is due (if what it has not passed
        // yet is of other types, its delivery just moves its cursor on).
        let head = try await store.head().seq
        let due = candidates.filter { $0.cursorSeq < head }
        let room = max(0, settings.endpointsAtOnce - busy.withLock { $0.count })
        return Array(due.prefix(room))
    }

    private func reserve(_ id: String) -> Bool { busy.withLock { $0.insert(id).inserted } }
    private func unreserve(_ id: String) { _ = busy.withLock { $0.remove(id) } }

    /// Claims the endpoint and sends it every event after its cursor, in order, until it is caught
    /// up, an attempt fails, the claim is lost, or the process shuts down.
    func deliver(_ endpoint: WebhookEndpoint) async -> Outcome {
        var outcome = Outcome()
        var claim: WebhookClaim
        do {
            guard let claimed = try await store.claimWebhook(id: endpoint.id, holder: holder, lease: settings.lease) else { return outcome }
            claim = claimed
        } catch {
            logger.error("webhook endpoint could not be claimed", metadata: ["webhook_id": .string(endpoint.id), "error": .string(error.detail)])
            return outcome
        }
        var cursor = claim.endpoint.cursorSeq
        let client: HTTPClient
        do {
            client = try await WebhookTarget.client(
                for: claim.endpoint.url, allowedHosts: settings.allowedHosts, timeout: settings.timeout, resolve: settings.resolve)
        } catch {
            outcome.failure = error.detail
            await fail(claim, cursor: cursor, error: error.detail)
            return outcome
        }
        defer { client.shutdown { _ in } }
        var firstPage = true
        do throws(WalletError) {
            pages: while !Task.isShuttingDownGracefully && !Task.isCancelled {
                // Claimed again for each page after the first: the secrets of a rotation made
                // meanwhile sign from then on, and an endpoint disabled meanwhile stops here.
                if !firstPage {
                    guard let renewed = try await store.claimWebhook(id: claim.endpoint.id, holder: holder, lease: settings.lease) else { return outcome }
                    claim.secrets = renewed.secrets
                }
                firstPage = false
                let page = try await store.events(EventQuery(after: cursor, limit: 50, types: claim.endpoint.types))
                for event in page.events {
                    if Task.isShuttingDownGracefully || Task.isCancelled { break pages }
                    if let failure = await post(event, claim: claim, client: client) {
                        outcome.failure = failure
                        await fail(claim, cursor: cursor, error: failure)
                        return outcome
                    }
                    outcome.delivered += 1
                    Counter(label: "wallet_webhook_events_delivered_total", dimensions: [("endpoint", claim.endpoint.id)]).increment()
                    guard try await store.advanceWebhook(id: claim.endpoint.id, holder: holder, from: cursor, to: event.seq, delivered: 1, lease: settings.lease) else {
                        return outcome
                    }
                    cursor = event.seq
                }
                // Past the transactions of types the endpoint does not want, too.
                if page.next > cursor {
                    guard try await store.advanceWebhook(id: claim.endpoint.id, holder: holder, from: cursor, to: page.next, delivered: 0, lease: settings.lease) else {
                        return outcome
                    }
                    cursor = page.next
                } else if page.events.isEmpty {
                    break
                }
            }
            try await store.releaseWebhook(id: claim.endpoint.id, holder: holder)
        } catch {
            // The ledger's database failed: the claim lapses, and the event is sent again then.
            // This process leaves the endpoint alone as long, rather than sending the unrecorded
            // event again at every pass while the database does not answer.
            let until = ContinuousClock.now + settings.lease
            paused.withLock { $0[claim.endpoint.id] = until }
            logger.error("webhook delivery stopped", metadata: ["webhook_id": .string(claim.endpoint.id), "error": .string(error.detail)])
        }
        return outcome
    }

    private func fail(_ claim: WebhookClaim, cursor: Int64, error: String) async {
        Counter(label: "wallet_webhook_attempts_failed_total", dimensions: [("endpoint", claim.endpoint.id)]).increment()
        do {
            let endpoint = try await store.failWebhook(id: claim.endpoint.id, holder: holder, cursor: cursor, error: error, random: settings.random())
            // Each retry at notice: an endpoint that fails for three days retries about 70 times.
            // Its marking as failing is the error an operator is paged for.
            logger.notice(
                "webhook attempt failed",
                metadata: [
                    "webhook_id": .string(claim.endpoint.id), "error": .string(error), "attempts": .stringConvertible(endpoint?.attempts ?? 0),
                    "status": .string(endpoint?.status.rawValue ?? "claim lost"), "next_attempt_at": .string(endpoint?.nextAttemptAt ?? ""),
                ])
            if endpoint?.status == .failing {
                logger.error("webhook endpoint marked failing: every attempt failed for three days", metadata: ["webhook_id": .string(claim.endpoint.id)])
            }
        } catch {
            logger.error("a failed webhook attempt could not be recorded", metadata: ["webhook_id": .string(claim.endpoint.id), "error": .string(error.detail)])
        }
    }

    /// Sends one event; nil when the endpoint answered 2xx in time, else why not.
    private func post(_ event: LedgerEvent, claim: WebhookClaim, client: HTTPClient) async -> String? {
        let body: Data
        do {
            body = try WalletJSON.data(event, for: .staff)
        } catch {
            return error.detail
        }
        var request = HTTPClientRequest(url: claim.endpoint.url)
        request.method = .POST
        let timestamp = Int64(Date().timeIntervalSince1970)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "CreditsWallet-Webhooks")
        request.headers.add(name: "Wallet-Event-Id", value: event.id)
        request.headers.add(name: "Wallet-Event-Type", value: event.type.rawValue)
        request.headers.add(name: "Wallet-Signature", value: WebhookSignature.header(timestamp: timestamp, body: body, secrets: claim.secrets))
        request.body = .bytes(ByteBuffer(bytes: body))
        let (timeout, bytesMax, prepared) = (settings.timeout, settings.answerBytesMax, request)
        // One deadline over the whole attempt: the client's own deadline ends with the answer's
        // head, and a receiver that sends a head and then stalls must not hold the endpoint.
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(prepared, deadline: .now() + GoogleHTTP.timeAmount(timeout))
                    // Read a little of the answer, for the log; the rest is dropped with the connection.
                    var read = 0
                    var text = ""
                    for try await chunk in response.body {
                        if read < 300 { text += String(decoding: chunk.readableBytesView.prefix(300 - read), as: UTF8.self) }
                        read += chunk.readableBytes
                        if read >= bytesMax { break }
                    }
                    let status = Int(response.status.code)
                    if (200..<300).contains(status) { return nil }
                    if (300..<400).contains(status) { return "answered \(status) (redirects are not followed)" }
                    return "answered \(status): \(GoogleHTTP.quoted(text, charactersMax: 200))"
                } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                    return "no answer within \(timeout)"
                } catch {
                    return Task.isCancelled ? "no answer within \(timeout)" : "could not be reached: \(error)"
                }
            }
            // A second more than the client's deadline, so that a connection the client gave up on
            // is reported as the client saw it (refused, say), not as a timeout.
            group.addTask {
                try? await Task.sleep(for: timeout + .seconds(1))
                return "no answer within \(timeout)"
            }
            let first = await group.next() ?? "no answer within \(timeout)"
            group.cancelAll()
            return first
        }
    }

    /// The endpoints' state as gauges: by status, and per active endpoint the events waiting and
    /// the age of the oldest.
    private func recordGauges(force: Bool = false) async throws(WalletError) {
        let now = ContinuousClock.now
        let due = gaugesRecorded.withLock { last in
            guard force || last.map({ now - $0 >= Self.gaugeInterval }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        let backlogs = try await WebhookBacklogs.read(store)
        for status in WebhookEndpoint.Status.allCases {
            Gauge(label: "wallet_webhook_endpoints", dimensions: [("status", status.rawValue)]).record(backlogs.filter { $0.endpoint.status == status }.count)
        }
        let at = settings.clock()
        for (endpoint, backlog) in backlogs {
            Gauge(label: "wallet_webhook_events_queued", dimensions: [("endpoint", endpoint.id)]).record(backlog.count)
            let age = OutboxQueue.age(of: backlog.oldestCreatedAt, at: at) ?? 0
            Gauge(label: "wallet_webhook_oldest_undelivered_seconds", dimensions: [("endpoint", endpoint.id)]).record(age)
        }
    }

}
