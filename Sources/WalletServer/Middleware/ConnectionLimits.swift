import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import ServiceLifecycle
import Synchronization

/// Closes a connection whose client stops reading its response. Once the socket's send
/// buffer is full and the channel stays unwritable for `timeout`, the client has stalled (or
/// vanished without closing), and the connection, with the work behind it (an export's page
/// reads), is let go. A client that keeps reading, however slowly, makes it writable again.
final class StalledReaderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let timeout: TimeAmount
    private var closing: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            closing?.cancel()
            closing = nil
        } else if closing == nil {
            closing = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
                self?.closing = nil
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closing?.cancel()
        closing = nil
    }
}

/// Notes when `wallet serve` begins its graceful shutdown (SIGTERM, SIGINT), so that the
/// responses still on their way carry `Connection: close` and clients send nothing more on
/// those connections. Run it in the service group after the application: services are shut
/// down in reverse order, so it hears of the shutdown before the server stops accepting.
public final class ShutdownNotice: Service, Sendable {
    private let started = Atomic<Bool>(false)

    public init() {}

    public var isShuttingDown: Bool { started.load(ordering: .relaxed) }

    public func run() async throws {
        try? await gracefulShutdown()
        begin()
    }

    func begin() {
        started.store(true, ordering: .relaxed)
    }
}

/// Adds `Connection: close` to every response once the shutdown has begun.
struct ShutdownMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext
    let notice: ShutdownNotice

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if notice.isShuttingDown { response.headers[.connection] = "close" }
        return response
    }
}
