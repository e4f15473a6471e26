import Foundation
import WalletCore

/// `store_voids`: each void a store reported of a credited purchase, recorded once in the write of
/// the refund it caused, so that a purchase's voids add up however long ago each was listed.
enum StoreVoidStorage {
    static let columns = ["store", "store_transaction_id", "void_id", "units", "refund_seq", "recorded_at"]
    static let integerColumns: Set<String> = ["units", "refund_seq"]

    /// The voids recorded for a purchase.
    static func recorded(_ db: any SQLSession, store: String, storeTransactionID: String) throws -> [StoreVoid] {
        try db.all(
            "SELECT void_id, units FROM store_voids WHERE store = ? AND store_transaction_id = ? ORDER BY void_id",
            [.text(store), .text(storeTransactionID)]
        ) { row in StoreVoid(voidID: try row.text(0), units: try row.integerOrNil(1)) }
    }

    /// Records `voids` (new ones: `StoreVoids.decide` left out those recorded) with the refund they caused.
    static func insert(_ db: any SQLSession, _ voids: [StoreVoid], store: String, storeTransactionID: String, refundSeq: Int64?, now: Date) throws {
        let at = Timestamp.format(now)
        for void in voids {
            try db.execute(
                "INSERT INTO store_voids (\(columns.joined(separator: ", "))) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(store), .text(storeTransactionID), .text(void.voidID), .integer(void.units), .integer(refundSeq), .text(at)])
        }
    }
}

/// `work_leases`: who runs work one instance at a time does, until when.
enum WorkLeaseStorage {
    static let columns = ["name", "holder", "expires_at"]

    static func find(_ db: any SQLSession, name: String) throws -> WorkLease? {
        try db.first("SELECT name, holder, expires_at FROM work_leases WHERE name = ?", [.text(name)]) { row in
            WorkLease(name: try row.text(0), holder: try row.text(1), expiresAt: try row.text(2))
        }
    }
}

extension SQLLedgerStore {
    package func takeLease(_ name: String, holder: String, for duration: Duration) async throws(WalletError) -> WorkLease {
        try WorkLease.validate(name: name, holder: holder)
        guard duration > .zero, duration <= WorkLease.durationMax else { throw .invalidRequest("a lease lasts more than 0 s and at most a day") }
        return try await write { db, now, _ in
            let current = try WorkLeaseStorage.find(db, name: name)
            if let current, !WorkLease.mayTake(current, holder: holder, at: Timestamp.format(now)) { return current }
            let taken = WorkLease(name: name, holder: holder, expiresAt: Timestamp.format(now.addingTimeInterval(Double(duration.components.seconds))))
            try db.execute(
                """
                INSERT INTO work_leases (name, holder, expires_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                """, [.text(taken.name), .text(taken.holder), .text(taken.expiresAt)])
            return taken
        }
    }

    package func releaseLease(_ name: String, holder: String) async throws(WalletError) {
        try WorkLease.validate(name: name, holder: holder)
        try await write { db, _, _ in
            try db.execute("DELETE FROM work_leases WHERE name = ? AND holder = ?", [.text(name), .text(holder)])
        }
    }
}
