import ArgumentParser
import WalletCore

struct ProductsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "products",
        abstract: "Manage the catalog: what each store product credits.",
        subcommands: [Set.self, List.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or replace a product.",
            discussion: "Example: wallet products set com.example.game.consume5credits --credits 5"
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The store's product id, such as com.example.game.consume5credits.")
        var productID: String

        @Option(help: "Credits one unit of the product grants (1 to 1000000000).")
        var credits: Int64

        @Option(help: "Currency the product grants; a new code becomes known.")
        var currency: String = defaultCurrency

        @Option(help: "Only grants from this store may use the product (default: any store).")
        var store: String?

        @Flag(help: "Mark the product inactive: grants for it are refused.")
        var inactive = false

        func run() async throws {
            let product = try await options.withStore { ledger in try await ledger.setProduct(
                ProductUpdate(productID: productID, credits: credits, currency: currency, store: store, active: !inactive)) }
            try Output.result(product, json: options.json) {
                "Set \(product.productID): \(product.credits) \(product.currency)\(product.store.map { " on \($0)" } ?? ""), \(product.active ? "active" : "inactive")."
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the catalog.")

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let products = try await options.withStore { ledger in try await ledger.products() }
            try Output.result(["products": products], json: options.json) {
                guard !products.isEmpty else { return "The catalog is empty. Add a product with `wallet products set`." }
                return products.map { product in
                    "\(product.productID)\t\(product.credits) \(product.currency)\t\(product.store ?? "any store")\t\(product.active ? "active" : "inactive")"
                }.joined(separator: "\n")
            }
        }
    }
}
