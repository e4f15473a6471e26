import WalletCore

/// What an operation will look up, told when it is submitted, so that its batch reads them for
/// all its operations in a few statements.
package struct WriteHints: Sendable {
    var keys: [(scope: String, key: String)] = []
    var accounts: [(owner: String, currency: String)] = []
    /// Store transactions whose reported state (`store_transaction_states`) it reads.
    var storeTransactions: [(store: String, id: String)] = []

    package init(keys: [(scope: String, key: String)] = [], accounts: [(owner: String, currency: String)] = [], storeTransactions: [(store: String, id: String)] = []) {
        self.keys = keys
        self.accounts = accounts
        self.storeTransactions = storeTransactions
    }
}

/// What the operations of one batch share inside its SQL transaction, where no other writer
/// can interleave: the chain's head as the previous operation left it, the accounts it
/// touched, and what its prefetch read (keys and the transactions of those used, accounts,
/// store transactions' reported states, wallets' first lots and open holds), and the products
/// its grants read. It spares each operation re-reading what the one before just wrote.
///
/// An operation that fails leaves nothing in the database, and what it cached here must go
/// with it: every change goes through a method below that logs how to undo it, and
/// `rollBack(to:)` undoes the changes made since a `checkpoint()`. (Copying the whole context
/// before each operation did the same, but the first change after each copy copied every
/// dictionary again: 2–3% of the writer's time in a profile of `wallet bench`.)
package struct BatchContext {
    /// Makes the id of each new transaction: random UUIDs, or a sequence in tests.
    let makeTransactionID: @Sendable () -> String
    /// The chain's head as the batch's last operation left it; nil until one read or wrote it.
    private(set) var head: (seq: Int64, hash: String)?
    /// Accounts read or changed in this batch, as they stand now, by their exact bytes: two
    /// owners that Swift finds canonically equal are two accounts in SQLite, and here too.
    private(set) var accounts: [AccountKey: Account] = [:]
    /// The new balances of the accounts changed in this batch, by account id: written once per
    /// account by `writeBalances` when the batch ends, not once per operation.
    private(set) var changedBalances: [Int64: Int64] = [:]
    /// Currency codes found in the catalog, by this batch or one committed before it (the
    /// writer hands them on): the wallet never removes a code, so a hit stays true. (A code
    /// deleted by hand under a running process fails the write on `accounts`' reference to it,
    /// as a storage error instead of `unknown_currency`.)
    private(set) var knownCurrencies: Set<Identifier>
    /// Accounts the batch's prefetch or a lookup (`Account.find`) found missing: an operation
    /// creates them without asking.
    private(set) var absentAccounts: Set<AccountKey> = []
    /// Idempotency keys looked up or recorded in this batch, by their exact bytes.
    private(set) var keys: [KeyID: KeyState] = [:]
    /// A wallet's first open lots in burn order as the table holds them now, by account id: a
    /// debit of the wallet then reads none itself. The batch's prefetch reads them
    /// (`LotStorage.debitReadFirst` of them, fewer if it has fewer). An entry goes when an
    /// operation of the batch posts to its account (`update`): every write to a wallet's lots
    /// comes with a transaction posting to its account. The write that posted then carries it
    /// past what it did to the lots, if it only drew from them (`lotsDrawn`).
    private(set) var firstLots: [Int64: FirstLots] = [:]
    /// Wallets (player id as stored, currency) the prefetch found without an open hold: a debit
    /// of one reads no expired holds. An entry goes when the batch places a hold on the wallet
    /// (`HoldStorage.insert`), the only way a hold opens; resolving one only closes it.
    private(set) var withoutOpenHolds: Set<ExactPair> = []
    /// The transactions of the keys the batch's prefetch found used, with their postings, by
    /// seq: what a replay under one of those keys answers. A transaction never changes once
    /// written, and these were written before the batch: nothing here needs undoing.
    private(set) var replayed: [Int64: LedgerTransaction] = [:]
    /// The latest state reported for store transactions (`store_transaction_states`), by the
    /// exact bytes of store and store transaction id, as the batch read or saved it; nil for
    /// one the store reported nothing of. Every save goes through `StoreTransactionState.save`,
    /// which keeps its entry here.
    private(set) var storeStates: [ExactPair: StoreTransactionState?] = [:]
    /// Products the batch's grants read, by the exact bytes of their id; a product the batch
    /// sets is read again (`forgetProduct`).
    private(set) var products: [Identifier: Product] = [:]
    /// How to undo each change made to the caches above, oldest first (`rollBack(to:)`).
    private var undoLog: [Undo] = []

    /// The first open lots of a wallet, in burn order.
    struct FirstLots: Equatable {
        var lots: [Lot]
        /// Whether `lots` are every open lot of the wallet, or only the head of its burn order.
        var all: Bool

        /// The lots a read of at most `limit` lots found.
        init(read lots: [Lot], limit: Int) {
            self.lots = lots
            all = lots.count < limit
        }
    }

    /// One change to the caches, as what was there before it.
    private enum Undo {
        case head((seq: Int64, hash: String)?)
        case account(AccountKey, Account?)
        case changedBalance(Int64, Int64?)
        case knownCurrency(Identifier)
        case absentAccount(AccountKey)
        case notAbsentAccount(AccountKey)
        case key(KeyID, KeyState?)
        case firstLots(Int64, FirstLots?)
        case withoutOpenHold(ExactPair)
        case product(Identifier, Product?)
        case storeState(ExactPair, StoreTransactionState??)
    }

    /// A point in the batch's changes that `rollBack(to:)` can return to.
    struct Checkpoint {
        fileprivate let logCount: Int
    }

    /// The batch's changes so far, for an operation (or a part of one) about to run in a savepoint.
    func checkpoint() -> Checkpoint {
        Checkpoint(logCount: undoLog.count)
    }

    /// Undoes every change made since `checkpoint`, newest first: the savepoint it stands
    /// for was rolled back, so nothing cached since is true any more.
    mutating func rollBack(to checkpoint: Checkpoint) {
        while undoLog.count > checkpoint.logCount, let undo = undoLog.popLast() {
            switch undo {
            case .head(let previous): head = previous
            case .account(let key, let previous): accounts[key] = previous
            case .changedBalance(let id, let previous): changedBalances[id] = previous
            case .knownCurrency(let code): knownCurrencies.remove(code)
            case .absentAccount(let key): absentAccounts.insert(key)
            case .notAbsentAccount(let key): absentAccounts.remove(key)
            case .key(let id, let previous): keys[id] = previous
            case .firstLots(let id, let previous): firstLots[id] = previous
            case .withoutOpenHold(let wallet): withoutOpenHolds.insert(wallet)
            case .product(let id, let previous): products[id] = previous
            case .storeState(let pair, let previous): storeStates[pair] = previous
            }
        }
    }

    /// An idempotency key by the exact bytes of its scope and key.
    typealias KeyID = ExactPair

    enum KeyState: Equatable {
        case unused
        case used(requestHash: String, seq: Int64)
    }

    init(makeTransactionID: @escaping @Sendable () -> String, knownCurrencies: Set<Identifier> = []) {
        self.makeTransactionID = makeTransactionID
        self.knownCurrencies = knownCurrencies
    }

    /// An account by the exact bytes of its owner and currency.
    typealias AccountKey = ExactPair

    /// Two texts compared by their bytes, as the database compares them.
    struct ExactPair: Hashable {
        let first: Identifier
        let second: Identifier

        init(_ first: String, _ second: String) {
            self.first = Identifier(first)
            self.second = Identifier(second)
        }
    }

    /// Records the chain's new head, once an operation appended a transaction.
    mutating func advance(head newHead: (seq: Int64, hash: String)) {
        undoLog.append(.head(head))
        head = newHead
    }

    /// Records a currency code found in the catalog.
    mutating func currencyKnown(_ code: Identifier) {
        if knownCurrencies.insert(code).inserted { undoLog.append(.knownCurrency(code)) }
    }

    /// Records an account's new balance for the rest of the batch.
    mutating func update(_ account: Account) {
        let key = AccountKey(account.owner, account.currency)
        undoLog.append(.account(key, accounts.updateValue(account, forKey: key)))
        undoLog.append(.changedBalance(account.id, changedBalances.updateValue(account.balance, forKey: account.id)))
        if let lots = firstLots.removeValue(forKey: account.id) { undoLog.append(.firstLots(account.id, lots)) }
    }

    /// Carries a wallet's first lots past an operation that posted to its account (which made
    /// `update` drop them), given what they were before it (`before`) and what it did to the
    /// wallet's lots: draws that take from lots among them leave the same lots in the same order,
    /// less what they took, and a lot drawn empty leaves the open lots. Anything else — a lot
    /// made, credits given back, a draw from a lot not among them — leaves them to be read again.
    mutating func lotsDrawn(accountID: Int64, before: FirstLots?, draws: [LotDraw], madeLot: Bool) {
        guard var known = before, !madeLot, firstLots[accountID] == nil else { return }
        for draw in draws {
            guard draw.amount > 0, let index = known.lots.firstIndex(where: { $0.id == draw.lotID }), known.lots[index].remaining >= draw.amount else { return }
            known.lots[index].remaining -= draw.amount
            if known.lots[index].remaining == 0 { known.lots.remove(at: index) }
        }
        undoLog.append(.firstLots(accountID, nil))
        firstLots[accountID] = known
    }

    /// Keeps the state of a store transaction (nil: none reported) as read or saved, for the
    /// rest of the batch.
    mutating func remember(_ state: StoreTransactionState?, store: String, storeTransactionID: String) {
        let pair = ExactPair(store, storeTransactionID)
        undoLog.append(.storeState(pair, storeStates.updateValue(state, forKey: pair)))
    }

    /// Keeps a product as read for the rest of the batch.
    mutating func remember(_ product: Product) {
        let id = Identifier(product.productID)
        undoLog.append(.product(id, products.updateValue(product, forKey: id)))
    }

    /// Forgets the product of `productID`, which the batch is changing.
    mutating func forgetProduct(_ productID: String) {
        let id = Identifier(productID)
        if let product = products.removeValue(forKey: id) { undoLog.append(.product(id, product)) }
    }

    /// Records that the batch opened a hold on the wallet of `playerID` (as stored) in `currency`.
    mutating func holdPlaced(playerID: String, currency: String) {
        if let wallet = withoutOpenHolds.remove(ExactPair(playerID, currency)) { undoLog.append(.withoutOpenHold(wallet)) }
    }

    /// Keeps an account as read (or just created) for the rest of the batch.
    mutating func remember(_ account: Account) {
        let key = AccountKey(account.owner, account.currency)
        if let absent = absentAccounts.remove(key) { undoLog.append(.absentAccount(absent)) }
        if accounts[key] == nil {
            accounts[key] = account
            undoLog.append(.account(key, nil))
        }
    }

    /// Keeps that the account of `key` does not exist, as a lookup found (only `remember` of the
    /// account, once created, ends that).
    mutating func rememberAbsent(_ key: AccountKey) {
        if absentAccounts.insert(key).inserted { undoLog.append(.notAbsentAccount(key)) }
    }

    /// Records a key used by an operation of this batch.
    mutating func recordKey(scope: String, key: String, requestHash: String, seq: Int64) {
        let id = KeyID(scope, key)
        undoLog.append(.key(id, keys.updateValue(.used(requestHash: requestHash, seq: seq), forKey: id)))
    }

    /// The largest number of values one prefetch statement looks up; longer lists take several,
    /// and shorter ones are padded to 8 or to this, so that each connection prepares few
    /// statements.
    static let prefetchChunk = 64

    /// Reads, in a few statements, the idempotency keys and accounts the batch's operations
    /// said they will ask for, the transactions of the keys used already (what their replays
    /// answer), the states reported for the store transactions they named, and what a debit of
    /// each of those players' wallets reads first (`prefetchDebitReads`): each operation then
    /// finds them here instead of waiting for a query of its own (on PostgreSQL, a round trip
    /// each). Runs before the batch's first checkpoint: what it stores directly is not logged,
    /// and never needs undoing (a failure here fails the whole batch).
    mutating func prefetch(
        _ db: any SQLSession, keys wanted: [(scope: String, key: String)], accounts wantedAccounts: [(owner: String, currency: String)],
        storeTransactions: [(store: String, id: String)] = []
    ) throws {
        try Self.lookUp(db, wanted, "SELECT k.scope, k.key, k.request_hash, k.seq", join: "idempotency_keys k ON k.scope = wanted.column1 AND k.key = wanted.column2") { scope, key in
            keys[KeyID(scope, key)] = .unused
        } found: { row in
            keys[KeyID(try row.text(0), try row.text(1))] = .used(requestHash: try row.text(2), seq: try row.integer(3))
        }
        var usedSeqs: Set<Int64> = []
        for case .used(_, let seq) in keys.values { usedSeqs.insert(seq) }
        for chunk in Self.padded(usedSeqs.sorted()) {
            replayed.merge(try LedgerReads.transactions(db, seqs: chunk)) { first, _ in first }
        }
        try Self.lookUp(
            db, storeTransactions, "SELECT s.store, s.store_transaction_id, \(StoreTransactionState.columns(alias: "s"))",
            join: "store_transaction_states s ON s.store = wanted.column1 AND s.store_transaction_id = wanted.column2"
        ) { store, id in
            storeStates.updateValue(nil, forKey: ExactPair(store, id))
        } found: { row in
            let (store, id) = (try row.text(0), try row.text(1))
            storeStates[ExactPair(store, id)] = try StoreTransactionState(row: row, at: 2, store: store, storeTransactionID: id)
        }
        let unknown = wantedAccounts.filter { accounts[AccountKey($0.owner, $0.currency)] == nil }
        try Self.lookUp(db, unknown, "SELECT a.id, a.owner, a.currency, a.balance", join: "accounts a ON a.owner = wanted.column1 AND a.currency = wanted.column2") { owner, currency in
            absentAccounts.insert(AccountKey(owner, currency))
        } found: { row in
            remember(Account(id: try row.integer(0), owner: try row.text(1), currency: try row.text(2), balance: try row.integer(3)))
        }
        try prefetchDebitReads(db, owners: wantedAccounts)
    }

    /// Reads, for the players' wallets among `owners` found in `accounts`, what a debit of each
    /// would read first: their first open lots (`firstLots`), in one statement per chunk of
    /// wallets (a subquery each, so each reads the `lots_burn` index and stops), and which of
    /// them have no open hold (`withoutOpenHolds`).
    private mutating func prefetchDebitReads(_ db: any SQLSession, owners: [(owner: String, currency: String)]) throws {
        var wallets: [(account: Account, playerID: String)] = []
        var seen: Set<Int64> = []
        for (owner, currency) in owners {
            guard let playerID = AccountOwner.playerID(ofOwner: owner), let account = accounts[AccountKey(owner, currency)], seen.insert(account.id).inserted
            else { continue }
            wallets.append((account, playerID))
        }
        guard !wallets.isEmpty else { return }
        var lots: [Int64: [Int64: Lot]] = [:]
        for chunk in Self.padded(wallets.map(\.account.id)) {
            let first = "SELECT \(LotStorage.columns()), account_id FROM lots WHERE account_id = ? AND remaining > 0 ORDER BY \(LotStorage.burnOrder) LIMIT \(LotStorage.debitReadFirst)"
            let sql = chunk.indices.map { "SELECT * FROM (\(first)) AS first\($0)" }.joined(separator: " UNION ALL ")
            try db.forEach(sql, chunk.map { .integer($0) }) { row in
                let lot = try LotStorage.lot(from: row)
                lots[try row.integer(7), default: [:]][lot.id] = lot
            }
        }
        var holders: Set<ExactPair> = []
        try Self.lookUp(
            db, wallets.map { ($0.playerID, $0.account.currency) }, "SELECT DISTINCT h.player_id, h.currency",
            join: "holds h ON h.player_id = wanted.column1 AND h.currency = wanted.column2 AND h.status = 'open'"
        ) { _, _ in
        } found: { row in
            holders.insert(ExactPair(try row.text(0), try row.text(1)))
        }
        for (account, playerID) in wallets {
            firstLots[account.id] = FirstLots(read: LotRules.burnSorted(Array((lots[account.id] ?? [:]).values)), limit: LotStorage.debitReadFirst)
            let wallet = ExactPair(playerID, account.currency)
            if !holders.contains(wallet) { withoutOpenHolds.insert(wallet) }
        }
    }

    /// Looks `pairs` up in padded chunks, each distinct pair once (a batch's spends all name
    /// the same counterpart account): `asked` hears each pair before its chunk's query,
    /// `found` each row the query returns. The rows are joined from a VALUES list, so both
    /// databases look each pair up by the table's index (`(a, b) IN (VALUES ...)` made SQLite
    /// scan the whole table).
    private static func lookUp(
        _ db: any SQLSession, _ pairs: [(String, String)], _ select: String, join: String,
        asked: (String, String) -> Void, found: (any SQLRow) throws -> Void
    ) throws {
        var seen: Set<ExactPair> = []
        let distinct = pairs.filter { seen.insert(ExactPair($0.0, $0.1)).inserted }
        for chunk in padded(distinct) {
            for pair in chunk { asked(pair.0, pair.1) }
            let values = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
            try db.forEach("\(select) FROM (VALUES \(values)) AS wanted JOIN \(join)", chunk.flatMap { [SQLValue.text($0.0), .text($0.1)] }, found)
        }
    }

    /// `values` in chunks of at most `prefetchChunk`, each padded (with its last value again)
    /// to 8 or `prefetchChunk` values.
    private static func padded<Value>(_ values: [Value]) -> [[Value]] {
        stride(from: 0, to: values.count, by: prefetchChunk).map { start in
            var chunk = Array(values[start..<min(start + prefetchChunk, values.count)])
            let size = chunk.count <= 8 ? 8 : prefetchChunk
            if let last = chunk.last { chunk += Array(repeating: last, count: size - chunk.count) }
            return chunk
        }
    }

    /// Accounts one balance statement sets at most (2 parameters each).
    static let balancesPerStatementMax = 512

    /// The balance statement's text for 2, 4, ... `balancesPerStatementMax` accounts, made once
    /// (not once a batch: the text for 128 accounts is 5 KB).
    private static let balanceStatements: [Int: String] = {
        var texts: [Int: String] = [:]
        var size = 2
        while size <= balancesPerStatementMax {
            texts[size] = "UPDATE accounts SET balance = changed.column2 FROM (VALUES "
                + Array(repeating: "(CAST(? AS BIGINT), CAST(? AS BIGINT))", count: size).joined(separator: ", ")
                + ") AS changed WHERE accounts.id = changed.column1"
            size *= 2
        }
        return texts
    }()

    /// Writes the balances the batch changed into `accounts`, in the batch's SQL transaction,
    /// so that every balance equals the sum of its postings when the transaction commits: one
    /// statement for up to `balancesPerStatementMax` accounts, joined from a VALUES list (on
    /// PostgreSQL each statement is a round trip: a batch made one an account; a CASE over the
    /// ids instead of the join cost SQLite 5%). A list is padded with its last account again to a
    /// power of two, so an engine prepares at most ten texts of it.
    func writeBalances(_ db: any SQLSession) throws {
        let changed = changedBalances.sorted { $0.key < $1.key }
        for start in stride(from: 0, to: changed.count, by: Self.balancesPerStatementMax) {
            var chunk = Array(changed[start..<min(start + Self.balancesPerStatementMax, changed.count)])
            guard chunk.count > 1, let last = chunk.last else {
                for (id, balance) in chunk { try db.execute("UPDATE accounts SET balance = ? WHERE id = ?", [.integer(balance), .integer(id)]) }
                continue
            }
            var size = 2
            while size < chunk.count { size *= 2 }
            chunk += Array(repeating: last, count: size - chunk.count)
            // Never nil (chunks hold at most `balancesPerStatementMax`, a power of two the texts
            // cover); if it were, the batch fails and nothing of it commits.
            guard let statement = Self.balanceStatements[size] else { throw WalletError.storage("no balance statement for \(size) accounts") }
            try db.execute(statement, chunk.flatMap { [SQLValue.integer($0.key), .integer($0.value)] })
        }
    }
}
