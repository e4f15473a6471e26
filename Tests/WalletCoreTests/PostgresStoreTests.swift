import Foundation
import GRDB
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletPostgres
@testable import WalletSQL
@testable import WalletSQLite
import WalletStores
import WalletTestSupport

/// What only PostgreSQL has: several processes' pools on one ledger, its own schema version and
/// URL; and that it builds the very ledger SQLite builds. Skipped when PostgreSQL is neither
/// installed nor named by WALLET_TEST_POSTGRES_URL, except under CI=true, where it must run.
@Suite("PostgreSQL store", .enabled(if: TestBackend.all.contains(.postgres)), .throttled)
struct PostgresStoreTests {
    /// Turns a fresh database into what version 5 wrote: a catalog of consumables only, no
    /// entitlements, no store voids or work leases, an outbox of consumptions only (no `action`).
    static func makeVersion5(_ db: any SQLSession) throws {
        try db.execute("DELETE FROM purchase_finishes WHERE action <> 'consume'")
        try db.execute("ALTER TABLE purchase_finishes DROP COLUMN action")
        try db.execute("DROP TABLE entitlement_items")
        try db.execute("DROP TABLE entitlements")
        try db.execute("DROP TABLE store_voids")
        try db.execute("DROP TABLE work_leases")
        try db.execute("DROP TABLE webhook_endpoints")
        try db.execute("DELETE FROM products WHERE type <> 'consumable'")
        try db.execute("ALTER TABLE products DROP COLUMN type, DROP COLUMN entitlement, DROP COLUMN duration")
        try db.execute("ALTER TABLE products DROP CONSTRAINT products_credits_check")
        try db.execute("ALTER TABLE products ADD CONSTRAINT products_credits_check CHECK (credits BETWEEN 1 AND 1000000000)")
    }


    static let fixedClock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_790_000_000) }

    /// The same operations, successes and refusals, on any store.
    static func script(_ store: SQLLedgerStore) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.gems10", credits: 10, currency: "gems"))
        for (player, transaction): (PlayerID, String) in [("p1", "T1"), ("p2", "T2"), ("p1", "T3"), ("zoe.99", "T4")] {
            _ = try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: transaction, productID: "com.example.consume5credits", quantity: 2, actor: "t"))
        }
        _ = try await store.grant(GrantRequest(playerID: "p2", store: "apple", storeTransactionID: "G1", productID: "com.example.gems10", quantity: 1, actor: "t"))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 2, actor: "t"))
        let metadata = try Metadata(.object(["item": .string("sword, \"long\""), "n": .integer(2)]))
        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 7, idempotencyKey: "s1", reason: "=HYPERLINK(\"x\")", metadata: metadata, actor: "t"))
        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 7, idempotencyKey: "s1", reason: "=HYPERLINK(\"x\")", metadata: metadata, actor: "t"))
        _ = try? await store.spend(SpendRequest(playerID: "p2", amount: 1_000, idempotencyKey: "s2", actor: "t"))
        _ = try await store.spend(SpendRequest(playerID: "p2", amount: 4, currency: "gems", idempotencyKey: "s3", actor: "t"))
        _ = try await store.adjust(AdjustRequest(playerID: "zoe.99", amount: -3, reasonCode: "goodwill", note: "ticket", ticket: "T-1", idempotencyKey: "a1", actor: "s"))
        _ = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "T2", shareMillipercent: 50_000, policy: .debt, actor: "s"))
        _ = try await store.refund(RefundRequest(store: "apple", storeTransactionID: "T3", shareMillipercent: 100_000, policy: .floor, actor: "s"))
        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s4", actor: "t"))
    }

    // SQLite only: its SQLite side is built by hand, with the fixed clock and ids its PostgreSQL side has.
    @Test("SQLite and PostgreSQL build the same ledger, hash for hash, and export the same bytes")
    func sameLedger() async throws {
        let directory = try Scratch.directory("parity")
        let sqlite = try SQLiteEngine.store(
            writer: DatabasePool(path: directory.appendingPathComponent("wallet.sqlite").path), clock: Self.fixedClock, makeTransactionID: SequentialIDs().id)
        let postgres = try await PostgresEngine.open(
            url: await TestPostgres.freshDatabase(), poolSize: 4, writeMode: .default, clock: Self.fixedClock, makeTransactionID: SequentialIDs().id)
        var reports: [VerifyReport] = []
        var exports: [String] = []
        for store in [sqlite, postgres] {
            try await Self.script(store)
            reports.append(try await store.verify())
            var bytes: [UInt8] = []
            for try await chunk in try await store.export(ExportQuery(), format: .jsonl) { bytes += chunk.bytes }
            exports.append(String(decoding: bytes, as: UTF8.self))
        }
        #expect(reports[0].ok && reports[1].ok)
        #expect(reports[0].transactions == 11)
        #expect(reports[0].headHash == reports[1].headHash)
        #expect(exports[0] == exports[1] && !exports[0].isEmpty)
        #expect(try await sqlite.balances(playerID: "zoe.99") == postgres.balances(playerID: "zoe.99"))
        #expect(try await sqlite.history(HistoryQuery(playerID: "p1")) == postgres.history(HistoryQuery(playerID: "p1")))
    }

    @Test("two processes' pools on one database keep every rule: once per key and purchase, never below zero, one chain")
    func twoInstances() async throws {
        let url = try await TestPostgres.freshDatabase()
        let first = try await PostgresEngine.open(url: url, poolSize: 4, writeMode: .default, clock: { Date() })
        let second = try await PostgresEngine.open(url: url, poolSize: 8, writeMode: .single, clock: { Date() })
        _ = try await first.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        let instances = [first, second]
        // Every purchase is redeemed on both instances at once; spends race for the same wallets.
        _ = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
            for caller in 0..<16 {
                group.addTask {
                    let store = instances[caller % 2]
                    var answers: [(String, Bool)] = []
                    for step in 0..<12 {
                        let player = try PlayerID("p\((step / 3) % 2)")
                        if step % 3 == 0 {
                            let result = try await store.grant(GrantRequest(
                                playerID: player, store: "apple", storeTransactionID: "T\(step)-\(caller / 2)", productID: "com.example.consume5credits", quantity: 1, actor: "t"))
                            answers.append(("grant T\(step)-\(caller / 2)", result.replayed))
                        } else {
                            do {
                                let result = try await store.spend(SpendRequest(playerID: player, amount: 2, idempotencyKey: "k\(step)-\(caller / 2)", actor: "t"))
                                answers.append(("spend k\(step)-\(caller / 2)", result.replayed))
                            } catch WalletError.insufficientFunds {
                                answers.append(("refused", false))
                            }
                        }
                    }
                    return answers.last ?? ("", false)
                }
            }
            var all: [(String, Bool)] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        let report = try await first.verify()
        #expect(report.ok, "\(report.problem ?? "")")
        // 4 grant steps × 8 purchase ids, each credited once whatever instance answered first.
        let purchases = try await first.read { db in try db.integer("SELECT count(*) FROM transactions WHERE kind = 'purchase'") }
        #expect(purchases == 32)
        for player: PlayerID in ["p0", "p1"] {
            let balance = try await second.balances(playerID: player).balances["credits"] ?? 0
            #expect(balance >= 0)
        }
        let spendsPerKey = try await first.read { db in
            try db.integer("SELECT max(n) FROM (SELECT count(*) AS n FROM transactions WHERE kind = 'spend' GROUP BY player_id, idempotency_key) k")
        }
        #expect(spendsPerKey == 1)
        #expect(try await first.head() == second.head())
    }

    @Test("a serialization failure or deadlock runs the batch again; after five tries the caller gets a retryable storage_error, nothing applied twice")
    func retries() async throws {
        let store = try await PostgresEngine.open(url: await TestPostgres.freshDatabase(), poolSize: 2, writeMode: .default, clock: { Date() })
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        let attempts = Counter()
        // Fails twice as PostgreSQL does under contention (SQLSTATE 40001, then 40P01), then credits.
        let result = try await store.write { db, now, context in
            attempts.increment()
            if attempts.value <= 2 {
                let state = attempts.value == 1 ? "40001" : "40P01"
                try db.execute("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '\(state)'; END $$")
            }
            let request = GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 1, actor: "t")
            return try LedgerWrites.grant(db, Checked(request), now: now, context: &context)
        }
        #expect(attempts.value == 3 && result.balance == 5)
        #expect(try await store.verify().transactions == 1)
        let always = Counter()
        let error = await walletError {
            _ = try await store.write { db, _, _ in
                always.increment()
                try db.execute("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
            }
        }
        #expect(always.value == PostgresEngine.attemptsMax)
        #expect(error?.code == "storage_error" && error?.detail.contains("\(PostgresEngine.attemptsMax) times") == true, "\(String(describing: error))")
        #expect(try await store.verify().transactions == 1)
    }

    @Test("a database of another program, or of a newer wallet, is refused and left untouched")
    func foreignDatabases() async throws {
        let foreign = try await TestPostgres.freshDatabase()
        let store = try await PostgresEngine.open(url: foreign, poolSize: 1, writeMode: .single, clock: { Date() })
        _ = try await store.write { db, _, _ in
            try db.execute("UPDATE wallet_schema SET version = 99")
        }
        let newer = await walletError { _ = try await PostgresEngine.open(url: foreign, poolSize: 1, writeMode: .single, clock: { Date() }) }
        #expect(newer?.code == "unsupported_database" && newer?.detail.contains("99") == true, "\(String(describing: newer))")
        #expect(try await store.read { db in try db.all("SELECT version FROM wallet_schema") { row in try row.integer(0) } } == [99], "left untouched")
        let other = try await TestPostgres.freshDatabase()
        let admin = try await PostgresEngine.open(url: other, poolSize: 1, writeMode: .single, clock: { Date() })
        _ = try await admin.write { db, _, _ in
            try db.execute("DROP TABLE wallet_schema")
        }
        let tables = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        let tablesBefore = try await admin.read { db in try db.integer(tables) }
        let unversioned = await walletError { _ = try await PostgresEngine.open(url: other, poolSize: 1, writeMode: .single, clock: { Date() }) }
        #expect(unversioned?.code == "unsupported_database" && unversioned?.detail.contains("not a wallet database") == true)
        #expect(try await admin.read { db in try db.integer(tables) } == tablesBefore, "left untouched")
    }

    @Test("a later schema version migrates an existing database once, in order, recorded in wallet_schema; an older wallet then refuses it")
    func schemaMigration() async throws {
        let url = try await TestPostgres.freshDatabase()
        let store = try await PostgresEngine.open(url: url, poolSize: 1, writeMode: .single, clock: { Date() })
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 1, actor: "t"))
        // What version 1 wrote: five kinds in a CHECK, no outbox of consumption answers, no lots or
        // holds. Opening it migrates it to 2, then 3, then 4.
        _ = try await store.write { db, _, _ in
            try PostgresStoreTests.makeVersion5(db)
            try db.execute("DROP TABLE consumption_replies")
            for table in ["holds", "lot_draws", "lots", "purchase_finishes", "store_purchases"] { try db.execute("DROP TABLE \(table)") }
            try db.execute("ALTER TABLE transactions DROP CONSTRAINT \(PostgresSchema.kindReference)")
            try db.execute("DROP TABLE transaction_kinds")
            try db.execute("ALTER TABLE transactions ADD CONSTRAINT transactions_kind_check CHECK (kind IN ('purchase', 'spend', 'adjustment', 'refund', 'refund_reversal'))")
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (1, now())")
        }
        let migrated = try await PostgresEngine.open(url: url, poolSize: 1, writeMode: .single, clock: { Date() })
        #expect(try await migrated.consumptionReplies(status: nil, limit: 1).isEmpty)
        let lots = try await migrated.read { db in
            try db.all("SELECT category, amount, remaining, source_seq FROM lots") { row in "\(try row.text(0)) \(try row.integer(1)) \(try row.integer(2)) \(try row.integer(3))" }
        }
        #expect(lots == ["opening 5 5 1"], "the balance became one opening lot")
        #expect(try await SchemaTests.listedKinds(migrated) == TransactionKind.allCases.map(\.rawValue).sorted(), "every kind, 'release' too")
        let next = PostgresSchema.version + 1
        let nextVersion = SchemaMigrator(
            latest: next, create: PostgresSchema.statements,
            migrations: PostgresSchema.migrator.migrations + [
                .init(version: next, statements: ["CREATE TABLE probe (id BIGINT PRIMARY KEY)", "INSERT INTO probe (id) SELECT seq FROM transactions"])
            ],
            name: "the PostgreSQL database")
        for _ in 0..<2 {
            _ = try await store.write { db, _, _ in try PostgresSchema.apply(db, migrator: nextVersion) }
        }
        let (versions, probes) = try await store.read { db in
            (try db.all("SELECT version FROM wallet_schema ORDER BY version") { row in try row.integer(0) }, try db.integer("SELECT count(*) FROM probe"))
        }
        #expect(versions == Array(1...Int64(next)) && probes == 1)
        let older = await walletError { _ = try await PostgresEngine.open(url: url, poolSize: 1, writeMode: .single, clock: { Date() }) }
        #expect(older?.code == "unsupported_database" && older?.detail.contains("version \(next)") == true, "\(String(describing: older))")
        #expect(try await store.verify().ok)
    }

    @Test("a version 5 database: its queued finishes are kept as consumptions; a non-consumable credited afterwards is acknowledged")
    func migrationFrom5Finishes() async throws {
        let ledger = try await TestLedger.withCatalog(.postgres)
        let record = StorePurchaseRecord(orderID: "GPA.1", purchaseType: .paid, region: "DE", finishes: true)
        _ = try await ledger.store.grant(
            GrantRequest(playerID: "p1", store: "google", storeTransactionID: "tok-1", productID: "com.example.consume5credits", actor: "t", record: record))
        let head = try await ledger.store.head()
        _ = try await ledger.store.write { db, _, _ in
            try PostgresStoreTests.makeVersion5(db)
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (5, now())")
        }
        let migrated = try await PostgresEngine.open(url: ledger.path, poolSize: 1, writeMode: .single, clock: { Date() })
        #expect(try await migrated.head() == head)
        let kept = try await migrated.purchaseFinishes(store: "google", status: .pending, limit: 10)
        #expect(kept.map(\.storeTransactionID) == ["tok-1"] && kept.first?.action == .consume)
        _ = try await migrated.setProduct(ProductUpdate(productID: "com.example.noads", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        _ = try await migrated.grant(
            GrantRequest(
                playerID: "p1", store: "google", storeTransactionID: "tok-2", productID: "com.example.noads", actor: "t",
                record: StorePurchaseRecord(orderID: "GPA.2", purchaseType: .paid, region: "DE", finishes: true)))
        #expect(try await migrated.storePurchase(store: "google", storeTransactionID: "tok-2")?.finish?.action == .acknowledge)
        // The column has no default once migrated: every write names its action.
        let defaulted = try await migrated.read { db in
            try db.integer("SELECT count(*) FROM information_schema.columns WHERE table_name = 'purchase_finishes' AND column_name = 'action' AND column_default IS NOT NULL")
        }
        #expect(defaulted == 0)
        #expect(try await migrated.verify().ok)
    }

    @Test("a version 3 database: transactions references transaction_kinds (one row per Core kind) instead of its CHECK of kinds; every row and the chain kept")
    func migrationFrom3() async throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(.postgres, clock: clock)
        try await SchemaTests.bookEveryKind(ledger, clock: clock, olderThanEntitlements: true)
        let tables = ["accounts", "postings", "idempotency_keys", "store_notifications", "store_transaction_states", "lots", "lot_draws", "holds"]
        let counts = { (store: SQLLedgerStore) in
            try await store.read { db in try tables.map { table in try db.integer("SELECT count(*) FROM \(table)") ?? -1 } }
        }
        let (head, rows, export) = (try await ledger.store.head(), try await counts(ledger.store), try await Self.exported(ledger.store))
        // What version 3 wrote: the kinds in a CHECK, no transaction_kinds.
        _ = try await ledger.store.write { db, _, _ in
            try PostgresStoreTests.makeVersion5(db)
            try db.execute("DROP TABLE purchase_finishes")
            try db.execute("DROP TABLE store_purchases")
            try db.execute("ALTER TABLE transactions DROP CONSTRAINT \(PostgresSchema.kindReference)")
            try db.execute("DROP TABLE transaction_kinds")
            try db.execute("ALTER TABLE transactions ADD CONSTRAINT transactions_kind_check CHECK (\(PostgresSchema.kindCheck))")
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (3, now())")
        }
        let migrated = try await PostgresEngine.open(url: ledger.path, poolSize: 1, writeMode: .single, clock: { clock.now })
        let (versions, constraints) = try await migrated.read { db in
            (
                try db.all("SELECT version FROM wallet_schema ORDER BY version") { row in try row.integer(0) },
                try db.all("SELECT conname FROM pg_constraint WHERE conrelid = 'transactions'::regclass AND conname LIKE 'transactions_kind%' ORDER BY conname") { row in
                    try row.text(0)
                }
            )
        }
        #expect(versions == Array(3...Int64(PostgresSchema.version)))
        #expect(constraints == [PostgresSchema.kindReference], "the reference replaced the CHECK")
        #expect(try await SchemaTests.listedKinds(migrated) == TransactionKind.allCases.map(\.rawValue).sorted())
        #expect(try await migrated.head() == head)
        #expect(try await counts(migrated) == rows)
        #expect(try await Self.exported(migrated) == export)
        #expect(try await migrated.verify().ok)
        _ = try await migrated.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "after", actor: "t"))
        #expect(try await migrated.verify().ok)
    }

    @Test("a version 6 database gains the webhook endpoints and keeps its ledger; an endpoint added afterwards starts at its head")
    func migrationFrom6() async throws {
        let ledger = try await TestLedger.withCatalog(.postgres)
        try await ledger.grant("p1", "t1")
        let head = try await ledger.store.head()
        _ = try await ledger.store.write { db, _, _ in
            try db.execute("DROP TABLE webhook_endpoints")
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (6, now())")
        }
        let migrated = try await PostgresEngine.open(url: ledger.path, poolSize: 1, writeMode: .single, clock: { Date() })
        let versions = try await migrated.read { db in try db.all("SELECT version FROM wallet_schema ORDER BY version") { row in try row.integer(0) } }
        #expect(versions == Array(6...Int64(PostgresSchema.version)))
        #expect(try await migrated.head() == head)
        #expect(try await migrated.createWebhook(WebhookEndpointRequest(url: "https://game.example.com/e", types: nil), allowedHosts: []).endpoint.cursorSeq == head.seq)
        #expect(try await migrated.verify().ok)
    }

    @Test("a version 5 database gains the store voids, the work leases and entitlements, keeps its ledger, then adds a Google purchase's voids up and leases a catch-up")
    func migrationFrom5() async throws {
        let ledger = try await TestLedger.withCatalog(.postgres)
        try await ledger.grant("p1", "tok", quantity: 3, store: "google")
        let head = try await ledger.store.head()
        _ = try await ledger.store.write { db, _, _ in
            try PostgresStoreTests.makeVersion5(db)
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (5, now())")
        }
        let migrated = try await PostgresEngine.open(url: ledger.path, poolSize: 1, writeMode: .single, clock: { Date() })
        let versions = try await migrated.read { db in try db.all("SELECT version FROM wallet_schema ORDER BY version") { row in try row.integer(0) } }
        #expect(versions == Array(5...Int64(PostgresSchema.version)))
        #expect(try await migrated.head() == head)
        for (id, voidID) in [("n1", "1:GPA.1"), ("n2", "2:GPA.1"), ("n3", "2:GPA.1")] {
            _ = try await migrated.recordNotification(
                StoreNotification(
                    notificationUUID: id, store: "google", type: "VOIDED_PURCHASE", subtype: "PARTIAL", storeTransactionID: "tok",
                    effect: .voids([StoreVoid(voidID: voidID, units: 1)], policy: .debt), reportedAt: 1, actor: "t"))
        }
        #expect(try await migrated.balances(playerID: "p1").balances["credits"] == 5, "two units of three voided, each once")
        #expect(try await migrated.takeLease("google.catch-up", holder: "run-1", for: .seconds(60)).holder == "run-1")
        #expect(try await migrated.takeLease("google.catch-up", holder: "run-2", for: .seconds(60)).holder == "run-1")
        #expect(try await migrated.verify().ok)
    }

    /// The store's whole ledger as JSON Lines.
    static func exported(_ store: SQLLedgerStore) async throws -> String {
        var bytes: [UInt8] = []
        for try await chunk in try await store.export(ExportQuery(), format: .jsonl) { bytes += chunk.bytes }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("PostgreSQL going away is a storage error, readiness says so, and the store recovers without a restart")
    func serverRestart() async throws {
        let cluster = try await TestPostgres.Cluster.make()
        let store = try await PostgresEngine.open(url: cluster.freshDatabase(), poolSize: 2, writeMode: .default, clock: { Date() })
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 2, actor: "t"))
        try await offPool { try cluster.stop() }
        let spend = SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "k1", actor: "t")
        let down = await walletError { _ = try await store.spend(spend) }
        #expect(down?.code == "storage_error", "\(String(describing: down))")
        let unready = await walletError { try await store.checkReadiness() }
        #expect(unready?.code == "storage_error")
        try await offPool { try cluster.start() }
        // The pool reconnects on its own; the client's retry with the same key applies once.
        var result: MutationResult?
        for _ in 0..<50 where result == nil {
            result = try? await store.spend(spend)
            if result == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(result?.balance == 7)
        #expect(try await store.spend(spend).replayed)
        try await store.checkReadiness()
        #expect(try await store.verify().ok)
    }

    @Test("an unreachable server is a storage error within the connect timeout, and the URL's password is never shown")
    func unreachable() async throws {
        let port = try LoopbackSocket.freePort()
        let error = await walletError {
            _ = try await SQLLedgerStore.open(database: "postgres://wallet:s3cret-pw@127.0.0.1:\(port)/wallet?sslmode=disable")
        }
        #expect(error?.code == "storage_error", "\(String(describing: error))")
        #expect(error?.detail.contains("s3cret-pw") == false)
        #expect(error?.detail.contains("***") == true, "\(String(describing: error))")
    }

    @Test("URLs are read as libpq reads them; bad ones are refused with the reason", arguments: [
        ("postgres://u:p%40ss@db.example:6543/ledger?sslmode=require", "postgres://u:***@db.example:6543/ledger?sslmode=require"),
        ("postgresql://u@h/d", "postgres://u@h:5432/d?sslmode=prefer"),
        ("postgres://u:pw@h", "postgres://u:***@h:5432/u?sslmode=prefer"),
        ("postgres://u@h/d?sslmode=bogus", "invalid_request"),
        ("postgres://u@h/d?password=x", "invalid_request"),
        ("postgres://u@h:99999/d", "invalid_request"),
        // A '?' in an unencoded password starts the query: the error must not echo the rest.
        ("postgres://wallet:2024?Summer@db/wallet", "invalid_request"),
        ("POSTGRES://u:Summer@h/d", "postgres://u:***@h:5432/d?sslmode=prefer"),
        ("postgres://u:Summer@h/" + String(repeating: "d", count: 3_000), "invalid_request"),
        ("postgres://u:Summer@h/d?sslrootcert=/nonexistent/ca.pem&sslmode=verify-full", "postgres://u:***@h:5432/d?sslmode=verify-full"),
    ])
    func urls(_ text: String, _ expected: String) throws {
        do {
            let url = try PostgresURL(text)
            #expect(url.redacted == expected)
            if text.contains("p%40ss") { #expect(url.password == "p@ss") }
            if text.contains("nonexistent") { #expect(throws: WalletError.self) { try url.tls() } }
        } catch {
            #expect(error.code == expected)
            #expect(!error.detail.contains("Summer"), "\(error.detail)")
        }
    }

    @Test("anything with :// is a URL, never a SQLite file name that an error would print", arguments: [
        " postgres://u:Summer@h/d", "mysql://u:Summer@h/d", "POSTGRESQL://u:Summer@h:99999/d",
    ])
    func notAFile(_ database: String) async {
        let error = await walletError { _ = try await SQLLedgerStore.open(database: database) }
        #expect(error?.code == "invalid_request" && error?.detail.contains("Summer") == false, "\(String(describing: error))")
    }

    @Test("the ledger lock row and the ledger's rows cannot be deleted or truncated")
    func lockStays() async throws {
        let store = try await PostgresEngine.open(url: await TestPostgres.freshDatabase(), poolSize: 1, writeMode: .single, clock: { Date() })
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 1, actor: "t"))
        for statement in ["DELETE FROM ledger_lock", "TRUNCATE ledger_lock", "TRUNCATE transactions CASCADE", "TRUNCATE postings", "DELETE FROM postings"] {
            let refused = await walletError { _ = try await store.write { db, _, _ in try db.execute(statement) } }
            #expect(refused?.detail.contains("append-only") == true, "\(statement): \(String(describing: refused))")
        }
        #expect(try await store.verify().transactions == 1)
        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "k", actor: "t"))
    }

    @Test("a version 7 database trades lots_open for lots_burn, and its spends read their lots in burn order through it")
    func migrationFrom7() async throws {
        let ledger = try await TestLedger.withCatalog(.postgres)
        try await ledger.grant("p1", "t1", quantity: 2)
        _ = try await ledger.store.write { db, _, _ in
            try db.execute("DROP INDEX lots_burn")
            try db.execute("CREATE INDEX lots_open ON lots (account_id, id) WHERE remaining > 0")
            try db.execute("DELETE FROM wallet_schema")
            try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (7, now())")
        }
        let migrated = try await PostgresEngine.open(url: ledger.path, poolSize: 1, writeMode: .single, clock: { Date() })
        let (versions, indexes) = try await migrated.read { db in
            (try db.all("SELECT version FROM wallet_schema ORDER BY version") { row in try row.integer(0) },
             try db.all("SELECT indexname FROM pg_indexes WHERE tablename = 'lots' ORDER BY indexname") { row in try row.text(0) })
        }
        #expect(versions == Array(7...Int64(PostgresSchema.version)) && indexes == ["lots_burn", "lots_expiring", "lots_pkey"])
        // With scans and sorts priced out (the table is tiny), the plan shows the index gives the burn order.
        let plan = try await migrated.write { db, _, _ in
            try db.execute("SET LOCAL enable_seqscan = off")
            try db.execute("SET LOCAL enable_bitmapscan = off")
            try db.execute("SET LOCAL enable_sort = off")
            return try db.all("EXPLAIN SELECT id FROM lots WHERE account_id = 2 AND remaining > 0 ORDER BY \(LotStorage.burnOrder) LIMIT 4") { row in try row.text(0) }
        }
        #expect(plan.contains { $0.contains("lots_burn") } && !plan.contains { $0.contains("Sort") }, "\(plan)")
        _ = try await migrated.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "after", actor: "t"))
        #expect(try await migrated.verify().ok)
    }
}
