import Crypto
import Foundation
import Synchronization
import HTTPTypes
import WalletCore

/// Download links for exports: an auditor or admin asks for one (with its key), and a browser
/// downloads the export by following it, streamed straight to disk: a plain link carries no
/// `Authorization` header, and the key itself must never be in a URL. A link is a random
/// capability bound to one export's parameters, used once, within a minute, on the instance that
/// made it.
final class ExportLinks: Sendable {
    struct Link: Sendable {
        var query: ExportQuery
        var format: ExportFormat
        var expires: ContinuousClock.Instant
        var createdBy: String
    }

    static let lifetimeDefault: Duration = .seconds(60)
    /// Links waiting at most; past it, expired ones are dropped, and if none were, no more are made.
    static let capacity = 1_000
    /// Links one caller may have waiting: one auditor cannot use up everyone's.
    static let perCreatorMax = 20

    let lifetime: Duration
    private let links = Mutex<[String: Link]>([:])

    init(lifetime: Duration = lifetimeDefault) {
        self.lifetime = lifetime
    }

    /// A new link's token.
    /// - Throws: 429 `rate_limited` when the caller has `perCreatorMax` links waiting; 503
    ///   `overloaded` when `capacity` links are.
    func make(_ query: ExportQuery, format: ExportFormat, createdBy: String) throws(APIError) -> String {
        let token = Base64URL.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
        let now = ContinuousClock.now
        let lifetime = self.lifetime
        let refusal: APIError? = links.withLock { links in
            links = links.filter { $0.value.expires > now }
            guard links.values.count(where: { $0.createdBy == createdBy }) < Self.perCreatorMax else {
                return APIError(
                    status: .tooManyRequests, code: .rateLimited, detail: "\(Self.perCreatorMax) export links of yours are waiting: use one, or wait a minute",
                    headers: [.retryAfter: "\(lifetime.components.seconds)"])
            }
            guard links.count < Self.capacity else { return WalletError.overloaded("too many export links are waiting; try again in a minute").apiError }
            links[token] = Link(query: query, format: format, expires: now + lifetime, createdBy: createdBy)
            return nil
        }
        if let refusal { throw refusal }
        return token
    }

    /// The link's export, once: a used, expired or unknown token gives nil.
    func take(_ token: String) -> Link? {
        let now = ContinuousClock.now
        return links.withLock { links in
            guard let link = links.removeValue(forKey: token), link.expires > now else { return nil }
            return link
        }
    }
}
