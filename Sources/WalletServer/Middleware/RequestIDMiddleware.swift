import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import WalletCore

/// Gives every request an id — the client's `X-Request-Id` when it is short visible ASCII, else
/// a fresh one — which its log lines carry (`WalletRequestContext.log`) and every response returns.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = WalletRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.requestID = Self.usableID(request.headers.value(.requestID)) ?? Self.freshID()
        var response = try await next(request, context)
        response.headers[.requestID] = context.requestID
        return response
    }

    /// The first half of every fresh id of this process, written as a UUID starts: random, once.
    private static let processPrefix = Array(RandomID.uuid().utf8.prefix(19))
    private static let counter = Atomic<UInt64>(0)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A fresh id, 36 characters as a UUID is written: the process's random half, then a
    /// counter. Unique without reading the system's random source twice on every request.
    static func freshID() -> String {
        let number = counter.add(1, ordering: .relaxed).newValue
        var bytes = processPrefix
        bytes.reserveCapacity(36)
        for index in 0..<16 {
            if index == 4 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(hexDigits[Int(truncatingIfNeeded: (number >> UInt64(60 - 4 * index)) & 0xF)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func usableID(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= ServerLimits.requestIDBytesMax,
            value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else { return nil }
        return value
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
