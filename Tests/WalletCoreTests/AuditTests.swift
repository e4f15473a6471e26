import Foundation
import GRDB
import Testing
@testable import WalletCore
import WalletTestSupport

/// Exports that prove themselves: written by the store, checked by `ExportFileVerifier` alone.
@Suite("Exports, statements and offline verification", .throttled)
struct AuditTests {
    /// Nine transactions over three days, with a hostile note and metadata.
    static func ledger(_ backend: TestBackend) async throws -> (TestLedger, TestClock) {
        let clock = TestClock("2026-10-01T10:00:00Z")
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        try await ledger.grant("p1", "T1", quantity: 4)                                        // 1
        try await ledger.grant("p2", "T2", product: "com.example.gems10")                      // 2
        _ = try await ledger.store.spend(SpendRequest(playerID: "p1", amount: 3, idempotencyKey: "k1", reason: "=HYPERLINK(\"x\")",
                                                      metadata: Metadata(.object(["item": .string("sword, \"long\""), "n": .integer(2)])), actor: "t"))  // 3
        clock.set("2026-10-02T10:00:00Z")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 2, reasonCode: "goodwill", note: "line one, \"two\"\nline =three", ticket: "@SUP-1", idempotencyKey: "a1", actor: "-alice"))  // 4
        try await ledger.spend("p2", 4, key: "k2", currency: "gems")                           // 5
        _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", shareMillipercent: 50_000, actor: "s"))  // 6
        clock.set("2026-10-03T10:00:00Z")
        try await ledger.grant("p3", "T3")                                                     // 7
        try await ledger.spend("p1", 1, key: "'quoted")                                        // 8
        try await ledger.spend("p3", 5, key: "+k3")                                            // 9
        return (ledger, clock)
    }

    func export(_ ledger: TestLedger, _ query: ExportQuery = ExportQuery(), format: ExportFormat) async throws -> (path: String, summary: ExportSummary) {
        let path = ledger.directory.appendingPathComponent("export-\(UUID().uuidString).\(format.rawValue)").path
        var text = ""
        let summary = try await ledger.store.export(query, format: format).write { text += String(decoding: $0, as: UTF8.self) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, summary)
    }

    @Test("a full export verifies offline and ends at the head", arguments: TestBackend.all, ExportFormat.allCases)
    func roundTrip(_ backend: TestBackend, _ format: ExportFormat) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let (path, summary) = try await export(ledger, format: format)
        let head = try await ledger.store.head()
        #expect(head.seq == 9 && head.at == "2026-10-03T10:00:00.000Z")
        #expect(summary == ExportSummary(transactions: 9, postings: 18, lastHash: head.hash))
        let report = try ExportFileVerifier.verify(path: path, head: head.hash)
        #expect(report.ok && report.transactions == 9 && report.headHash == head.hash && report.checkpointSeq == 0 && !report.filtered, "\(report.problem ?? "")")
        let wrongHead = try ExportFileVerifier.verify(path: path, head: String(repeating: "a", count: 64))
        #expect(!wrongHead.ok && wrongHead.firstBadSeq == 10)
    }

    @Test("an empty ledger exports a checkpoint at genesis that verifies", arguments: TestBackend.all)
    func empty(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        for format in ExportFormat.allCases {
            let (path, summary) = try await export(ledger, format: format)
            #expect(summary.transactions == 0 && summary.lastHash == HashChain.genesis)
            #expect(try ExportFileVerifier.verify(path: path, head: HashChain.genesis).ok)
        }
    }

    @Test("JSON string literals escape quotes, backslashes and control characters, and keep other UTF-8 bytes", arguments: [
        "plain", "quote \" and \\ backslash", "line\nbreak\r\ttab", "bell \u{07} and \u{1F}", "é ü 日本 🎮", "",
    ])
    func jsonText(_ value: String) throws {
        let literal = JSONText.string(value)
        #expect(try JSONDecoder().decode(String.self, from: Data(literal.utf8)) == value)
        #expect(!literal.utf8.dropFirst().dropLast().contains { $0 < 0x20 }, "no raw control byte inside \(literal)")
    }

    @Test("hostile notes are quoted per RFC 4180 and formula cells are defused, then read back exactly", arguments: TestBackend.all)
    func csvQuoting(backend: TestBackend) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let (path, _) = try await export(ledger, format: .csv)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#","'=HYPERLINK(""x"")","#))
        #expect(text.contains("\"line one, \"\"two\"\"\nline =three\""))
        #expect(text.contains(",'@SUP-1,") && text.contains(",'-alice,") && text.contains(",''quoted,") && text.contains(",'+k3,"))
        #expect(text.contains(",'@spend,"))
        #expect(!text.contains(",=") && !text.contains(",+") && !text.contains(",@"), "no cell may start with a formula character")
        #expect(text.contains(#""{""item"":""sword, \""long\"""",""n"":2}""#))
        #expect(try ExportFileVerifier.verify(path: path).ok)
    }

    @Test("a range export starts at a checkpoint with opening balances and verifies against the head", arguments: TestBackend.all, ExportFormat.allCases)
    func range(_ backend: TestBackend, _ format: ExportFormat) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let (path, summary) = try await export(ledger, ExportQuery(from: "2026-10-02T00:00:00Z", to: "2026-10-03T00:00:00Z"), format: format)
        #expect(summary.transactions == 3)
        let report = try ExportFileVerifier.verify(path: path)
        #expect(report.ok && report.checkpointSeq == 3 && report.transactions == 3, "\(report.problem ?? "")")
        let third = try await ledger.store.history(HistoryQuery(playerID: "p1", kind: .spend)).transactions.last!
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(third.hash), "the checkpoint names the hash of seq 3")
        let (tail, _) = try await export(ledger, ExportQuery(from: "2026-10-02T00:00:00+02:00"), format: format)
        let head = try await ledger.store.head()
        let tailReport = try ExportFileVerifier.verify(path: tail, head: head.hash)
        #expect(tailReport.ok && tailReport.checkpointSeq == 3 && tailReport.transactions == 6)
        let (none, noneSummary) = try await export(ledger, ExportQuery(from: "2027-01-01T00:00:00Z"), format: format)
        #expect(noneSummary.transactions == 0)
        #expect(try ExportFileVerifier.verify(path: none, head: head.hash).ok)
    }

    @Test("player and currency exports are marked filtered and checked transaction by transaction", arguments: TestBackend.all, ExportFormat.allCases)
    func filtered(_ backend: TestBackend, _ format: ExportFormat) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let (path, summary) = try await export(ledger, ExportQuery(playerID: "p1"), format: format)
        #expect(summary.transactions == 5)
        let report = try ExportFileVerifier.verify(path: path)
        #expect(report.ok && report.filtered && report.transactions == 5, "\(report.problem ?? "")")
        #expect(throws: WalletError.self) { try ExportFileVerifier.verify(path: path, head: HashChain.genesis) }
        let (gems, gemsSummary) = try await export(ledger, ExportQuery(from: "2026-10-02T00:00:00Z", currency: "gems"), format: format)
        #expect(try gemsSummary.transactions == 1 && ExportFileVerifier.verify(path: gems).ok)
        let tampered = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "sorry", with: "x")
            .replacingOccurrences(of: "line =three", with: "line =four")
        try tampered.write(toFile: path, atomically: true, encoding: .utf8)
        let tamperedReport = try ExportFileVerifier.verify(path: path)
        #expect(!tamperedReport.ok && tamperedReport.firstBadSeq == 4)
    }

    /// Every tamper of an export file, by line edit, named by the seq it breaks.
    @Test("tampered exports fail at the first bad seq", arguments: TestBackend.all, [
        ("amount", Int64(3)), ("balance", 5), ("delete-line", 4), ("delete-transaction", 5), ("duplicate-transaction", 7),
        ("swap-transactions", 6), ("note", 4), ("hash", 7), ("truncate", 9), ("balance-of-first-posting", 2), ("metadata", 3),
    ])
    func tamperedFile(_ backend: TestBackend, _ tamperAndSeq: (String, Int64)) async throws {
        let (tamper, badSeq) = tamperAndSeq
        let (ledger, _) = try await Self.ledger(backend)
        let head = try await ledger.store.head()
        for format in ExportFormat.allCases {
            let (path, _) = try await export(ledger, format: format)
            var lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: format == .csv ? "\r\n" : "\n")
            // CSV: header, checkpoint, then posting lines; the note with a newline spans two physical lines.
            func index(ofSeq seq: Int64, occurrence: Int = 0) -> Int {
                lines.indices.filter { lines[$0].hasPrefix(format == .csv ? "posting,\(seq)," : #"{"type":"posting","seq":\#(seq),"#) }[occurrence]
            }
            switch tamper {
            case "amount":
                let line = index(ofSeq: 3)
                lines[line] = lines[line].replacingOccurrences(
                    of: format == .csv ? ",credits,3,3,2," : #""amount":3,"balance_after":3"#, with: format == .csv ? ",credits,4,3,2," : #""amount":4,"balance_after":3"#)
            case "balance":
                let line = index(ofSeq: 5, occurrence: 1)
                lines[line] = lines[line].replacingOccurrences(of: format == .csv ? ",-4,6," : #""balance_after":6"#, with: format == .csv ? ",-4,7," : #""balance_after":7"#)
            case "delete-line": lines.remove(at: index(ofSeq: 4, occurrence: 1))
            case "delete-transaction":
                lines.remove(at: index(ofSeq: 5, occurrence: 1))
                lines.remove(at: index(ofSeq: 5))
            case "duplicate-transaction":
                let first = index(ofSeq: 6)
                lines.insert(contentsOf: lines[first...(first + 1)], at: index(ofSeq: 7))
            case "swap-transactions":
                let six = index(ofSeq: 6)
                let seven = Array(lines[index(ofSeq: 7)...(index(ofSeq: 7) + 1)])
                lines.removeSubrange(index(ofSeq: 7)...(index(ofSeq: 7) + 1))
                lines.insert(contentsOf: seven, at: six)
            case "note":
                for line in lines.indices { lines[line] = lines[line].replacingOccurrences(of: "line =three", with: "line =thre3") }
            case "hash":
                let line = index(ofSeq: 7)
                let hash = String(lines[line].suffix(format == .csv ? 64 : 66).prefix(64))
                lines[line] = lines[line].replacingOccurrences(of: hash, with: String(hash.reversed()))
            case "truncate":
                lines.removeSubrange(index(ofSeq: 9)...(index(ofSeq: 9) + 1))
            case "metadata":
                for line in lines.indices {
                    lines[line] = lines[line].replacingOccurrences(of: format == .csv ? #"""n"":2"# : #""n":2"#, with: format == .csv ? #"""n"":3"# : #""n":3"#)
                }
            default:
                let line = index(ofSeq: 2, occurrence: 1)
                lines[line] = lines[line].replacingOccurrences(
                    of: format == .csv ? ",gems,10,10," : #""amount":10,"balance_after":10"#, with: format == .csv ? ",gems,10,11," : #""amount":10,"balance_after":11"#)
            }
            let edited = lines.joined(separator: format == .csv ? "\r\n" : "\n")
            #expect(try edited != String(contentsOfFile: path, encoding: .utf8), "\(tamper) \(format): the test's edit must change the file")
            try edited.write(toFile: path, atomically: true, encoding: .utf8)
            let report = try ExportFileVerifier.verify(path: path, head: head.hash)
            #expect(!report.ok, "\(tamper) \(format)")
            #expect(report.firstBadSeq == badSeq, "\(tamper) \(format): \(report.problem ?? "")")
        }
    }

    /// Edits that keep every value (so every hash) but change the bytes: an export that verifies
    /// must be the very file the exporter wrote.
    @Test("only the exporter's own bytes verify: equal values written differently fail", arguments: TestBackend.all, [
        ("stray-quote-prefix", ExportFormat.csv, Int64(7)), ("quoted-plain-cell", .csv, 7), ("line-ending", .csv, 6),
        ("invalid-utf8", .csv, 10), ("unicode-escape", .jsonl, 7), ("spaces", .jsonl, 7), ("member-order", .jsonl, 7),
        ("invalid-utf8", .jsonl, 0), ("checkpoint-spaces", .jsonl, 1), ("blank-line", .jsonl, 0),
    ])
    func bytesExactly(_ backend: TestBackend, _ editFormatAndSeq: (String, ExportFormat, Int64)) async throws {
        let (edit, format, badSeq) = editFormatAndSeq
        let (ledger, _) = try await Self.ledger(backend)
        // A note holding U+FFFD: an invalid byte in its place decodes back to the same text.
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p3", amount: 1, reasonCode: "goodwill", note: "odd \u{FFFD} byte", idempotencyKey: "a2", actor: "s"))
        let (path, _) = try await export(ledger, format: format)
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try ExportFileVerifier.verify(path: path).ok)
        func replacing(_ old: String, _ new: [UInt8], count: Int = 1) -> [UInt8] {
            var bytes = original
            let target = Array(old.utf8)
            var done = 0
            var index = 0
            while done < count, index + target.count <= bytes.count {
                if Array(bytes[index..<(index + target.count)]) == target {
                    bytes.replaceSubrange(index..<(index + target.count), with: new)
                    done += 1
                    index += new.count
                } else {
                    index += 1
                }
            }
            #expect(done == count, "\(edit): '\(old)' was not found in the export")
            return bytes
        }
        let edited: [UInt8] = switch edit {
        case "stray-quote-prefix": replacing(",p3,", Array(",'p3,".utf8))
        case "quoted-plain-cell": replacing(",p3,", Array(#","p3","#.utf8))
        // The line ending of seq 6's last line.
        case "line-ending": replacing("\r\nposting,7,", Array("\nposting,7,".utf8))
        case "invalid-utf8": replacing("odd \u{FFFD}", Array("odd ".utf8) + [0xFF], count: 2)
        case "unicode-escape": replacing(#""player_id":"p3""#, Array(#""player_id":"\u0070\u0033""#.utf8))
        case "spaces": replacing(#""player_id":"p3""#, Array(#""player_id": "p3""#.utf8))
        case "member-order": replacing(#"{"type":"posting","seq":7,"#, Array(#"{"seq":7,"type":"posting","#.utf8))
        case "checkpoint-spaces": replacing(#"{"type":"checkpoint","#, Array(#"{"type": "checkpoint","#.utf8))
        default: replacing("\n{\"type\":\"posting\",\"seq\":1,", Array("\n\n{\"type\":\"posting\",\"seq\":1,".utf8))
        }
        try Data(edited).write(to: URL(fileURLWithPath: path))
        if badSeq == 0 {
            // Not even well-formed JSON Lines: refused as no export at all.
            #expect(throws: WalletError.self) { try ExportFileVerifier.verify(path: path) }
            return
        }
        let report = try ExportFileVerifier.verify(path: path)
        #expect(!report.ok && report.firstBadSeq == badSeq, "\(edit) \(format): \(report.problem ?? "ok")")
    }

    @Test("cells a spreadsheet could run are defused, spaces and full-width signs included, and read back exactly", arguments: TestBackend.all, [
        " =1+2", "\t=cmd", "＝HYPERLINK(1)", "＋1", "－1", "＠SUM(A1)", "'", "''", "a'b", "\n=1",
    ])
    func formulaCells(_ backend: TestBackend, _ note: String) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("p1", "T1")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: "p1", amount: 1, reasonCode: "goodwill", note: note, idempotencyKey: "a1", actor: "s"))
        let (path, _) = try await export(ledger, format: .csv)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(CSVCell.text(note).first == (note.first == "a" ? "a" : note.contains("\n") ? "\"" : "'"), "\(note) → \(CSVCell.text(note))")
        #expect(text.contains(CSVCell.text(note)))
        let report = try ExportFileVerifier.verify(path: path)
        #expect(report.ok, "\(report.problem ?? "")")
    }

    @Test("a hostile file costs bounded memory: overlong lines and rows with too many cells are refused", arguments: TestBackend.all, [
        "line", "cells", "jsonl-line",
    ])
    func boundedRecords(_ backend: TestBackend, _ kind: String) async throws {
        let ledger = try await TestLedger(backend)
        let (path, _) = try await export(ledger, format: kind == "jsonl-line" ? .jsonl : .csv)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        switch kind {
        case "line": bytes += Array("posting,".utf8) + Array(repeating: UInt8(ascii: "x"), count: 8 << 20) + Array("\r\n".utf8)
        case "cells": bytes += Array(repeating: UInt8(ascii: ","), count: 8 << 20) + Array("\r\n".utf8)
        default: bytes += Array(#"{"type":"posting","note":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 8 << 20) + Array("\"}\n".utf8)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: WalletError.self) { try ExportFileVerifier.verify(path: path) }
        #expect(error?.code == "invalid_request")
        #expect(error?.detail.contains(kind == "cells" ? "more than 27 cells" : "longer than 65536 bytes") == true, "\(error?.detail ?? "")")
    }

    @Test("a page that cannot be read ends the export with its error, after the pages before it", arguments: TestBackend.all)
    func pageFailure(backend: TestBackend) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let real = try await ledger.store.export(ExportQuery(), format: .jsonl)
        let failing = ExportStream(format: real.format, checkpoint: real.checkpoint, seqs: real.seqs, pageSize: 2) { seqs throws(WalletError) in
            if seqs.lowerBound >= 5 { throw .storage("the disk went away") }
            return try await real.fetchPage(seqs)
        }
        var written: [String] = []
        await #expect(throws: WalletError.storage("the disk went away")) {
            _ = try await failing.write { written.append(String(decoding: $0, as: UTF8.self)) }
        }
        // The header and checkpoint, then seqs 1–2 and 3–4, and nothing after the failure.
        #expect(written.count == 3)
        #expect(written.joined().components(separatedBy: #""type":"posting""#).count - 1 == 8)
    }

    @Test("files that are not exports are refused with a clear error", arguments: TestBackend.all)
    func notAnExport(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        for (name, text) in [("a.csv", "a,b\n1,2\n"), ("b.jsonl", "{\"type\":\"posting\"}\n"), ("c.jsonl", "{nope\n"), ("d.csv", "")] {
            let path = ledger.directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: WalletError.self, "\(name)") { try ExportFileVerifier.verify(path: path) }
        }
        #expect(throws: WalletError.notFound("cannot read the export file /nonexistent.csv")) { try ExportFileVerifier.verify(path: "/nonexistent.csv") }
    }

    @Test("an export holds the range fixed at its start: writes that land while it streams are not in it", arguments: TestBackend.all)
    func consistentWhileWriting(_ backend: TestBackend) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let head = try await ledger.store.head()
        let stream = try await ledger.store.export(ExportQuery(), format: .jsonl)
        try await ledger.grant("p9", "T9")
        var text = ""
        var iterator = stream.makeAsyncIterator()
        text += String(decoding: try await iterator.next()!.bytes, as: UTF8.self)
        for index in 0..<5 { try await ledger.spend("p9", 1, key: "during-\(index)") }
        while let chunk = try await iterator.next() { text += String(decoding: chunk.bytes, as: UTF8.self) }
        let path = ledger.directory.appendingPathComponent("during.jsonl").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let report = try ExportFileVerifier.verify(path: path, head: head.hash)
        #expect(report.ok && report.transactions == 9, "\(report.problem ?? "")")
        #expect(try await ledger.store.head().seq == 15)
    }

    // SQLite only: a checkpoint of SQLite's write-ahead log (PostgreSQL has no WAL a reader pins this way).
    @Test("an export nobody reads holds no read transaction: the WAL is checkpointed and truncated meanwhile")
    func stalledExportPinsNothing() async throws {
        let (ledger, _) = try await Self.ledger(.sqlite)
        let stream = try await ledger.store.export(ExportQuery(), format: .csv)
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        // The consumer stalls after the first chunk (its next page already read) while writes go on.
        for index in 0..<20 { try await ledger.grant("p4", "stalled-\(index)") }
        let checkpoint = try ledger.rawConnection().writeWithoutTransaction { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        #expect(checkpoint?[0] as Int? == 0, "the checkpoint was blocked by a reader")
        let wal = try FileManager.default.attributesOfItem(atPath: ledger.path + "-wal")[.size] as? Int
        #expect(wal == 0)
        var text = ""
        while let chunk = try await iterator.next() { text += String(decoding: chunk.bytes, as: UTF8.self) }
        #expect(text.components(separatedBy: "\r\n").filter { $0.hasPrefix("posting,") }.count == 18, "the export still holds exactly its nine transactions")
    }

    @Test("a statement's closing balance is its opening balance plus its transactions", arguments: TestBackend.all)
    func statement(_ backend: TestBackend) async throws {
        let (ledger, _) = try await Self.ledger(backend)
        let statement = try await ledger.store.statement(StatementQuery(playerID: "p1", from: "2026-10-02T00:00:00Z", to: "2026-10-03T00:00:00Z"))
        #expect(statement.from == "2026-10-02T00:00:00.000Z" && statement.to == "2026-10-03T00:00:00.000Z")
        let credits = try #require(statement.currencies.first { $0.currency == "credits" })
        #expect(credits.openingBalance == 17)
        #expect(credits.transactions.map(\.seq) == [4, 6])
        #expect(credits.closingBalance == 17 + 2 - 10)
        let whole = try await ledger.store.statement(StatementQuery(playerID: "p1"))
        let all = try #require(whole.currencies.first)
        #expect(all.openingBalance == 0 && all.closingBalance == 8 && all.transactions.count == 5)
        #expect(try await ledger.balance("p1") == all.closingBalance)
        #expect(try await ledger.store.statement(StatementQuery(playerID: "nobody")).currencies.isEmpty)
        for query in [StatementQuery(playerID: "p1", from: "yesterday"), StatementQuery(playerID: "p1", from: "2026-10-03T00:00:00Z", to: "2026-10-02T00:00:00Z")] {
            #expect(await walletError { _ = try await ledger.store.statement(query) }?.code == "invalid_request")
        }
        // A variable, not a literal: `PlayerID("")` would be the tests' literal conversion.
        let empty = ""
        let emptyPlayer = await walletError { _ = try await ledger.store.statement(StatementQuery(playerID: PlayerID(empty))) }
        #expect(emptyPlayer?.code == "invalid_request")
    }
}
