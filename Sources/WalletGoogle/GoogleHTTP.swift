import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import WalletCore

/// The one HTTP client every call to Google goes through (token exchanges, the Android Publisher
/// API, the push keys), with redirects off: a bearer token or an assertion never follows a
/// redirect to another host. Untraced: once `wallet serve --otel-endpoint` bootstraps a tracer,
/// AsyncHTTPClient's own spans would carry each call's full URL (a purchase token) to the collector.
package enum GoogleHTTP {
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10)))
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// One answer, whatever its status.
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// Sends one request and reads at most `bytesMax` of its answer within `timeout`.
    /// - Throws: `unavailable` when no answer came in time or the connection failed, `malformed`
    ///   when the answer is longer than `bytesMax`.
    static func send(
        _ method: HTTPMethod, url: String, headers: [(String, String)], body: Data?, timeout: Duration, bytesMax: Int, service: String
    ) async throws(GoogleCallFailure) -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "User-Agent", value: "CreditsWallet")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
        } else if method == .POST {
            // An empty body, sent with its length: Google's front end answers 411 to a POST without one.
            request.body = .bytes(ByteBuffer())
        }
        do {
            let response = try await client.execute(request, deadline: .now() + timeAmount(timeout))
            var bytes = try await response.body.collect(upTo: bytesMax)
            return Answer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readBytes(length: bytes.readableBytes) ?? []))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw .unavailable("\(service) did not answer within \(timeout)")
        } catch is NIOTooManyBytesError {
            throw .malformed("\(service)'s answer is longer than \(bytesMax) bytes")
        } catch {
            throw .unavailable("\(service) could not be reached: \(error)")
        }
    }

    /// Also what webhook deliveries use (`WebhookSender`): one conversion for every HTTP client.
    package static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        // A timeout past a day is taken as a day: the arithmetic below cannot overflow.
        return .nanoseconds(min(max(seconds, 0), 86_400) * 1_000_000_000 + max(attoseconds, 0) / 1_000_000_000)
    }

    /// `Retry-After` as seconds or as an HTTP date, clamped to a day (past any wait taken).
    static func retryAfter(_ headers: HTTPHeaders, now: Date = Date()) -> Duration? {
        guard let value = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int64(value) { return .seconds(min(max(seconds, 0), 86_400)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return .milliseconds(Int64((seconds.isFinite ? min(max(seconds, 0), 86_400) : 0) * 1_000))
    }

    /// `text` without control characters and at most `charactersMax` long: Google's words,
    /// quoted in an error a person reads.
    package static func quoted(_ text: String, charactersMax: Int = 300) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        return cleaned.count > charactersMax ? String(cleaned.prefix(charactersMax)) + "…" : cleaned
    }

    /// `value` percent-encoded for a query string: only RFC 3986's unreserved characters stay.
    static func queryEncoded(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    /// Whether `text` is an `http(s)://host[:port][/path]` URL without credentials, query or
    /// fragment: what the wallet sends tokens and assertions to.
    static func isPlainHTTPURL(_ text: String, pathAllowed: Bool) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil, components.user == nil,
            components.password == nil, text.utf8.count <= 2_048
        else { return false }
        return pathAllowed || components.path.isEmpty
    }
}

/// Why one call to Google failed, before it becomes a `WalletError`.
enum GoogleCallFailure: Error {
    /// Google answered with a status that is not 2xx; `message` is what Google said, quoted.
    case answered(status: Int, message: String?, retryAfter: Duration?)
    /// No answer: refused, reset, timed out, or Google asking for a longer wait than the wallet takes.
    case unavailable(String)
    /// An answer the wallet cannot read.
    case malformed(String)
    /// A failure already put in the wallet's words (the access token could not be had).
    case wallet(WalletError)
}

/// How a call to Google is timed and tried again.
struct GoogleRetryPolicy: Sendable {
    var requestTimeout: Duration
    var attempts: Int
    var backoff: Duration
    var retryWaitMax: Duration

    /// Runs `once` until it succeeds or trying again cannot help: on no answer, a 5xx or a 429,
    /// after a backoff doubled each time (with jitter), or Google's `Retry-After` when it names
    /// one no longer than `retryWaitMax`.
    func run<Result>(_ once: () async throws(GoogleCallFailure) -> Result) async throws(GoogleCallFailure) -> Result {
        var attempt = 1
        while true {
            let failure: GoogleCallFailure
            do {
                return try await once()
            } catch {
                failure = error
            }
            guard attempt < max(attempts, 1), let wait = wait(after: failure, attempt: attempt) else { throw failure }
            if wait > retryWaitMax {
                throw .unavailable("Google asks the wallet to wait \(wait) before trying again, longer than the \(retryWaitMax) it waits")
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                throw .unavailable("the request was cancelled while waiting to try again")
            }
            attempt += 1
        }
    }

    /// How long to wait before attempt `attempt + 1`, or nil when trying again cannot help.
    func wait(after failure: GoogleCallFailure, attempt: Int) -> Duration? {
        let backoffWait = backoff * Double(1 << min(attempt - 1, 10)) * Double.random(in: 0.5...1.0)
        switch failure {
        case .unavailable:
            return backoffWait
        case .answered(let status, _, let retryAfter):
            guard status == 429 || status >= 500 else { return nil }
            return retryAfter ?? backoffWait
        case .malformed, .wallet:
            return nil
        }
    }
}
