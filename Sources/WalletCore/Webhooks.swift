import Crypto
import Foundation

/// Where a game's backend hears of the ledger's events: an HTTPS URL, the types it wants, and
/// how far delivery has come. The ledger is the queue: every transaction committed after
/// `cursorSeq` is waiting for this endpoint, durable in the very write that made it, and the
/// sender moves the cursor past each event once the endpoint accepted it (or past a
/// transaction of a type it does not want). Nothing is queued beside the ledger, so nothing
/// can be queued and lost, or written to the ledger and not queued.
public struct WebhookEndpoint: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable, CaseIterable {
        /// Delivering, or waiting for the next attempt.
        case active
        /// Every attempt at one event failed for `WebhookRetry.giveUpAfter`: skipped until enabled.
        case failing
        /// Switched off by an admin: skipped until enabled.
        case disabled
    }

    public var id: String
    public var url: String
    /// The event types it receives; nil: every type.
    public var types: Set<EventType>?
    public var description: String?
    public var status: Status
    /// The last seq delivered or passed over; the next event it gets is after it.
    public var cursorSeq: Int64
    public var createdAt: String
    public var updatedAt: String
    /// Events accepted by the endpoint so far.
    public var delivered: Int64
    /// Failed attempts at the event after the cursor.
    public var attempts: Int64
    /// When the first of those attempts failed: the endpoint is marked failing
    /// `WebhookRetry.giveUpAfter` later.
    public var failingSince: String?
    /// When the next attempt may start.
    public var nextAttemptAt: String
    public var lastError: String?
    public var lastDeliveredAt: String?
    public var secretRotatedAt: String?
    /// Until when the secret before the last rotation signs too (nil: no second secret).
    public var previousSecretExpiresAt: String?

    package init(
        id: String, url: String, types: Set<EventType>?, description: String?, status: Status, cursorSeq: Int64, createdAt: String, updatedAt: String,
        delivered: Int64, attempts: Int64, failingSince: String?, nextAttemptAt: String, lastError: String?, lastDeliveredAt: String?,
        secretRotatedAt: String?, previousSecretExpiresAt: String?
    ) {
        self.id = id
        self.url = url
        self.types = types
        self.description = description
        self.status = status
        self.cursorSeq = cursorSeq
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.delivered = delivered
        self.attempts = attempts
        self.failingSince = failingSince
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.lastDeliveredAt = lastDeliveredAt
        self.secretRotatedAt = secretRotatedAt
        self.previousSecretExpiresAt = previousSecretExpiresAt
    }

    enum CodingKeys: String, CodingKey {
        case id, url, types, description, status, delivered, attempts
        case cursorSeq = "cursor_seq"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case failingSince = "failing_since"
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case lastDeliveredAt = "last_delivered_at"
        case secretRotatedAt = "secret_rotated_at"
        case previousSecretExpiresAt = "previous_secret_expires_at"
    }

    /// `types` as listed and stored: the names in order, or `["*"]` for every type.
    public var typeNames: [String] { Self.typeNames(types) }

    public static func typeNames(_ types: Set<EventType>?) -> [String] { types.map { $0.sorted().map(\.rawValue) } ?? ["*"] }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(url, forKey: .url)
        try container.encode(typeNames, forKey: .types)
        try container.encodeIfPresent(description, forKey: .description)
        try container.encode(status, forKey: .status)
        try container.encode(cursorSeq, forKey: .cursorSeq)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(delivered, forKey: .delivered)
        try container.encode(attempts, forKey: .attempts)
        try container.encodeIfPresent(failingSince, forKey: .failingSince)
        try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try container.encodeIfPresent(lastDeliveredAt, forKey: .lastDeliveredAt)
        try container.encodeIfPresent(secretRotatedAt, forKey: .secretRotatedAt)
        try container.encodeIfPresent(previousSecretExpiresAt, forKey: .previousSecretExpiresAt)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        url = try container.decode(String.self, forKey: .url)
        let names = try container.decode([String].self, forKey: .types)
        do { types = try EventType.parse(names) } catch { throw DecodingError.dataCorruptedError(forKey: .types, in: container, debugDescription: error.detail) }
        description = try container.decodeIfPresent(String.self, forKey: .description)
        status = try container.decode(Status.self, forKey: .status)
        cursorSeq = try container.decode(Int64.self, forKey: .cursorSeq)
        createdAt = try container.decode(String.self, forKey: .createdAt)
        updatedAt = try container.decode(String.self, forKey: .updatedAt)
        delivered = try container.decode(Int64.self, forKey: .delivered)
        attempts = try container.decode(Int64.self, forKey: .attempts)
        failingSince = try container.decodeIfPresent(String.self, forKey: .failingSince)
        nextAttemptAt = try container.decode(String.self, forKey: .nextAttemptAt)
        lastError = try container.decodeIfPresent(String.self, forKey: .lastError)
        lastDeliveredAt = try container.decodeIfPresent(String.self, forKey: .lastDeliveredAt)
        secretRotatedAt = try container.decodeIfPresent(String.self, forKey: .secretRotatedAt)
        previousSecretExpiresAt = try container.decodeIfPresent(String.self, forKey: .previousSecretExpiresAt)
    }

    /// The most endpoints a ledger keeps (disabled ones count).
    public static let countMax = 50
    /// The longest description kept.
    public static let descriptionBytesMax = 200
    /// The longest error text kept.
    public static let errorCharactersMax = 300

    /// Whether `id` could be an endpoint's id (a lowercase UUID after `wh_`), checked before any read.
    package static func validate(id: String) throws(WalletError) {
        guard id.utf8.count == 39, id.hasPrefix("wh_"), UUID(uuidString: String(id.dropFirst(3))) != nil else {
            throw .notFound("no webhook endpoint \(id.prefix(64))")
        }
    }

    package static func makeID() -> String { "wh_" + RandomID.uuid() }

    /// Whether `holder` may claim the endpoint at `now`: active, its next attempt due, and not
    /// held by another sender whose claim still runs.
    package func mayBeClaimed(by holder: String, claimedBy current: String?, until: String?, at now: String) -> Bool {
        guard status == .active, nextAttemptAt <= now else { return false }
        guard let current, current != holder, let until else { return true }
        return until <= now
    }

    /// The cursor a replay from `fromSeq` leaves: just before it. A replay only sends again;
    /// it never skips an event the endpoint has not had.
    package func replayCursor(fromSeq: Int64) throws(WalletError) -> Int64 {
        guard fromSeq >= 1 else { throw .invalidRequest("from_seq is a seq, 1 or more", field: "from_seq") }
        guard fromSeq <= cursorSeq + 1 else {
            throw .invalidRequest(
                "a replay sends events again: from_seq must be at most \(cursorSeq + 1), the next event the endpoint has not had (nothing is skipped)",
                field: "from_seq")
        }
        return fromSeq - 1
    }

    /// Refuses to remove an endpoint that is not disabled: it may be in the middle of a delivery,
    /// and a removal by mistake would lose where it stood.
    package func requireRemovable() throws(WalletError) {
        guard status == .disabled else { throw .invalidRequest("disable the endpoint first (it is \(status.rawValue)); then remove it") }
    }

    /// The status a replay leaves: a failing endpoint is tried again at once; a disabled one
    /// stays disabled until enabled.
    package var statusAfterReplay: Status { status == .failing ? .active : status }
}

/// An endpoint as created or rotated, with the secret that signs its deliveries: the one time
/// the secret leaves the ledger.
public struct CreatedWebhook: Encodable, Sendable, Equatable {
    public var endpoint: WebhookEndpoint
    public var secret: String

    package init(endpoint: WebhookEndpoint, secret: String) {
        self.endpoint = endpoint
        self.secret = secret
    }
}

/// An admin's new endpoint: where, which types, and what it is for.
public struct WebhookEndpointRequest: Sendable, Equatable {
    public var url: String
    public var types: Set<EventType>?
    public var description: String?

    public init(url: String, types: Set<EventType>?, description: String? = nil) {
        self.url = url
        self.types = types
        self.description = description
    }

    /// Checks the URL against `WebhookURL`'s rules (plain `http://` only to `allowedHosts`) and
    /// the description (free text, as a note: spaces, tabs and newlines allowed, no other control
    /// or format characters, bounded).
    package func validate(allowedHosts: Set<String>) throws(WalletError) {
        do { _ = try WebhookURL(url, allowedHosts: allowedHosts) } catch { throw error.about("url") }
        if let types, types.isEmpty { throw .invalidRequest("name at least one event type, or * for all", field: "types") }
        if let description { try Validate.text(description, field: .member("description"), bytesMax: WebhookEndpoint.descriptionBytesMax) }
    }
}

/// A webhook URL, checked: `https://` (or `http://` to a host the operator allowed), a host, an
/// optional port and path; no user name or password, no fragment, printable ASCII only, at most
/// 2048 bytes. A host that is an IP address must be public unless allowed; a name is resolved
/// and its addresses checked at each delivery (`NetworkAddress`), since DNS may change.
public struct WebhookURL: Sendable, Equatable {
    public var text: String
    public var isHTTPS: Bool
    /// Lowercase; an IPv6 address without its brackets.
    public var host: String
    public var port: Int
    /// Whether the operator allowed this host (`--webhook-allow-host`): plain HTTP and any
    /// address are then accepted.
    public var isAllowedHost: Bool

    public static let bytesMax = 2_048

    /// A host as the operator allows it (`--webhook-allow-host`): lowercase, an IPv6 address
    /// without its brackets, as `host` holds it.
    public static func allowedHost(_ text: String) -> String {
        var host = text.trimmingCharacters(in: .whitespaces).lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host
    }

    public init(_ text: String, allowedHosts: Set<String>) throws(WalletError) {
        guard !text.isEmpty, text.utf8.count <= Self.bytesMax else { throw .invalidRequest("a webhook URL is 1 to \(Self.bytesMax) bytes") }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalidRequest("a webhook URL holds printable ASCII only (percent-encode the rest; no spaces)")
        }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            isHTTPS = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            isHTTPS = false
            rest = text.dropFirst(7)
        } else {
            throw .invalidRequest("a webhook URL starts with https:// (deliveries are signed, not encrypted: plain http:// only to an allowed host)")
        }
        guard !text.contains("#") else { throw .invalidRequest("a webhook URL has no fragment (#)") }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.contains("@") else { throw .invalidRequest("a webhook URL carries no user name or password") }
        guard !authority.contains("\\") else { throw .invalidRequest("a webhook URL's host holds no backslash") }
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidRequest("a webhook URL's IPv6 address lacks its closing ]") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidRequest("a webhook URL's IPv6 address is followed by a port or nothing") }
                portPart = after.dropFirst()
            }
            guard NetworkAddress(literal: String(hostPart)).map({ $0.bytes.count == 16 }) == true else {
                throw .invalidRequest("'\(hostPart.prefix(64))' is not an IPv6 address")
            }
        } else {
            let pieces = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostPart = pieces[0]
            if pieces.count == 2 { portPart = pieces[1] }
            try Self.checkName(String(hostPart))
            // The HTTP client connects to the host as written, and the address checked at
            // delivery is pinned under the lowercase name: the two must be the same text.
            guard hostPart == hostPart.lowercased() else {
                throw .invalidRequest("write the webhook URL's host in lowercase: \(hostPart.lowercased())")
            }
        }
        host = hostPart.lowercased()
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ ("0"..."9").contains($0) }), let port = Int(portPart), (1...65_535).contains(port) else {
                throw .invalidRequest("a webhook URL's port is 1 to 65535")
            }
            self.port = port
        } else {
            port = isHTTPS ? 443 : 80
        }
        self.text = text
        isAllowedHost = allowedHosts.contains(host)
        if !isHTTPS && !isAllowedHost {
            throw .invalidRequest("a webhook URL starts with https://; plain http:// only to a host the operator allowed (--webhook-allow-host), not \(host)")
        }
        if !isAllowedHost {
            if let address = NetworkAddress(literal: host), let range = address.nonPublicRange {
                throw .invalidRequest("a webhook may not be sent to \(host), \(range) address, unless the operator allows that host (--webhook-allow-host)")
            }
            if host == "localhost" || host.hasSuffix(".localhost") {
                throw .invalidRequest("a webhook may not be sent to \(host), a loopback name, unless the operator allows that host (--webhook-allow-host)")
            }
        }
    }

    /// A host name: dot-separated labels of letters, digits and hyphens (IDNs in their `xn--`
    /// form), or an IPv4 address in dotted decimal. Anything else that resolvers may read as an
    /// address (`0x7f.1`, `2130706433`, `127.1`) is refused, never guessed at.
    private static func checkName(_ name: String) throws(WalletError) {
        guard !name.isEmpty, name.utf8.count <= 253 else { throw .invalidRequest("a webhook URL names a host of 1 to 253 characters") }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
        for label in labels {
            guard (1...63).contains(label.count), label.allSatisfy(allowed.contains), !label.hasPrefix("-"), !label.hasSuffix("-") else {
                throw .invalidRequest("'\(name.prefix(64))' is not a host name (labels of letters, digits and hyphens) or an IP address")
            }
        }
        // A name whose last label is numeric is an address or nothing: only a dotted quad is taken.
        if let last = labels.last, last.allSatisfy(\.isNumber) || last.lowercased().hasPrefix("0x") {
            guard let address = NetworkAddress(literal: name), address.bytes.count == 4, labels.count == 4,
                labels.allSatisfy({ $0 == "0" || !$0.hasPrefix("0") })
            else {
                throw .invalidRequest("'\(name.prefix(64))' is not a host name or a dotted-decimal IPv4 address")
            }
        }
    }
}

/// An IP address, and whether a webhook may be sent to it: not loopback, private, link-local,
/// shared (carrier NAT), documentation, benchmarking, multicast, reserved or unspecified, IPv4
/// or IPv6 (an IPv4-mapped or NAT64 IPv6 address is judged by its IPv4 address).
public struct NetworkAddress: Sendable, Equatable {
    /// 4 bytes (IPv4) or 16 (IPv6).
    public var bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// An address in its textual form: IPv4 dotted decimal or IPv6 (`inet_pton`'s syntax).
    public init?(literal: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    /// The address as text (`inet_ntop`), for logs and DNS overrides.
    public var text: String {
        var buffer = [CChar](repeating: 0, count: 64)
        var copy = bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &buffer, socklen_t(buffer.count)) != nil else { return bytes.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var isPublic: Bool { nonPublicRange == nil }

    /// What kind of address it is when it is not public ("a loopback"), else nil.
    public var nonPublicRange: String? {
        bytes.count == 4 ? Self.ipv4Range(bytes) : Self.ipv6Range(bytes)
    }

    private static let ipv4Ranges: [(prefix: [UInt8], bits: Int, name: String)] = [
        ([0, 0, 0, 0], 8, "an unspecified (this-network)"), ([10, 0, 0, 0], 8, "a private"), ([100, 64, 0, 0], 10, "a shared (carrier NAT)"),
        ([127, 0, 0, 0], 8, "a loopback"), ([169, 254, 0, 0], 16, "a link-local"), ([172, 16, 0, 0], 12, "a private"),
        ([192, 0, 0, 0], 24, "a reserved (IETF)"), ([192, 0, 2, 0], 24, "a documentation"), ([192, 88, 99, 0], 24, "a reserved (6to4 relay)"),
        ([192, 168, 0, 0], 16, "a private"), ([198, 18, 0, 0], 15, "a benchmarking"), ([198, 51, 100, 0], 24, "a documentation"),
        ([203, 0, 113, 0], 24, "a documentation"), ([224, 0, 0, 0], 4, "a multicast"), ([240, 0, 0, 0], 4, "a reserved"),
    ]

    private static let ipv6Ranges: [(prefix: [UInt8], bits: Int, name: String)] = [
        ([0x01, 0x00] + Array(repeating: 0, count: 14), 64, "a discard-only"), ([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 12), 32, "a documentation"),
        ([0x20, 0x01] + Array(repeating: 0, count: 14), 32, "a Teredo"), ([0x20, 0x02] + Array(repeating: 0, count: 14), 16, "a 6to4"),
        ([0xfc] + Array(repeating: 0, count: 15), 7, "a unique local (private)"), ([0xfe, 0x80] + Array(repeating: 0, count: 14), 10, "a link-local"),
        ([0xfe, 0xc0] + Array(repeating: 0, count: 14), 10, "a site-local"), ([0xff] + Array(repeating: 0, count: 15), 8, "a multicast"),
    ]

    private static func matches(_ bytes: [UInt8], _ prefix: [UInt8], bits: Int) -> Bool {
        for bit in 0..<bits {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if bytes[bit / 8] & mask != prefix[bit / 8] & mask { return false }
        }
        return true
    }

    private static func ipv4Range(_ bytes: [UInt8]) -> String? {
        if bytes == [255, 255, 255, 255] { return "a broadcast" }
        return ipv4Ranges.first { matches(bytes, $0.prefix, bits: $0.bits) }?.name
    }

    private static func ipv6Range(_ bytes: [UInt8]) -> String? {
        let zeros = Array(repeating: UInt8(0), count: 10)
        if bytes.allSatisfy({ $0 == 0 }) { return "an unspecified" }
        if bytes == Array(repeating: 0, count: 15) + [1] { return "a loopback" }
        // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the IPv4 address decides.
        if Array(bytes[0..<10]) == zeros && bytes[10] == 0xff && bytes[11] == 0xff { return ipv4Range(Array(bytes[12...])) }
        if Array(bytes[0..<12]) == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return ipv4Range(Array(bytes[12...])) }
        // IPv4-compatible (::a.b.c.d), deprecated: nothing public is reached that way.
        if Array(bytes[0..<12]) == Array(repeating: 0, count: 12) { return "a deprecated IPv4-compatible" }
        return ipv6Ranges.first { matches(bytes, $0.prefix, bits: $0.bits) }?.name
    }
}

/// The `Wallet-Signature` header of a delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "t.body" under a secret>`, one `v1` per secret that signs (two during a rotation).
public enum WebhookSignature {
    public static func header(timestamp: Int64, body: some DataProtocol, secrets: [String]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(timestamp: timestamp, body: body, secret: $0) }).joined(separator: ",")
    }

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    public static func signature(timestamp: Int64, body: some DataProtocol, secret: String) -> String {
        var code = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
        code.update(data: Array("\(timestamp).".utf8))
        code.update(data: Array(body))
        return Hex.encode(code.finalize())
    }

    /// Whether `header` carries a valid signature of `body` under `secret`, made within
    /// `tolerance` of `now`: what a receiver checks (the README shows the same in a few lines).
    public static func verify(header: String, body: some DataProtocol, secret: String, now: Date = Date(), tolerance: TimeInterval = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for item in header.split(separator: ",") {
            if item.hasPrefix("t=") { timestamp = Int64(item.dropFirst(2)) } else if item.hasPrefix("v1=") { signatures.append(String(item.dropFirst(3))) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(signature(timestamp: timestamp, body: body, secret: secret).utf8)
        // Compared in constant time: a receiver must not leak how much of a guess was right.
        return signatures.contains { candidate in
            let bytes = Array(candidate.utf8)
            return bytes.count == expected.count && zip(bytes, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    /// A new signing secret: `whsec_` and 32 random bytes in base64url.
    package static func makeSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + Base64URL.encode(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }

    /// How long the secret before a rotation keeps signing, so that receivers can switch.
    public static let previousSecretLifetime: TimeInterval = 24 * 3_600
}

/// When a failed delivery is tried again: exponential backoff from 5 s to an hour, each delay
/// jittered down by up to half (so endpoints that failed together do not retry together), for
/// up to three days from the first failed attempt at the same event; then the endpoint is
/// marked failing.
public enum WebhookRetry {
    public static let giveUpAfter: TimeInterval = 3 * 86_400
    static let firstDelay: TimeInterval = 5
    static let delayMax: TimeInterval = 3_600

    /// The delay after `attempts` failed attempts (1 or more); `random` is in 0..<1.
    public static func delay(afterAttempts attempts: Int64, random: Double) -> TimeInterval {
        let exponent = Double(max(0, min(attempts - 1, 20)))
        let full = min(firstDelay * pow(2, exponent), delayMax)
        return full * (1 - 0.5 * min(max(random, 0), 1))
    }

    /// What a failed attempt leaves: the endpoint failing (its first failed attempt at this event
    /// was `giveUpAfter` ago or more), or active with its next attempt.
    package static func afterFailure(
        attempts: Int64, failingSince: Date, now: Date, random: Double
    ) -> (status: WebhookEndpoint.Status, nextAttemptAt: Date) {
        if now.timeIntervalSince(failingSince) >= giveUpAfter { return (.failing, now) }
        return (.active, now.addingTimeInterval(delay(afterAttempts: attempts, random: random)))
    }
}

/// A sender's hold on one endpoint: the endpoint as claimed and the secrets that sign now.
public struct WebhookClaim: Sendable, Equatable {
    public var endpoint: WebhookEndpoint
    /// The current secret first, then the previous one while it still signs.
    public var secrets: [String]
    public var holder: String

    package init(endpoint: WebhookEndpoint, secrets: [String], holder: String) {
        self.endpoint = endpoint
        self.secrets = secrets
        self.holder = holder
    }
}

/// The webhook endpoints admins manage, and the claims their sender takes.
public protocol WebhookStore: Sendable {
    /// A new endpoint, active, receiving events committed from now on; its secret is answered once.
    func createWebhook(_ request: WebhookEndpointRequest, allowedHosts: Set<String>) async throws(WalletError) -> CreatedWebhook
    /// Every endpoint, oldest first.
    func webhooks() async throws(WalletError) -> [WebhookEndpoint]
    func webhook(id: String) async throws(WalletError) -> WebhookEndpoint
    /// Disables an endpoint, or enables it again (failing or disabled): delivery resumes at its
    /// cursor, with a fresh attempt count.
    func setWebhook(id: String, enabled: Bool) async throws(WalletError) -> WebhookEndpoint
    /// A new secret; the previous one keeps signing for `WebhookSignature.previousSecretLifetime`.
    func rotateWebhookSecret(id: String) async throws(WalletError) -> CreatedWebhook
    /// Sends again every event from `fromSeq` on: the cursor moves back to just before it.
    func replayWebhook(id: String, fromSeq: Int64) async throws(WalletError) -> WebhookEndpoint
    /// Removes a disabled endpoint (an active one is disabled first, so that no sender is
    /// delivering to it); answers it as it was.
    func deleteWebhook(id: String) async throws(WalletError) -> WebhookEndpoint

    /// Takes endpoint `id` for `holder` until `lease` from now, if it is active, due, and not
    /// held by another sender whose lease runs; nil otherwise.
    func claimWebhook(id: String, holder: String, lease: Duration) async throws(WalletError) -> WebhookClaim?
    /// Moves the cursor from `from` to `to` (`delivered` events accepted on the way) and extends
    /// the lease; false when the claim was lost (another holder, or an admin's replay or
    /// enable moved the cursor): the sender then stops.
    func advanceWebhook(id: String, holder: String, from: Int64, to: Int64, delivered: Int64, lease: Duration) async throws(WalletError) -> Bool
    /// Records a failed attempt at the event after the cursor (`WebhookRetry`) and gives the claim up.
    func failWebhook(id: String, holder: String, cursor: Int64, error: String, random: Double) async throws(WalletError) -> WebhookEndpoint?
    /// Gives the claim up, if `holder` still has it.
    func releaseWebhook(id: String, holder: String) async throws(WalletError)
}
