import Foundation

/// The file formats of a ledger export.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// RFC 4180 CSV with a header row; text cells that a spreadsheet would run as a formula
    /// are written with a leading `'` (see `CSVCell`).
    case csv
    /// JSON Lines: one object per line.
    case jsonl
}

/// What to export. Without filters the export holds every transaction of the period, whole.
public struct ExportQuery: Sendable, Equatable {
    /// RFC 3339; the export starts at the first transaction created at or after it.
    public var from: String?
    /// RFC 3339, exclusive; the export ends at the last transaction created before it.
    public var to: String?
    /// Only transactions of this player (their postings to system accounts included).
    public var playerID: PlayerID?
    /// Only transactions in this currency.
    public var currency: String?

    public init(from: String? = nil, to: String? = nil, playerID: PlayerID? = nil, currency: String? = nil) {
        self.from = from
        self.to = to
        self.playerID = playerID
        self.currency = currency
    }

    /// A player or currency filter leaves transactions out, so the hash chain cannot be
    /// followed from one transaction to the next.
    public var isFiltered: Bool { playerID != nil || currency != nil }

    /// The period bounds in the ledger's own timestamp format, validated.
    package func bounds() throws(WalletError) -> (from: String?, to: String?) {
        if let currency { try Validate.currency(currency) }
        let from = try from.map { text throws(WalletError) in try Timestamp.parse(text, field: .member("from")) }
        let to = try to.map { text throws(WalletError) in try Timestamp.parse(text, field: .member("to")) }
        if let from, let to, from >= to { throw .invalidRequest("from must be before to", field: "to") }
        return (from, to)
    }
}

/// Where an export continues from: the transaction before its first one, and the balance of
/// each account it covers as of that transaction.
public struct ExportCheckpoint: Sendable, Equatable {
    /// The last `seq` before the export (0: the export starts at genesis).
    public var seq: Int64
    /// The hash of that transaction (or the genesis value), which the first exported
    /// transaction's `prev_hash` must equal.
    public var hash: String
    /// True when a player or currency filter left transactions out.
    public var filtered: Bool
    /// Balances before the first exported transaction, of the accounts whose every posting in
    /// the period is in the export. Accounts absent here start at zero in an unfiltered export.
    public var openingBalances: [OpeningBalance]

    public struct OpeningBalance: Sendable, Equatable {
        public var account: String
        public var currency: String
        public var balance: Int64

        package init(account: String, currency: String, balance: Int64) {
            self.account = account
            self.currency = currency
            self.balance = balance
        }
    }

    package init(seq: Int64, hash: String, filtered: Bool, openingBalances: [OpeningBalance]) {
        self.seq = seq
        self.hash = hash
        self.filtered = filtered
        self.openingBalances = openingBalances
    }
}

/// What an export wrote.
public struct ExportSummary: Sendable, Equatable, Codable {
    public var transactions: Int64
    public var postings: Int64
    /// The hash of the last exported transaction, or the checkpoint's when none was.
    public var lastHash: String

    package enum CodingKeys: String, CodingKey {
        case transactions, postings
        case lastHash = "last_hash"
    }
}

/// The ledger head that auditors note and later check exports against.
public struct LedgerHead: Sendable, Equatable, Codable {
    public var seq: Int64
    public var hash: String
    /// When the head transaction was created; nil for an empty ledger.
    public var at: String?

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(hash, forKey: .hash)
        try container.encode(at, forKey: .at)
    }

    package init(seq: Int64, hash: String, at: String?) {
        self.seq = seq
        self.hash = hash
        self.at = at
    }
}

/// The columns of a CSV export and the fields of a JSON Lines posting object, in order.
/// Each posting line repeats its transaction's fields (every `TransactionField`, named by its
/// `exportName`), so the file alone lets a reader recompute every hash.
package enum ExportColumn: Equatable {
    case type
    case transaction(TransactionField)
    case posting(PostingField)

    /// A posting's own fields, and how many postings its transaction has.
    package enum PostingField: CaseIterable {
        case account, currency, amount, balanceAfter, count

        package var name: StaticString {
            switch self {
            case .account: "account"
            case .currency: "currency"
            case .amount: "amount"
            case .balanceAfter: "balance_after"
            case .count: "posting_count"
            }
        }
    }

    package static let all: [ExportColumn] =
        [.type] + [.seq, .id, .createdAt, .kind, .playerID, .currency, .amount].map(ExportColumn.transaction) + PostingField.allCases.map(ExportColumn.posting)
        + [.idempotencyKey, .store, .storeTransactionID, .productID, .quantity, .actor, .reasonCode, .note, .ticket, .refundOfSeq, .uncollected, .metadata, .prevHash, .hash]
        .map(ExportColumn.transaction)

    package static let names = all.map { column in column.name.description }

    package var name: StaticString {
        switch self {
        case .type: "type"
        case .transaction(let field): field.exportName
        case .posting(let field): field.name
        }
    }
}

/// Turns checkpoints and transactions into lines of one format.
package struct ExportEncoder {
    package let format: ExportFormat

    /// The header row (CSV only).
    package func header() -> String? {
        format == .csv ? ExportColumn.names.joined(separator: ",") + "\r\n" : nil
    }

    /// The checkpoint line, then one `opening_balance` line per opening balance: every line of
    /// an export is short, so a reader needs no more memory than its longest transaction.
    package func checkpoint(_ checkpoint: ExportCheckpoint) -> String {
        checkpointLine(seq: checkpoint.seq, hash: checkpoint.hash, filtered: checkpoint.filtered)
            + checkpoint.openingBalances.map(openingLine).joined()
    }

    package func checkpointLine(seq: Int64, hash: String, filtered: Bool) -> String {
        let type = filtered ? "checkpoint_filtered" : "checkpoint"
        switch format {
        case .csv: return csvRow(["type": type, "seq": String(seq), "hash": CSVCell.text(hash)])
        case .jsonl: return #"{"type":"\#(type)","seq":\#(seq),"hash":\#(JSONText.string(hash))}"# + "\n"
        }
    }

    package func openingLine(_ opening: ExportCheckpoint.OpeningBalance) -> String {
        switch format {
        case .csv:
            return csvRow([
                "type": "opening_balance", "account": CSVCell.text(opening.account), "currency": CSVCell.text(opening.currency),
                "balance_after": String(opening.balance),
            ])
        case .jsonl:
            return #"{"type":"opening_balance","account":\#(JSONText.string(opening.account)),"currency":\#(JSONText.string(opening.currency)),"balance_after":\#(opening.balance)}"#
                + "\n"
        }
    }

    /// Appends one line per posting of `transaction`, its fields in `ExportColumn.all` order,
    /// byte by byte into `output`: an export writes millions of these lines.
    package func append(_ transaction: LedgerTransaction, to output: inout [UInt8]) {
        for posting in transaction.postings {
            // The buffer moves into the line and back, so it is never copied.
            var line = Line(format: format, output: output)
            output = []
            for column in ExportColumn.all {
                switch column {
                case .type: line.text(column.name, "posting")
                case .transaction(let field):
                    switch field.value(of: transaction) {
                    case .text(let text): line.text(column.name, text)
                    case .integer(let integer): line.number(column.name, integer)
                    case .json(let text): line.json(column.name, text)
                    }
                case .posting(.account): line.text(column.name, posting.account)
                case .posting(.currency): line.text(column.name, posting.currency)
                case .posting(.amount): line.number(column.name, posting.amount)
                case .posting(.balanceAfter): line.number(column.name, posting.balanceAfter)
                case .posting(.count): line.number(column.name, Int64(transaction.postings.count))
                }
            }
            output = line.finish()
        }
    }

    /// One line being appended to the output: CSV cells in column order, or JSON members
    /// (absent when nil).
    private struct Line {
        let format: ExportFormat
        var output: [UInt8]
        var fields = 0

        init(format: ExportFormat, output: [UInt8]) {
            self.format = format
            self.output = output
            if format == .jsonl { self.output.append(UInt8(ascii: "{")) }
        }

        private mutating func separate(_ name: StaticString) {
            if fields > 0 { output.append(UInt8(ascii: ",")) }
            fields += 1
            if format == .jsonl {
                output.append(UInt8(ascii: "\""))
                name.withUTF8Buffer { output.append(contentsOf: $0) }
                output.append(contentsOf: #"":"#.utf8)
            }
        }

        mutating func text(_ name: StaticString, _ value: String?) {
            guard let value else { return skip() }
            separate(name)
            switch format {
            case .csv: CSVCell.append(value, to: &output)
            case .jsonl: JSONText.append(value, to: &output)
            }
        }

        mutating func number(_ name: StaticString, _ value: Int64?) {
            guard let value else { return skip() }
            separate(name)
            output.append(contentsOf: String(value).utf8)
        }

        mutating func json(_ name: StaticString, _ value: String?) {
            guard let value else { return skip() }
            separate(name)
            switch format {
            case .csv: CSVCell.append(value, to: &output)
            case .jsonl: output.append(contentsOf: value.utf8)
            }
        }

        /// An absent value: an empty CSV cell, no JSON member (the separator still counts).
        private mutating func skip() {
            guard format == .csv else { return }
            if fields > 0 { output.append(UInt8(ascii: ",")) }
            fields += 1
        }

        consuming func finish() -> [UInt8] {
            precondition(format == .jsonl || fields == ExportColumn.all.count, "every CSV column is written")
            output.append(contentsOf: format == .csv ? "\r\n".utf8 : "}\n".utf8)
            return output
        }
    }

    private func csvRow(_ values: [String: String]) -> String {
        ExportColumn.names.map { values[$0] ?? "" }.joined(separator: ",") + "\r\n"
    }
}
