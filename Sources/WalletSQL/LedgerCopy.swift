import WalletCore
import Dispatch
import Foundation
import Synchronization

/// Pages of rows passed from the source's read thread to the target's write thread, one at a
/// time: each session stays on its own thread, and memory holds one page.
private final class PageHandoff: Sendable {
    enum Item: Sendable {
        case page(String, [[SQLValue]])
        case end(String)
    }

    private let slot = Mutex<(item: Swift.Result<Item, WalletError>?, abandoned: Bool)>((nil, false))
    private let given = DispatchSemaphore(value: 0)
    private let taken = DispatchSemaphore(value: 0)

    /// Called by the reader: waits until the writer took the item; throws if it gave up.
    func give(_ item: Item) throws {
        slot.withLock { $0.item = .success(item) }
        given.signal()
        taken.wait()
        if slot.withLock({ $0.abandoned }) { throw WalletError.storage("the copy's target gave up") }
    }

    /// Called by the reader when its read failed.
    func fail(_ error: WalletError) {
        slot.withLock { $0.item = .failure(error) }
        given.signal()
    }

    /// Called by the writer: the next item, or the reader's error.
    func take() throws -> Item {
        given.wait()
        guard let item = slot.withLock({ state in defer { state.item = nil }; return state.item }) else {
            throw WalletError.storage("the copy's source gave no rows")
        }
        taken.signal()
        return try item.get()
    }

    /// Called by the writer when it fails: the reader stops at its next page.
    func abandon() {
        slot.withLock { $0.abandoned = true }
        taken.signal()
    }
}

/// A table as the copy moves it: its columns, which hold integers, and the integer column its
/// rows are read by in pages (nil for the small tables read whole).
private struct CopiedTable {
    let name: String
    let columns: [(name: String, integer: Bool)]
    let pageColumn: String?

    init(_ name: String, _ columns: [(String, Bool)], pageColumn: String? = nil) {
        self.name = name
        self.columns = columns.map { (name: $0.0, integer: $0.1) }
        self.pageColumn = pageColumn
    }

    var columnList: String { columns.map(\.name).joined(separator: ", ") }
    var insert: String { "INSERT INTO \(name) (\(columnList)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))" }

    func values(of row: any SQLRow) throws -> [SQLValue] {
        try columns.indices.map { index in
            columns[index].integer ? .integer(try row.integerOrNil(index)) : .text(try row.textOrNil(index))
        }
    }
}

extension SQLLedgerStore {
    /// Every table of the ledger in an order that keeps references valid. `currencies` is merged
    /// (a new ledger already knows `credits`); every other table must be empty in the target.
    private static let copiedTables: [CopiedTable] = [
        CopiedTable("currencies", [("code", false)]),
        CopiedTable("accounts", [("id", true), ("owner", false), ("currency", false), ("balance", true)], pageColumn: "id"),
        CopiedTable(
            "products",
            [("product_id", false), ("currency", false), ("credits", true), ("store", false), ("active", true), ("updated_at", false), ("type", false),
             ("entitlement", false), ("duration", false)]),
        CopiedTable(
            "transactions",
            TransactionField.allCases.map { field in (field.column, field.isInteger) },
            pageColumn: "seq"),
        CopiedTable("postings", [("seq", true), ("account_id", true), ("amount", true), ("balance_after", true)], pageColumn: "seq"),
        CopiedTable("idempotency_keys", [("scope", false), ("key", false), ("request_hash", false), ("seq", true)], pageColumn: "seq"),
        CopiedTable("api_keys", [("id", false), ("name", false), ("role", false), ("key_hash", false), ("created_at", false), ("revoked_at", false)]),
        CopiedTable(
            "store_notifications",
            [("notification_uuid", false), ("store", false), ("notification_type", false), ("subtype", false), ("store_transaction_id", false),
             ("outcome", false), ("ledger_seq", true), ("spent_share_thousandths", true), ("received_at", false)]),
        CopiedTable(
            "store_transaction_states",
            [("store", false), ("store_transaction_id", false), ("state", false), ("share_thousandths", true), ("reported_at", true)]),
        CopiedTable("store_account_tokens", [("store", false), ("token", false), ("player_id", false), ("seq", true)], pageColumn: "seq"),
        CopiedTable("consumption_replies", ConsumptionReplyStorage.columns.map { ($0, ConsumptionReplyStorage.integerColumns.contains($0)) }),
        CopiedTable("store_purchases", StorePurchaseStorage.purchaseColumns.map { ($0, $0 == "seq") }, pageColumn: "seq"),
        CopiedTable("purchase_finishes", StorePurchaseStorage.finishColumns.map { ($0, StorePurchaseStorage.finishIntegerColumns.contains($0)) }),
        CopiedTable("store_voids", StoreVoidStorage.columns.map { ($0, StoreVoidStorage.integerColumns.contains($0)) }),
        CopiedTable("work_leases", WorkLeaseStorage.columns.map { ($0, false) }),
        // Endpoints with their secrets and cursors: delivery resumes on the new database where it stopped.
        CopiedTable("webhook_endpoints", WebhookStorage.columns.map { ($0, WebhookStorage.integerColumns.contains($0)) }),
        CopiedTable(
            "lots",
            [("id", true), ("account_id", true), ("category", false), ("amount", true), ("remaining", true), ("created_at", false), ("expires_at", false),
             ("source_seq", true)],
            pageColumn: "id"),
        CopiedTable("lot_draws", [("seq", true), ("lot_id", true), ("amount", true)], pageColumn: "seq"),
        CopiedTable(
            "holds",
            [("id", false), ("player_id", false), ("currency", false), ("amount", true), ("status", false), ("expires_at", false), ("hold_seq", true),
             ("resolved_seq", true), ("captured", true)]),
        // States before items: each item references its entitlement.
        CopiedTable(
            "entitlements", [("player_id", false), ("name", false), ("forever", true), ("expires_at", false), ("updated_seq", true)]),
        CopiedTable(
            "entitlement_items",
            [("seq", true), ("player_id", false), ("name", false), ("kind", false), ("starts_at", false), ("period", false), ("purchase_seq", true),
             ("active", true)],
            pageColumn: "seq"),
    ]

    /// Rows read per page of a large table: small enough that a PostgreSQL source's snapshot
    /// never sits idle (while the target writes a page) near its idle-transaction timeout.
    static let copyPageSize: Int64 = 1_000

    /// Copies this ledger into `target`, which must be empty: verifies this ledger's chain
    /// first (a corrupted source is refused before anything is written), copies every table in
    /// one write transaction of the target, then verifies that the target ends at the same head
    /// hash. `progress` hears each table's name and the rows copied so far, now and then.
    package func copy(to target: any LedgerDatabase, progress: (@Sendable (String, Int64) -> Void)? = nil) async throws(WalletError) -> CopyReport {
        guard let target = target as? SQLLedgerStore else { throw .invalidRequest("the target is not a SQL ledger database; nothing was copied") }
        let report = try await verify(progress: nil)
        guard report.ok else {
            throw .invalidRequest(
                "the source ledger does not verify (first bad seq \(report.firstBadSeq.map(String.init) ?? "?"): \(report.problem ?? "")); nothing was copied")
        }
        let reader = self
        let (rows, head) = try await target.write { db, _, _ in
            for table in Self.copiedTables.dropFirst() {
                let count = try db.integer("SELECT count(*) FROM \(table.name)") ?? 0
                guard count == 0 else {
                    throw WalletError.invalidRequest("the target ledger is not empty (its \(table.name) holds \(count) rows); nothing was copied")
                }
            }
            // Every table from one snapshot of the source: its read runs on its own thread and
            // hands the pages over one at a time; the target's session stays on this thread.
            let handoff = PageHandoff()
            reader.readInBackground(handoff) { source in
                for table in Self.copiedTables {
                    try Self.forEachPage(of: table, in: source) { page in try handoff.give(.page(table.name, page)) }
                }
                try handoff.give(.end(try LedgerReads.head(source).hash))
            }
            var rows: [String: Int64] = Dictionary(uniqueKeysWithValues: Self.copiedTables.map { ($0.name, 0) })
            let inserts = Dictionary(uniqueKeysWithValues: Self.copiedTables.map { table in
                (table.name, table.name == "currencies" ? table.insert + " ON CONFLICT DO NOTHING" : table.insert)
            })
            var head: String?
            do {
                while head == nil {
                    switch try handoff.take() {
                    case .page(let name, let page):
                        guard let insert = inserts[name] else { throw WalletError.storage("the copy read an unknown table \(name)") }
                        for values in page { try db.execute(insert, values) }
                        try db.sync()
                        rows[name, default: 0] += Int64(page.count)
                        progress?(name, rows[name, default: 0])
                    case .end(let hash):
                        head = hash
                    }
                }
            } catch {
                handoff.abandon()
                throw error
            }
            let copied = (rows, head ?? HashChain.genesis)
            try target.engine.afterCopy(db)
            return copied
        }
        let copied = try await target.verify()
        guard copied.ok, copied.headHash == head, copied.transactions == rows["transactions"] else {
            throw .corrupt("the copy does not verify at the source's head (\(copied.problem ?? "head \(copied.headHash)")); check the target")
        }
        return CopyReport(rows: rows, transactions: copied.transactions, headHash: head)
    }

    /// Reads `table` in pages of its page column (whole if it has none), each page's rows as values.
    private static func forEachPage(of table: CopiedTable, in db: any SQLSession, _ body: ([[SQLValue]]) throws -> Void) throws {
        guard let column = table.pageColumn else {
            return try body(db.all("SELECT \(table.columnList) FROM \(table.name)", [], table.values(of:)))
        }
        // Pages by the values that exist (see `TransactionStream`): no arithmetic on stored ids.
        var after = Int64.min
        while let end = try db.integer(
            "SELECT max(\(column)) FROM (SELECT \(column) FROM \(table.name) WHERE \(column) > ? ORDER BY \(column) LIMIT ?) page",
            [.integer(after), .integer(copyPageSize)])
        {
            try body(db.all(
                "SELECT \(table.columnList) FROM \(table.name) WHERE \(column) > ? AND \(column) <= ? ORDER BY \(column)", [.integer(after), .integer(end)],
                table.values(of:)))
            after = end
        }
    }

    /// Runs `body` on one snapshot, on the store's own read thread, feeding `handoff`; a failure
    /// of the read reaches the taker through it.
    fileprivate func readInBackground(_ handoff: PageHandoff, _ body: @escaping @Sendable (any SQLSession) throws -> Void) {
        Task {
            do throws(WalletError) {
                try await read(body)
            } catch {
                handoff.fail(error)
            }
        }
    }
}
