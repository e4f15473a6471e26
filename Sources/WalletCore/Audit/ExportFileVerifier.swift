import Foundation

/// The outcome of checking an export file on its own.
public struct ExportVerifyReport: Codable, Sendable, Equatable {
    public var ok: Bool
    public var format: String
    /// Transactions checked (complete and valid).
    public var transactions: Int64
    /// The seq the file continues from (0: genesis).
    public var checkpointSeq: Int64
    /// True for a player or currency export: each transaction's hash and sums were checked,
    /// and the balances of the accounts it follows, but not the chain between transactions.
    public var filtered: Bool
    /// The hash the file ends at.
    public var headHash: String
    public var firstBadSeq: Int64?
    public var problem: String?

    package enum CodingKeys: String, CodingKey {
        case ok, format, transactions, filtered, problem
        case checkpointSeq = "checkpoint_seq"
        case headHash = "head_hash"
        case firstBadSeq = "first_bad_seq"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ok, forKey: .ok)
        try container.encode(format, forKey: .format)
        try container.encode(transactions, forKey: .transactions)
        try container.encode(checkpointSeq, forKey: .checkpointSeq)
        try container.encode(filtered, forKey: .filtered)
        try container.encode(headHash, forKey: .headHash)
        try container.encode(firstBadSeq, forKey: .firstBadSeq)
        try container.encodeIfPresent(problem, forKey: .problem)
    }
}

/// Verifies an export file alone, streaming: it rebuilds every transaction from its posting
/// lines and runs `ChainChecker` from the file's checkpoint, so a changed, missing, added or
/// reordered line is caught and named by its seq. With `head`, the file must end at that hash.
public enum ExportFileVerifier {
    public static func verify(path: String, head: String? = nil, progress: ((Int64) -> Void)? = nil) throws(WalletError) -> ExportVerifyReport {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .notFound("cannot read the export file \(path)")
        }
        defer { try? handle.close() }
        var records = RecordReader(handle: handle)
        do {
            return try verify(&records, head: head, progress: progress)
        } catch let error as WalletError {
            throw error
        } catch {
            throw .storage("cannot read \(path): \(error)")
        }
    }

    package static func verify(_ records: inout RecordReader, head: String?, progress: ((Int64) -> Void)?) throws -> ExportVerifyReport {
        guard let first = try records.next() else { throw WalletError.invalidRequest("the export file is empty") }
        let format = records.format
        let encoder = ExportEncoder(format: format)
        var report = ExportVerifyReport(ok: false, format: format.rawValue, transactions: 0, checkpointSeq: 0, filtered: false, headHash: HashChain.genesis)
        guard case .checkpoint(let seq, let hash, let filtered) = try ExportRecord(first.fields, format: format) else {
            throw WalletError.invalidRequest("the export file does not start with a checkpoint; it is not a wallet export")
        }
        report.checkpointSeq = seq
        report.filtered = filtered
        report.headHash = hash
        var openings: [ChainChecker.AccountKey: Int64] = [:]
        var pending: [ExportRecord.PostingLine] = []
        var pendingBytes: [UInt8] = []
        var written: [UInt8] = []
        var checker: ChainChecker?
        func fail(_ seq: Int64, _ problem: String) -> ExportVerifyReport {
            var failed = report
            failed.transactions = checker?.checkedCount ?? 0
            failed.headHash = checker?.headHash ?? hash
            failed.firstBadSeq = seq
            failed.problem = problem
            return failed
        }
        let notWritten = "is not, byte for byte, what the exporter writes (an edited cell, escape, encoding or line ending)"
        guard first.raw.elementsEqual(((encoder.header() ?? "") + encoder.checkpointLine(seq: seq, hash: hash, filtered: filtered)).utf8) else {
            return fail(seq + 1, "the header or checkpoint line \(notWritten)")
        }
        while let record = try records.next() {
            switch try ExportRecord(record.fields, format: format) {
            case .checkpoint:
                return fail(seq + 1, "a second checkpoint in the file")
            case .opening(let opening):
                guard checker == nil else { return fail(seq + 1, "an opening balance after the first posting") }
                guard record.raw.elementsEqual(encoder.openingLine(opening).utf8) else {
                    return fail(seq + 1, "the opening balance line of \(opening.account.prefix(300)) \(notWritten)")
                }
                openings[ChainChecker.AccountKey(account: opening.account, currency: opening.currency)] = opening.balance
            case .posting(let line):
                if checker == nil {
                    let unknown: ChainChecker.UnknownAccounts = filtered ? .skip : (seq == 0 ? .startAtZero : .mustBeListed)
                    checker = ChainChecker(after: seq, hash: hash, followsChain: !filtered, unknownAccounts: unknown, openingBalances: openings)
                }
                if let previous = pending.first, previous.transaction.seq != line.transaction.seq {
                    return fail(previous.transaction.seq, "transaction \(previous.transaction.seq) has \(pending.count) of its \(previous.postingCount) posting lines")
                }
                if let previous = pending.first, previous.transaction != line.transaction || previous.postingCount != line.postingCount {
                    return fail(line.transaction.seq, "the posting lines of transaction \(line.transaction.seq) disagree on its fields")
                }
                pending.append(line)
                pendingBytes.append(contentsOf: record.raw)
                if pending.count == line.postingCount {
                    var transaction = line.transaction
                    transaction.postings = pending.map(\.posting)
                    pending.removeAll(keepingCapacity: true)
                    do {
                        try checker!.check(transaction)
                    } catch {
                        return fail(error.seq, error.problem)
                    }
                    // The fields check out; the bytes must be those the exporter writes for them.
                    written.removeAll(keepingCapacity: true)
                    encoder.append(transaction, to: &written)
                    guard written == pendingBytes else { return fail(transaction.seq, "a posting line of transaction \(transaction.seq) \(notWritten)") }
                    pendingBytes.removeAll(keepingCapacity: true)
                    if checker!.checkedCount % 50_000 == 0 { progress?(checker!.checkedCount) }
                }
            }
        }
        if let incomplete = pending.first {
            return fail(incomplete.transaction.seq, "transaction \(incomplete.transaction.seq) has \(pending.count) of its \(incomplete.postingCount) posting lines")
        }
        report.transactions = checker?.checkedCount ?? 0
        report.headHash = checker?.headHash ?? hash
        if let head, head != report.headHash {
            guard !filtered else { throw WalletError.invalidRequest("--head cannot be checked on a filtered export: it holds only some transactions") }
            return fail(seq + report.transactions + 1, "the file ends at hash \(report.headHash), not at the head \(head): transactions are missing at its end")
        }
        report.ok = true
        return report
    }
}

/// One line of an export, parsed.
package enum ExportRecord {
    case checkpoint(seq: Int64, hash: String, filtered: Bool)
    case opening(ExportCheckpoint.OpeningBalance)
    case posting(PostingLine)

    package struct PostingLine {
        /// The transaction's own fields; `postings` is empty here.
        var transaction: LedgerTransaction
        var posting: Posting
        var postingCount: Int
    }

    package init(_ record: [String: FieldValue], format: ExportFormat) throws {
        let fields = FieldReader(record: record)
        let type = try fields.text("type")
        switch type {
        case "checkpoint", "checkpoint_filtered":
            self = .checkpoint(seq: try fields.number("seq"), hash: try fields.text("hash"), filtered: type == "checkpoint_filtered")
        case "opening_balance":
            self = .opening(.init(account: try fields.text("account"), currency: try fields.text("currency"), balance: try fields.number("balance_after")))
        case "posting":
            let transaction = try LedgerTransaction(reading: fields, postings: [])
            let posting = Posting(
                account: try fields.text("account"), currency: try fields.text("currency"), amount: try fields.number("amount"),
                balanceAfter: try fields.number("balance_after"))
            let count = try fields.number("posting_count")
            guard (1...64).contains(count) else { throw fields.invalid("posting_count", "out of range") }
            self = .posting(PostingLine(transaction: transaction, posting: posting, postingCount: Int(count)))
        default:
            throw WalletError.invalidRequest("a line with the unknown type '\(type.prefix(40))': not a wallet export")
        }
    }
}

/// A field as read from a CSV cell (text) or a JSON value; JSON metadata is kept as its text.
package enum FieldValue {
    case csv(String)
    case json(JSONValue)
    case jsonText(String)
}

/// Typed access to one record's fields, with errors that name the field.
package struct FieldReader: TransactionFieldSource {
    package let record: [String: FieldValue]

    package func invalid(_ name: String, _ why: String) -> WalletError {
        .invalidRequest("the export field '\(name)' is invalid (\(why)); the file is not a well-formed wallet export")
    }

    package func optionalText(_ name: String) throws -> String? {
        switch record[name] {
        case nil, .json(.null): return nil
        case .csv(let cell): return cell.isEmpty ? nil : CSVCell.untext(cell)
        case .json(.string(let text)): return text
        case .json, .jsonText: throw invalid(name, "not a string")
        }
    }

    package func text(_ name: String) throws -> String {
        guard let text = try optionalText(name) else { throw invalid(name, "missing") }
        return text
    }

    package func optionalNumber(_ name: String) throws -> Int64? {
        switch record[name] {
        case nil, .json(.null): return nil
        case .csv(let cell):
            if cell.isEmpty { return nil }
            guard let number = Int64(cell) else { throw invalid(name, "not an integer") }
            return number
        case .json(.integer(let number)): return number
        case .json, .jsonText: throw invalid(name, "not an integer")
        }
    }

    package func number(_ name: String) throws -> Int64 {
        guard let number = try optionalNumber(name) else { throw invalid(name, "missing") }
        return number
    }

    package func metadataText() throws -> String? {
        switch record["metadata"] {
        case nil, .json(.null): return nil
        case .csv(let cell): return cell.isEmpty ? nil : CSVCell.untext(cell)
        case .jsonText(let text): return text
        case .json: throw invalid("metadata", "not a JSON object")
        }
    }

    package func optionalText(_ field: TransactionField) throws -> String? { try optionalText(field.exportName.description) }
    package func optionalInteger(_ field: TransactionField) throws -> Int64? { try optionalNumber(field.exportName.description) }
    package func invalid(_ field: TransactionField, _ why: String) -> WalletError { invalid(field.exportName.description, why) }

}

/// Reads an export file's records one at a time, each with the bytes it was read from: CSV
/// (RFC 4180, quoted newlines included) or JSON Lines, told apart by the first byte. No record
/// may be longer than `Limits.exportRecordBytesMax`, so memory stays bounded whatever the file.
package struct RecordReader {
    package struct Record {
        var fields: [String: FieldValue]
        /// The record's bytes in the file, its line ending included.
        var raw: [UInt8]
    }

    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private(set) var format: ExportFormat = .csv
    private var started = false

    package init(handle: FileHandle) {
        self.handle = handle
    }

    package mutating func next() throws -> Record? {
        if !started {
            started = true
            guard let byte = try peek() else { return nil }
            format = byte == UInt8(ascii: "{") ? .jsonl : .csv
            if format == .csv {
                guard let header = try nextCSVRecord(), header.cells == ExportColumn.names else {
                    throw WalletError.invalidRequest("the CSV header is not that of a wallet export")
                }
                // The header's bytes go with the checkpoint record that follows it.
                guard var record = try next() else { return nil }
                record.raw = header.raw + record.raw
                return record
            }
        }
        switch format {
        case .jsonl:
            guard let line = try nextLine() else { return nil }
            guard line.count > 1 else { throw WalletError.invalidRequest("a blank line in the JSON Lines export") }
            let content = line.last == UInt8(ascii: "\n") ? Array(line.dropLast()) : line
            return Record(fields: try ExportJSONLine.fields(content), raw: line)
        case .csv:
            guard let record = try nextCSVRecord() else { return nil }
            guard record.cells.count == ExportColumn.all.count else {
                throw WalletError.invalidRequest("a CSV row has \(record.cells.count) cells, not \(ExportColumn.all.count)")
            }
            return Record(fields: Dictionary(uniqueKeysWithValues: zip(ExportColumn.names, record.cells.map(FieldValue.csv))), raw: record.raw)
        }
    }

    private var tooLong: WalletError {
        .invalidRequest("a line of the file is longer than \(Limits.exportRecordBytesMax) bytes, which no wallet export has")
    }

    private mutating func fill() throws -> Bool {
        if finished { return false }
        if position > 0 {
            buffer.removeFirst(position)
            position = 0
        }
        guard let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
            finished = true
            return false
        }
        buffer.append(contentsOf: data)
        return true
    }

    private mutating func peek() throws -> UInt8? {
        while position >= buffer.count { guard try fill() else { return nil } }
        return buffer[position]
    }

    private mutating func nextByte() throws -> UInt8? {
        guard let byte = try peek() else { return nil }
        position += 1
        return byte
    }

    /// The next line with its `\n` (none at the end of a file that lacks it).
    private mutating func nextLine() throws -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if position >= buffer.count, try !fill() { return line.isEmpty ? nil : line }
            let end = buffer[position...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 }
            line.append(contentsOf: buffer[position..<(end ?? buffer.count)])
            position = end ?? buffer.count
            guard line.count <= Limits.exportRecordBytesMax else { throw tooLong }
            if end != nil { return line }
        }
    }

    /// One RFC 4180 record and its bytes; nil at the end of the file.
    private mutating func nextCSVRecord() throws -> (cells: [String], raw: [UInt8])? {
        guard try peek() != nil else { return nil }
        var raw: [UInt8] = []
        var cells: [String] = []
        var cell: [UInt8] = []
        var quoted = false
        func endCell() throws {
            guard cells.count < ExportColumn.all.count else {
                throw WalletError.invalidRequest("a CSV row has more than \(ExportColumn.all.count) cells")
            }
            cells.append(String(decoding: cell, as: UTF8.self))
            cell.removeAll(keepingCapacity: true)
        }
        while let byte = try nextByte() {
            raw.append(byte)
            guard raw.count <= Limits.exportRecordBytesMax else { throw tooLong }
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if try peek() == UInt8(ascii: "\"") {
                        position += 1
                        raw.append(byte)
                        cell.append(byte)
                    } else {
                        quoted = false
                    }
                } else {
                    cell.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                guard cell.isEmpty else { throw WalletError.invalidRequest("a CSV cell has a quote in the middle") }
                quoted = true
            case UInt8(ascii: ","):
                try endCell()
            case UInt8(ascii: "\r") where try peek() == UInt8(ascii: "\n"):
                continue
            case UInt8(ascii: "\n"):
                try endCell()
                return (cells, raw)
            default:
                cell.append(byte)
            }
        }
        if quoted { throw WalletError.invalidRequest("the CSV file ends inside a quoted cell") }
        try endCell()
        return (cells, raw)
    }
}
