/// One row of the role matrix: something a caller does, which API key roles may do it, whether a
/// player's token may (for the player's own wallet only), and the routes that do it.
public struct RoleDuty: Sendable {
    public let duty: String
    public let roles: Set<KeyRole>
    public let player: Bool
    /// `METHOD /path` as the routes are registered.
    public let routes: [String]
}

/// Who may do what: the one table the server's access rules are checked against (a test compares
/// every registered route with it), and that `wallet keys create --help` and the README print.
/// Invariant: every route that takes credentials is in exactly one row, with exactly its access.
public enum RoleMatrix {
    public static let duties: [RoleDuty] = [
        RoleDuty(
            duty: "read a wallet: balances, history, lots, holds, entitlements", roles: [.service, .support, .auditor], player: true,
            routes: [
                "GET /v1/wallets/{player_id}", "GET /v1/wallets/{player_id}/transactions", "GET /v1/wallets/{player_id}/lots",
                "GET /v1/wallets/{player_id}/holds", "GET /v1/wallets/{player_id}/entitlements", "GET /v1/wallets/{player_id}/entitlements/{name}",
            ]),
        RoleDuty(duty: "a wallet's statement for a period", roles: [.support, .auditor], player: true, routes: ["GET /v1/wallets/{player_id}/statement"]),
        RoleDuty(
            duty: "a wallet's store notifications and what each did", roles: [.support, .auditor], player: false,
            routes: ["GET /v1/wallets/{player_id}/notifications"]),
        // Whole records, hashes and system postings included: service keys already read them in any
        // wallet's history and the event feed, admin keys in the export.
        RoleDuty(
            duty: "read one transaction whole, with its lot draws and corrections", roles: [.admin, .service, .support, .auditor], player: false,
            routes: ["GET /v1/transactions/{seq}"]),
        RoleDuty(
            duty: "spend, hold and capture credits", roles: [.service], player: true,
            routes: ["POST /v1/wallets/{player_id}/spend", "POST /v1/wallets/{player_id}/holds", "POST /v1/holds/{hold_id}/capture"]),
        RoleDuty(
            duty: "release an open hold (staff with a reason)", roles: [.service, .support, .admin], player: true,
            routes: ["POST /v1/holds/{hold_id}/release"]),
        RoleDuty(
            duty: "redeem store purchases and restore them (Apple, Google)", roles: [.service], player: true,
            routes: [
                "POST /v1/purchases/apple", "POST /v1/purchases/apple/receipt", "POST /v1/purchases/google", "POST /v1/wallets/{player_id}/restore",
            ]),
        RoleDuty(duty: "grant a purchase another store verified", roles: [.service], player: false, routes: ["POST /v1/purchases"]),
        RoleDuty(duty: "give bonus credits", roles: [.service, .support, .admin], player: false, routes: ["POST /v1/wallets/{player_id}/bonuses"]),
        RoleDuty(duty: "refund a purchase", roles: [.service, .support, .admin], player: false, routes: ["POST /v1/refunds"]),
        RoleDuty(
            duty: "adjust balances; grant, revoke and extend entitlements", roles: [.support, .admin], player: false,
            routes: ["POST /v1/wallets/{player_id}/adjustments", "POST /v1/wallets/{player_id}/entitlements"]),
        RoleDuty(
            duty: "look up store orders and credit them", roles: [.support, .admin], player: false,
            routes: ["GET /v1/apple/orders/{order_id}", "POST /v1/apple/orders/{order_id}/credit", "GET /v1/google/orders/{order_id}"]),
        RoleDuty(
            duty: "find a purchase by its store transaction id, with its player and refunds", roles: [.support, .auditor, .admin], player: false,
            routes: ["GET /v1/purchases/{store}/{store_transaction_id}"]),
        RoleDuty(duty: "read the event feed", roles: [.service, .auditor, .admin], player: false, routes: ["GET /v1/events"]),
        RoleDuty(
            duty: "export, verify and total the ledger", roles: [.auditor, .admin], player: false,
            routes: [
                "GET /v1/ledger/export", "POST /v1/ledger/export/links", "GET /v1/ledger/verify", "GET /v1/ledger/head", "GET /v1/ledger/volume",
            ]),
        RoleDuty(duty: "watch the background queues (outboxes)", roles: [.auditor, .admin], player: false, routes: ["GET /v1/outboxes"]),
        RoleDuty(duty: "read the catalog and who the key is", roles: Set(KeyRole.allCases), player: false, routes: ["GET /v1/products", "GET /v1/me"]),
        RoleDuty(
            duty: "change the catalog; manage API keys and webhooks", roles: [.admin], player: false,
            routes: [
                "PUT /v1/products/{product_id}", "GET /v1/keys", "POST /v1/keys", "POST /v1/keys/{key_id}/revoke",
                "GET /v1/webhooks", "POST /v1/webhooks", "GET /v1/webhooks/{webhook_id}", "DELETE /v1/webhooks/{webhook_id}",
                "POST /v1/webhooks/{webhook_id}/disable", "POST /v1/webhooks/{webhook_id}/enable",
                "POST /v1/webhooks/{webhook_id}/rotate-secret", "POST /v1/webhooks/{webhook_id}/replay",
            ]),
    ]

    /// The duties `role` may do, in the table's order.
    public static func duties(of role: KeyRole) -> [String] {
        duties.filter { $0.roles.contains(role) }.map(\.duty)
    }

    /// One paragraph per role, for `wallet keys create --help`.
    public static var rolesText: String {
        let roles = KeyRole.allCases.map { role in "\(role.rawValue): \(duties(of: role).joined(separator: "; "))." }
        let player = "A player's token (not a key): \(duties.filter(\.player).map(\.duty).joined(separator: "; ")), for the player's own wallet only."
        return (roles + [player]).joined(separator: "\n")
    }

    /// The table in Markdown, one row per duty, for the README.
    public static var markdownTable: String {
        let columns = KeyRole.allCases.map(\.rawValue) + ["player (own wallet)"]
        var lines = ["| what | " + columns.joined(separator: " | ") + " |", "| --- |" + String(repeating: " :-: |", count: columns.count)]
        for duty in duties {
            let marks = KeyRole.allCases.map { duty.roles.contains($0) ? "yes" : "" } + [duty.player ? "yes" : ""]
            lines.append("| \(duty.duty) | " + marks.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
