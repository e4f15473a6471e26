import Foundation
import Testing
@testable import WalletApple
import WalletCore
@testable import WalletGoogle
@testable import WalletServer
import WalletTestSupport

@Suite("The OpenAPI document", .throttled)
struct OpenAPITests {
    func document() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
    }

    @Test("it describes exactly the router's routes, with open routes marked open", arguments: TestBackend.all)
    func matchesRouter(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let document = try document()
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
        let routed = Set(server.routes.routes.map { "\($0.method.rawValue) \($0.path)" })
        #expect(documented == routed)
        for route in server.routes.routes {
            let operation = try #require(paths[route.path]?[route.method.rawValue.lowercased()] as? [String: Any])
            let security = operation["security"] as? [Any]
            #expect((security?.isEmpty == true) == route.access.isOpen, "\(route.path) security")
            let responses = try #require(operation["responses"] as? [String: Any])
            if !route.access.isOpen {
                #expect(responses["401"] != nil && responses["403"] != nil, "\(route.path) documents 401 and 403")
            }
            for parameter in route.path.split(separator: "/") where parameter.hasPrefix("{") {
                let name = parameter.dropFirst().dropLast()
                let parameters = try (operation["parameters"] as? [[String: Any]] ?? []).map { try resolved($0, in: document) }
                #expect(parameters.contains { $0["name"] as? String == String(name) && $0["in"] as? String == "path" }, "\(route.path) documents \(name)")
            }
        }
    }

    /// `object`, or what its `$ref` (`#/components/<section>/<name>`) names.
    func resolved(_ object: [String: Any], in document: [String: Any]) throws -> [String: Any] {
        guard let reference = object["$ref"] as? String else { return object }
        let parts = reference.split(separator: "/").map(String.init)
        try #require(parts.count == 4 && parts[0] == "#" && parts[1] == "components", "\(reference)")
        let components = try #require(document["components"] as? [String: [String: Any]])
        return try #require(components[parts[2]]?[parts[3]] as? [String: Any], "\(reference)")
    }

    @Test("every $ref resolves")
    func references() throws {
        let text = OpenAPIDocument.json
        let document = try document()
        let components = try #require(document["components"] as? [String: [String: Any]])
        let pattern = try NSRegularExpression(pattern: ##""\$ref": "#/components/(\w+)/(\w+)""##)
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        #expect(!matches.isEmpty)
        for match in matches {
            let section = String(text[Range(match.range(at: 1), in: text)!])
            let name = String(text[Range(match.range(at: 2), in: text)!])
            #expect(components[section]?[name] != nil, "#/components/\(section)/\(name)")
        }
    }

    @Test("the request bodies document exactly the fields the handlers accept")
    func bodies() throws {
        let schemas = try #require((try document()["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let expected: [String: Set<String>] = [
            "SpendBody": WalletController.SpendBody.fieldNames, "AdjustmentBody": WalletController.AdjustmentBody.fieldNames,
            "PurchaseBody": PurchaseController.PurchaseBody.fieldNames, "RefundBody": PurchaseController.RefundBody.fieldNames,
            "ApplePurchaseBody": PurchaseController.ApplePurchaseBody.fieldNames,
            "AppleReceiptBody": PurchaseController.AppleReceiptBody.fieldNames, "CreditOrderBody": PurchaseController.CreditOrderBody.fieldNames,
            "RestoreBody": PurchaseController.RestoreBody.fieldNames,
            "AppleNotificationBody": PurchaseController.AppleNotificationBody.fieldNames,
            "ProductBody": ProductController.ProductBody.fieldNames, "KeyBody": KeyController.KeyBody.fieldNames, "BonusBody": WalletController.BonusBody.fieldNames,
            "HoldBody": WalletController.HoldBody.fieldNames, "CaptureBody": HoldController.CaptureBody.fieldNames, "ReleaseBody": HoldController.ReleaseBody.fieldNames,
            "ExportLinkBody": LedgerController.LinkBody.fieldNames, "EntitlementChangeBody": EntitlementController.ChangeBody.fieldNames,
            "WebhookBody": EventController.EndpointBody.fieldNames, "ReplayBody": EventController.ReplayBody.fieldNames,
        ]
        for (name, fields) in expected {
            let properties = try #require(schemas[name]?["properties"] as? [String: Any])
            #expect(Set(properties.keys) == fields, "\(name)")
            #expect(schemas[name]?["additionalProperties"] as? Bool == false)
        }
    }

    @Test("the document names every kind of transaction the ledger writes")
    func kinds() throws {
        let document = try document()
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let kinds = try #require(schemas["TransactionKind"]?["enum"] as? [String])
        #expect(Set(kinds) == Set(TransactionKind.allCases.map(\.rawValue)))
        // Every other place a kind is written out: a transaction, the history's filter, the volume report.
        let places = try enums(of: "kind", in: document)
        #expect(places.count >= 3)
        for (pointer, values) in places {
            #expect(values.count == Set(values).count && Set(values) == Set(TransactionKind.allCases.map(\.rawValue)), "\(pointer)")
        }
    }

    @Test("its product types, entitlement changes and actions are Core's, and its duration pattern admits every duration Core does")
    func entitlementEnums() throws {
        let document = try document()
        let types = try #require(value(at: "/components/schemas/ProductType/enum", in: document) as? [String])
        #expect(types.count == Set(types).count && Set(types) == Set(ProductType.allCases.map(\.rawValue)))
        let changes = try #require(value(at: "/components/schemas/EntitlementChange/enum", in: document) as? [String])
        #expect(changes.count == Set(changes).count && Set(changes) == Set(EntitlementChangeKind.allCases.map(\.rawValue)))
        let actions = try #require(value(at: "/components/schemas/EntitlementChangeBody/properties/action/enum", in: document) as? [String])
        for action in actions {
            let duration = action == "grant" ? "P7D" : nil
            let days: Int64? = action == "extend" ? 1 : nil
            let body = EntitlementController.ChangeBody(action: action, entitlement: try EntitlementName("vip"), duration: duration, days: days, reasonCode: "r", note: "n")
            #expect(throws: Never.self, "\(action)") { try body.changeAction() }
        }
        #expect(actions.count == 3)
        let pattern = try NSRegularExpression(pattern: try #require(value(at: "/components/schemas/PassDuration/pattern", in: document) as? String))
        func matches(_ text: String) -> Bool { pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil }
        for text in ["P1D", "P30D", "P1W", "P3M", "P1Y", "P10Y", "P1Y2M3W4D", "P120M", "P3660D"] {
            #expect((try? PassDuration(text)) != nil && matches(text), "\(text)")
        }
        for text in ["P", "PT1H", "30D", "P1D1Y", "p1d", "P1.5D", "P-1D", "P123456D", " P1D"] {
            #expect((try? PassDuration(text)) == nil && !matches(text), "\(text)")
        }
    }

    @Test("its hold statuses and lot categories are Core's")
    func statusesAndCategories() throws {
        let document = try document()
        let statuses = try #require(value(at: "/components/schemas/Hold/properties/status/enum", in: document) as? [String])
        #expect(statuses.count == Set(statuses).count && Set(statuses) == Set(Hold.Status.allCases.map(\.rawValue)))
        let categories = try enums(of: "category", in: document)
        #expect(!categories.isEmpty)
        for (pointer, values) in categories {
            #expect(values.count == Set(values).count && Set(values) == Set(LotCategory.allCases.map(\.rawValue)), "\(pointer)")
        }
    }

    @Test("its event types and webhook statuses are Core's, wherever a type is written out")
    func eventTypesAndWebhookStatuses() throws {
        let document = try document()
        let all = Set(EventType.allCases.map(\.rawValue))
        let types = try #require(value(at: "/components/schemas/EventType/enum", in: document) as? [String])
        #expect(types.count == Set(types).count && Set(types) == all)
        let statuses = try #require(value(at: "/components/schemas/WebhookStatus/enum", in: document) as? [String])
        #expect(statuses.count == Set(statuses).count && Set(statuses) == Set(WebhookEndpoint.Status.allCases.map(\.rawValue)))
        // A list of types (the feed's filter, an endpoint's) is Core's types or `*`, as `EventType.parse` reads it.
        for pointer in ["/components/schemas/WebhookTypes/items/anyOf", Self.path("/v1/events") + "/get/parameters/2/schema/items/anyOf"] {
            let choices = try #require(value(at: pointer, in: document) as? [[String: Any]], "\(pointer)")
            #expect(choices.count == 2 && choices[0]["$ref"] as? String == "#/components/schemas/EventType" && choices[1]["const"] as? String == "*", "\(pointer)")
        }
        let header = try #require(value(at: "/webhooks/ledgerEvent/post/parameters/1/schema/$ref", in: document) as? String)
        #expect(header == "#/components/schemas/EventType")
    }

    /// The `enum` of every property or parameter named `name`, by the JSON pointer of its schema.
    func enums(of name: String, in document: [String: Any]) throws -> [String: [String]] {
        var found: [String: [String]] = [:]
        func visit(_ node: Any, _ pointer: String) throws {
            if let object = node as? [String: Any] {
                var schemas: [(String, [String: Any])] = []
                if let property = (object["properties"] as? [String: Any])?[name] as? [String: Any] {
                    schemas.append(("\(pointer)/properties/\(name)", property))
                }
                if object["name"] as? String == name, object["in"] is String, let schema = object["schema"] as? [String: Any] {
                    schemas.append(("\(pointer)/schema", schema))
                }
                for (schemaPointer, schema) in schemas {
                    found[schemaPointer] = try #require(try resolved(schema, in: document)["enum"] as? [String], "\(schemaPointer) lists its values")
                }
                for (key, child) in object { try visit(child, "\(pointer)/\(Self.escaped(key))") }
            } else if let array = node as? [Any] {
                for (index, child) in array.enumerated() { try visit(child, "\(pointer)/\(index)") }
            }
        }
        try visit(document, "")
        return found
    }

    @Test("its problem codes are exactly those the server can answer: its own and every ledger error's")
    func problemCodes() throws {
        for errorCase in WalletErrorCase.allCases {
            #expect(!errorCase.samples.isEmpty, "\(errorCase)")
            for sample in errorCase.samples { #expect(WalletErrorCase(sample) == errorCase, "\(sample)") }
        }
        let answered = Set(APIError.Code.allCases.map(\.rawValue) + WalletErrorCase.allCases.flatMap(\.samples).map(\.code))
        let documented = try #require(value(at: "/components/schemas/Problem/properties/code/enum", in: try document()) as? [String])
        #expect(documented.count == Set(documented).count)
        #expect(answered.subtracting(documented).sorted() == [], "codes the server answers that the document does not list")
        #expect(Set(documented).subtracting(answered).sorted() == [], "codes the document lists that the server never answers")
    }

    /// The cases of `WalletError`, each with errors of that case, so that the codes the server can
    /// answer are derived from `WalletError.code` itself.
    enum WalletErrorCase: CaseIterable {
        case invalidRequest, insufficientFunds, idempotencyKeyReused, unknownProduct, unknownCurrency, notFound, unsupportedDatabase, storage
        case corrupt, overloaded, alreadyRefunded, purchaseInvalid, purchasePending, notConfigured, storeUnavailable, holdResolved, captureExceedsHold
        case forbidden, tooManyLots

        /// The case of `error`. The switch has no `default`: a case added to `WalletError` does not
        /// compile here until it is named above, and then `samples` does not until it has errors,
        /// whose codes the document must then list.
        init(_ error: WalletError) {
            switch error {
            case .invalidRequest: self = .invalidRequest
            case .insufficientFunds: self = .insufficientFunds
            case .idempotencyKeyReused: self = .idempotencyKeyReused
            case .unknownProduct: self = .unknownProduct
            case .unknownCurrency: self = .unknownCurrency
            case .notFound: self = .notFound
            case .unsupportedDatabase: self = .unsupportedDatabase
            case .storage: self = .storage
            case .corrupt: self = .corrupt
            case .overloaded: self = .overloaded
            case .alreadyRefunded: self = .alreadyRefunded
            case .purchaseInvalid: self = .purchaseInvalid
            case .purchasePending: self = .purchasePending
            case .notConfigured: self = .notConfigured
            case .storeUnavailable: self = .storeUnavailable
            case .holdResolved: self = .holdResolved
            case .captureExceedsHold: self = .captureExceedsHold
            case .forbidden: self = .forbidden
            case .tooManyLots: self = .tooManyLots
            }
        }

        /// Errors of this case: one, or for `holdResolved` one per status a hold ends in (each
        /// status is its own code, `hold_<status>`).
        var samples: [WalletError] {
            switch self {
            case .invalidRequest: [.invalidRequest("")]
            case .insufficientFunds: [.insufficientFunds(balance: 0, currency: defaultCurrency)]
            case .idempotencyKeyReused: [.idempotencyKeyReused("")]
            case .unknownProduct: [.unknownProduct("")]
            case .unknownCurrency: [.unknownCurrency("")]
            case .notFound: [.notFound("")]
            case .unsupportedDatabase: [.unsupportedDatabase("")]
            case .storage: [.storage("")]
            case .corrupt: [.corrupt("")]
            case .overloaded: [.overloaded("")]
            case .alreadyRefunded: [.alreadyRefunded("")]
            case .purchaseInvalid: [.purchaseInvalid("")]
            case .purchasePending: [.purchasePending("")]
            case .notConfigured: [.notConfigured("")]
            case .storeUnavailable: [.storeUnavailable("")]
            case .holdResolved: Hold.Status.allCases.filter { $0 != .open }.map { .holdResolved(status: $0, detail: "") }
            case .captureExceedsHold: [.captureExceedsHold("")]
            case .forbidden: [.forbidden("")]
            case .tooManyLots: [.tooManyLots("")]
            }
        }
    }

    @Test("its limits are the ones the server enforces")
    func limits() throws {
        let document = try document()
        let schemas = "/components/schemas/"
        let identifier = Int64(Limits.identifierBytesMax), currency = Int64(Limits.currencyBytesMax), amount = Limits.amountPerOperationMax
        let history = Self.path("/v1/wallets/{player_id}/transactions") + "/get/parameters/1/schema/"
        let events = Self.path("/v1/events") + "/get/parameters/"
        let limits: [String: Int64] = [
            schemas + "PlayerId/maxLength": identifier,
            schemas + "IdempotencyKey/maxLength": identifier,
            schemas + "ProductId/maxLength": identifier,
            schemas + "SpendBody/properties/amount/maximum": amount,
            schemas + "SpendBody/properties/reason/maxLength": Int64(Limits.reasonBytesMax),
            schemas + "AdjustmentBody/properties/amount/minimum": -amount,
            schemas + "AdjustmentBody/properties/amount/maximum": amount,
            schemas + "AdjustmentBody/properties/note/maxLength": Int64(Limits.noteBytesMax),
            schemas + "AdjustmentBody/properties/ticket/maxLength": identifier,
            schemas + "PurchaseBody/properties/quantity/maximum": Limits.quantityMax,
            schemas + "ProductBody/properties/credits/maximum": Limits.productCreditsMax,
            schemas + "ProductBody/properties/credits/minimum": 0,
            schemas + "EntitlementChangeBody/properties/days/minimum": 1,
            schemas + "EntitlementChangeBody/properties/days/maximum": EntitlementChangeRequest.extendDaysMax,
            schemas + "EntitlementChangeBody/properties/note/maxLength": Int64(Limits.noteBytesMax),
            schemas + "EntitlementChangeBody/properties/ticket/maxLength": identifier,
            schemas + "BonusBody/properties/amount/maximum": amount,
            schemas + "BonusBody/properties/currency/maxLength": currency,
            schemas + "BonusBody/properties/reason_code/maxLength": Int64(Limits.reasonCodeBytesMax),
            schemas + "BonusBody/properties/note/maxLength": Int64(Limits.noteBytesMax),
            schemas + "BonusBody/properties/campaign/maxLength": identifier,
            schemas + "BonusBody/properties/idempotency_key/maxLength": identifier,
            schemas + "HoldBody/properties/amount/maximum": amount,
            schemas + "HoldBody/properties/currency/maxLength": currency,
            schemas + "HoldBody/properties/expires_in_seconds/minimum": HoldRequest.expiresInSecondsRange.lowerBound,
            schemas + "HoldBody/properties/expires_in_seconds/maximum": HoldRequest.expiresInSecondsRange.upperBound,
            schemas + "HoldBody/properties/reason/maxLength": Int64(Limits.reasonBytesMax),
            schemas + "HoldBody/properties/idempotency_key/maxLength": identifier,
            schemas + "CaptureBody/properties/amount/maximum": amount,
            schemas + "CaptureBody/properties/idempotency_key/maxLength": identifier,
            schemas + "ReleaseBody/properties/idempotency_key/maxLength": identifier,
            schemas + "ReleaseBody/properties/reason/maxLength": Int64(Limits.reasonBytesMax),
            schemas + "KeyBody/properties/name/maxLength": identifier,
            schemas + "ExportLinkBody/properties/currency/maxLength": currency,
            schemas + "ApplePurchaseBody/properties/signed_transaction/maxLength": Int64(AppleSignedDataVerifier.jwsBytesMax),
            schemas + "AppleNotificationBody/properties/signedPayload/maxLength": Int64(AppleSignedDataVerifier.jwsBytesMax),
            // Unity IAP's wrapper may add up to 1 KiB around the base64 (`AppReceipt.der(receipt:)`).
            schemas + "AppleReceiptBody/properties/receipt/maxLength": Int64(AppReceipt.base64BytesMax + 1_024),
            schemas + "RestoreBody/properties/signed_transactions/maxItems": Int64(ApplePurchases.restoreTransactionsMax),
            schemas + "RestoreBody/properties/receipt/maxLength": Int64(AppReceipt.base64BytesMax + 1_024),
            schemas + "NotificationOutcome/properties/spent_share_millipercent/maximum": Limits.refundShareMax,
            schemas + "GooglePurchaseBody/properties/product_id/maxLength": identifier,
            schemas + "GooglePurchaseBody/properties/purchase_token/maxLength": identifier,
            schemas + "GooglePushBody/properties/message/properties/messageId/maxLength": 64,
            // The base64 of the longest notification data the wallet reads.
            schemas + "GooglePushBody/properties/message/properties/data/maxLength": Int64((GooglePushMessage.dataBytesMax + 2) / 3 * 4),
            Self.path("/v1/google/orders/{order_id}") + "/get/parameters/0/schema/maxLength": identifier,
            Self.path("/v1/purchases/{store}/{store_transaction_id}") + "/get/parameters/1/schema/maxLength": identifier,
            Self.path("/v1/wallets/{player_id}/notifications") + "/get/parameters/1/schema/maximum": Int64(Limits.pageSizeMax),
            Self.path("/v1/wallets/{player_id}/notifications") + "/get/parameters/2/schema/maxLength": Int64(Timestamp.ledgerLength + StoreNotificationRecord.uuidBytesMax),
            schemas + "StoreNotificationRecord/properties/spent_share_millipercent/maximum": Limits.refundShareMax,
            // The API takes whole percent; the ledger keeps thousandths of a percent.
            schemas + "RefundBody/properties/percentage/maximum": Limits.refundShareMax / 1_000,
            history + "maximum": Int64(Limits.pageSizeMax),
            history + "default": Int64(Limits.pageSizeDefault),
            events + "1/schema/maximum": Int64(EventQuery.limitMax),
            events + "1/schema/default": Int64(EventQuery.limitDefault),
            events + "3/schema/maximum": Int64(EventQuery.waitSecondsMax),
            schemas + "WebhookBody/properties/url/maxLength": Int64(WebhookURL.bytesMax),
            schemas + "WebhookBody/properties/description/maxLength": Int64(WebhookEndpoint.descriptionBytesMax),
        ]
        for (pointer, limit) in limits.sorted(by: { $0.key < $1.key }) {
            let documented = try #require(value(at: pointer, in: document) as? NSNumber, "\(pointer)")
            #expect(documented.int64Value == limit, "\(pointer)")
        }
        // Ids the server makes or Apple's order ids, documented with a loose bound that no constant
        // holds (a hold id is a 36-character UUID, an export link 43 characters, a key id 20).
        let loose = [
            "/v1/apple/orders/{order_id}", "/v1/apple/orders/{order_id}/credit", "/v1/keys/{key_id}/revoke", "/v1/ledger/export/links/{token}",
            "/v1/holds/{hold_id}/capture", "/v1/holds/{hold_id}/release",
        ].map { Self.path($0) }
        // A new bound in the document must be added to the table above, or be one of those.
        for (pointer, _) in Self.keywords(["maxLength", "maximum", "maxItems", "maxProperties"], in: document) {
            #expect(limits[pointer] != nil || loose.contains { pointer.hasPrefix($0 + "/") }, "\(pointer) is not checked against a limit")
        }
        // Lengths the document states as patterns.
        let patterns: [String: String] = [
            schemas + "Currency/pattern": "^[a-z][a-z0-9_]{0,\(Limits.currencyBytesMax - 1)}$",
            schemas + "Store/pattern": "^[a-z][a-z0-9_-]{0,\(Limits.storeBytesMax - 1)}$",
            schemas + "AdjustmentBody/properties/reason_code/pattern": "^[a-z][a-z0-9_]{0,\(Limits.reasonCodeBytesMax - 1)}$",
            schemas + "EntitlementChangeBody/properties/reason_code/pattern": "^[a-z][a-z0-9_]{0,\(Limits.reasonCodeBytesMax - 1)}$",
            schemas + "EntitlementName/pattern": "^[a-z0-9][a-z0-9_.-]{0,\(EntitlementName.bytesMax - 1)}$",
        ]
        for (pointer, pattern) in patterns {
            #expect(value(at: pointer, in: document) as? String == pattern, "\(pointer)")
        }
        // And limits it states in words.
        let receipt = Self.path("/v1/purchases/apple/receipt") + "/post"
        let sentences: [String: String] = [
            schemas + "SpendBody/properties/metadata/description": "at most \(Limits.metadataBytesMax) bytes of JSON and \(Limits.metadataDepthMax) levels deep",
            schemas + "HoldBody/properties/metadata/description": "at most \(Limits.metadataBytesMax) bytes of JSON and \(Limits.metadataDepthMax) levels deep",
            "/components/responses/Problem413/description": "larger than \(ServerLimits.bodyBytesMax / 1_024) KiB",
            receipt + "/responses/413/description":
                "larger than \(AppReceipt.base64BytesMax / 1_048_576) MiB + \((ServerLimits.receiptBodyBytesMax - AppReceipt.base64BytesMax) / 1_024) KiB",
            receipt + "/responses/429/description": "More than \(ServerLimits.receiptsPerPlayerPerMinute) receipts a minute",
            receipt + "/summary": "past \(AppStoreServerAPI.historyPagesMax) pages",
            schemas + "ReceiptRedemption/properties/complete/description": "past \(AppStoreServerAPI.historyPagesMax) pages",
            Self.path("/v1/ledger/export/links") + "/post/responses/429/description": "\(ExportLinks.perCreatorMax) links",
            Self.path("/v1/wallets/{player_id}/statement") + "/get/responses/200/description": "at most \(StatementQuery.transactionsMax) transactions",
            "/components/headers/RequestId/description": "up to \(ServerLimits.requestIDBytesMax) visible ASCII characters",
            Self.path("/v1/webhooks") + "/post/summary": "At most \(WebhookEndpoint.countMax) endpoints",
            Self.path("/v1/webhooks/{webhook_id}/rotate-secret") + "/post/summary": "For \(Int(WebhookSignature.previousSecretLifetime / 3_600)) hours",
            schemas + "EventPage/properties/next/description": "at most \(EventQuery.scanMax) transactions",
            "/webhooks/ledgerEvent/post/description": "2xx within \(WebhookDeliverySettings().timeout.components.seconds) seconds is success",
            "/webhooks/ledgerEvent/post/responses/2XX/description": "at most \(WebhookDeliverySettings().answerBytesMax / 1_024) KiB",
        ]
        for (pointer, sentence) in sentences {
            #expect((value(at: pointer, in: document) as? String)?.contains(sentence) == true, "\(pointer) says \(sentence)")
        }
        let delivery = value(at: "/webhooks/ledgerEvent/post/description", in: document) as? String
        #expect(delivery?.contains("for up to \(Int(WebhookRetry.giveUpAfter / 86_400)) days") == true)
    }

    /// The JSON pointer (RFC 6901) of the operations of `path`.
    static func path(_ path: String) -> String { "/paths/" + escaped(path) }

    /// `key` as one token of a JSON pointer.
    static func escaped(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// What the JSON pointer `pointer` names in `document`, if anything.
    func value(at pointer: String, in document: Any) -> Any? {
        var node: Any? = document
        for token in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch node {
            case let object as [String: Any]: node = object[key]
            case let array as [Any]: node = Int(key).flatMap { array.indices.contains($0) ? array[$0] : nil }
            default: return nil
            }
        }
        return node
    }

    /// Every number under one of `names` in `document`, by its JSON pointer.
    static func keywords(_ names: Set<String>, in document: Any) -> [String: NSNumber] {
        var found: [String: NSNumber] = [:]
        func visit(_ node: Any, _ pointer: String) {
            if let object = node as? [String: Any] {
                for (key, child) in object {
                    if names.contains(key), let number = child as? NSNumber { found["\(pointer)/\(escaped(key))"] = number }
                    visit(child, "\(pointer)/\(escaped(key))")
                }
            } else if let array = node as? [Any] {
                for (index, child) in array.enumerated() { visit(child, "\(pointer)/\(index)") }
            }
        }
        visit(document, "")
        return found
    }

    @Test("the server answers the file's bytes at /openapi.json, as JSON")
    func served() async throws {
        // SQLite only: the document is the same bytes whatever the store.
        let server = try await TestServer(.sqlite)
        try await server.test { client in
            let response = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(response.status == .ok && response.headers[.contentType] == "application/json")
            #expect(Array(response.body.readableBytesView) == OpenAPIDocument.bytes)
        }
    }
}

