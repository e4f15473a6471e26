import WalletCore
import Foundation

extension SQLLedgerStore {
    /// How many transactions an export reads per page.
    static let exportPageSize = 2_000

    package func head() async throws(WalletError) -> LedgerHead {
        try await read { db in
            try db.first("SELECT seq, hash, created_at FROM transactions ORDER BY seq DESC LIMIT 1") { row in
                LedgerHead(seq: try row.integer(0), hash: try row.text(1), at: try row.text(2))
            } ?? LedgerHead(seq: 0, hash: HashChain.genesis, at: nil)
        }
    }

    package func volume(_ query: VolumeQuery) async throws(WalletError) -> [DailyVolume] {
        let bounds = try query.bounds()
        return try await read { db in
            try db.all(
                """
                SELECT substr(created_at, 1, 10) AS day, kind, currency, count(*), CAST(sum(abs(amount)) AS BIGINT)
                FROM transactions WHERE created_at >= ? AND created_at < ?
                GROUP BY substr(created_at, 1, 10), kind, currency ORDER BY 1, 2, 3
                """, [.text(bounds.from), .text(bounds.to)]
            ) { row in
                guard let kind = TransactionKind(rawValue: try row.text(1)) else { throw WalletError.corrupt("a transaction has an unknown kind") }
                return DailyVolume(day: try row.text(0), kind: kind, currency: try row.text(2), count: try row.integer(3), amount: try row.integer(4))
            }
        }
    }

    /// The export as a stream of chunks, read page by page, each page in its own short read:
    /// the file holds the seq range fixed when the export started, however many writes land
    /// meanwhile, and memory stays flat whatever its size: a page is read only when the
    /// consumer asks for the next chunk.
    package func export(_ query: ExportQuery, format: ExportFormat) async throws(WalletError) -> ExportStream {
        let bounds = try query.bounds()
        // The range and its checkpoint are read together, once. Each page is then its own short
        // read: the rows up to the range's last seq never change (the ledger is append-only),
        // so no read transaction outlives a page, and an export nobody reads (a stalled client,
        // `wallet export | less`) never holds back the WAL checkpoint.
        let (seqs, checkpoint) = try await read { db in
            let seqs = try Self.seqRange(db, from: bounds.from, to: bounds.to)
            return (seqs, try Self.checkpoint(db, before: seqs, query: query))
        }
        return ExportStream(format: format, checkpoint: checkpoint, seqs: seqs, pageSize: Self.exportPageSize) { pageSeqs throws(WalletError) in
            try await read { db in
                var transactions: [LedgerTransaction] = []
                try TransactionStream.forEach(db, seqs: pageSeqs) { transaction in
                    // By bytes, as the checkpoint's `a.owner = ?` picks the opening balances: a stored
                    // look-alike id (`\u{212A}ate`, older than the id syntax) is another wallet.
                    if let playerID = query.playerID, Identifier(transaction.playerID) != playerID.identifier { return }
                    if let currency = query.currency, transaction.currency != currency { return }
                    transactions.append(transaction)
                }
                return transactions
            }
        }
    }

    /// The contiguous run of seq from the first transaction created at or after `from` to the
    /// last created before `to`; empty when the period holds none.
    static func seqRange(_ db: any SQLSession, from: String?, to: String?) throws -> Range<Int64> {
        let head = try LedgerReads.head(db).seq
        let first = try from.map { from in
            try db.integer("SELECT min(seq) FROM transactions WHERE created_at >= ?", [.text(from)]) ?? head + 1
        } ?? 1
        let last = try to.map { to in
            try db.integer("SELECT max(seq) FROM transactions WHERE created_at < ?", [.text(to)]) ?? 0
        } ?? head
        // An empty run still starts at `first`, so the checkpoint names where it is.
        return first..<max(first, last + 1)
    }

    private static func checkpoint(_ db: any SQLSession, before seqs: Range<Int64>, query: ExportQuery) throws -> ExportCheckpoint {
        let checkpointSeq = seqs.lowerBound - 1
        let hash = try db.first("SELECT hash FROM transactions WHERE seq = ?", [.integer(checkpointSeq)]) { row in try row.text(0) } ?? HashChain.genesis
        // Accounts whose every posting of the period is in the export: all of them unfiltered,
        // the player's with a player filter, those of the currency with only a currency filter.
        var conditions: [String] = []
        var arguments: [SQLValue] = [.integer(seqs.lowerBound), .integer(seqs.upperBound - 1)]
        if let playerID = query.playerID {
            conditions.append(" AND a.owner = ?")
            arguments.append(.text(AccountOwner.player(playerID.text).text))
        }
        if let currency = query.currency {
            conditions.append(" AND a.currency = ?")
            arguments.append(.text(currency))
        }
        var openings: [ExportCheckpoint.OpeningBalance] = []
        // An unfiltered export from genesis needs no list: every account starts at zero.
        if query.isFiltered || checkpointSeq > 0, !seqs.isEmpty {
            // An account's balance before the period is its first posting's balance-after minus
            // the amount. It reads the period's postings once, and spares every write an index
            // on (account, seq).
            openings = try db.all(
                """
                SELECT a.owner, a.currency, p.balance_after - p.amount
                FROM (SELECT account_id, min(seq) AS seq FROM postings WHERE seq BETWEEN ? AND ? GROUP BY account_id) f
                JOIN postings p ON p.seq = f.seq AND p.account_id = f.account_id JOIN accounts a ON a.id = p.account_id
                WHERE 1 = 1\(conditions.joined()) ORDER BY a.owner, a.currency
                """, arguments
            ) { row in .init(account: try row.text(0), currency: try row.text(1), balance: try row.integer(2)) }
        }
        return ExportCheckpoint(seq: checkpointSeq, hash: hash, filtered: query.isFiltered, openingBalances: openings)
    }

    package func statement(_ query: StatementQuery) async throws(WalletError) -> Statement {
        let bounds = try ExportQuery(from: query.from, to: query.to).bounds()
        return try await read { db in
            let seqs = try Self.seqRange(db, from: bounds.from, to: bounds.to)
            let rows = try db.all(
                "SELECT \(LedgerReads.transactionColumnList) FROM transactions WHERE player_id = ? AND seq BETWEEN ? AND ? ORDER BY seq LIMIT ?",
                [.text(query.playerID.text), .integer(seqs.lowerBound), .integer(seqs.upperBound - 1), .integer(Int64(StatementQuery.transactionsMax) + 1)]
            ) { row in try LedgerReads.transaction(from: row, postings: []) }
            guard rows.count <= StatementQuery.transactionsMax else {
                throw WalletError.invalidRequest("the period holds more than \(StatementQuery.transactionsMax) transactions; ask for a shorter one")
            }
            let transactions = try rows.map { try $0.with(postings: LedgerReads.postings(db, seq: $0.seq)) }
            let owner = AccountOwner.player(query.playerID.text).text
            let codes = try db.all("SELECT currency FROM accounts WHERE owner = ? ORDER BY currency", [.text(owner)]) { row in try row.text(0) }
            let currencies = try codes.map { currency in
                // The player's account moves only with the player's own transactions, so the
                // balance before the period is the balance-after of their last one before it.
                let opening = try db.first(
                    """
                    SELECT p.balance_after FROM transactions t
                    JOIN postings p ON p.seq = t.seq JOIN accounts a ON a.id = p.account_id AND a.owner = ?1
                    WHERE t.player_id = ?2 AND t.currency = ?3 AND t.seq < ?4 ORDER BY t.seq DESC LIMIT 1
                    """, [.text(owner), .text(query.playerID.text), .text(currency), .integer(seqs.lowerBound)]
                ) { row in try row.integer(0) } ?? 0
                let inCurrency = transactions.filter { $0.currency == currency }
                let closing = inCurrency.reduce(opening) { $0 + $1.amount }
                // The arithmetic must agree with the stored balances-after; if not, the ledger was altered.
                if let lastTransaction = inCurrency.last, let last = lastTransaction.postings.first(where: { $0.account == owner }), last.balanceAfter != closing {
                    throw WalletError.corrupt("the ledger is inconsistent at seq \(lastTransaction.seq); run wallet verify")
                }
                return Statement.CurrencyStatement(currency: currency, openingBalance: opening, closingBalance: closing, transactions: inCurrency)
            }
            return Statement(playerID: query.playerID, from: bounds.from, to: bounds.to, currencies: currencies)
        }
    }
}
