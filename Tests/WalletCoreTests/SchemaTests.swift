import Foundation
import GRDB
import Testing
@testable import WalletCore
@testable import WalletSQL
@testable import WalletSQLite
import WalletStores
import WalletTestSupport

// SQLite only: the SQLite file's schema, pragmas and migrations; PostgresStoreTests holds PostgreSQL's.
@Suite("Schema and storage settings", .throttled)
struct SchemaTests {
    @Test("the embedded schema equals schema.sql byte for byte")
    func embeddedSchemaEqualsFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("schema.sql"), encoding: .utf8)
        #expect(Schema.sql == file)
        #expect(file.contains("PRAGMA user_version = \(Schema.version);"))
    }

    @Test("every older version has a migration whose statements schema.sql holds, planned in order")
    func upgradesAreComplete() throws {
        #expect(Schema.migrations.map(\.version) == Array(2...Schema.version))
        #expect(try Schema.migrator.plan(version: 1) { false } == .upgrade(Array(2...Schema.version)))
        #expect(try Schema.migrator.plan(version: 0) { true } == .create)
        #expect(try Schema.migrator.plan(version: Schema.version) { false } == .upToDate)
        #expect(Schema.statement("CREATE TABLE no_such_table ") == nil)
    }

    @Test("the migrator creates an empty database at the latest version, runs later migrations in order, and refuses a newer version, a gap or tables without a version")
    func migratorRules() throws {
        let migrator = SchemaMigrator(
            latest: 3, create: ["create"], migrations: [.init(version: 3, statements: ["to 3"]), .init(version: 2, statements: ["to 2a", "to 2b"])],
            name: "the test database")
        var ran: [String] = []
        var recorded: [Int] = []
        try migrator.migrate(version: 1, isEmpty: { false }, run: { ran.append($0) }, record: { recorded.append($0) })
        #expect(ran == ["to 2a", "to 2b", "to 3"] && recorded == [2, 3])
        (ran, recorded) = ([], [])
        try migrator.migrate(version: 0, isEmpty: { true }, run: { ran.append($0) }, record: { recorded.append($0) })
        #expect(ran == ["create"] && recorded == [3])
        (ran, recorded) = ([], [])
        try migrator.migrate(version: 3, isEmpty: { false }, run: { ran.append($0) }, record: { recorded.append($0) })
        #expect(ran.isEmpty && recorded.isEmpty)

        let newer = #expect(throws: WalletError.self) { try migrator.plan(version: 4) { false } }
        #expect(newer?.code == "unsupported_database" && newer?.detail.contains("version 4") == true)
        let foreign = #expect(throws: WalletError.self) { try migrator.plan(version: 0) { false } }
        #expect(foreign?.detail.contains("not a wallet database") == true)
        let gap = SchemaMigrator(latest: 3, create: [], migrations: [.init(version: 3, statements: [])], name: "the test database")
        let missing = #expect(throws: WalletError.self) { try gap.plan(version: 1) { false } }
        #expect(missing?.detail.contains("cannot upgrade") == true)
    }

    @Test("a durable database runs synchronous=FULL on its writer, WAL and foreign keys")
    func durableSettings() async throws {
        let ledger = try await TestLedger(.sqlite)
        #expect(try await (ledger.store.engine as! SQLiteEngine).synchronousSetting() == 2)
        let (journal, foreignKeys) = try await ledger.store.sqliteWriter!.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA foreign_keys"))
        }
        #expect(journal == "wal")
        #expect(foreignKeys == 1)
    }

    @Test("the SQLite session binds text by its bytes and length: a NUL byte is kept, the empty text is text, not NULL, and a short list of values leaves no earlier binding behind")
    func textBinding() async throws {
        let ledger = try await TestLedger(.sqlite)
        let rows = try await ledger.store.engine.transaction { db -> [String?] in
            try db.execute("CREATE TEMP TABLE bound (id INTEGER PRIMARY KEY, a TEXT, b TEXT)")
            let insert = "INSERT INTO bound (id, a, b) VALUES (?, ?, ?)"
            try db.execute(insert, [.integer(1), .text("before\u{0}after"), .text("")])
            try db.execute(insert, [.integer(2), .text("caf\u{E9} \u{1F600}"), .text("earlier")])
            // The same statement with two values: the third parameter is NULL, not the text bound before.
            try db.execute(insert, [.integer(3), .text("x")])
            // A value beyond the statement's parameters is refused, not dropped, and writes nothing.
            do {
                try db.execute(insert, [.integer(4), .text("a"), .text("b"), .text("one too many")])
                Issue.record("a fourth value for three parameters was accepted")
            } catch let error as DatabaseError {
                #expect(error.resultCode == .SQLITE_RANGE && (error.message ?? "").contains("binding parameter 4"), "\(error)")
            }
            return try db.all("SELECT a, b, typeof(b) FROM bound ORDER BY id", []) { row in
                [try row.textOrNil(0), try row.textOrNil(1), try row.textOrNil(2)]
            }.flatMap { $0 }
        }
        #expect(rows == ["before\u{0}after", "", "text", "caf\u{E9} \u{1F600}", "earlier", "text", "x", nil, "null"])
    }

    @Test("the WAL is copied into the database beside the writer, in passes on a connection of their own that sync the file, and the checkpointer goes with its store")
    func checkpointPasses() async throws {
        weak var checkpointer: WALCheckpointer?
        do {
            // The writer never checkpoints itself here: only a pass writes the database file.
            let (store, path) = try Self.storeForCheckpoints(step: 8, writerAt: .max)
            checkpointer = (store.engine as! SQLiteEngine).checkpointer
            let before = try Self.size(path)
            try await Self.grants(40, to: store)
            let passes = try await Self.passesSettled(checkpointer!)
            // SQLite may refuse a pass (SQLITE_BUSY, say while the writer holds the WAL's index);
            // the others copied, from a connection that knew the file was in WAL mode.
            #expect(passes.done > passes.refused)
            #expect(passes.copied > 0)
            // Each pass that copied looked again for what came meanwhile (a second checkpoint at
            // least, to find the WAL unchanged, counted even if SQLite refused it), and synced
            // the file, whether or not SQLite did.
            #expect(passes.checkpoints >= 2 * (passes.done - passes.refused))
            #expect(passes.checkpoints <= (1 + WALCheckpointer.catchUpsMax) * (passes.done - passes.refused))
            #expect(passes.synced == passes.done - passes.refused)
            #expect(try Self.size(path) > before, "the passes wrote the database file")
            #expect(try await store.verify().ok)
            #expect(try await store.balances(playerID: "p").balances == ["credits": 200])
        }
        // The pool holds the checkpointer (its writer's hook calls it) no longer than itself.
        for _ in 0..<100 where checkpointer != nil { try await Task.sleep(for: .milliseconds(50)) }
        #expect(checkpointer == nil, "the checkpointer and its connection were released with the store")

        // Without passes, and the writer's checkpoint out of reach, the same writes leave the
        // database file as it was: what the passes wrote was theirs.
        let (unpassed, unpassedPath) = try Self.storeForCheckpoints(step: .max, writerAt: .max)
        let unpassedBefore = try Self.size(unpassedPath)
        try await Self.grants(40, to: unpassed)
        #expect((unpassed.engine as! SQLiteEngine).checkpointer?.passes.done == 0)
        #expect(try Self.size(unpassedPath) == unpassedBefore)
    }

    @Test("the writer checkpoints itself once the WAL passes its limit, so the WAL starts again from its first frame")
    func writerCheckpoint() async throws {
        // No passes: only the writer's hook checkpoints, past 64 frames. The WAL file keeps the
        // largest size it reached, so it stops growing once the WAL starts again; with SQLite's
        // own autocheckpoint (1,000 frames) it would grow by about 60 frames a dozen grants.
        let (store, path) = try Self.storeForCheckpoints(step: .max, writerAt: 64)
        try await Self.grants(60, to: store)
        let frame = 24 + (try await store.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } ?? 4_096)
        let after60 = try Self.size(path + "-wal")
        try await Self.grants(60, to: store, from: 60)
        let after120 = try Self.size(path + "-wal")
        #expect(after60 > 0)
        #expect(after120 - after60 < 64 * frame, "the WAL file grew from \(after60) to \(after120) bytes")
        #expect((store.engine as! SQLiteEngine).checkpointer?.passes.done == 0)
        #expect(try await store.verify().ok)
        #expect(try await store.balances(playerID: "p").balances == ["credits": 600])
    }

    @Test("a second process's writer counts from the WAL it found: a few writes beside a busy server ask for no pass, more do")
    func checkpointsCountFromTheWALFound() async throws {
        // The server's writes leave hundreds of frames in the WAL, none copied.
        let (server, path) = try Self.storeForCheckpoints(step: .max, writerAt: .max)
        try await Self.grants(40, to: server)
        // A command opens the same file, its passes every 64 frames.
        let command = try SQLiteEngine.open(path: path, checkpointStep: 64, writerCheckpointAt: .max)
        let checkpointer = try #require((command.engine as! SQLiteEngine).checkpointer)
        try await Self.grants(2, to: command, from: 40)
        #expect(try await Self.passesSettled(checkpointer).done == 0, "a write of a few frames asked for a pass")
        try await Self.grants(20, to: command, from: 42)
        #expect(try await Self.passesSettled(checkpointer).done > 0)
        #expect(try await command.verify().ok)
        #expect(try await server.balances(playerID: "p").balances == ["credits": 310])
    }

    @Test("a checkpointer that cannot open the file refuses its passes while the writes go on, and copies again once it can")
    func checkpointerCannotOpen() async throws {
        // A pass every 200 frames: opening the store asks for none, so no pass has opened
        // its connection yet.
        let (store, path) = try Self.storeForCheckpoints(step: 200, writerAt: .max)
        let checkpointer = try #require((store.engine as! SQLiteEngine).checkpointer)
        try #require(try await Self.passesSettled(checkpointer).done == 0)
        // The file moves away under the open store: the writer keeps its descriptors, and a
        // pass cannot open the path (it never creates a file).
        let moved = path + ".moved"
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        try await Self.grants(40, to: store)
        let refused = try await Self.passesSettled(checkpointer)
        #expect(refused.done > 0)
        #expect(refused.refused == refused.done, "no pass copied from a file it could not open")
        #expect(refused.synced == 0 && refused.checkpoints == 0)
        // Back in place, the next pass opens the file and copies.
        try FileManager.default.moveItem(atPath: moved, toPath: path)
        try await Self.grants(40, to: store, from: 40)
        let after = try await Self.passesSettled(checkpointer)
        #expect(after.done - after.refused > 0, "a pass copied once the file was back")
        #expect(after.copied > 0)
        #expect(try await store.verify().ok)
        #expect(try await store.balances(playerID: "p").balances == ["credits": 400])
    }

    /// A store of its own whose checkpointer passes every `step` frames and whose writer
    /// checkpoints itself past `writerAt`.
    private static func storeForCheckpoints(step: Int32, writerAt: Int32) throws -> (SQLLedgerStore, String) {
        let path = try Scratch.directory("checkpoints").appendingPathComponent("wallet.sqlite").path
        return (try SQLiteEngine.open(path: path, checkpointStep: step, writerCheckpointAt: writerAt), path)
    }

    /// `count` grants of 5 credits to player p, one commit each, with store transaction ids
    /// from T`first`.
    private static func grants(_ count: Int, to store: SQLLedgerStore, from first: Int = 0) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        for index in first..<(first + count) {
            _ = try await store.grant(GrantRequest(
                playerID: "p", store: "apple", storeTransactionID: "T\(index)", productID: "com.example.consume5credits", quantity: 1, actor: "test"))
        }
    }

    /// The checkpointer's counts once no pass is asked for or running (passes run on a queue
    /// of their own, after the commit that asked).
    private static func passesSettled(_ checkpointer: WALCheckpointer) async throws -> (done: Int, refused: Int, checkpoints: Int, synced: Int, copied: Int) {
        for _ in 0..<200 where checkpointer.passing {
            try await Task.sleep(for: .milliseconds(25))
        }
        return checkpointer.passes
    }

    private static func size(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1
    }

    @Test("durability normal is an explicit opt-out")
    func normalDurability() async throws {
        let ledger = try await TestLedger(.sqlite, durability: .normal)
        #expect(try await (ledger.store.engine as! SQLiteEngine).synchronousSetting() == 1)
    }

    @Test("reopening a wallet database keeps its data")
    func reopen() async throws {
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1")
        let reopened = try SQLiteEngine.open(path: ledger.path)
        #expect(try await reopened.balances(playerID: "p1").balances == ["credits": 5])
    }

    /// The schema of a database, statement by statement, as SQLite keeps it.
    static func schema(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
    }

    @Test("a version 1 database is upgraded to the schema a new one has, and its wallet keys still replay")
    func migrationFrom1() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 4)
        let spend = try await ledger.spend("p1", 3, key: "k1")
        let adjustment = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 2, reasonCode: "goodwill", note: "n", idempotencyKey: "k2", actor: "s"))
        // Turn it into what version 1 wrote: one scope per wallet, the old indexes, no state table.
        try await ledger.rawConnection().write { db in
            try Self.makeVersion5(db)
            try db.execute(
                sql: """
                    DROP INDEX transactions_corrections;
                    DROP TABLE store_transaction_states;
                    DROP TABLE store_account_tokens;
                    DROP TABLE consumption_replies;
                    DROP TABLE holds;
                    DROP TABLE lot_draws;
                    DROP TABLE lots;
                    CREATE UNIQUE INDEX transactions_refund_of ON transactions (refund_of_seq) WHERE kind = 'refund';
                    CREATE UNIQUE INDEX transactions_refund_reversal_of ON transactions (refund_of_seq) WHERE kind = 'refund_reversal';
                    CREATE TABLE keys_v1 AS SELECT 'wallet:p1' AS scope, key, request_hash, seq FROM idempotency_keys WHERE scope LIKE '%:p1';
                    DROP TRIGGER idempotency_keys_append_only_delete;
                    DELETE FROM idempotency_keys WHERE scope LIKE '%:p1';
                    INSERT INTO idempotency_keys SELECT * FROM keys_v1;
                    DROP TABLE keys_v1;
                    \(try #require(Schema.statement("CREATE TRIGGER idempotency_keys_append_only_delete ")))
                    PRAGMA user_version = 1;
                    """)
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        let replayedSpend = try await upgraded.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "k1", actor: "t"))
        #expect(replayedSpend.replayed && replayedSpend.transaction.seq == spend.transaction.seq)
        let replayedAdjustment = try await upgraded.adjust(AdjustRequest(playerID: "p1", amount: 2, reasonCode: "goodwill", note: "n", idempotencyKey: "k2", actor: "s"))
        #expect(replayedAdjustment.replayed && replayedAdjustment.transaction.seq == adjustment.transaction.seq)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 2 database gains the App Store account-token table and keeps its ledger")
    func migrationFrom2() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        try await ledger.rawConnection().write { db in
            try Self.makeVersion5(db)
            try db.execute(sql: "DROP TABLE store_account_tokens; DROP TABLE consumption_replies; DROP TABLE holds; DROP TABLE lot_draws; DROP TABLE lots; PRAGMA user_version = 2;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 3 database gains the consumption answers' outbox and keeps its ledger")
    func migrationFrom3() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        try await ledger.rawConnection().write { db in
            try Self.makeVersion5(db)
            try db.execute(sql: "DROP TABLE consumption_replies; DROP TABLE holds; DROP TABLE lot_draws; DROP TABLE lots; PRAGMA user_version = 3;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.consumptionReplies(status: nil, limit: 1).isEmpty)
        #expect(try await upgraded.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 6 database gains the store purchase records and their outbox, keeps its ledger, and records a Google credit afterwards")
    func migrationFrom6() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in
            try Self.makeVersion7(db)
            try db.execute(sql: "DROP TABLE purchase_finishes; DROP TABLE store_purchases; PRAGMA user_version = 6;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.head() == head)
        let record = StorePurchaseRecord(orderID: "GPA.1", purchaseType: .paid, region: "DE", finishes: true)
        _ = try await upgraded.grant(
            GrantRequest(playerID: "p1", store: "google", storeTransactionID: "tok", productID: "com.example.consume5credits", actor: "t", record: record))
        #expect(try await upgraded.storePurchases(store: "google", orderID: "GPA.1").first?.finish?.status == .pending)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 7 database gains the store voids and the work leases, keeps its ledger, then adds a Google purchase's voids up and leases a catch-up")
    func migrationFrom7() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "tok", quantity: 3, store: "google")
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in
            try Self.makeVersion7(db)
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.head() == head)
        for (id, voidID) in [("n1", "1:GPA.1"), ("n2", "2:GPA.1"), ("n3", "2:GPA.1")] {
            _ = try await upgraded.recordNotification(
                StoreNotification(
                    notificationUUID: id, store: "google", type: "VOIDED_PURCHASE", subtype: "PARTIAL", storeTransactionID: "tok",
                    effect: .voids([StoreVoid(voidID: voidID, units: 1)], policy: .debt), reportedAt: 1, actor: "t"))
        }
        #expect(try await upgraded.balances(playerID: "p1").balances["credits"] == 5, "two units of three voided, each once")
        #expect(try await upgraded.takeLease("google.catch-up", holder: "run-1", for: .seconds(60)).holder == "run-1")
        #expect(try await upgraded.takeLease("google.catch-up", holder: "run-2", for: .seconds(60)).holder == "run-1")
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 8 database gains the webhook endpoints, keeps its ledger, and an endpoint added afterwards starts at its head")
    func migrationFrom8() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "t1")
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in
            try db.execute(sql: "DROP TABLE webhook_endpoints; PRAGMA user_version = 8;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.head() == head)
        let created = try await upgraded.createWebhook(WebhookEndpointRequest(url: "https://game.example.com/e", types: nil), allowedHosts: [])
        #expect(created.endpoint.cursorSeq == head.seq)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 7 database: its queued finishes are kept as consumptions; a non-consumable credited afterwards is acknowledged")
    func migrationFrom7Finishes() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        let record = StorePurchaseRecord(orderID: "GPA.1", purchaseType: .paid, region: "DE", finishes: true)
        _ = try await ledger.store.grant(
            GrantRequest(playerID: "p1", store: "google", storeTransactionID: "tok-1", productID: "com.example.consume5credits", actor: "t", record: record))
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in try Self.makeVersion7(db) }
        let version7 = try await ledger.rawConnection().read { db in try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'purchase_finishes'") }
        #expect(version7?.contains("action TEXT") == false && version7?.contains("finished_at TEXT") == true)
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.head() == head)
        let kept = try await upgraded.purchaseFinishes(store: "google", status: .pending, limit: 10)
        #expect(kept.map(\.storeTransactionID) == ["tok-1"] && kept.first?.action == .consume)
        _ = try await upgraded.setProduct(ProductUpdate(productID: "com.example.noads", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        _ = try await upgraded.grant(
            GrantRequest(
                playerID: "p1", store: "google", storeTransactionID: "tok-2", productID: "com.example.noads", actor: "t",
                record: StorePurchaseRecord(orderID: "GPA.2", purchaseType: .paid, region: "DE", finishes: true)))
        #expect(try await upgraded.storePurchase(store: "google", storeTransactionID: "tok-2")?.finish?.action == .acknowledge)
        #expect(try await upgraded.verify().ok)
    }

    @Test("a version 4 database gains lots and holds: its transactions table is made again with the new kinds, rows and chain intact, and each positive balance becomes one opening lot")
    func migrationFrom4() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        try await ledger.grant("p2", "T2")
        try await ledger.spend("p2", 5, key: "all")
        try await ledger.grant("p3", "T3", product: "com.example.gems10")
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in
            // What version 4 wrote: five kinds, no lots, no holds.
            try Self.makeVersion5(db)
            try db.execute(sql: "DROP TABLE holds; DROP TABLE lot_draws; DROP TABLE lots; PRAGMA user_version = 4;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        #expect(try await upgraded.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        #expect(try await upgraded.head() == head)
        #expect(try await upgraded.verify().ok)
        let lots = try await upgraded.sqliteWriter!.read { db in
            try Row.fetchAll(db, sql: "SELECT a.owner, a.currency, l.category, l.amount, l.remaining, l.source_seq FROM lots l JOIN accounts a ON a.id = l.account_id ORDER BY a.owner, a.currency")
                .map { row -> String in "\(row[0] as String) \(row[1] as String) \(row[2] as String) \(row[3] as Int64) \(row[4] as Int64) \(row[5] as Int64)" }
        }
        #expect(lots == ["player:p1 credits opening 10 10 1", "player:p3 gems opening 10 10 4"], "none for the emptied wallet")
        // The triggers came back with the table: the ledger is still append-only and gap-free.
        var refused = false
        do {
            try await upgraded.sqliteWriter!.write { db in try db.execute(sql: "UPDATE transactions SET note = 'x' WHERE seq = 1") }
        } catch {
            refused = "\(error)".contains("append-only")
        }
        #expect(refused)
        _ = try await upgraded.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "after", actor: "t"))
        #expect(try await upgraded.verify().ok)
    }

    /// Rewrites a database of this version as version 5 left it, for the upgrade tests: the
    /// `transactions` table made again with version 5's CHECK of kinds (its indexes and triggers
    /// with it), no `transaction_kinds`, no store purchase records or their outbox (and nothing of
    /// version 8, `makeVersion7`). Needs foreign keys off, as `rawConnection` has them.
    static func makeVersion5(_ db: Database) throws {
        try makeVersion7(db)
        try makeVersion5Transactions(db)
    }

    /// Turns a fresh database into what version 7 wrote: a catalog of consumables only (every
    /// product credits at least 1), no entitlements, no store voids or work leases, an outbox of
    /// consumptions only (no `action`).
    static func makeVersion7(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TEMP TABLE purchase_finishes_v8 AS SELECT * FROM purchase_finishes;
                DROP TABLE purchase_finishes;
                CREATE TABLE purchase_finishes (
                    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
                    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
                    product_id TEXT NOT NULL CHECK (length(product_id) BETWEEN 1 AND 255),
                    status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
                    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                    created_at TEXT NOT NULL,
                    next_attempt_at TEXT NOT NULL,
                    last_error TEXT,
                    finished_at TEXT,
                    PRIMARY KEY (store, store_transaction_id),
                    FOREIGN KEY (store, store_transaction_id) REFERENCES store_purchases (store, store_transaction_id)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX purchase_finishes_due ON purchase_finishes (next_attempt_at) WHERE status = 'pending';
                INSERT INTO purchase_finishes
                    SELECT store, store_transaction_id, product_id, status, attempts, created_at, next_attempt_at, last_error, finished_at
                    FROM temp.purchase_finishes_v8 WHERE action = 'consume';
                DROP TABLE temp.purchase_finishes_v8;
                DROP TABLE entitlement_items;
                DROP TABLE entitlements;
                DROP TABLE store_voids;
                DROP TABLE work_leases;
                DROP TABLE webhook_endpoints;
                CREATE TEMP TABLE products_v8 AS SELECT * FROM products;
                DROP TABLE products;
                CREATE TABLE products (
                    product_id TEXT PRIMARY KEY NOT NULL CHECK (length(product_id) BETWEEN 1 AND 255),
                    currency TEXT NOT NULL REFERENCES currencies (code),
                    credits INTEGER NOT NULL CHECK (credits BETWEEN 1 AND 1000000000),
                    store TEXT CHECK (store IS NULL OR length(store) BETWEEN 1 AND 32),
                    active INTEGER NOT NULL CHECK (active IN (0, 1)),
                    updated_at TEXT NOT NULL
                ) STRICT;
                INSERT INTO products SELECT product_id, currency, credits, store, active, updated_at FROM temp.products_v8 WHERE type = 'consumable';
                DROP TABLE temp.products_v8;
                PRAGMA user_version = 7;
                """)
    }

    private static func makeVersion5Transactions(_ db: Database) throws {
        let remade = try [
            "CREATE UNIQUE INDEX transactions_purchase_store_transaction\n", "CREATE INDEX transactions_corrections ", "CREATE INDEX transactions_player ",
            "CREATE INDEX transactions_created_at ", "CREATE TRIGGER transactions_append_only_update ", "CREATE TRIGGER transactions_append_only_delete ",
            "CREATE TRIGGER transactions_gap_free ",
        ].map { opening in try #require(Schema.statement(opening)) }
        try db.execute(
            sql: """
                CREATE TEMP TABLE transactions_v6 AS SELECT * FROM transactions;
                DROP TABLE transactions;
                \(Schema.transactionsVersion5)
                INSERT INTO transactions SELECT * FROM temp.transactions_v6;
                DROP TABLE temp.transactions_v6;
                \(remade.joined(separator: "\n"))
                DROP TABLE transaction_kinds;
                DROP TABLE purchase_finishes;
                DROP TABLE store_purchases;
                PRAGMA user_version = 5;
                """)
    }

    /// Books at least one transaction of every kind on `ledger`, whose clock is `clock` (set to
    /// 2026-11-22T12:00:00Z), and checks that every `TransactionKind` was booked: a new kind
    /// fails here until it is booked here too, so the upgrade tests carry it.
    /// `before`: the kinds a version older than them never wrote are left out (`entitlement`
    /// came with version 8).
    static func bookEveryKind(_ ledger: TestLedger, clock: TestClock, olderThanEntitlements: Bool = false) async throws {
        let store = ledger.store
        if !olderThanEntitlements {
            _ = try await store.setProduct(ProductUpdate(productID: "com.example.noads", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
            try await ledger.grant("p2", "T3", product: "com.example.noads")
        }
        try await ledger.grant("p1", "T1", quantity: 4)
        try await ledger.grant("p2", "T2")
        try await ledger.spend("p1", 3, key: "s1")
        _ = try await store.adjust(AdjustRequest(playerID: "p1", amount: 2, reasonCode: "goodwill", note: "n", idempotencyKey: "a1", actor: "s"))
        let reports: [(String, String, StoreNotification.Effect, Int64)] = [
            ("n1", "REFUND", .refund(shareMillipercent: 100_000, policy: .debt), 1_000), ("n2", "REFUND_REVERSED", .refundReversal, 2_000),
        ]
        for (uuid, type, effect, reportedAt) in reports {
            _ = try await store.recordNotification(
                StoreNotification(notificationUUID: uuid, store: "apple", type: type, subtype: nil, storeTransactionID: "T2", effect: effect, reportedAt: reportedAt, actor: "apple"))
        }
        _ = try await store.bonus(BonusRequest(playerID: "p1", amount: 4, expiresAt: "2026-11-22T12:01:00Z", reasonCode: "event", idempotencyKey: "b1", actor: "game"))
        let captured = try await store.createHold(HoldRequest(playerID: "p1", amount: 2, expiresInSeconds: 600, idempotencyKey: "h1", actor: "game"))
        _ = try await store.resolveHold(HoldResolution(holdID: captured.hold.id, action: .capture(amount: 1), idempotencyKey: "c1", actor: "game"))
        let released = try await store.createHold(HoldRequest(playerID: "p1", amount: 1, expiresInSeconds: 600, idempotencyKey: "h2", actor: "game"))
        _ = try await store.resolveHold(HoldResolution(holdID: released.hold.id, action: .release, idempotencyKey: "r1", actor: "game"))
        clock.set("2026-11-22T12:02:00Z")
        #expect(try await store.expireLots(limit: 10) == 1)
        let kinds = try await store.read { db in try db.all("SELECT DISTINCT kind FROM transactions") { row in try row.text(0) } }
        let expected = TransactionKind.allCases.filter { !olderThanEntitlements || $0 != .entitlement }
        #expect(Set(kinds) == Set(expected.map(\.rawValue)), "every kind is booked")
    }

    /// The kinds a store's `transaction_kinds` lists, sorted.
    static func listedKinds(_ store: SQLLedgerStore) async throws -> [String] {
        try await store.read { db in try db.all("SELECT kind FROM transaction_kinds ORDER BY kind") { row in try row.text(0) } }
    }

    /// Every row of every table but `transaction_kinds`, as SQLite prints them, table by table.
    static func everyRow(_ writer: any DatabaseWriter) async throws -> [String: [String]] {
        try await writer.read { db in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('transaction_kinds', 'sqlite_sequence') ORDER BY name")
            return try Dictionary(uniqueKeysWithValues: tables.map { table in
                (table, try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map(\.description).sorted())
            })
        }
    }

    @Test("a version 5 database is upgraded: transactions made once more, referencing transaction_kinds (one row per Core kind) instead of a CHECK; every row, the chain, indexes and triggers kept; foreign keys clean")
    func migrationFrom5() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let clock = TestClock("2026-11-22T12:00:00Z")
        let ledger = try await TestLedger.withCatalog(.sqlite, clock: clock)
        try await Self.bookEveryKind(ledger, clock: clock, olderThanEntitlements: true)
        let rows = try await Self.everyRow(try #require(ledger.store.sqliteWriter))
        let head = try await ledger.store.head()
        try await ledger.rawConnection().write { db in try Self.makeVersion5(db) }
        let version5 = try await ledger.rawConnection().read { db in try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'transactions'") }
        #expect(version5?.contains("CHECK (kind IN (") == true && version5?.contains("transaction_kinds") == false)

        let upgraded = try SQLiteEngine.open(path: ledger.path, clock: { clock.now })
        let writer = try #require(upgraded.sqliteWriter)
        #expect(try await writer.read { db in try Self.schema(db) } == expected)
        #expect(try await writer.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Schema.version)
        let violations = try writer.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") }
        #expect(violations.isEmpty, "\(violations)")
        #expect(try await writer.read { db in try String.fetchAll(db, sql: "SELECT \"table\" FROM pragma_foreign_key_list('transactions') WHERE \"from\" = 'kind'") } == ["transaction_kinds"])
        #expect(try await Self.listedKinds(upgraded) == TransactionKind.allCases.map(\.rawValue).sorted())
        #expect(try await Self.everyRow(writer) == rows)
        #expect(try await upgraded.head() == head)
        #expect(try await upgraded.verify().ok)
        // The triggers came back with the table: append-only, gap-free, kinds listed.
        for statement in [
            "UPDATE transactions SET note = 'x' WHERE seq = 1", "DELETE FROM transactions WHERE seq = 1",
            "INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, prev_hash, hash) SELECT seq + 5, id, kind, player_id, currency, amount, actor, created_at, hash, hash FROM transactions WHERE seq = 1",
        ] {
            await #expect(throws: DatabaseError.self, "\(statement)") { try await writer.write { db in try db.execute(sql: statement) } }
        }
        _ = try await upgraded.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "after", actor: "t"))
        #expect(try await upgraded.verify().ok)
    }

    @Test("a fresh database lists one row per Core kind; the database refuses an unknown kind; a kind whose row is missing is refused with a clear error and nothing written, until an open adds the row back", arguments: TestBackend.all)
    func transactionKinds(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        #expect(try await Self.listedKinds(ledger.store) == TransactionKind.allCases.map(\.rawValue).sorted())
        try await ledger.grant("p1", "T1")
        // A row of a kind nobody listed, written past the store's rules: the database refuses it.
        let unknown = await walletError {
            _ = try await ledger.store.write { db, _, _ in
                try db.execute(
                    """
                    INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, prev_hash, hash)
                    SELECT seq + 1, '00000000-0000-0000-0000-000000000000', 'gift', 'p1', 'credits', 1, 't', created_at, hash, hash
                    FROM transactions ORDER BY seq DESC LIMIT 1
                    """)
            }
        }
        #expect(unknown?.code == "storage_error" && unknown?.detail.contains("transaction_kinds has no row") == true, "\(String(describing: unknown))")
        // A kind whose row went missing: its writes are refused, saying why; other kinds still write.
        _ = try await ledger.store.write { db, _, _ in try db.execute("DELETE FROM transaction_kinds WHERE kind = 'bonus'") }
        let head = try await ledger.store.head()
        let bonus = BonusRequest(playerID: "p1", amount: 2, reasonCode: "event", idempotencyKey: "b1", actor: "game")
        let refused = await walletError { _ = try await ledger.store.bonus(bonus) }
        #expect(refused?.code == "storage_error" && refused?.detail.contains("transaction_kinds has no row") == true, "\(String(describing: refused))")
        #expect(try await ledger.store.head() == head, "nothing was written")
        #expect(try await ledger.spend("p1", 1, key: "s1").balance == 4)
        // The next open lists the kind again, and the same bonus goes through.
        let reopened = try await SQLLedgerStore.open(database: ledger.path)
        #expect(try await Self.listedKinds(reopened) == TransactionKind.allCases.map(\.rawValue).sorted())
        #expect(try await reopened.bonus(bonus).balance == 6)
        #expect(try await reopened.verify().ok)
    }

    @Test("a database of an unknown schema version is refused untouched")
    func unknownVersion() async throws {
        let ledger = try await TestLedger(.sqlite)
        try await ledger.rawConnection().write { db in try db.execute(sql: "PRAGMA user_version = 99") }
        let error = await walletError { _ = try SQLiteEngine.open(path: ledger.path) }
        #expect(error?.code == "unsupported_database")
        #expect(error?.detail.contains("version 99") == true)
        let version = try await ledger.rawConnection().read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(version == 99)
    }

    @Test("a database of another program is refused untouched")
    func foreignDatabase() async throws {
        let path = Scratch.file("other", suffix: ".sqlite")
        try await DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE notes (text TEXT)") }
        let error = await walletError { _ = try SQLiteEngine.open(path: path) }
        #expect(error?.code == "unsupported_database")
        let tables = try await DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        #expect(tables == 1)
    }

    @Test("a file that is not SQLite is refused")
    func notSQLite() async throws {
        let path = Scratch.file("junk", suffix: ".sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = await walletError { _ = try SQLiteEngine.open(path: path) }
        #expect(error?.code == "unsupported_database")
    }

    @Test("a path in a missing directory is a storage error")
    func missingDirectory() async throws {
        let error = await walletError { _ = try SQLiteEngine.open(path: "/nonexistent-\(UUID().uuidString)/wallet.sqlite") }
        #expect(error?.code == "storage_error")
    }

    @Test("the schema refuses edits and deletions of ledger rows")
    func appendOnly() async throws {
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1")
        let raw = try ledger.rawConnection()
        for sql in [
            "UPDATE transactions SET amount = 500", "DELETE FROM transactions", "UPDATE postings SET amount = 1",
            "DELETE FROM postings", "DELETE FROM idempotency_keys",
        ] {
            await #expect(throws: DatabaseError.self, "\(sql)") { try await raw.write { db in try db.execute(sql: sql) } }
        }
        #expect(try await ledger.store.verify().ok)
    }

    @Test("timestamps are RFC 3339 UTC with milliseconds")
    func timestamps() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_795_303_209.1239)) == "2026-11-21T23:20:09.123Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test("a version 9 database trades lots_open for lots_burn, and its spends read their lots through it")
    func migrationFrom9() async throws {
        let fresh = try await TestLedger(.sqlite)
        let expected = try await fresh.store.sqliteWriter!.read { db in try Self.schema(db) }
        let ledger = try await TestLedger.withCatalog(.sqlite)
        try await ledger.grant("p1", "T1", quantity: 2)
        try await ledger.rawConnection().write { db in
            try db.execute(sql: "DROP INDEX lots_burn; CREATE INDEX lots_open ON lots (account_id, id) WHERE remaining > 0; PRAGMA user_version = 9;")
        }
        let upgraded = try SQLiteEngine.open(path: ledger.path)
        #expect(try await upgraded.sqliteWriter!.read { db in try Self.schema(db) } == expected)
        let planDetail = try await upgraded.sqliteWriter!.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM lots WHERE account_id = 2 AND remaining > 0 ORDER BY \(LotStorage.burnOrder) LIMIT 4").map { $0["detail"] as String? ?? "" }
        }
        #expect(planDetail == ["SEARCH lots USING INDEX lots_burn (account_id=?)"], "in burn order from the index, no sort")
        _ = try await upgraded.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "after", actor: "t"))
        #expect(try await upgraded.balances(playerID: "p1").balances["credits"] == 7)
        #expect(try await upgraded.verify().ok)
    }
}
