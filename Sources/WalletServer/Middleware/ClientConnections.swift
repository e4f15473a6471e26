import CoreMetrics
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The address a connection comes from, for counting connections per client. An IPv4 client
/// reached through an IPv6 socket (`::ffff:a.b.c.d`) is the same client as over IPv4, so it
/// cannot double its share by switching families. An IPv6 client counts by its /64 network:
/// one subscriber is handed a whole /64, and would otherwise have 2^64 "clients".
struct ClientAddress: Hashable, Sendable {
    /// 4 bytes for IPv4 (and IPv4-mapped IPv6), the 8 bytes of the /64 for IPv6, in network order.
    let bytes: [UInt8]

    /// Nil for a Unix domain socket, which has no client address to count by.
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let ipv4):
            bytes = withUnsafeBytes(of: ipv4.address.sin_addr) { Array($0) }
        case .v6(let ipv6):
            let all = withUnsafeBytes(of: ipv6.address.sin6_addr) { Array($0) }
            let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            bytes = all.starts(with: mappedPrefix) ? Array(all[12...]) : Array(all.prefix(8))
        case .unixDomainSocket:
            return nil
        }
    }
}

/// The server's open connections, in total and per client address. The total decides whether
/// the server accepts more (beyond it they wait in the listen backlog) and whether it is near
/// its cap; the count per address decides whether a new connection may stay.
final class ConnectionCounts: Sendable {
    let connectionsMax: Int
    let connectionsPerAddressMax: Int
    private let state = Mutex(State())

    private struct State {
        var open = 0
        var perAddress: [ClientAddress: Int] = [:]
    }

    init(connectionsMax: Int, connectionsPerAddressMax: Int) {
        precondition(connectionsMax >= 1 && connectionsPerAddressMax >= 1, "connection caps are at least 1")
        self.connectionsMax = connectionsMax
        self.connectionsPerAddressMax = connectionsPerAddressMax
    }

    func accepted() { state.withLock { $0.open += 1 } }

    func closed() { state.withLock { $0.open -= 1 } }

    var isAcceptingNewConnections: Bool { state.withLock { $0.open < connectionsMax } }

    /// More than 90% of the cap is open: idle keep-alive connections then make room for new
    /// clients instead of holding their slots.
    var isNearCap: Bool { state.withLock { $0.open * 10 > connectionsMax * 9 } }

    /// Counts a connection from `address` if that address is below its cap; false (and not
    /// counted) when it is at its cap.
    func admit(_ address: ClientAddress) -> Bool {
        state.withLock { state in
            let open = state.perAddress[address, default: 0]
            guard open < connectionsPerAddressMax else { return false }
            state.perAddress[address] = open + 1
            return true
        }
    }

    /// Uncounts a connection `admit` counted. Addresses without connections are forgotten, so
    /// the table holds at most as many entries as there are open connections.
    func release(_ address: ClientAddress) {
        state.withLock { state in
            guard let open = state.perAddress[address] else { return }
            state.perAddress[address] = open > 1 ? open - 1 : nil
        }
    }
}

/// Hummingbird's gate on accepting connections, counting in `ConnectionCounts` so that the
/// connection handlers can see how full the server is.
struct CountedConnectionsDelegate: AvailableConnectionsDelegate {
    let counts: ConnectionCounts

    mutating func connectionOpened() { counts.accepted() }

    mutating func connectionClosed() { counts.closed() }

    func isAcceptingNewConnections() -> Bool { counts.isAcceptingNewConnections }
}

/// Why the server closed a connection on its own, as the `reason` of the
/// `wallet_connections_closed_total` counter.
enum ConnectionClosingReason: String {
    /// Its client address already had `--max-connections-per-address` connections open.
    case addressCap = "address_cap"
    /// No complete request head within `--request-head-timeout`.
    case requestHeadTimeout = "request_head_timeout"
    /// An idle keep-alive connection while the server was near its connection cap.
    case idleNearCap = "idle_near_cap"

    func record() {
        Counter(label: "wallet_connections_closed_total", dimensions: [("reason", rawValue)]).increment()
    }
}

/// Turns away a connection from a client address that already has its cap of connections
/// open: it is answered 503 with `Connection: close` and closed before it can send anything
/// to the application, so one client cannot fill the server's total cap and keep everyone
/// else waiting in the backlog.
final class AddressCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    let counts: ConnectionCounts
    /// Nil until the connection is active and its address counted or refused.
    private var refused: Bool?

    init(counts: ConnectionCounts) {
        self.counts = counts
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        admit(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection's request never reaches the application.
        guard refused != true else { return }
        context.fireChannelRead(data)
    }

    private func admit(context: ChannelHandlerContext) {
        guard refused == nil else { return }
        guard let address = context.channel.remoteAddress.flatMap(ClientAddress.init) else {
            refused = false
            return
        }
        guard counts.admit(address) else {
            refused = true
            refuse(context: context)
            return
        }
        refused = false
        let counts = self.counts
        context.channel.closeFuture.whenComplete { _ in counts.release(address) }
    }

    private func refuse(context: ChannelHandlerContext) {
        ConnectionClosingReason.addressCap.record()
        var head = HTTPResponse(status: .serviceUnavailable)
        head.headerFields[.connection] = "close"
        head.headerFields[.contentLength] = "0"
        head.headerFields[.retryAfter] = "1"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.close(promise: nil)
    }
}

/// Closes a connection that does not send a complete request head in time: `timeout` after it
/// opens, or after its last response on a keep-alive connection (`idleNearCapTimeout` then, if
/// shorter, while the server is near its connection cap, so that idle connections make room
/// for new clients). Connections that send nothing, or trickle a head, so hold their slot for
/// seconds rather than the idle timeout. Once a head is in, the idle timeout of Hummingbird's
/// `HTTPConnectionStateHandler` governs the body, and no deadline runs while a response is owed
/// or being written (a slow export is `StalledReaderHandler`'s business).
final class RequestHeadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let timeout: TimeAmount
    let idleNearCapTimeout: TimeAmount
    let counts: ConnectionCounts
    /// Request heads read whose response has not ended yet (pipelined requests may queue).
    private var responsesOwed = 0
    /// A request head was read and its end not yet (a body may still be arriving).
    private var isReadingRequest = false
    private var isStarted = false
    /// When the connection is closed, and why, unless a request head comes first; nil while a
    /// request is read or answered. Moved on every response, so it is a time, not a timer.
    private var deadline: (at: NIODeadline, reason: ConnectionClosingReason)?
    /// The one timer that looks at `deadline`: when it fires before a deadline moved later, it
    /// sets itself again for that deadline. A busy keep-alive connection so schedules a timer
    /// about once per `timeout`, not one per request, and cancels one only when a deadline is
    /// brought forward (near the connection cap).
    private var timer: (at: NIODeadline, task: Scheduled<Void>)?

    init(timeout: TimeAmount, idleNearCapTimeout: TimeAmount, counts: ConnectionCounts) {
        self.timeout = timeout
        self.idleNearCapTimeout = idleNearCapTimeout
        self.counts = counts
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            cancel()
            responsesOwed += 1
            isReadingRequest = true
        case .body:
            break
        case .end:
            isReadingRequest = false
            // The response went out before the body was read (a refusal): wait for the next head.
            if responsesOwed == 0 { armAfterResponse(context: context) }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        responsesOwed = max(responsesOwed - 1, 0)
        // The deadline starts once the response's end has reached the socket, not when it
        // was queued: a slow reader may still be taking the last page of a long response.
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.assumeIsolated().whenSuccess { [weak self] in
            guard let self, self.responsesOwed == 0, !self.isReadingRequest, context.channel.isActive else { return }
            self.armAfterResponse(context: context)
        }
        context.write(data, promise: written)
    }

    private func start(context: ChannelHandlerContext) {
        guard !isStarted else { return }
        isStarted = true
        arm(context: context, in: timeout, reason: .requestHeadTimeout)
    }

    private func armAfterResponse(context: ChannelHandlerContext) {
        if idleNearCapTimeout < timeout, counts.isNearCap {
            arm(context: context, in: idleNearCapTimeout, reason: .idleNearCap)
        } else {
            arm(context: context, in: timeout, reason: .requestHeadTimeout)
        }
    }

    private func arm(context: ChannelHandlerContext, in delay: TimeAmount, reason: ConnectionClosingReason) {
        let at = context.eventLoop.now + delay
        deadline = (at, reason)
        // A timer due by then looks again when it fires; one due later (a deadline brought
        // forward near the connection cap) is replaced.
        if let timer, timer.at <= at { return }
        timer?.task.cancel()
        schedule(context: context, at: at)
    }

    private func schedule(context: ChannelHandlerContext, at: NIODeadline) {
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [weak self] in
            guard let self else { return }
            self.timer = nil
            guard let deadline = self.deadline else { return }
            if deadline.at > context.eventLoop.now {
                self.schedule(context: context, at: deadline.at)
            } else {
                self.deadline = nil
                deadline.reason.record()
                context.close(promise: nil)
            }
        }
        timer = (at, task)
    }

    /// A request head came: no deadline until its response is written (a timer left running
    /// finds none).
    private func cancel() {
        deadline = nil
    }

    /// The connection closed or the handler left it: its timer too.
    private func stop() {
        deadline = nil
        timer?.task.cancel()
        timer = nil
    }
}
