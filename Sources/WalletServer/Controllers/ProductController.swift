import Hummingbird
import WalletCore

/// The catalog: what each store product credits.
struct ProductController {
    let store: any LedgerWriting & LedgerReading

    func addRoutes(to routes: RouteRegistrar) {
        routes.add(.get, "/v1/products", access: .roles(Set(KeyRole.allCases)), handler: list)
        routes.add(.put, "/v1/products/{product_id}", access: .roles([.admin]), handler: set)
    }

    struct ProductList: Encodable {
        var products: [Product]
    }

    @Sendable func list(request: Request, context: WalletRequestContext) async throws -> Response {
        try JSONBody.response(ProductList(products: try await store.products()), for: context)
    }

    struct ProductBody: StrictBody {
        var credits: Int64
        var currency: String?
        var store: String?
        var active: Bool?
        var type: String?
        var entitlement: EntitlementName?
        var duration: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case credits, currency, store, active, type, entitlement, duration
        }

        /// The type named, consumable when left out.
        func productType() throws(WalletError) -> ProductType {
            guard let type else { return .consumable }
            guard let productType = ProductType(rawValue: type) else {
                throw .invalidRequest("type must be one of \(ProductType.allCases.map(\.rawValue).joined(separator: ", "))", field: "type")
            }
            return productType
        }
    }

    @Sendable func set(request: Request, context: WalletRequestContext) async throws -> Response {
        guard let productID = context.parameters.get("product_id").flatMap({ Identifier.percentDecoded($0[...]) }) else {
            throw APIError.invalidRequest("the product id in the path is not valid percent-encoding")
        }
        let body = try await RequestBodyReader.decode(ProductBody.self, from: request)
        let product = try await store.setProduct(
            ProductUpdate(
                productID: productID, credits: body.credits, currency: body.currency ?? defaultCurrency, store: body.store, active: body.active ?? true,
                type: try body.productType(), entitlement: body.entitlement, duration: try body.duration.map { text throws(WalletError) in try PassDuration(text) }))
        return try JSONBody.response(product, for: context)
    }
}
