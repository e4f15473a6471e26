import Foundation
import WalletCore

/// The catalog: products, and the currencies they name.
extension LedgerWrites {
    static func setProduct(_ db: any SQLSession, _ update: ProductUpdate, now: Date, context: inout BatchContext) throws -> Product {
        try update.validate()
        context.forgetProduct(update.productID)
        // Naming a currency in the catalog is what makes it known to spends and adjustments.
        try db.execute("INSERT INTO currencies (code) VALUES (?) ON CONFLICT DO NOTHING", [.text(update.currency)])
        let product = Product(
            productID: update.productID, currency: update.currency, credits: update.credits,
            store: update.store, active: update.active, updatedAt: Timestamp.format(now), type: update.type, entitlement: update.entitlement?.text,
            duration: update.duration?.text)
        try db.execute(
            """
            INSERT INTO products (product_id, currency, credits, store, active, updated_at, type, entitlement, duration) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (product_id) DO UPDATE SET currency = excluded.currency, credits = excluded.credits,
                store = excluded.store, active = excluded.active, updated_at = excluded.updated_at, type = excluded.type,
                entitlement = excluded.entitlement, duration = excluded.duration
            """,
            [
                .text(product.productID), .text(product.currency), .integer(product.credits), .text(product.store),
                .integer(product.active ? 1 : 0), .text(product.updatedAt), .text(product.type.rawValue), .text(product.entitlement), .text(product.duration),
            ])
        return product
    }
}
