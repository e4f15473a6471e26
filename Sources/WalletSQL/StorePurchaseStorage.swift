import Foundation
import WalletCore

/// `store_purchases` (what a store reported about a credited purchase) and the `purchase_finishes`
/// outbox: both written in the credit's own write, the outbox claimed and finished by `wallet
/// serve`, both read by support (`wallet google lookup`, `wallet google outbox`).
enum StorePurchaseStorage {
    static let purchaseColumns = ["store", "store_transaction_id", "order_id", "purchase_type", "region", "seq"]
    static let finishColumns = [
        "store", "store_transaction_id", "product_id", "status", "attempts", "created_at", "next_attempt_at", "last_error", "finished_at", "action",
    ]
    static let finishIntegerColumns: Set<String> = ["attempts"]
    private static let finishList = finishColumns.joined(separator: ", ")

    /// Records `record` for the purchase `transaction` credited, and queues its finishing when
    /// Core decided one (`GrantPlan.finish`).
    static func insert(_ db: any SQLSession, _ record: StorePurchaseRecord, purchase transaction: LedgerTransaction, finish: PurchaseFinish.Action?, now: Date) throws {
        guard let store = transaction.store, let storeTransactionID = transaction.storeTransactionID, let productID = transaction.productID else {
            throw WalletError.corrupt("a store purchase record was written for a transaction that is not a store purchase")
        }
        try db.execute(
            "INSERT INTO store_purchases (\(purchaseColumns.joined(separator: ", "))) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(store), .text(storeTransactionID), .text(record.orderID), .text(record.purchaseType.rawValue), .text(record.region),
             .integer(transaction.seq)])
        guard let finish else { return }
        let at = Timestamp.format(now)
        try db.execute(
            "INSERT INTO purchase_finishes (\(finishList)) VALUES (?, ?, ?, 'pending', 0, ?, ?, NULL, NULL, ?)",
            [.text(store), .text(storeTransactionID), .text(productID), .text(at), .text(at), .text(finish.rawValue)])
    }

    static func finish(from row: any SQLRow, at offset: Int = 0) throws -> PurchaseFinish {
        guard let status = PurchaseFinish.Status(rawValue: try row.text(offset + 3)) else {
            throw WalletError.corrupt("a purchase finish has an unknown status")
        }
        guard let action = PurchaseFinish.Action(rawValue: try row.text(offset + 9)) else {
            throw WalletError.corrupt("a purchase finish has an unknown action")
        }
        return PurchaseFinish(
            store: try row.text(offset), storeTransactionID: try row.text(offset + 1), productID: try row.text(offset + 2), action: action, status: status,
            attempts: try row.integer(offset + 4), createdAt: try row.text(offset + 5), nextAttemptAt: try row.text(offset + 6),
            lastError: try row.textOrNil(offset + 7), finishedAt: try row.textOrNil(offset + 8))
    }

    static func findFinish(_ db: any SQLSession, store: String, storeTransactionID: String) throws -> PurchaseFinish? {
        try db.first(
            "SELECT \(finishList) FROM purchase_finishes WHERE store = ? AND store_transaction_id = ?", [.text(store), .text(storeTransactionID)]
        ) { try finish(from: $0) }
    }

    /// The purchase record of one store transaction, with its finish, if any.
    static func purchase(_ db: any SQLSession, store: String, storeTransactionID: String) throws -> StorePurchase? {
        try purchases(db, where: "p.store = ? AND p.store_transaction_id = ?", [.text(store), .text(storeTransactionID)]).first
    }

    /// Purchases with their finish, if any: `filter` names `p.` columns.
    static func purchases(_ db: any SQLSession, where filter: String, _ values: [SQLValue]) throws -> [StorePurchase] {
        var found: [StorePurchase] = []
        try db.forEach(
            """
            SELECT p.store, p.store_transaction_id, p.order_id, p.purchase_type, p.region, p.seq, \(finishColumns.map { "f.\($0)" }.joined(separator: ", "))
            FROM store_purchases p LEFT JOIN purchase_finishes f ON f.store = p.store AND f.store_transaction_id = p.store_transaction_id
            WHERE \(filter) ORDER BY p.seq LIMIT \(Limits.pageSizeMax)
            """, values
        ) { row in
            guard let type = StorePurchaseRecord.PurchaseType(rawValue: try row.text(3)) else {
                throw WalletError.corrupt("a store purchase has an unknown purchase type")
            }
            let finish = try row.textOrNil(6) == nil ? nil : try Self.finish(from: row, at: 6)
            found.append(
                StorePurchase(
                    store: try row.text(0), storeTransactionID: try row.text(1), orderID: try row.textOrNil(2), purchaseType: type, region: try row.textOrNil(4),
                    seq: try row.integer(5), finish: finish))
        }
        for index in found.indices {
            found[index].corrections = try db.all("SELECT seq FROM transactions WHERE refund_of_seq = ? ORDER BY seq", [.integer(found[index].seq)]) { row in
                try row.integer(0)
            }
        }
        return found
    }
}

extension SQLLedgerStore {
    package func claimPurchaseFinishes(at now: Date, limit: Int, lease: Duration) async throws(WalletError) -> [PurchaseFinish] {
        guard (1...Self.claimLimitMax).contains(limit) else { throw .invalidRequest("a claim takes 1 to \(Self.claimLimitMax) purchases") }
        let leaseEnd = Timestamp.format(now.addingTimeInterval(Double(lease.components.seconds)))
        return try await write { db, _, _ in
            var claimed: [PurchaseFinish] = []
            try db.forEach(
                """
                SELECT \(StorePurchaseStorage.finishColumns.joined(separator: ", ")) FROM purchase_finishes
                WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, store, store_transaction_id LIMIT ?
                """, [.text(Timestamp.format(now)), .integer(Int64(limit))]
            ) { row in claimed.append(try StorePurchaseStorage.finish(from: row)) }
            for index in claimed.indices {
                try db.execute(
                    "UPDATE purchase_finishes SET next_attempt_at = ?, attempts = attempts + 1 WHERE store = ? AND store_transaction_id = ?",
                    [.text(leaseEnd), .text(claimed[index].store), .text(claimed[index].storeTransactionID)])
                claimed[index].attempts += 1
                claimed[index].nextAttemptAt = leaseEnd
            }
            return claimed
        }
    }

    package func recordPurchaseFinish(_ claimed: PurchaseFinish, _ attempt: PurchaseFinish.Attempt, at now: Date) async throws(WalletError) -> PurchaseFinish {
        let (store, id) = (claimed.store, claimed.storeTransactionID)
        try Validate.store(store)
        try Validate.asciiIdentifier(id, field: .storeTransactionID)
        let finished = Timestamp.format(now)
        return try await write { db, _, _ in
            guard let current = try StorePurchaseStorage.findFinish(db, store: store, storeTransactionID: id) else {
                throw WalletError.notFound("no purchase to finish for store transaction \(store)/\(id)")
            }
            // Finished, or claimed again, by another instance meanwhile: its outcome stays.
            guard current.status == .pending, current.attempts == claimed.attempts else { return current }
            let (status, next, error): (PurchaseFinish.Status, String, String?) = switch attempt {
            case .done: (.done, current.nextAttemptAt, nil)
            case .refused(let error): (.failed, current.nextAttemptAt, error)
            case .failed(let error, let retryAt): (.pending, Timestamp.format(retryAt), error)
            }
            try db.execute(
                "UPDATE purchase_finishes SET status = ?, next_attempt_at = ?, last_error = ?, finished_at = ? WHERE store = ? AND store_transaction_id = ?",
                [.text(status.rawValue), .text(next), .text(error.map { String($0.prefix(Self.replyErrorCharactersMax)) }),
                 .text(status == .pending ? nil : finished), .text(store), .text(id)])
            return try StorePurchaseStorage.findFinish(db, store: store, storeTransactionID: id) ?? current
        }
    }

    package func purchaseFinishes(store: String, status: PurchaseFinish.Status?, limit: Int) async throws(WalletError) -> [PurchaseFinish] {
        try Validate.store(store)
        guard (1...Limits.pageSizeMax).contains(limit) else { throw .invalidRequest("limit must be 1 to \(Limits.pageSizeMax)") }
        return try await read { db in
            var finishes: [PurchaseFinish] = []
            let filter = status == nil ? "" : "AND status = ?"
            try db.forEach(
                """
                SELECT \(StorePurchaseStorage.finishColumns.joined(separator: ", ")) FROM purchase_finishes WHERE store = ? \(filter)
                ORDER BY created_at DESC, store_transaction_id DESC LIMIT ?
                """,
                [.text(store)] + (status.map { [SQLValue.text($0.rawValue)] } ?? []) + [.integer(Int64(limit))]
            ) { row in finishes.append(try StorePurchaseStorage.finish(from: row)) }
            return finishes
        }
    }

    package func storePurchases(store: String, orderID: String) async throws(WalletError) -> [StorePurchase] {
        try Validate.store(store)
        try Validate.asciiIdentifier(orderID, field: "order id")
        return try await read { db in
            try StorePurchaseStorage.purchases(db, where: "p.store = ? AND p.order_id = ?", [.text(store), .text(orderID)])
        }
    }

    package func accountTokenOwner(store: String, token: String) async throws(WalletError) -> String? {
        try Validate.store(store)
        try Validate.asciiIdentifier(token, field: "account token")
        return try await read { db in try StoreAccountToken.owner(db, store: store, token: token) }
    }

    package func storePurchase(store: String, storeTransactionID: String) async throws(WalletError) -> StorePurchase? {
        try Validate.store(store)
        try Validate.asciiIdentifier(storeTransactionID, field: .storeTransactionID)
        return try await read { db in try StorePurchaseStorage.purchase(db, store: store, storeTransactionID: storeTransactionID) }
    }
}
