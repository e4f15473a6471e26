import Foundation
import Testing
import WalletApple
import WalletCore
@testable import WalletServer
import WalletTestSupport

@Suite("The OpenAPI document")
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
            "AppleNotificationBody": PurchaseController.AppleNotificationBody.fieldNames,
            "ProductBody": ProductController.ProductBody.fieldNames, "KeyBody": KeyController.KeyBody.fieldNames, "BonusBody": WalletController.BonusBody.fieldNames,
            "HoldBody": WalletController.HoldBody.fieldNames, "CaptureBody": HoldController.CaptureBody.fieldNames, "ReleaseBody": HoldController.ReleaseBody.fieldNames,
            "ExportLinkBody": LedgerController.LinkBody.fieldNames,
        ]
        for (name, fields) in expected {
            let properties = try #require(schemas[name]?["properties"] as? [String: Any])
            #expect(Set(properties.keys) == fields, "\(name)")
            #expect(schemas[name]?["additionalProperties"] as? Bool == false)
        }
    }

    @Test("the document names every kind of transaction the ledger writes")
    func kinds() throws {
        let schemas = try #require((try document()["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let kinds = try #require(schemas["TransactionKind"]?["enum"] as? [String])
        #expect(Set(kinds) == Set(TransactionKind.allCases.map(\.rawValue)))
    }
}

