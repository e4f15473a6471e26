import Foundation
import WalletCore

/// A Pub/Sub push delivering a Real-time developer notification: the envelope
/// (`{"message": {"data": base64, "messageId": ...}, "subscription": ...}`) and the notification
/// its data holds. Both are read by the wallet's strict JSON parser: a duplicate member, a value
/// of the wrong type or nesting past the limit refuses the push.
public struct GooglePushMessage: Sendable, Equatable {
    /// Pub/Sub's id of the message: each is applied once.
    public var messageID: String
    public var notification: GoogleDeveloperNotification

    /// The largest data a push may carry once decoded (Google's notifications are under 1 KiB).
    static let dataBytesMax = 16 * 1024

    public init(messageID: String, notification: GoogleDeveloperNotification) {
        self.messageID = messageID
        self.notification = notification
    }

    /// - Throws: `invalidRequest` naming what is malformed.
    public init(envelope bytes: [UInt8]) throws(WalletError) {
        let envelope = try Self.object(bytes, what: "the push")
        guard case .object(let message)? = envelope["message"] else { throw .invalidRequest("the push has no message object") }
        // What Pub/Sub sends beside the data is not used, but its types are checked, as the
        // document states them: a push is read strictly or not at all.
        for (name, value) in [("subscription", envelope["subscription"]), ("publishTime", message["publishTime"]), ("publish_time", message["publish_time"])] {
            if let value, case .string = value {} else if value != nil { throw .invalidRequest("the push's \(name) must be a string") }
        }
        if let attributes = message["attributes"], case .object = attributes {} else if message["attributes"] != nil {
            throw .invalidRequest("the push message's attributes must be an object")
        }
        guard case .string(let id)? = message["messageId"] ?? message["message_id"] else { throw .invalidRequest("the push message has no messageId") }
        try Validate.visibleText(id, field: "the message id", bytesMax: 64)
        guard case .string(let data)? = message["data"] else { throw .invalidRequest("the push message has no data") }
        guard data.utf8.count <= Self.dataBytesMax * 4 / 3 + 4, let decoded = Data(base64Encoded: data) ?? Base64URL.decode(data[...]) else {
            throw .invalidRequest("the push message's data is not base64 of at most \(Self.dataBytesMax) bytes")
        }
        messageID = id
        do {
            notification = try GoogleDeveloperNotification(json: Array(decoded))
        } catch {
            // The envelope is sound, so the message can be recorded once under its id: refused.
            notification = GoogleDeveloperNotification(packageName: "", event: .malformed(reason: error.detail))
        }
    }

    static func object(_ bytes: [UInt8], what: String) throws(WalletError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONParser.checkedValue(of: bytes)
        } catch {
            throw .invalidRequest("\(what) is not JSON: \(error.reason)")
        }
        guard case .object(let members) = value else { throw .invalidRequest("\(what) is not a JSON object") }
        return members
    }
}

/// A Real-time developer notification (`DeveloperNotification`), reduced to what the wallet acts on.
public struct GoogleDeveloperNotification: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// `oneTimeProductNotification` type 1: a purchase completed (a pending one, paid later, too).
        case purchased(purchaseToken: String, productID: String)
        /// `oneTimeProductNotification` type 2: a pending purchase canceled.
        case canceled(purchaseToken: String)
        /// `voidedPurchaseNotification`: refunded, charged back or revoked; `oneTimeProduct` false
        /// for a subscription's.
        case voided(purchaseToken: String, oneTimeProduct: Bool)
        case test
        /// Subscriptions and anything newer: recorded only.
        case other
        /// Data the wallet cannot read (a missing field, a token it does not take): recorded as
        /// `invalid`, with the reason.
        case malformed(reason: String)
    }

    public var packageName: String
    public var event: Event
    /// When Google sent it, milliseconds since 1970, if it says.
    public var eventTimeMillis: Int64?

    /// The type the wallet records the notification under.
    public var type: String {
        switch event {
        case .purchased: "ONE_TIME_PRODUCT_PURCHASED"
        case .canceled: "ONE_TIME_PRODUCT_CANCELED"
        case .voided: "VOIDED_PURCHASE"
        case .test: "TEST"
        case .other: "OTHER"
        case .malformed: "MALFORMED"
        }
    }

    public init(packageName: String, event: Event, eventTimeMillis: Int64? = nil) {
        self.packageName = packageName
        self.event = event
        self.eventTimeMillis = eventTimeMillis
    }

    /// - Throws: `invalidRequest` naming what is malformed.
    public init(json bytes: [UInt8]) throws(WalletError) {
        let members = try GooglePushMessage.object(bytes, what: "the notification")
        guard case .string(let package)? = members["packageName"] else { throw .invalidRequest("the notification has no packageName") }
        try Validate.visibleText(package, field: "the package name", bytesMax: Limits.identifierBytesMax)
        packageName = package
        if case .string(let text)? = members["eventTimeMillis"], let millis = Int64(text), millis >= 0 { eventTimeMillis = millis }
        if case .object(let product)? = members["oneTimeProductNotification"] {
            let token = try Self.text(product["purchaseToken"], "purchase token")
            switch product["notificationType"] {
            case .integer(1)?: event = .purchased(purchaseToken: token, productID: try Self.text(product["sku"], "product id (sku)"))
            case .integer(2)?: event = .canceled(purchaseToken: token)
            default: event = .other
            }
        } else if case .object(let voided)? = members["voidedPurchaseNotification"] {
            let token = try Self.text(voided["purchaseToken"], "purchase token")
            // productType 1 is a subscription, 2 a one-time product.
            event = .voided(purchaseToken: token, oneTimeProduct: voided["productType"] != .integer(1))
        } else if members["testNotification"] != nil {
            event = .test
        } else {
            event = .other
        }
    }

    private static func text(_ value: JSONValue?, _ field: String) throws(WalletError) -> String {
        guard case .string(let text)? = value else { throw .invalidRequest("the notification has no \(field)") }
        try GooglePurchases.validatePathSegment(text, field: field)
        return text
    }
}
