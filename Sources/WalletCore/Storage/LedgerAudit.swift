import Foundation
import GRDB

extension SQLiteLedgerStore {
    /// How many transactions an export reads per page.
    static let exportPageSize = 2_000

    public func head() async throws(WalletError) -> LedgerHead {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT seq, hash, created_at FROM transactions ORDER BY seq DESC LIMIT 1") else {
                return LedgerHead(seq: 0, hash: HashChain.genesis, at: nil)
            }
            return LedgerHead(seq: row["seq"], hash: row["hash"], at: row["created_at"])
        }
    }

    /// The export as a stream of chunks, read page by page, each page in its own short read:
    /// the file holds the seq range fixed when the export started, however many writes land
    /// meanwhile, and memory stays flat whatever its size: a page is read only when the
    /// consumer asks for the next chunk.
    public func export(_ query: ExportQuery, format: ExportFormat) async throws(WalletError) -> ExportStream {
        let bounds = try query.bounds()
        // The range and its checkpoint are read together, once. Each page is then its own short
        // read: the rows up to the range's last seq never change (the ledger is append-only),
        // so no read transaction outlives a page, and an export nobody reads (a stalled client,
        // `wallet export | less`) never holds back the WAL checkpoint.
        let (seqs, checkpoint) = try await Self.read(writer, path: writer.path) { db in
            let seqs = try Self.seqRange(db, from: bounds.from, to: bounds.to)
            return (seqs, try Self.checkpoint(db, before: seqs, query: query))
        }
        let (reader, path) = (writer, writer.path)
        return ExportStream(format: format, checkpoint: checkpoint, seqs: seqs, pageSize: Self.exportPageSize) { pageSeqs throws(WalletError) in
            try await Self.read(reader, path: path) { db in
                var transactions: [LedgerTransaction] = []
                try TransactionStream.forEach(db, seqs: pageSeqs) { transaction in
                    if let playerID = query.playerID, transaction.playerID != playerID { return }
                    if let currency = query.currency, transaction.currency != currency { return }
                    transactions.append(transaction)
                }
                return transactions
            }
        }
    }

    private static func read<Result: Sendable>(
        _ reader: any DatabaseReader, path: String, _ operation: @escaping @Sendable (Database) throws -> Result
    ) async throws(WalletError) -> Result {
        do {
            return try await reader.read { db in try operation(db) }
        } catch {
            throw mapped(error, path: path)
        }
    }

    /// The contiguous run of seq from the first transaction created at or after `from` to the
    /// last created before `to`; empty when the period holds none.
    static func seqRange(_ db: Database, from: String?, to: String?) throws -> Range<Int64> {
        let head = try LedgerReads.head(db).seq
        let first = try from.map { try Int64.fetchOne(db, sql: "SELECT min(seq) FROM transactions WHERE created_at >= ?", arguments: [$0]) ?? head + 1 } ?? 1
        let last = try to.map { try Int64.fetchOne(db, sql: "SELECT max(seq) FROM transactions WHERE created_at < ?", arguments: [$0]) ?? 0 } ?? head
        // An empty run still starts at `first`, so the checkpoint names where it is.
        return first..<max(first, last + 1)
    }

    private static func checkpoint(_ db: Database, before seqs: Range<Int64>, query: ExportQuery) throws -> ExportCheckpoint {
        let checkpointSeq = seqs.lowerBound - 1
        let hash = try String.fetchOne(db, sql: "SELECT hash FROM transactions WHERE seq = ?", arguments: [checkpointSeq]) ?? HashChain.genesis
        // Accounts whose every posting of the period is in the export: all of them unfiltered,
        // the player's with a player filter, those of the currency with only a currency filter.
        var conditions = ["p.seq BETWEEN ? AND ?"]
        var arguments: StatementArguments = [seqs.lowerBound, seqs.upperBound - 1]
        if let playerID = query.playerID {
            conditions.append("a.owner = ?")
            _ = arguments.append(contentsOf: [LedgerRules.playerOwner(playerID)])
        }
        if let currency = query.currency {
            conditions.append("a.currency = ?")
            _ = arguments.append(contentsOf: [currency])
        }
        var openings: [ExportCheckpoint.OpeningBalance] = []
        // An unfiltered export from genesis needs no list: every account starts at zero.
        if query.isFiltered || checkpointSeq > 0, !seqs.isEmpty {
            // An account's balance before the period is its first posting's balance-after minus
            // the amount (SQLite takes the bare columns from the row of min(seq)). It reads the
            // period's postings once, and spares every write an index on (account, seq).
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT a.owner, a.currency, p.balance_after - p.amount AS balance, min(p.seq)
                    FROM postings p JOIN accounts a ON a.id = p.account_id
                    WHERE \(conditions.joined(separator: " AND ")) GROUP BY p.account_id ORDER BY a.owner, a.currency
                    """,
                arguments: arguments)
            openings = rows.map { .init(account: $0["owner"], currency: $0["currency"], balance: $0["balance"]) }
        }
        return ExportCheckpoint(seq: checkpointSeq, hash: hash, filtered: query.isFiltered, openingBalances: openings)
    }

    public func statement(_ query: StatementQuery) async throws(WalletError) -> Statement {
        try PlayerID.validate(query.playerID)
        let bounds = try ExportQuery(from: query.from, to: query.to).bounds()
        return try await read { db in
            let seqs = try Self.seqRange(db, from: bounds.from, to: bounds.to)
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(LedgerReads.transactionColumnList) FROM transactions WHERE player_id = ? AND seq BETWEEN ? AND ? ORDER BY seq LIMIT ?",
                arguments: [query.playerID, seqs.lowerBound, seqs.upperBound - 1, StatementQuery.transactionsMax + 1])
            guard rows.count <= StatementQuery.transactionsMax else {
                throw WalletError.invalidRequest("the period holds more than \(StatementQuery.transactionsMax) transactions; ask for a shorter one")
            }
            let transactions = try rows.map { try LedgerReads.transaction(from: $0, postings: LedgerReads.postings(db, seq: $0[0])) }
            let owner = LedgerRules.playerOwner(query.playerID)
            let currencies = try String.fetchAll(db, sql: "SELECT currency FROM accounts WHERE owner = ? ORDER BY currency", arguments: [owner]).map { currency in
                // The player's account moves only with the player's own transactions, so the
                // balance before the period is the balance-after of their last one before it.
                let opening = try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT p.balance_after FROM transactions t
                        JOIN postings p ON p.seq = t.seq JOIN accounts a ON a.id = p.account_id AND a.owner = ?1
                        WHERE t.player_id = ?2 AND t.currency = ?3 AND t.seq < ?4 ORDER BY t.seq DESC LIMIT 1
                        """,
                    arguments: [owner, query.playerID, currency, seqs.lowerBound]) ?? 0
                let inCurrency = transactions.filter { $0.currency == currency }
                let closing = inCurrency.reduce(opening) { $0 + $1.amount }
                // The arithmetic must agree with the stored balances-after; if not, the ledger was altered.
                if let last = inCurrency.last?.postings.first(where: { $0.account == owner }), last.balanceAfter != closing {
                    throw WalletError.storage("the ledger is inconsistent at seq \(inCurrency.last!.seq); run wallet verify")
                }
                return Statement.CurrencyStatement(currency: currency, openingBalance: opening, closingBalance: closing, transactions: inCurrency)
            }
            return Statement(playerID: query.playerID, from: bounds.from, to: bounds.to, currencies: currencies)
        }
    }
}
