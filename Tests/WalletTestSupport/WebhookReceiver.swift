import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import WalletCore

/// A game backend's webhook receiver on 127.0.0.1, as the tests need one: it checks each
/// delivery's signature against the secrets it is given, records what arrived in order, and
/// answers as scripted (an error status, a hang past the sender's timeout, a redirect). It can
/// be stopped (killed: connections are refused) and started again on the same port.
public final class WebhookReceiver: Sendable {
    public enum Answer: Sendable, Equatable {
        case status(Int)
        /// Answers 200 only after this long: past the sender's timeout, it counts as no answer.
        case hang(Duration)
        /// 302 to this URL.
        case redirect(String)
        /// 200 with a 10-byte body announced, then nothing for this long: a head, then a stall.
        case stallAfterHead(Duration)
    }

    /// One delivery as it arrived.
    public struct Delivery: Sendable {
        public var eventID: String
        public var eventType: String
        public var seq: Int64
        public var path: String
        public var signature: String
        public var body: Data
        /// Which of the receiver's secrets verify the signature.
        public var verifiedWith: [String]
        /// What the receiver answered.
        public var answered: Answer
    }

    struct State {
        var secrets: [String] = []
        var script: [Answer] = []
        var deliveries: [Delivery] = []
    }

    final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let server = Mutex<Task<Void, any Error>?>(nil)
    private let boundPort = Mutex(0)
    public var port: Int { boundPort.withLock { $0 } }

    public init(port: Int = 0) async throws {
        let bound = try await start(port: port)
        boundPort.withLock { $0 = bound }
    }

    public var url: String { "http://127.0.0.1:\(port)/wallet-events" }

    /// Accepts signatures made with these secrets (a delivery is recorded either way).
    public func trust(_ secrets: [String]) { shared.state.withLock { $0.secrets = secrets } }

    /// Answers the next deliveries so, in order; then 200 again.
    public func script(_ answers: [Answer]) { shared.state.withLock { $0.script += answers } }

    /// Drops what is left of the script: 200 from now on.
    public func answerNormally() { shared.state.withLock { $0.script = [] } }

    public var deliveries: [Delivery] { shared.state.withLock { $0.deliveries } }

    /// The event ids in the order they first arrived with a 2xx answer... or at all: a hung
    /// delivery that arrived counts, as it would for a real receiver that stored it.
    public var firstArrivals: [String] {
        var seen: Set<String> = []
        return deliveries.compactMap { seen.insert($0.eventID).inserted ? $0.eventID : nil }
    }

    /// Stops listening: the sender's connections are refused until `restart`.
    public func kill() async {
        let task = server.withLock { task in
            defer { task = nil }
            return task
        }
        task?.cancel()
        _ = await task?.result
    }

    /// Listens again on the same port.
    public func restart() async throws {
        let bound = try await start(port: port)
        boundPort.withLock { $0 = bound }
    }

    deinit {
        server.withLock { $0?.cancel() }
    }

    private func start(port: Int) async throws -> Int {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let router = Router()
        let shared = self.shared
        router.post("**") { request, context -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            let body = Data(buffer.readableBytesView)
            let signature = request.headers[HTTPField.Name("Wallet-Signature")!] ?? ""
            let seq = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["seq"] as? Int64 ?? -1
            let answer = shared.state.withLock { state -> Answer in
                let answer = state.script.isEmpty ? .status(200) : state.script.removeFirst()
                state.deliveries.append(
                    Delivery(
                        eventID: request.headers[HTTPField.Name("Wallet-Event-Id")!] ?? "", eventType: request.headers[HTTPField.Name("Wallet-Event-Type")!] ?? "",
                        seq: seq, path: request.uri.path, signature: signature, body: body,
                        verifiedWith: state.secrets.filter { WebhookSignature.verify(header: signature, body: body, secret: $0) }, answered: answer))
                return answer
            }
            switch answer {
            case .status(let code):
                return Response(status: HTTPResponse.Status(code: code), body: .init(byteBuffer: ByteBuffer(string: "answered \(code)")))
            case .hang(let duration):
                try? await Task.sleep(for: duration)
                return Response(status: .ok)
            case .redirect(let location):
                return Response(status: .found, headers: [.location: location])
            case .stallAfterHead(let duration):
                return Response(
                    status: .ok, headers: [.contentLength: "10"],
                    body: ResponseBody { writer in
                        try? await Task.sleep(for: duration)
                        try await writer.write(ByteBuffer(string: "0123456789"))
                        try await writer.finish(nil)
                    })
            }
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: Self.quietLogger)
        // A port that cannot be bound ends the service at once: the wait below ends with it.
        let task = Task {
            defer { continuation.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        server.withLock { $0 = task }
        var bound = 0
        for await value in stream { bound = value }
        guard bound > 0 else { throw ReceiverFailure(description: "the webhook receiver could not listen on 127.0.0.1:\(port)") }
        return bound
    }

    struct ReceiverFailure: Error, CustomStringConvertible {
        var description: String
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        return logger
    }()
}
