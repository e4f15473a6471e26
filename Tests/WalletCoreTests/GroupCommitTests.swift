import Foundation
import GRDB
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletSQL
@testable import WalletSQLite
@testable import WalletPostgres
import WalletTestSupport

/// The group commit keeps every ledger rule, whatever lands in one batch.
@Suite("Group commit", .throttled)
struct GroupCommitTests {
    /// A store on `backend` in `mode`; a deterministic one stamps a fixed time and numbers its
    /// transaction ids in order, so two ledgers built alike can be compared hash for hash.
    static func store(_ mode: WriteMode, on backend: TestBackend, deterministic: Bool = false) async throws -> SQLLedgerStore {
        guard deterministic else { return try await TestStores.open(backend, writeMode: mode).store }
        let sequence = SequentialIDs()
        let fixed = Date(timeIntervalSince1970: 1_790_000_000)
        switch backend {
        case .postgres:
            return try await PostgresEngine.open(
                url: await TestPostgres.freshDatabase(), poolSize: TestStores.postgresPoolSize, writeMode: mode, clock: { fixed }, makeTransactionID: { sequence.id() })
        default:
            return try Self.sqliteStore(mode, clock: { fixed }, makeTransactionID: { sequence.id() })
        }
    }

    // SQLite only: the SQLite half of `store(_:on:deterministic:)`, whose fixed clock and ids the fixture cannot set.
    static func sqliteStore(_ mode: WriteMode, clock: @escaping @Sendable () -> Date, makeTransactionID: @escaping @Sendable () -> String) throws -> SQLLedgerStore {
        let directory = try Scratch.directory("group")
        let pool = try DatabasePool(path: directory.appendingPathComponent("wallet.sqlite").path)
        return try SQLiteEngine.store(writer: pool, writeMode: mode, clock: clock, makeTransactionID: makeTransactionID)
    }

    /// A grouped store on `backend`: the batch tests run on both, since PostgreSQL pipelines a
    /// batch's statements where SQLite runs each at once.
    static func store(on backend: TestBackend) async throws -> SQLLedgerStore {
        try await TestStores.open(backend, writeMode: .grouped()).store
    }

    /// Holds the writer inside a transaction until `release` is called, so that operations
    /// submitted meanwhile queue up, in order, for one batch.
    final class Gate: Sendable {
        private let state = Mutex((entered: false, open: false))
        var entered: Bool { state.withLock { $0.entered } }
        func release() { state.withLock { $0.open = true } }
        func hold() {
            state.withLock { $0.entered = true }
            while !state.withLock({ $0.open }) { Thread.sleep(forTimeInterval: 0.001) }
        }

        /// Starts an operation that holds the writer, and returns once it does.
        static func holding(_ store: SQLLedgerStore) async throws -> (Gate, Task<Void, any Error>) {
            let gate = Gate()
            let holder = Task { try await store.write { _, _, _ in gate.hold() } }
            while !gate.entered { try await Task.sleep(for: .milliseconds(1)) }
            return (gate, holder)
        }
    }

    typealias Operation = @Sendable () async throws -> MutationResult

    /// Submits `operations` one after the other while the writer is held, each queued before
    /// the next starts (or answered at once: an invalid request never reaches the writer), then
    /// lets them all commit as one batch.
    static func inOneBatch(_ store: SQLLedgerStore, _ operations: [Operation]) async throws -> [Result<MutationResult, WalletError>] {
        let (gate, holder) = try await Gate.holding(store)
        var tasks: [Task<Result<MutationResult, WalletError>, Never>] = []
        var queued = 0
        for operation in operations {
            let answered = Mutex(false)
            tasks.append(Task {
                let outcome = await Self.outcome(operation)
                answered.withLock { $0 = true }
                return outcome
            })
            while store.queuedWriteCount <= queued, !answered.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            queued = store.queuedWriteCount
        }
        gate.release()
        try await holder.value
        var results: [Result<MutationResult, WalletError>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    static func outcome(_ operation: Operation) async -> Result<MutationResult, WalletError> {
        do {
            return .success(try await operation())
        } catch let error as WalletError {
            return .failure(error)
        } catch {
            return .failure(.storage("\(error)"))
        }
    }

    static func seed(_ store: SQLLedgerStore) async throws {
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        for player: PlayerID in ["p1", "p2"] {
            _ = try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: "seed-\(player)", productID: "pack", quantity: 2, actor: "t"))
        }
    }

    static func spend(_ store: SQLLedgerStore, _ player: PlayerID, _ amount: Int64, _ key: String) -> Operation {
        { try await store.spend(SpendRequest(playerID: player, amount: amount, idempotencyKey: key, actor: "t")) }
    }

    /// A grant of one "pack" bought on the App Store.
    static func grant(_ store: SQLLedgerStore, _ player: PlayerID, _ transaction: String) -> Operation {
        { try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: transaction, productID: "pack", quantity: 1, actor: "t")) }
    }

    @Test("grouped and single writers build the same ledger, hash for hash", arguments: TestBackend.all)
    func identicalLedgers(backend: TestBackend) async throws {
        var heads: [String] = []
        var balances: [[String: Int64]] = []
        for mode in [WriteMode.grouped(), .single] {
            let store = try await Self.store(mode, on: backend, deterministic: true)
            try await Self.seed(store)
            let operations: [Operation] = (0..<12).map { index in
                Self.spend(store, index % 2 == 0 ? "p1" : "p2", Int64(index % 3 + 1), "k\(index % 9)")
            }
            if mode == .single {
                for operation in operations { _ = try? await operation() }
            } else {
                _ = try await Self.inOneBatch(store, operations)
                #expect((store.groupCommitStatistics?.largestBatch ?? 0) >= 12, "the operations shared one batch")
            }
            let report = try await store.verify()
            #expect(report.ok)
            heads.append(report.headHash)
            balances.append(try await store.balances(playerID: "p1").balances.merging(store.balances(playerID: "p2").balances.mapKeys { "p2 " + $0 }) { $1 })
        }
        #expect(heads[0] == heads[1])
        #expect(balances[0] == balances[1] && balances[0]["credits"] != 10, "\(balances)")
    }

    /// On PostgreSQL a batch reads its wallets' first lots and open holds once, before its
    /// operations (`BatchContext.firstLots`, `withoutOpenHolds`): a debit after another write to
    /// the same wallet in the batch must read what that write left, not what the prefetch found.
    @Test("a debit reads the lots and holds that earlier operations of its batch left", arguments: TestBackend.all)
    func debitAfterWritesInOneBatch(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "seed", productID: "pack", quantity: 1, actor: "t"))
        let expiresAt = Timestamp.format(Date().addingTimeInterval(86_400))
        let results = try await Self.inOneBatch(store, [
            // The paid lot keeps 2 of its 5.
            Self.spend(store, "p1", 3, "s1"),
            // A new lot that burns first.
            { try await store.bonus(BonusRequest(playerID: "p1", amount: 2, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: "b1", actor: "t")) },
            // Both bonus credits, then one of the paid lot's two.
            Self.spend(store, "p1", 3, "s2"),
            // The last credit held: nothing is left to spend.
            {
                let held = try await store.createHold(HoldRequest(playerID: "p1", amount: 1, expiresInSeconds: 600, idempotencyKey: "h1", actor: "t"))
                return MutationResult(transaction: held.transaction, balance: held.balance, replayed: false)
            },
            Self.spend(store, "p1", 1, "s3"),
        ])
        #expect((store.groupCommitStatistics?.largestBatch ?? 0) >= 5, "the operations shared one batch")
        #expect(try results[0].get().balance == 2)
        #expect(try results[1].get().balance == 4)
        #expect(try results[2].get().balance == 1)
        #expect(try results[3].get().balance == 0)
        guard case .failure(let refusal) = results[4] else { Issue.record("the spend of a held credit went through: \(results[4])"); return }
        #expect(refusal.code == "insufficient_funds", "\(refusal)")
        let lots = try await store.lots(LotQuery(playerID: "p1")).lots
        #expect(lots.isEmpty, "every lot was drawn empty: \(lots)")
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 0)
        #expect(try await store.verify().ok)
    }

    /// The prefetch itself: what it keeps for a wallet is what a debit would have read, so the
    /// two tests below exercise it, and do not pass only because it stopped running.
    @Test("a batch's prefetch keeps each wallet's first lots as the lot query reads them, and which wallets have no open hold", arguments: TestBackend.all)
    func prefetchReadsWhatADebitWould(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        let expiresAt = Timestamp.format(Date().addingTimeInterval(86_400))
        var seeds: [MutationResult] = []
        for player: PlayerID in ["p1", "p2", "p3"] {
            seeds.append(try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: "seed-\(player)", productID: "pack", quantity: 1, actor: "t")))
        }
        let p3Seed = seeds[2].transaction.seq
        // p1: six lots, more than a debit reads first; p2: one lot and an open hold.
        for index in 0..<5 {
            _ = try await store.bonus(BonusRequest(playerID: "p1", amount: 1, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: "b\(index)", actor: "t"))
        }
        _ = try await store.createHold(HoldRequest(playerID: "p2", amount: 1, expiresInSeconds: 600, idempotencyKey: "h1", actor: "t"))
        // Two keys used, by a spend and by a grant (whose transaction has a lot), and one unused.
        let spend = SpendRequest(playerID: "p3", amount: 2, idempotencyKey: "s1", actor: "t")
        let spent = try await store.spend(spend)
        let grant = GrantRequest(playerID: "p3", store: "apple", storeTransactionID: "seed-p3", productID: "pack", quantity: 1, actor: "t")
        let usedKeys = [try Checked(spend).key, try Checked(grant).key, try Checked(SpendRequest(playerID: "p3", amount: 2, idempotencyKey: "s2", actor: "t")).key]
        let owners = ["p1", "p2", "p3", "p4"].map { (owner: AccountOwner.player($0).text, currency: "credits") }
        let (firstLots, withoutOpenHolds, expected) = try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            let refunded = StoreTransactionState(state: .refunded, shareMillipercent: 50_000, reportedAt: 7)
            var saving = BatchContext(makeTransactionID: { RandomID.uuid() })
            try refunded.save(db, store: "apple", storeTransactionID: "r1", context: &saving)
            try context.prefetch(
                db, keys: usedKeys.map { ($0.scope, $0.key) }, accounts: owners, storeTransactions: [("apple", "r1"), ("apple", "r2"), ("google", "r1")])
            let states: [BatchContext.ExactPair: StoreTransactionState?] = [.init("apple", "r1"): refunded, .init("apple", "r2"): nil, .init("google", "r1"): nil]
            #expect(context.storeStates == states, "what was reported for r1 at apple, and that nothing was for the others")
            // What a replay of each used key answers, read with both keys' transactions at once.
            #expect(context.replayed.keys.sorted() == [p3Seed, spent.transaction.seq])
            for seq in context.replayed.keys { #expect(context.replayed[seq] == (try LedgerReads.transaction(db, seq: seq))) }
            #expect(context.replayed[spent.transaction.seq]?.postings.count == 2)
            let recording = RecordingSession(db)
            #expect(try usedKeys[0].replay(recording, context: context)?.balance == spent.balance)
            #expect(try usedKeys[1].replay(recording, context: context)?.transaction.seq == p3Seed)
            #expect(recording.queries.isEmpty, "the replays answered from what the prefetch read: \(recording.queries)")
            var expected: [Int64: [Lot]] = [:]
            for (owner, currency) in owners {
                guard let account = try Self.account(db, context, owner: owner, currency: currency) else { continue }
                expected[account.id] = try LotStorage.first(db, accountID: account.id, limit: LotStorage.debitReadFirst)
            }
            return (context.firstLots, context.withoutOpenHolds, expected)
        }
        #expect(expected.count == 3, "p4 has no account")
        #expect(expected.values.map(\.count).sorted() == [1, 1, 4])
        #expect(firstLots.mapValues(\.lots) == expected)
        #expect(firstLots.values.filter(\.all).count == 2, "p1 keeps more lots than were read; p2 and p3 have one each")
        #expect(withoutOpenHolds == [BatchContext.ExactPair("p1", "credits"), BatchContext.ExactPair("p3", "credits")])
    }

    /// A batch of spends names each wallet and the same counterpart once a spend: the prefetch
    /// looks each account up once, here 64 in one statement (126 took two before, a round trip
    /// each on PostgreSQL).
    @Test("a batch's prefetch looks each account up once, however many of its operations name it", arguments: TestBackend.all)
    func prefetchLooksEachAccountUpOnce(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        let owners = (0..<63).flatMap { index in
            [(owner: AccountOwner.player("p\(index)").text, currency: "credits"), (owner: SpendRequest.counterpart.text, currency: "credits")]
        }
        let (lookups, absent) = try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            let recording = RecordingSession(db)
            try context.prefetch(recording, keys: [], accounts: owners)
            return (recording.queries.filter { $0.contains("JOIN accounts") }.count, context.absentAccounts.count)
        }
        #expect(lookups == 1)
        #expect(absent == 64, "63 wallets and the counterpart, none opened yet")
    }

    /// A write reads its player's account once: the lookup that decides it (`Account.find`)
    /// keeps the account in the batch, and the write that posts to it takes it from there (it
    /// read it a second time before). A refused write's lookups are undone with it.
    @Test("a spend reads its player's account once, and a refused one keeps nothing", arguments: TestBackend.all)
    func accountReadOnce(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "seed", productID: "pack", quantity: 1, actor: "t"))
        let owner = AccountOwner.player("p1").text
        try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            func spend(_ amount: Int64, _ key: String) throws -> (balance: Int64, accountReads: Int) {
                let recording = RecordingSession(db)
                let balance = try LedgerWrites.spend(
                    recording, Checked(SpendRequest(playerID: "p1", amount: amount, idempotencyKey: key, actor: "t")), now: Date(), context: &context
                ).balance
                return (balance, recording.reads(of: "accounts"))
            }
            // The player's account and the account spends post to, each once.
            let first = try spend(1, "s1")
            #expect(first.balance == 4 && first.accountReads == 2, "\(first)")
            let second = try spend(1, "s2")
            #expect(second.balance == 3 && second.accountReads == 0, "\(second)")
            try context.writeBalances(db)
            // A spend the funds refuse, in a fresh batch: what it read is undone with it.
            context = BatchContext(makeTransactionID: { RandomID.uuid() })
            let checkpoint = context.checkpoint()
            let refused = #expect(throws: WalletError.self) { _ = try spend(10, "s3") }
            #expect(refused?.code == "insufficient_funds", "\(String(describing: refused))")
            #expect(context.accounts[BatchContext.AccountKey(owner, "credits")]?.balance == 3, "the spend read the account before it was refused")
            context.rollBack(to: checkpoint)
            #expect(context.accounts[BatchContext.AccountKey(owner, "credits")] == nil, "a refused spend kept the account it read")
            // A grant reads the balance it decides on through `balanceOf`: once too, with the
            // account the store's credits come from.
            let recording = RecordingSession(db)
            let granted = try LedgerWrites.grant(
                recording, Checked(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "t2", productID: "pack", quantity: 1, actor: "t")),
                now: Date(), context: &context)
            #expect(granted.balance == 8 && recording.reads(of: "accounts") == 2, "\(recording.queries.filter { $0.contains("accounts") })")
            // A new player's first grant: its account is looked up once, found missing, and
            // created without another look.
            let newcomer = RecordingSession(db)
            let newGrant = try LedgerWrites.grant(
                newcomer, Checked(GrantRequest(playerID: "p2", store: "apple", storeTransactionID: "t3", productID: "pack", quantity: 1, actor: "t")),
                now: Date(), context: &context)
            #expect(newGrant.balance == 5 && newcomer.reads(of: "accounts") == 1, "\(newcomer.queries.filter { $0.contains("accounts") })")
            // A refused lookup of a missing account is undone with its operation.
            let beforeMissing = context.checkpoint()
            #expect(try Self.account(db, context, owner: AccountOwner.player("p3").text, currency: "credits") == nil)
            #expect(throws: WalletError.self) {
                _ = try LedgerWrites.spend(db, Checked(SpendRequest(playerID: "p3", amount: 1, idempotencyKey: "s4", actor: "t")), now: Date(), context: &context)
            }
            #expect(context.absentAccounts.contains(BatchContext.AccountKey(AccountOwner.player("p3").text, "credits")))
            context.rollBack(to: beforeMissing)
            #expect(!context.absentAccounts.contains(BatchContext.AccountKey(AccountOwner.player("p3").text, "credits")))
            try context.writeBalances(db)
        }
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 8)
        #expect(try await store.balances(playerID: "p2").balances["credits"] == 5)
        #expect(try await store.verify().ok)
    }

    /// Passes every statement to `session` and keeps the text of each (queries and changes apart),
    /// so that a test can tell what an operation read and what it took from the batch's caches
    /// instead, and how many statements it sent. Its `write` is the protocol's, which runs at
    /// once through `execute`: rows written through it are never held back.
    final class RecordingSession: SQLSession {
        let session: any SQLSession
        private(set) var queries: [String] = []

        init(_ session: any SQLSession) { self.session = session }

        /// The statements that return no row, in order.
        private(set) var changes: [String] = []

        func execute(_ sql: String, _ values: [SQLValue]) throws {
            changes.append(sql)
            try session.execute(sql, values)
        }
        func forEach(_ sql: String, _ values: [SQLValue], _ body: (any SQLRow) throws -> Void) throws {
            queries.append(sql)
            try session.forEach(sql, values, body)
        }
        func sync() throws { try session.sync() }
        var changesSent: Int { session.changesSent }

        /// How many of the queries so far read `table`.
        func reads(of table: String) -> Int {
            queries.filter { $0.range(of: "FROM \(table)( |$)", options: .regularExpression) != nil }.count
        }
    }

    /// The account of `owner` in `currency` as a write of the batch finds it, leaving `context`
    /// as it was (a lookup keeps what it read in the batch).
    static func account(_ db: any SQLSession, _ context: BatchContext, owner: String, currency: String) throws -> Account? {
        var lookup = context
        return try Account.find(db, context: &lookup, owner: owner, currency: currency)
    }

    /// The lots a batch keeps for an account, checked against the table after `label`: the head
    /// of its burn order, or all of it.
    static func knownLots(_ context: BatchContext, _ db: any SQLSession, accountID: Int64, _ label: String) throws -> BatchContext.FirstLots? {
        guard let known = context.firstLots[accountID] else { return nil }
        let table = try LotStorage.first(db, accountID: accountID, limit: 100)
        #expect(known.lots == Array(table.prefix(known.lots.count)), "\(label): \(known.lots) is not the head of \(table)")
        #expect(!known.all || known.lots.count == table.count, "\(label): \(known.lots) claims to be every lot of \(table)")
        return known
    }

    /// A debit that only draws from a wallet's first lots leaves them known to the rest of its
    /// batch (`BatchContext.lotsDrawn`): the next debit of the wallet reads no lots, so what the
    /// batch keeps must be the head of the table's burn order, drawn lots less what they gave and
    /// emptied ones gone. A draw beyond them, or a lot made, leaves them to be read again.
    @Test("a batch carries a wallet's first lots past its own draws, as the table holds them", arguments: TestBackend.all)
    func firstLotsFollowDraws(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "seed", productID: "pack", quantity: 1, actor: "t"))
        let expiresAt = Timestamp.format(Date().addingTimeInterval(86_400))
        // Five one-credit bonus lots burn before the paid lot of 5: six lots, more than a debit reads first.
        for index in 0..<5 {
            _ = try await store.bonus(BonusRequest(playerID: "p1", amount: 1, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: "b\(index)", actor: "t"))
        }
        let owner = AccountOwner.player("p1").text
        try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            try context.prefetch(db, keys: [], accounts: [(owner: owner, currency: "credits")])
            let account = try #require(try Self.account(db, context, owner: owner, currency: "credits"))
            func known(_ label: String) throws -> BatchContext.FirstLots? { try Self.knownLots(context, db, accountID: account.id, label) }
            let recording = RecordingSession(db)
            func spend(_ amount: Int64, _ key: String) throws -> Int64 {
                try LedgerWrites.spend(recording, Checked(SpendRequest(playerID: "p1", amount: amount, idempotencyKey: key, actor: "t")), now: Date(), context: &context)
                    .balance
            }
            #expect(try known("prefetch")?.lots.map(\.remaining) == [1, 1, 1, 1])
            #expect(try spend(1, "s1") == 9)
            #expect(try known("after one lot drawn empty")?.lots.map(\.remaining) == [1, 1, 1])
            #expect(try spend(3, "s2") == 6)
            #expect(recording.reads(of: "lots") == 0, "both spends drew from the lots the batch kept: \(recording.queries)")
            let drained = try known("after three more")
            #expect(drained?.lots.isEmpty == true && drained?.all == false, "the wallet still holds lots past those read: \(String(describing: drained))")
            // Reads the last bonus lot and the paid lot, and draws from both: not from lots the batch knew.
            #expect(try spend(2, "s3") == 4)
            #expect(recording.reads(of: "lots") == 1, "the lots kept could not decide it: \(recording.queries)")
            #expect(try known("after a draw beyond them") == nil)
            #expect(try spend(1, "s4") == 3)
            _ = try LedgerWrites.bonus(
                db, Checked(BonusRequest(playerID: "p1", amount: 2, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: "b9", actor: "t")), now: Date(),
                context: &context)
            #expect(try known("after a lot made") == nil)
            let lots = try LotStorage.first(db, accountID: account.id, limit: 100)
            #expect(lots.map(\.remaining) == [2, 3], "the new bonus lot, then what the spends left of the paid one: \(lots)")
            // As a batch ends: the balances it changed, written once.
            try context.writeBalances(db)
        }
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 5)
        #expect(try await store.verify().ok)
    }

    /// The same past a hold's draw, lots' expiry booked by a debit hours later, a hold whose
    /// credits go to `@expired` (their lot expired), and a hold that gives its credit back to its
    /// lot, which leaves the lots to be read again.
    @Test("a batch carries a wallet's first lots past holds and an expiry, and drops them when a hold gives credits back", arguments: TestBackend.all)
    func firstLotsFollowHoldsAndExpiry(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "seed", productID: "pack", quantity: 1, actor: "t"))
        let start = Date()
        // Three one-credit lots expire within the hour, two more tomorrow; the paid lot of 5 burns last.
        for (index, expiry) in [3_600.0, 3_600, 3_600, 86_400, 86_400].enumerated() {
            let expiresAt = Timestamp.format(start.addingTimeInterval(expiry))
            _ = try await store.bonus(BonusRequest(playerID: "p1", amount: 1, expiresAt: expiresAt, reasonCode: "event", idempotencyKey: "b\(index)", actor: "t"))
        }
        let owner = AccountOwner.player("p1").text
        let later = start.addingTimeInterval(7_200)
        try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            try context.prefetch(db, keys: [], accounts: [(owner: owner, currency: "credits")])
            let account = try #require(try Self.account(db, context, owner: owner, currency: "credits"))
            func known(_ label: String) throws -> [Int64]? { try Self.knownLots(context, db, accountID: account.id, label)?.lots.map(\.remaining) }
            func hold(_ key: String, at now: Date) throws -> HoldResult {
                try LedgerWrites.createHold(
                    db, Checked(HoldRequest(playerID: "p1", amount: 1, expiresInSeconds: 172_800, idempotencyKey: key, actor: "t")), now: now, context: &context)
            }
            func release(_ held: HoldResult, _ key: String, at now: Date) throws -> Int64 {
                try LedgerWrites.resolveHold(
                    db, Checked(HoldResolution(holdID: held.hold.id, action: .release, idempotencyKey: key, actor: "t")), now: now, context: &context
                ).balance
            }
            #expect(try known("prefetch") == [1, 1, 1, 1])
            let first = try hold("h1", at: start)
            #expect(first.balance == 9)
            #expect(try known("after a hold took the first lot") == [1, 1, 1])
            // Two hours on: the two lots left of the hour's three expire, booked before the spend draws tomorrow's first.
            let spent = try LedgerWrites.spend(db, Checked(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s1", actor: "t")), now: later, context: &context)
            #expect(spent.balance == 6)
            #expect(try known("after an expiry and a spend") == [])
            // The first hold's credit came from a lot that has expired since: it goes to @expired, and no lot changes.
            #expect(try release(first, "r1", at: later) == 6)
            #expect(try known("after a release into an expired lot") == [])
            try context.prefetch(db, keys: [], accounts: [(owner: owner, currency: "credits")])
            #expect(try known("read again") == [1, 5])
            let second = try hold("h2", at: later)
            #expect(try known("after a second hold") == [5])
            // Its lot has not expired: the credit goes back to it, a lot the batch no longer keeps.
            #expect(try release(second, "r2", at: later) == 6)
            #expect(try known("after a credit given back") == nil)
            try context.writeBalances(db)
        }
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 6)
        #expect(try await store.verify().ok)
    }

    /// A batch reads each product its grants name once (`BatchContext.products`); a product set
    /// in the batch is read again by the grants after it.
    @Test("a grant after a product change in its batch credits what the catalog says now", arguments: TestBackend.all)
    func productChangedInOneBatch(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        struct ProductSet: Error {}
        let results = try await Self.inOneBatch(store, [
            Self.grant(store, "p1", "t1"),
            Self.grant(store, "p1", "t2"),
            {
                _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 7))
                throw ProductSet()
            },
            Self.grant(store, "p1", "t3"),
        ])
        #expect((store.groupCommitStatistics?.largestBatch ?? 0) >= 4, "the operations shared one batch")
        #expect(try [results[0], results[1], results[3]].map { try $0.get().balance } == [5, 10, 17])
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 17)
        #expect(try await store.verify().ok)
    }

    /// A batch reads the states reported for its grants' store transactions once, at its start
    /// on PostgreSQL (`BatchContext.storeStates`); a refund reported earlier in the batch must
    /// still stop the grant of its purchase after it.
    @Test("a refund reported in a batch stops the grant of its purchase later in the batch", arguments: TestBackend.all)
    func refundReportedInOneBatch(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        struct Recorded: Error {}
        let results = try await Self.inOneBatch(store, [
            Self.grant(store, "p1", "t1"),
            {
                let outcome = try await store.recordNotification(
                    StoreNotification(
                        notificationUUID: "n1", store: "apple", type: "REFUND", subtype: nil, storeTransactionID: "t2",
                        effect: .refund(shareMillipercent: 100_000, policy: .debt), reportedAt: 1, actor: "t"))
                #expect(outcome.outcome == .noPurchase || outcome.ledgerSeq == nil, "nothing to refund yet: \(outcome)")
                throw Recorded()
            },
            Self.grant(store, "p1", "t2"),
            Self.grant(store, "p1", "t3"),
        ])
        #expect((store.groupCommitStatistics?.largestBatch ?? 0) >= 4, "the operations shared one batch")
        #expect(try results[0].get().balance == 5)
        guard case .failure(let refusal) = results[2] else { Issue.record("a purchase reported refunded was credited: \(results[2])"); return }
        #expect(refusal.code == "purchase_invalid", "\(refusal)")
        #expect(try results[3].get().balance == 10)
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await store.verify().ok)
    }

    /// Everything a batch caches, to compare two moments of it.
    struct ContextState: Equatable {
        var head: Int64?
        var headHash: String?
        var accounts: [BatchContext.AccountKey: Account]
        var changedBalances: [Int64: Int64]
        var knownCurrencies: Set<Identifier>
        var absentAccounts: Set<BatchContext.AccountKey>
        var keys: [BatchContext.KeyID: BatchContext.KeyState]
        var firstLots: [Int64: BatchContext.FirstLots]
        var withoutOpenHolds: Set<BatchContext.ExactPair>
        var products: [Identifier: Product]
        var storeStates: [BatchContext.ExactPair: StoreTransactionState?]

        init(_ context: BatchContext) {
            (products, storeStates) = (context.products, context.storeStates)
            (head, headHash) = (context.head?.seq, context.head?.hash)
            (accounts, changedBalances, knownCurrencies) = (context.accounts, context.changedBalances, context.knownCurrencies)
            (absentAccounts, keys, firstLots, withoutOpenHolds) = (context.absentAccounts, context.keys, context.firstLots, context.withoutOpenHolds)
        }
    }

    /// An operation that fails is rolled back to its savepoint, and the batch forgets what it
    /// cached since (`BatchContext.rollBack(to:)`), nested parts included: every kind of change
    /// is made after a checkpoint and must be undone, and what came before it must stay.
    @Test("rolling a batch back to a checkpoint undoes every change since, and only those")
    func contextRollBack() async throws {
        // SQLite only: BatchContext is the same on both engines; a store is needed only for its prefetch to read.
        let store = try await Self.store(on: .sqlite)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        for player: PlayerID in ["p1", "p2", "p3"] {
            _ = try await store.grant(GrantRequest(playerID: player, store: "apple", storeTransactionID: "seed-\(player)", productID: "pack", quantity: 1, actor: "t"))
        }
        _ = try await store.createHold(HoldRequest(playerID: "p2", amount: 1, expiresInSeconds: 600, idempotencyKey: "h1", actor: "t"))
        let owners = ["p1", "p2", "p3", "p4"].map { (owner: AccountOwner.player($0).text, currency: "credits") }
        try await store.engine.transaction { db in
            var context = BatchContext(makeTransactionID: { RandomID.uuid() })
            // The batch's first operation fails: the head it set goes back to unread.
            let first = context.checkpoint()
            context.advance(head: (seq: 3, hash: "h3"))
            context.rollBack(to: first)
            #expect(context.head == nil)
            try context.prefetch(db, keys: [(scope: "player:p1", key: "k1"), (scope: "player:p1", key: "k2")], accounts: owners)
            let account = { (player: String) throws -> Account in
                try #require(try Self.account(db, context, owner: AccountOwner.player(player).text, currency: "credits"))
            }
            let (p1, p3) = (try account("p1"), try account("p3"))
            // Before the checkpoint: an earlier operation's changes, which stay.
            context.advance(head: (seq: 4, hash: "h4"))
            context.currencyKnown(Identifier("credits"))
            context.update(Account(id: p1.id, owner: p1.owner, currency: p1.currency, balance: 3))
            context.recordKey(scope: "player:p1", key: "k1", requestHash: "r1", seq: 4)
            let pack = try #require(try LedgerReads.product(db, id: "pack"))
            context.remember(pack)
            context.remember(nil, store: "apple", storeTransactionID: "t1")
            let before = ContextState(context)
            #expect(!before.firstLots.isEmpty && before.withoutOpenHolds.count == 2 && before.absentAccounts.count == 1, "the prefetch read something to undo")

            let checkpoint = context.checkpoint()
            context.advance(head: (seq: 5, hash: "h5"))
            context.currencyKnown(Identifier("gems"))
            context.currencyKnown(Identifier("credits"))
            context.update(Account(id: p1.id, owner: p1.owner, currency: p1.currency, balance: 1))
            context.update(Account(id: p3.id, owner: p3.owner, currency: p3.currency, balance: 9))
            context.remember(Account(id: 99, owner: AccountOwner.player("p4").text, currency: "credits", balance: 0))
            context.recordKey(scope: "player:p1", key: "k1", requestHash: "r1-again", seq: 5)
            context.recordKey(scope: "player:p1", key: "k2", requestHash: "r2", seq: 5)
            context.recordKey(scope: "player:p3", key: "k3", requestHash: "r3", seq: 5)
            context.holdPlaced(playerID: "p3", currency: "credits")
            // p3's first lot gave one credit, and p3's lots stay known with one credit less.
            let p3Lots = try #require(before.firstLots[p3.id])
            let p3Lot = try #require(p3Lots.lots.first)
            context.lotsDrawn(accountID: p3.id, before: p3Lots, draws: [LotDraw(lotID: p3Lot.id, amount: 1)], madeLot: false)
            context.remember(StoreTransactionState(state: .refunded, shareMillipercent: 100_000, reportedAt: 1), store: "apple", storeTransactionID: "t1")
            context.remember(nil, store: "apple", storeTransactionID: "t0")
            context.forgetProduct("pack")
            context.remember(Product(productID: "gold", currency: "credits", credits: 9, store: nil, active: true, updatedAt: pack.updatedAt, type: pack.type, entitlement: nil, duration: nil))
            let middle = ContextState(context)
            #expect(middle.products.keys.map(\.text) == ["gold"] && middle.storeStates.count == 2 && middle.storeStates[.init("apple", "t1")]??.state == .refunded)
            #expect(middle.head == 5 && middle.accounts.count == 4 && middle.absentAccounts.isEmpty)
            #expect(middle.firstLots[p3.id]?.lots.map(\.remaining) == [p3Lot.remaining - 1] && middle.firstLots[p3.id]?.all == true)
            #expect(middle.withoutOpenHolds == [BatchContext.ExactPair("p1", "credits")] && middle.knownCurrencies.count == 2)

            // A nested part (`Savepoint.attempt`) rolled back alone keeps what its operation did before it.
            let nested = context.checkpoint()
            context.advance(head: (seq: 6, hash: "h6"))
            context.update(Account(id: p1.id, owner: p1.owner, currency: p1.currency, balance: 0))
            context.holdPlaced(playerID: "p1", currency: "credits")
            context.rollBack(to: nested)
            #expect(ContextState(context) == middle)

            context.rollBack(to: checkpoint)
            #expect(ContextState(context) == before)
            context.rollBack(to: checkpoint)
            #expect(ContextState(context) == before, "rolling back twice changes nothing more")
        }
    }

    /// On PostgreSQL each statement is a round trip: a batch sets the balances it changed in one
    /// statement per `balancesPerStatementMax` accounts, padded to a power of two with its last
    /// account again, which must change no other account.
    @Test("a batch writes the balances it changed in one statement per 512 accounts, and no others", arguments: TestBackend.all)
    func balancesInFewStatements(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        let (statements, balances) = try await store.engine.transaction { db in
            var creating = BatchContext(makeTransactionID: { RandomID.uuid() })
            var accounts: [Account] = []
            for index in 0..<600 {
                accounts.append(try Account.fetch(db, context: &creating, owner: AccountOwner.player("p\(index)").text, currency: "credits"))
            }
            var statements: [Int] = []
            var balances: [[Int64]] = []
            for count in [1, 3, 600] {
                var context = BatchContext(makeTransactionID: { RandomID.uuid() })
                for (index, account) in accounts.prefix(count).enumerated() {
                    context.update(Account(id: account.id, owner: account.owner, currency: account.currency, balance: Int64(count * 1_000 + index)))
                }
                let recording = RecordingSession(db)
                try context.writeBalances(recording)
                try recording.sync()
                statements.append(recording.changes.count)
                var byID: [Int64: Int64] = [:]
                try db.forEach("SELECT id, balance FROM accounts", []) { row in byID[try row.integer(0)] = try row.integer(1) }
                balances.append(accounts.map { byID[$0.id] ?? -1 })
            }
            return (statements, balances)
        }
        #expect(statements == [1, 1, 2], "one account, three padded to four, then 512 and 88 padded to 128")
        #expect(balances[0] == [1_000] + Array(repeating: 0, count: 599))
        #expect(balances[1] == [3_000, 3_001, 3_002] + Array(repeating: 0, count: 597), "the padding repeats the third account and touches no fourth")
        #expect(balances[2] == (0..<600).map { Int64(600_000 + $0) })
    }

    /// An operation whose write the database refuses at the end of the batch (no rule saw it
    /// coming): the batch ran without a savepoint per operation, so it runs again awaiting
    /// each, and only that operation's caller fails.
    @Test("a write that fails in a batch run without savepoints reruns the batch awaiting each, so only its own caller fails", arguments: TestBackend.all)
    func pipelinedFailure(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "com.example.consume5credits", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 20, actor: "t"))
        // The database refuses some keys only when their row is written.
        _ = try await store.write { db, _, _ in
            switch backend {
            case .postgres:
                try db.execute(
                    """
                    CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NEW.key LIKE 'poison-%' THEN RAISE EXCEPTION 'poisoned key' USING ERRCODE = '23514'; END IF;
                        RETURN NEW;
                    END
                    $$
                    """)
                try db.execute("CREATE TRIGGER poison BEFORE INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION poison()")
            // SQLite only: its trigger syntax; the PostgreSQL case is above.
            case .sqlite:
                try db.execute("CREATE TRIGGER poison BEFORE INSERT ON idempotency_keys WHEN NEW.key LIKE 'poison-%' BEGIN SELECT RAISE(ABORT, 'poisoned key'); END")
            }
        }
        let keys = (0..<60).map { index in index % 10 == 3 ? "poison-\(index)" : "k-\(index)" }
        let outcomes = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for key in keys {
                group.addTask {
                    do {
                        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: key, actor: "t"))
                        return (key, "ok")
                    } catch let error as WalletError {
                        return (key, error.code)
                    }
                }
            }
            return try await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
        }
        for key in keys {
            #expect(outcomes[key] == (key.hasPrefix("poison") ? "storage_error" : "ok"), "\(key): \(outcomes[key] ?? "none")")
        }
        #expect((store.groupCommitStatistics?.awaitedReruns ?? 0) > 0, "a batch met the poisoned write and ran again awaited")
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 100 - 54)
        #expect((store.groupCommitStatistics?.largestBatch ?? 0) > 1, "the spends shared batches")
        let poisoned = try await store.read { db in try db.integer("SELECT count(*) FROM idempotency_keys WHERE key LIKE 'poison-%'") }
        #expect(poisoned == 0)
        #expect(try await store.verify().ok)
    }

    /// A grant of several store transactions runs each in a savepoint of its own
    /// (`Savepoint.attempt`), which in a batch run without savepoints has none around it: a part
    /// refused rolls back alone, the others and the batch's other operations stay, and the batch
    /// does not run again.
    @Test("a multi-purchase grant in a shared batch: its refused part alone is undone, nothing reruns", arguments: TestBackend.all)
    func grantEachInABatch(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        try await Self.seed(store)
        let parts = Mutex<[Result<MutationResult, WalletError>]>([])
        let results = try await Self.inOneBatch(store, [
            Self.spend(store, "p1", 2, "before"),
            {
                let results = try await store.grantEach([
                    GrantRequest(playerID: "p2", store: "apple", storeTransactionID: "each-1", productID: "pack", quantity: 1, actor: "t"),
                    GrantRequest(playerID: "p2", store: "apple", storeTransactionID: "each-2", productID: "no-such-product", quantity: 1, actor: "t"),
                    GrantRequest(playerID: "p2", store: "apple", storeTransactionID: "each-3", productID: "pack", quantity: 2, actor: "t"),
                ])
                parts.withLock { $0 = results }
                return try results[0].get()
            },
            Self.spend(store, "p2", 20, "after"),
        ])
        #expect(results.map { (try? $0.get())?.balance } == [8, 15, 5])
        let outcome = parts.withLock { $0 }
        #expect(outcome.map { (try? $0.get())?.balance } == [15, nil, 25])
        #expect(store.groupCommitStatistics?.awaitedReruns == 0)
        let refusedRows = try await store.read { db in
            try db.integer("SELECT count(*) FROM transactions WHERE store_transaction_id = 'each-2'")
        }
        #expect(refusedRows == 0)
        #expect(try await store.balances(playerID: "p2").balances["credits"] == 5)
        let report = try await store.verify()
        #expect(report.ok && report.transactions == 2 + 1 + 2 + 1)
    }

    /// One spend that draws from 5,000 lots: its draws are more rows than one statement takes
    /// (512) and than a PostgreSQL session holds back (`HeldRows.rowsMax`, 4,096), so they go in
    /// several statements and part of them before the operation ends; every lot is drawn once.
    @Test("a spend drawing from 5,000 lots writes every draw, in statements of at most 512 rows, held rows sent once 4,096 are held", arguments: TestBackend.all)
    func spendFromManyLots(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        let lots = 5_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<lots {
                group.addTask {
                    _ = try await store.bonus(BonusRequest(playerID: "p1", amount: 1, reasonCode: "event", idempotencyKey: "b\(index)", actor: "game"))
                }
            }
            try await group.waitForAll()
        }
        let spent = try await store.spend(SpendRequest(playerID: "p1", amount: Int64(lots), idempotencyKey: "all", actor: "t"))
        #expect(spent.balance == 0)
        let (draws, drawn, open) = try await store.read { db in
            (
                try db.integer("SELECT count(*) FROM lot_draws WHERE seq = ?", [.integer(spent.transaction.seq)]),
                try db.integer("SELECT CAST(sum(amount) AS BIGINT) FROM lot_draws WHERE seq = ?", [.integer(spent.transaction.seq)]),
                try db.integer("SELECT count(*) FROM lots WHERE remaining <> 0")
            )
        }
        #expect(draws == Int64(lots) && drawn == Int64(lots) && open == 0)
        let report = try await store.verify()
        #expect(report.ok && report.transactions == lots + 1)
    }

    /// Counts, from now on, the statements that write each ledger table (by table name): on
    /// PostgreSQL by statement-level triggers, on SQLite (which has none) by the writer's
    /// statement trace.
    static func countLedgerStatements(_ store: SQLLedgerStore, on backend: TestBackend) async throws -> @Sendable () async throws -> [String: Int] {
        let tables = ["transactions", "postings", "lots", "lot_draws", "idempotency_keys"]
        switch backend {
        case .postgres:
            _ = try await store.write { db, _, _ in
                try db.execute("CREATE TABLE statements_seen (name TEXT NOT NULL)")
                try db.execute(
                    "CREATE FUNCTION statement_seen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO statements_seen VALUES (TG_TABLE_NAME); RETURN NULL; END $$")
                for table in tables {
                    try db.execute("CREATE TRIGGER seen_\(table) AFTER INSERT OR UPDATE ON \(table) FOR EACH STATEMENT EXECUTE FUNCTION statement_seen()")
                }
            }
            return {
                try await store.read { db in
                    try db.all("SELECT name, CAST(count(*) AS BIGINT) FROM statements_seen GROUP BY name") { row in (try row.text(0), Int(try row.integer(1))) }
                        .reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
            }
        // SQLite only: it has no statement-level triggers; the PostgreSQL case is above.
        case .sqlite:
            let seen = Mutex<[String: Int]>([:])
            _ = try await store.write { db, _, _ in
                guard let session = db as? SQLiteSession else { throw WalletError.storage("not a SQLite session") }
                session.db.trace { event in
                    let sql = event.description
                    for table in tables where sql.hasPrefix("INSERT INTO \(table) (") || sql.hasPrefix("UPDATE \(table) SET") {
                        seen.withLock { $0[table, default: 0] += 1 }
                    }
                }
            }
            return { seen.withLock { $0 } }
        }
    }

    /// On PostgreSQL a batch's ledger rows are held back (`RowWrite`) and written a table at a
    /// time, in as few statements as powers of two make, each table after those it refers to;
    /// a read in the batch writes them first, so it sees them. SQLite writes them at once.
    @Test("PostgreSQL sends a batch's ledger rows in a few statements a table, after what they refer to, and a read in the batch sees them", arguments: TestBackend.all)
    func heldRows(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        for index in 0..<10 {
            _ = try await store.grant(GrantRequest(playerID: try PlayerID("p\(index)"), store: "apple", storeTransactionID: "seed-\(index)", productID: "pack", quantity: 4, actor: "t"))
        }
        let statements = try await Self.countLedgerStatements(store, on: backend)
        let before = try await statements()
        // 37 spends over ten wallets (so three or four draws from each wallet's one lot), and one refused.
        var operations = try (0..<37).map { index in Self.spend(store, try PlayerID("p\(index % 10)"), 1, "s-\(index)") }
        operations.append(Self.spend(store, "p0", 1_000, "too-much"))
        let results = try await Self.inOneBatch(store, operations)
        #expect(results.prefix(37).allSatisfy { (try? $0.get()) != nil })
        #expect((try? results[37].get()) == nil)
        let after = try await statements()
        func sent(_ table: String) -> Int { (after[table] ?? 0) - (before[table] ?? 0) }
        // PostgreSQL holds them back: 37 rows are 32, 4 and 1; 74 postings 64, 8, 2; ten lots
        // drawn from 8 and 2 (a lot's draws summed into one row). SQLite writes each
        // transaction's at once, one statement a table (its two postings in one).
        let expected = backend == .postgres ? [3, 3, 2, 3, 3] : [37, 37, 37, 37, 37]
        #expect(["transactions", "postings", "lots", "lot_draws", "idempotency_keys"].map(sent) == expected, "\(before) then \(after)")
        #expect(store.groupCommitStatistics?.awaitedReruns == 0)
        #expect(try await store.read { db in try db.integer("SELECT CAST(sum(remaining) AS BIGINT) FROM lots") } == 200 - 37)
        for index in 0..<10 {
            #expect(try await store.balances(playerID: try PlayerID("p\(index)")).balances["credits"] == (index < 7 ? 16 : 17))
        }
        // A purchase and its refund in one batch: the refund reads the purchase, held back until then.
        let refunded = try await Self.inOneBatch(store, [
            Self.grant(store, "p20", "bought-and-refunded"),
            { try await store.refund(RefundRequest(store: "apple", storeTransactionID: "bought-and-refunded", actor: "t")) },
        ])
        #expect(refunded.map { (try? $0.get())?.balance } == [5, 0])
        let report = try await store.verify()
        #expect(report.ok && report.transactions == 10 + 37 + 2)
    }

    /// `RowWrite.statements` is what every session sends for rows written together: powers of
    /// two up to the write's own maximum, largest first, rows in order; a subtraction's rows of
    /// one key summed into one (an UPDATE joined from a list naming a row twice changes it once).
    @Test("rows written together go out in powers of two, in order; a subtraction sums each key's rows, and refuses a sum that overflows")
    func rowWriteStatements() throws {
        let rows = (1...37).map { [SQLValue.integer(Int64($0)), .integer(0), .integer(1), .integer(2)] }
        let postings = try RowWrite.posting.statements(rows)
        #expect(postings.map { $0.values.count / 4 } == [32, 4, 1])
        #expect(postings.flatMap { $0.values } == rows.flatMap { $0 }, "every value once, in order")
        #expect(postings[0].sql.hasPrefix("INSERT INTO postings (seq, account_id, amount, balance_after) VALUES (?, ?, ?, ?), (?, ?, ?, ?)"))
        #expect(RowWrite.transaction.rowsMax == 64 && RowWrite.posting.rowsMax == 512, "64 rows of 21 columns, 512 of 4")
        #expect(try RowWrite.transaction.statements(Array(repeating: Array(repeating: SQLValue.null, count: 21), count: 200)).map { $0.values.count / 21 } == [64, 64, 64, 8])
        let drawn = try RowWrite.lotDrawn.statements([[.integer(7), .integer(3)], [.integer(9), .integer(1)], [.integer(7), .integer(-2)], [.integer(5), .integer(4)]])
        #expect(drawn.map(\.values) == [[.integer(7), .integer(1), .integer(9), .integer(1)], [.integer(5), .integer(4)]])
        #expect(drawn[1].sql == "UPDATE lots SET remaining = remaining - ?2 WHERE id = ?1")
        #expect(throws: WalletError.self) { try RowWrite.lotDrawn.statements([[.integer(7), .integer(.max)], [.integer(7), .integer(1)]]) }
        #expect(throws: WalletError.self) { try RowWrite.lotDrawn.statements([[.integer(7), .text("3")]]) }
    }

    /// What a PostgreSQL session holds back comes out in the order of the writes' ranks,
    /// whatever order it was held in; two writes of one rank are refused; past `rowsMax` rows
    /// the session is told to send them; and rows whose statements cannot be made stay held, so
    /// the transaction cannot commit without them.
    @Test("held rows come out in rank order, a shared rank is refused, a full hold asks to be sent, and rows that cannot be written stay held")
    func heldRowsOrder() throws {
        var held = HeldRows()
        #expect(try held.hold(.idempotencyKey, [[.text("spend:p1"), .text("k1"), .text(String(repeating: "a", count: 64)), .integer(2)]]) == false)
        #expect(try held.hold(.posting, [[.integer(2), .integer(1), .integer(-1), .integer(4)], [.integer(2), .integer(9), .integer(1), .integer(1)]]) == false)
        #expect(try held.hold(.transaction, [Array(repeating: .null, count: RowWrite.transaction.columnCount)]) == false)
        let statements = try held.take()
        #expect(statements.map { $0.sql.prefix(24) } == ["INSERT INTO transactions", "INSERT INTO postings (se", "INSERT INTO idempotency_"])
        #expect(try held.take().isEmpty, "nothing is held after a take")
        let twin = RowWrite.insert(into: "audit_rows", columns: ["seq"], rank: RowWrite.posting.rank)
        _ = try held.hold(.posting, [[.integer(3), .integer(1), .integer(-1), .integer(3)]])
        #expect(throws: WalletError.self) { try held.hold(twin, [[.integer(3)]]) }
        held.drop()
        var full = false
        for seq in 1...HeldRows.rowsMax { full = try held.hold(.lotDraw, [[.integer(Int64(seq)), .integer(1), .integer(1)]]) }
        #expect(full, "the rowsMax-th row asks for the rows to be sent")
        held.drop()
        _ = try held.hold(.lotDrawn, [[.integer(7), .integer(.max)], [.integer(7), .integer(1)]])
        #expect(throws: WalletError.self) { try held.take() }
        #expect(throws: WalletError.self, "still held: the transaction fails again at its sync") { try held.take() }
    }

    /// Currency codes are never removed, so a code a committed batch found stays known to the
    /// batches after it, and they do not look it up again; an operation that failed, or a code
    /// that is missing, hands nothing on.
    @Test("the currencies a committed batch found are known to the next; a failed operation's are not", arguments: TestBackend.all)
    func currenciesCarryAcrossBatches(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        func known() async throws -> [String] {
            try await store.write { _, _, context in context.knownCurrencies.map(\.text).sorted() }
        }
        #expect(try await known() == [])
        await #expect(throws: WalletError.self) { try await store.spend(SpendRequest(playerID: "p1", amount: 1, currency: "gems", idempotencyKey: "g1", actor: "t")) }
        // The spend checks its currency first, then fails for funds: its batch knew "credits"
        // only inside the rolled-back operation.
        await #expect(throws: WalletError.self) { try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s1", actor: "t")) }
        #expect(try await known() == [])
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "t1", productID: "pack", quantity: 1, actor: "t"))
        _ = try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s2", actor: "t"))
        #expect(try await known() == ["credits"])
        // A later batch's spend reads no currency: the code came with its batch.
        let (spent, currencyReads) = try await store.write { db, now, context in
            let recording = RecordingSession(db)
            let spent = try LedgerWrites.spend(recording, try Checked(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s3", actor: "t")), now: now, context: &context)
            return (spent, recording.reads(of: "currencies"))
        }
        #expect(spent.balance == 3 && currencyReads == 0)
        await #expect(throws: WalletError.self) { try await store.spend(SpendRequest(playerID: "p1", amount: 1, currency: "gems", idempotencyKey: "g2", actor: "t")) }
        #expect(try await known() == ["credits"])
    }

    /// A hold placed in a batch opens the wallet's holds for the rest of it: here an hour passes
    /// between operations (the clock), so the hold has expired when the next debit settles the
    /// wallet, which releases it and may then spend what it held.
    @Test("a debit settles a hold that an earlier operation of its batch placed", arguments: TestBackend.all)
    func debitAfterHoldInOneBatch(backend: TestBackend) async throws {
        let ticks = Mutex(0)
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let clock: @Sendable () -> Date = { start.addingTimeInterval(3_600 * Double(ticks.withLock { tick in tick += 1; return tick })) }
        let sequence = SequentialIDs()
        let store: SQLLedgerStore
        switch backend {
        case .postgres:
            store = try await PostgresEngine.open(
                url: await TestPostgres.freshDatabase(), poolSize: TestStores.postgresPoolSize, writeMode: .grouped(), clock: clock, makeTransactionID: { sequence.id() })
        default:
            store = try Self.sqliteStore(.grouped(), clock: clock, makeTransactionID: { sequence.id() })
        }
        _ = try await store.setProduct(ProductUpdate(productID: "pack", credits: 5))
        _ = try await store.grant(GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "seed", productID: "pack", quantity: 1, actor: "t"))
        let results = try await Self.inOneBatch(store, [
            {
                let held = try await store.createHold(HoldRequest(playerID: "p1", amount: 2, expiresInSeconds: 600, idempotencyKey: "h1", actor: "t"))
                return MutationResult(transaction: held.transaction, balance: held.balance, replayed: false)
            },
            // An hour later: the hold's 2 credits are back, so 4 of 5 may be spent.
            Self.spend(store, "p1", 4, "s1"),
        ])
        #expect((store.groupCommitStatistics?.largestBatch ?? 0) >= 2, "the operations shared one batch")
        #expect(try results[0].get().balance == 3)
        #expect(try results[1].get().balance == 1, "\(results[1])")
        #expect(try await store.holds(playerID: "p1").map(\.status) == [.expired])
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 1)
        #expect(try await store.verify().ok)
    }

    @Test("a failing operation rolls back alone; its neighbours in the batch commit", arguments: TestBackend.all)
    func failureIsolation(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        try await Self.seed(store)
        let results = try await Self.inOneBatch(store, [
            Self.spend(store, "p1", 4, "a"), Self.spend(store, "p1", 100, "b"), Self.spend(store, "p1", 5, "a"),
            Self.spend(store, "p1", 0, "c"), Self.spend(store, "p2", 3, "a"), Self.spend(store, "p1", 6, "d"),
        ])
        #expect(try results[0].get().balance == 6)
        #expect(results[1].failureCode == "insufficient_funds")
        #expect(results[2].failureCode == "idempotency_key_reused")
        #expect(results[3].failureCode == "invalid_request")
        #expect(try results[4].get().balance == 7)
        #expect(try results[5].get().balance == 0)
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 0)
        let report = try await store.verify()
        #expect(report.ok && report.transactions == 5)
        // The overdraft's key was not recorded: it applies once there are funds.
        _ = try await store.adjust(AdjustRequest(playerID: "p1", amount: 100, reasonCode: "test", note: "n", idempotencyKey: "top-up", actor: "t"))
        #expect(try await store.spend(SpendRequest(playerID: "p1", amount: 100, idempotencyKey: "b", actor: "t")).replayed == false)
    }

    @Test("an operation that fails after writing has its writes rolled back alone; its neighbours commit", arguments: TestBackend.all)
    func failureAfterWrites(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        try await Self.seed(store)
        let writesThenFails: Operation = {
            try await store.write { db, _, _ in
                try db.execute("INSERT INTO currencies (code) VALUES (?)", [.text("gems")])
                throw WalletError.storage("failed after writing")
            }
        }
        let results = try await Self.inOneBatch(store, [
            // A wallet never seen before: the overdraft is refused before its account is created.
            Self.spend(store, "p1", 1, "before"), writesThenFails, Self.spend(store, "p9", 1, "new-wallet"), Self.spend(store, "p1", 2, "after"),
        ])
        #expect(try results[0].get().balance == 9)
        #expect(results[1].failureCode == "storage_error")
        #expect(results[2].failureCode == "insufficient_funds")
        #expect(try results[3].get().balance == 7)
        let left = try await store.read { db in
            (try db.integer("SELECT count(*) FROM currencies WHERE code = 'gems'"), try db.integer("SELECT count(*) FROM accounts WHERE owner = 'player:p9'"))
        }
        #expect(left.0 == 0 && left.1 == 0, "the failed operations' writes are gone")
        let report = try await store.verify()
        #expect(report.ok && report.transactions == 4)
    }

    @Test("concurrent replays of one key inside one batch apply once", arguments: TestBackend.all)
    func replaysInOneBatch(backend: TestBackend) async throws {
        let store = try await Self.store(on: backend)
        try await Self.seed(store)
        let results = try await Self.inOneBatch(store, (0..<10).map { _ in Self.spend(store, "p1", 3, "same") })
        let answers = try results.map { try $0.get() }
        #expect(answers.filter { !$0.replayed }.count == 1)
        #expect(Set(answers.map(\.transaction.id)).count == 1 && answers.allSatisfy { $0.balance == 7 })
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 7)
    }

    @Test("the statistics count the time a batch ran its operations, within the time it took to commit", arguments: TestBackend.all)
    func runningTime(backend: TestBackend) async throws {
        let store = try await Self.store(.grouped(), on: backend)
        let before = try #require(store.groupCommitStatistics)
        // A batch whose one operation holds the writer's connection: its transaction ran at
        // least from when the operation was seen holding it to when it was let go.
        let (gate, holder) = try await Gate.holding(store)
        let seenHolding = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(50))
        let held = ContinuousClock.now - seenHolding
        gate.release()
        try await holder.value
        let after = try #require(store.groupCommitStatistics)
        let running = after.runningSeconds - before.runningSeconds
        #expect(after.batches == before.batches + 1)
        #expect(running >= held.inSeconds, "the held operation ran for \(running) s, held \(held)")
        #expect(running <= after.commitSeconds - before.commitSeconds, "running is a part of committing")
    }

    @Test("operations that come while another process's batch holds the ledger's lock join the batch waiting for it", arguments: TestBackend.all)
    func joinWhileLocked(backend: TestBackend) async throws {
        let opened = try await TestStores.open(backend, writeMode: .grouped())
        let store = opened.store
        try await Self.seed(store)
        // Another instance on the same database, whose batch holds the lock (SQLite's write
        // lock, PostgreSQL's `ledger_lock` row) until the gate opens.
        let other = try await SQLLedgerStore.open(database: opened.location, writeMode: .grouped(), poolSize: TestStores.postgresPoolSize, clock: { Date() })
        let (gate, holder) = try await Gate.holding(other)
        let batchesBefore = store.groupCommitStatistics?.batches ?? 0
        var spends = [Task { await Self.outcome(Self.spend(store, "p1", 1, "w0")) }]
        // Time for the first spend's transaction to begin and wait for the lock: a writer that
        // took its batch before the lock (as this one did before) has taken that spend alone by
        // then, and the queue never holds all five.
        try await Task.sleep(for: .milliseconds(300))
        for index in 1..<5 { spends.append(Task { await Self.outcome(Self.spend(store, "p1", 1, "w\(index)")) }) }
        let deadline = ContinuousClock.now + .seconds(10)
        while store.queuedWriteCount < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(store.queuedWriteCount == 5, "all five wait in the queue while the lock is held")
        gate.release()
        try await holder.value
        for spend in spends { _ = try await spend.value.get() }
        let statistics = try #require(store.groupCommitStatistics)
        #expect(statistics.batches - batchesBefore == 1, "the five spends shared the batch that waited for the lock")
        #expect(statistics.largestBatch == 5)
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 5)
        #expect(try await store.verify().transactions == 7)
    }

    /// An engine whose first write transaction waits until `fail()`, then fails before its body
    /// ran (as one that never had the lock); every other call runs on `inner`.
    final class FailingFirstWrite: SQLEngine {
        let inner: any SQLEngine
        private let state = Mutex((begun: false, failing: false))
        init(_ inner: any SQLEngine) { self.inner = inner }

        /// Whether the first write transaction has begun (and waits).
        var begun: Bool { state.withLock { $0.begun } }
        func fail() { state.withLock { $0.failing = true } }

        func transaction<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result {
            let first = state.withLock { state in
                defer { state.begun = true }
                return !state.begun
            }
            guard first else { return try await inner.transaction(body) }
            while !state.withLock({ $0.failing }) { try await Task.sleep(for: .milliseconds(1)) }
            throw WalletError.storage("the ledger's lock was not had in time; nothing was written")
        }
        func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> Result) async throws -> Result { try await inner.read(body) }
        var prefetches: Bool { inner.prefetches }
        var batchLinger: Duration { inner.batchLinger }
        func mapped(_ error: any Error) -> WalletError { inner.mapped(error) }
        func run() async throws { try await inner.run() }
        var location: String { inner.location }
        func afterCopy(_ db: any SQLSession) throws { try inner.afterCopy(db) }
        func settings() async throws -> DatabaseSettings { try await inner.settings() }
        var engineName: String { inner.engineName }
    }

    // SQLite only: the failure is the wrapper's, before any statement; the engine under it does not matter.
    @Test("a batch whose transaction fails before it took anything fails the operations that waited when it began; those that came since commit in the next")
    func failureBeforeTaking() async throws {
        let seeded = try await Self.store(on: .sqlite)
        try await Self.seed(seeded)
        let engine = FailingFirstWrite(seeded.engine)
        let store = SQLLedgerStore(engine: engine, writeMode: .grouped(), clock: { Date() }, makeTransactionID: { RandomID.uuid() })
        let first = Task { await Self.outcome(Self.spend(store, "p1", 1, "f0")) }
        while !engine.begun { try await Task.sleep(for: .milliseconds(1)) }
        let later = (1..<4).map { index in Task { await Self.outcome(Self.spend(store, "p1", 1, "f\(index)")) } }
        let deadline = ContinuousClock.now + .seconds(10)
        while store.queuedWriteCount < 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(store.queuedWriteCount == 4, "the first spend and the three after it wait")
        engine.fail()
        #expect(await first.value.failureCode == "storage_error")
        for spend in later { #expect(try await spend.value.get().transaction.kind == .spend) }
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 7)
        #expect(try await store.verify().transactions == 5)
    }

    @Test("a full queue answers overloaded at once and writes nothing for it", arguments: TestBackend.all)
    func overloaded(backend: TestBackend) async throws {
        let store = try await Self.store(.grouped(batchMax: 8, queueMax: 3), on: backend)
        try await Self.seed(store)
        let (gate, holder) = try await Gate.holding(store)
        var queued: [Task<MutationResult, any Error>] = []
        for index in 0..<3 {
            queued.append(Task { try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "q\(index)", actor: "t")) })
            while store.queuedWriteCount < index + 1 { try await Task.sleep(for: .milliseconds(1)) }
        }
        let refused = await walletError { _ = try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "q3", actor: "t")) }
        #expect(refused?.code == "overloaded")
        gate.release()
        try await holder.value
        for task in queued { _ = try await task.value }
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 7)
        #expect(try await store.verify().transactions == 5)
    }
}

extension Result where Failure == WalletError {
    var failureCode: String? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

extension Dictionary where Key == String {
    func mapKeys(_ transform: (String) -> String) -> [String: Value] {
        Dictionary(uniqueKeysWithValues: map { (transform($0.key), $0.value) })
    }
}

extension GroupCommitTests {
    /// GRDB turns every statement after an aborted transaction, and the commit, into
    /// SQLITE_ABORT; this holds the batch writer to that: a write that precedes the abort in
    /// the batch must not be answered as committed.
    // SQLite only: SQLite's own ROLLBACK inside the batch, through its session.
    @Test("if SQLite rolls the batch's transaction back, every operation of the batch fails and nothing is written")
    func transactionLost() async throws {
        let store = try await Self.store(.grouped(), on: .sqlite)
        // The failure is held for minutes here, not 5 s: the whole suite on two cores once took
        // longer than that between the failed commit and the readiness check below.
        store.holdCommitFailures(for: .seconds(600))
        try await Self.seed(store)
        _ = try await store.setProduct(ProductUpdate(productID: "gems10", credits: 10, currency: "gems"))
        // Succeeds in its savepoint, and finds "gems" in the catalog, before the batch is lost.
        let gems: Operation = {
            try await store.adjust(
                AdjustRequest(playerID: "p1", amount: 5, currency: "gems", reasonCode: "goodwill", note: "lost", idempotencyKey: "g1", actor: "t"))
        }
        let rollback: Operation = {
            try await store.write { db, _, _ in
                // What SQLite does on a full disk or an I/O error: the whole transaction is gone.
                try (db as! SQLiteSession).db.execute(sql: "ROLLBACK")
                throw WalletError.storage("simulated I/O error")
            }
        }
        let results = try await Self.inOneBatch(store, [gems, Self.spend(store, "p1", 1, "before"), rollback, Self.spend(store, "p1", 2, "after")])
        // Until a commit succeeds (or the hold ends), readiness says writes cannot commit, so a
        // balancer stops sending them.
        let unready = await walletError { try await store.checkReadiness() }
        for result in results { #expect(result.failureCode == "storage_error", "\(result)") }
        #expect(unready?.code == "storage_error" && unready?.detail.contains("cannot commit") == true)
        #expect(try await store.balances(playerID: "p1").balances["credits"] == 10)
        #expect(try await store.verify().transactions == 2)
        // What the lost batch found in the catalog is not handed to the next batch.
        #expect(try await store.write { _, _, context in context.knownCurrencies.contains(Identifier("gems")) } == false)
        // The writer goes on working afterwards, and is ready again.
        #expect(try await store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "before", actor: "t")).balance == 9)
        try await store.checkReadiness()
    }

    // SQLite only: runs a statement on SQLite's writer outside a transaction.
    @Test("the write path's statements refuse to run outside a transaction, so no write can autocommit alone")
    func rawStatementNeedsTransaction() async throws {
        let store = try await Self.store(.grouped(), on: .sqlite)
        try await store.sqliteWriter!.writeWithoutTransaction { db in
            #expect(throws: DatabaseError.self) {
                try SQLiteSession(db: db).execute("INSERT INTO currencies (code) VALUES (?)", [.text("gems")])
            }
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM currencies WHERE code = 'gems'")
            #expect(count == 0)
        }
        // Inside a write transaction the same statement runs.
        try await store.sqliteWriter!.write { db in
            try SQLiteSession(db: db).execute("INSERT INTO currencies (code) VALUES (?)", [.text("gems")])
        }
        #expect(try await store.sqliteWriter!.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM currencies WHERE code = 'gems'") } == 1)
    }
}
