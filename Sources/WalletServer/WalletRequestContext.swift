import Hummingbird
import Logging
import Synchronization
import WalletApple
import WalletCore

/// Per-request state: the request id every response and log line carries, and the caller once
/// authenticated.
public struct WalletRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's `X-Request-Id` when it sent a usable one, else a fresh id.
    public var requestID: String = ""
    /// Set by the route's access check once it authenticated the caller (before it checks the
    /// route's rule, so a refused request's line names whom it refused). Every copy of this
    /// context shares it, so the middlewares around the route, whose copies were made before the
    /// check, know the caller too: the request line names the actor. So a copy that set it would
    /// set it for all; only the access check sets it.
    public internal(set) var caller: Caller? {
        get { callerRecord.caller.withLock { $0 } }
        set { callerRecord.caller.withLock { $0 = newValue } }
    }
    private let callerRecord = CallerRecord()
    /// The `{player_id}` of a wallet route, decoded and validated once by the access check.
    public var walletPlayerID: PlayerID?

    public init(source: Source) {
        coreContext = .init(source: source)
    }

    /// Logs with the request's `request_id` and, once the access check authenticated the caller,
    /// its `actor` (in the middlewares around the route too, after it ran). They are added to
    /// the line when it is at or above the threshold, instead of being set on `logger` as each
    /// request arrives, which copied the logger's handler twice a request for lines mostly not
    /// logged: so log with this, not with `logger`, whose lines carry neither. A key the line's
    /// own metadata names wins, as a line's metadata wins over its logger's.
    func log(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata = [:],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        logger.log(level: level, message(), metadata: requestMetadata(adding: metadata()), file: file, function: function, line: line)
    }

    private func requestMetadata(adding metadata: Logger.Metadata) -> Logger.Metadata {
        var metadata = metadata
        if metadata["request_id"] == nil { metadata["request_id"] = .string(requestID) }
        if let caller, metadata["actor"] == nil { metadata["actor"] = .string(caller.actor) }
        return metadata
    }

    /// Request bodies are read by `RequestBodyReader`, which enforces this limit itself.
    public var maxUploadSize: Int { ServerLimits.bodyBytesMax }

    /// The authenticated caller; the access check guarantees it for every protected route.
    func requireCaller() throws -> Caller {
        guard let caller else { throw APIError.unauthorized("authentication is required") }
        return caller
    }

    /// Whom the answer is for: staff for an API key; a player token, or no credentials at
    /// all, gets the player's view of transactions.
    var audience: Audience {
        if case .key = caller { .staff } else { .player }
    }

    /// The wallet a `{player_id}` route acts on; the access check sets it.
    func requireWalletPlayerID() throws -> PlayerID {
        guard let walletPlayerID else { throw APIError.invalidRequest("this route names no wallet") }
        return walletPlayerID
    }
}

/// Limits of the HTTP layer; the ledger's own limits are `WalletCore.Limits`.
public enum ServerLimits {
    /// Largest request body: 64 KiB.
    public static let bodyBytesMax = 64 * 1024
    /// Largest body of a StoreKit 1 receipt redemption: the longest receipt accepted, and room
    /// for the rest of the JSON.
    public static let receiptBodyBytesMax = AppReceipt.base64BytesMax + 4 * 1024
    /// StoreKit 1 receipts one player may redeem a minute (per instance).
    public static let receiptsPerPlayerPerMinute = 10
    /// Google Play purchases one player's own token may redeem a minute (per instance): each asks Google.
    public static let googlePurchasesPerPlayerPerMinute = 10
    /// Longest `X-Request-Id` echoed back; longer ones are replaced.
    public static let requestIDBytesMax = 128
}

/// The caller of one request, shared by every copy of its `WalletRequestContext`.
private final class CallerRecord: Sendable {
    let caller = Mutex<Caller?>(nil)
}
