import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP connection to 127.0.0.1, for what an HTTP client library would not do: stop
/// reading, send half a request, or come from another loopback address (all of 127/8 is local
/// on Linux).
/// Used by one task at a time; `@unchecked` so a read can run on a thread of its own.
public final class LoopbackSocket: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    let descriptor: Int32

    /// Ports `freePort` gave out in this process.
    private static let givenPorts = Mutex<Set<Int>>([])

    /// A TCP port of 127.0.0.1 that nothing listens on now, and that this process was not given
    /// before: two servers of one test run never get the same port, where the one that binds
    /// second would fail and its test would talk to the other.
    public static func freePort() throws -> Int {
        for _ in 0..<100 {
            let port = try anyFreePort()
            if givenPorts.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw Failure(description: "no free port that was not given before in 100 tries")
    }

    private static func anyFreePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A listening socket on 127.0.0.1 at a port the kernel picks, for a stand-in server that
    /// reads raw connections (a receiver that hangs, a collector that never accepts).
    public static func listen(backlog: Int32 = 64) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 && Glibc.listen(descriptor, backlog) == 0
            }
        }
        guard listening else {
            close(descriptor)
            throw Failure(description: "cannot listen on 127.0.0.1: errno \(errno)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Bytes read by `readResponse` beyond the response it returned.
    private var pending: [UInt8] = []

    /// `receiveBuffer` shrinks the socket's receive buffer (and so the window the server sees).
    /// `source` is the local address to connect from (say 127.0.0.2, another client to the server).
    public init(port: Int, receiveBuffer: Int32? = nil, source: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            local.sin_port = 0
            let bound = withUnsafePointer(to: &local) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(descriptor)
                throw Failure(description: "bind to \(source) failed: errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
    }

    deinit { close(descriptor) }

    /// Sends all of `text`; false if the connection took less.
    @discardableResult
    public func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return write(descriptor, bytes, bytes.count) == bytes.count
    }

    /// Reads until the server closes the connection (`closed`) or `seconds` pass without a byte.
    /// Bytes received and not read yet.
    public var unreadBytes: Int {
        var count: Int32 = 0
        return ioctl(descriptor, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
    }

    /// Waits, reading nothing, until at least `atLeast` bytes arrived and no more came for
    /// `quiet`: the sender is then blocked on this reader (or gone). Gives up after `limit`.
    public func waitUntilSenderBlocked(atLeast: Int, quiet: Duration, limit: Duration = .seconds(60)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var last = -1
        var since = clock.now
        while clock.now < deadline {
            let unread = unreadBytes
            if unread != last { (last, since) = (unread, clock.now) }
            if unread >= atLeast, clock.now - since >= quiet { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Reads what has arrived without waiting: the bytes, and whether the server has closed the
    /// connection (an orderly close or a reset).
    public func readAvailable() -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
            } else {
                return (received, count == 0 || errno == ECONNRESET)
            }
        }
    }

    /// Reads one response framed by `Content-Length` (what the server sends for small JSON
    /// bodies), leaving the connection open; nil when the connection closes, or `seconds`
    /// pass without a byte, before the response is complete.
    public func readResponse(timeout seconds: Int = 10) async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.readResponseBlocking(timeout: seconds)) }
        }
    }

    private func readResponseBlocking(timeout seconds: Int) -> [UInt8]? {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let headEnd = pending.firstRange(of: separator)?.upperBound {
                let head = String(decoding: pending[..<headEnd], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                guard let length else { return nil }
                if pending.count >= headEnd + length {
                    let response = Array(pending[..<(headEnd + length)])
                    pending.removeFirst(headEnd + length)
                    return response
                }
            }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            pending.append(contentsOf: buffer[0..<count])
        }
    }

    /// Closes the connection from this side (the descriptor stays until the socket is released).
    public func disconnect() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    public func readToEnd(timeout seconds: Int = 10) async -> (bytes: [UInt8], closed: Bool) {
        // On a thread of its own: a read blocked for seconds must not hold one of Swift's few
        // cooperative threads, which an in-process server under test needs to answer at all
        // (seen: a loaded test run where /healthz could not be answered within the timeout).
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.readBlocking(timeout: seconds)) }
        }
    }

    private func readBlocking(timeout seconds: Int) -> (bytes: [UInt8], closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return (received, count == 0) }
            received.append(contentsOf: buffer[0..<count])
        }
    }
}
