import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
import WalletCore
import WalletGoogle

/// Where a delivery may go, decided at each delivery: the URL's rules (`WebhookURL`), then, for
/// a host name, its addresses after DNS, every one public unless the operator allowed the host.
/// The client made for the delivery connects to the address checked, not to whatever the name
/// resolves to a moment later, and follows no redirect.
public enum WebhookTarget {
    /// A client for `url`'s deliveries: redirects off, connecting to the checked address.
    /// - Throws: why the URL may not be sent to (a private address, a name that does not resolve).
    static func client(
        for url: String, allowedHosts: Set<String>, timeout: Duration, resolve: @Sendable (String) async throws(WalletError) -> [NetworkAddress]
    ) async throws(WalletError) -> HTTPClient {
        let target = try WebhookURL(url, allowedHosts: allowedHosts)
        let time = GoogleHTTP.timeAmount(timeout)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: time, read: time))
        // Untraced: with `--otel-endpoint`, AsyncHTTPClient's own spans would carry the endpoint's
        // full URL, query and all, to the collector.
        configuration.tracing.tracer = nil
        if !target.isAllowedHost && NetworkAddress(literal: target.host) == nil {
            // The client connects to what it reads as the host, and the address pinned below is
            // keyed by the host as checked: both must be the very same text.
            guard URL(string: url)?.host == target.host else {
                throw .invalidRequest("refused: the HTTP client reads the URL's host otherwise than \(target.host)")
            }
            let addresses = try await resolve(target.host)
            for address in addresses {
                if let range = address.nonPublicRange {
                    throw .invalidRequest("refused: \(target.host) resolves to \(address.text), \(range) address (allow the host with --webhook-allow-host)")
                }
            }
            guard let first = addresses.first else { throw .invalidRequest("\(target.host) does not resolve to an address") }
            configuration.dnsOverride = [target.host: first.text]
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// How long a lookup may take before the attempt counts as failed.
    static let resolveTimeout: DispatchTimeInterval = .seconds(10)

    /// The addresses `host` resolves to (`getaddrinfo`, on a thread of its own: it blocks and
    /// cannot be cancelled, so its answer is not waited for past `resolveTimeout`).
    public static func resolve(_ host: String) async throws(WalletError) -> [NetworkAddress] {
        let result: Result<[NetworkAddress], WalletError> = await withCheckedContinuation { continuation in
            let once = Once(continuation)
            DispatchQueue.global().asyncAfter(deadline: .now() + resolveTimeout) {
                once.resume(.failure(.invalidRequest("\(host) did not resolve within 10 s")))
            }
            DispatchQueue.global().async {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                let status = getaddrinfo(host, nil, &hints, &list)
                guard status == 0, let first = list else {
                    once.resume(.failure(.invalidRequest("\(host) does not resolve: \(String(cString: gai_strerror(status)))")))
                    return
                }
                defer { freeaddrinfo(first) }
                var addresses: [NetworkAddress] = []
                var next: UnsafeMutablePointer<addrinfo>? = first
                while let info = next {
                    if let socketAddress = info.pointee.ai_addr {
                        switch info.pointee.ai_family {
                        case AF_INET:
                            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                                withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                            }
                            if let address = NetworkAddress(bytes: bytes), !addresses.contains(address) { addresses.append(address) }
                        case AF_INET6:
                            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                            }
                            if let address = NetworkAddress(bytes: bytes), !addresses.contains(address) { addresses.append(address) }
                        default:
                            break
                        }
                    }
                    next = info.pointee.ai_next
                }
                once.resume(.success(addresses))
            }
        }
        return try result.get()
    }

    /// Resumes a continuation the first time only: the lookup and its timeout race.
    private final class Once: Sendable {
        private let continuation: Mutex<CheckedContinuation<Result<[NetworkAddress], WalletError>, Never>?>

        init(_ continuation: CheckedContinuation<Result<[NetworkAddress], WalletError>, Never>) {
            self.continuation = Mutex(continuation)
        }

        func resume(_ result: Result<[NetworkAddress], WalletError>) {
            continuation.withLock { pending in
                pending?.resume(returning: result)
                pending = nil
            }
        }
    }
}
