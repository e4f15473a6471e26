import ArgumentParser
import WalletCore

struct ProductsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "products",
        abstract: "Manage the catalog: what each store product credits.",
        discussion: "Example:\n  wallet products set com.example.game.consume5credits --credits 5",
        subcommands: [Set.self, List.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or replace a product.",
            discussion: """
                A consumable grants credits. A non_consumable also grants an entitlement for ever, and a \
                non_renewing product (a pass) grants its entitlement for --duration; each may grant credits too \
                (--credits 0 for none).

                Examples:
                  wallet products set com.example.game.consume5credits --credits 5
                  wallet products set com.example.game.vip30 --credits 0 --type non_renewing \\
                    --entitlement vip --duration P30D
                """
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The store's product id, such as com.example.game.consume5credits.")
        var productID: String

        @Option(help: "Credits one unit of the product grants (1 to 1000000000; 0 allowed for a non_consumable or non_renewing product).")
        var credits: Int64

        @Option(help: ArgumentHelp("consumable, non_consumable or non_renewing.", valueName: "type"))
        var type: ProductType = .consumable

        @Option(help: ArgumentHelp("What a non_consumable or non_renewing product grants, such as vip or level_pack_2.", valueName: "name"))
        var entitlement: String?

        @Option(help: ArgumentHelp("A non_renewing pass's length, ISO 8601: P30D, P1M, P1Y (at most ten years).", valueName: "period"))
        var duration: String?

        @Option(help: "Currency the product grants; a new code becomes known.")
        var currency: String = defaultCurrency

        @Option(help: "Only grants from this store may use the product (default: any store).")
        var store: String?

        @Flag(help: "Mark the product inactive: grants for it are refused.")
        var inactive = false

        func run() async throws {
            let update = ProductUpdate(
                productID: productID, credits: credits, currency: currency, store: store, active: !inactive, type: type,
                entitlement: try entitlement.map { text throws(WalletError) in try EntitlementName(text) },
                duration: try duration.map { text throws(WalletError) in try PassDuration(text) })
            let product = try await options.withStore { ledger in try await ledger.setProduct(update) }
            try Output.result(product, json: options.json) {
                "Set \(product.productID): \(product.credits) \(product.currency)\(product.store.map { " on \($0)" } ?? ""), \(ProductsCommand.kind(of: product)), \(product.active ? "active" : "inactive")."
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the catalog.", discussion: "Example:\n  wallet products list --json")

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let products = try await options.withStore { ledger in try await ledger.products() }
            try Output.result(["products": products], json: options.json) {
                guard !products.isEmpty else { return "The catalog is empty. Add a product with `wallet products set`." }
                return products.map { product in
                    "\(product.productID)\t\(product.credits) \(product.currency)\t\(product.store ?? "any store")\t\(product.active ? "active" : "inactive")\t\(ProductsCommand.kind(of: product))"
                }.joined(separator: "\n")
            }
        }
    }

    /// `consumable`, `non_consumable vip`, `non_renewing vip P30D`: the type and what it grants.
    static func kind(of product: Product) -> String {
        ([product.type.rawValue] + [product.entitlement, product.duration].compactMap { $0 }).joined(separator: " ")
    }
}
