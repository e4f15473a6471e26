import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

/// Look-alike identifiers: Swift's `String ==` compares canonical equivalence, SQLite compares
/// bytes. Every place the wallet compares or hashes ids must agree with the database.
@Suite("Identifiers are compared by their bytes and follow one syntax", .throttled)
struct IdentifierTests {
    /// Pairs Swift's `String ==` finds equal, or a person cannot tell apart, with different bytes.
    static let lookAlikes: [(String, String)] = [
        ("\u{212A}ate", "Kate"),  // KELVIN SIGN, canonically a K
        ("caf\u{E9}", "cafe\u{301}"),  // composed and decomposed é
        ("\u{212B}ngstrom", "\u{C5}ngstrom"),  // ANGSTROM SIGN
        ("p\u{430}yer", "payer"),  // Cyrillic а
        ("ｐlayer", "player"),  // fullwidth p
        ("pla\u{200B}yer", "player"),  // zero-width space
        ("player\u{202E}1", "player1"),  // right-to-left override
    ]

    @Test("canonically equivalent spellings are equal Strings but different Identifiers")
    func byteEquality() {
        #expect("\u{212A}ate" == "Kate", "the premise: Swift merges them")
        for (left, right) in Self.lookAlikes {
            #expect(Identifier(left) != Identifier(right))
            #expect(Set([Identifier(left), Identifier(right)]).count == 2)
            #expect(!Identifier.same(left, right))
            #expect(Identifier(left) == Identifier(String(left)))
        }
        // Same length, different bytes (the lengths alone decide the pairs above), in small
        // strings and in longer ones stored apart; and equal bytes in two separate buffers.
        let long = String(repeating: "player-", count: 6)
        for (left, right) in [("p\u{430}yer", "p\u{E9}yer"), ("a", "b"), (long + "x", long + "y"), ("x" + long, "y" + long)] {
            #expect(left.utf8.count == right.utf8.count && !Identifier.same(left, right) && Identifier(left) != Identifier(right), "\(left) / \(right)")
        }
        #expect(Identifier.same(long + "x", String(decoding: Array((long + "x").utf8), as: UTF8.self)) && Identifier.same("", ""))
    }

    @Test("a player account's owner loses exactly the prefix's bytes, even when a combining mark joins its ':'")
    func ownerPrefixByBytes() {
        // A stored owner from before the id syntax: ':' and U+0301 are one Character.
        #expect(AccountOwner.playerID(ofOwner: "player:\u{301}abc").map { Array($0.utf8) } == Array("\u{301}abc".utf8))
        #expect(AccountOwner.playerID(ofOwner: "player:p1") == "p1")
        #expect(AccountOwner.playerID(ofOwner: "player:") == "")
        #expect(AccountOwner.playerID(ofOwner: "@purchases") == nil)
        #expect(AccountOwner.playerID(ofOwner: "playe") == nil)
    }

    @Test("player ids: ASCII letters, digits and - _ . : @ + = | ~, 1 to 255 bytes; nothing else")
    func playerIDSyntax() throws {
        for valid in ["p1", "Kate", "...", ".p", "p..", "A:_1234abcd", "auth0|5f7c8ec7", "user+tag@example.com", "G:1234.5", "x=y~z", String(repeating: "a", count: 255)] {
            #expect(throws: Never.self) { try PlayerID.validate(valid) }
        }
        let invalid = Self.lookAlikes.map(\.0) + ["", " p1", "p 1", "p/1", "p%2F1", "p\u{0}1", "p\n1", "caf\u{E9}", ".", "..", String(repeating: "a", count: 256), "a#b", "a?b"]
        for text in invalid {
            #expect(throws: WalletError.self, "\(text.unicodeScalars.map { String($0.value, radix: 16) })") { try PlayerID.validate(text) }
        }
    }

    @Test("free text refuses format characters: zero-width and bidi controls; emoji joiners stay")
    func textFormatCharacters() throws {
        for hidden in ["refund\u{202E}txt", "a\u{200B}b", "a\u{2066}b", "a\u{FEFF}b"] {
            #expect(throws: WalletError.self) { try Validate.text(hidden, field: "note", bytesMax: 100) }
            #expect(throws: WalletError.self) { try Validate.visibleText(hidden, field: "ticket", bytesMax: 100) }
        }
        #expect(throws: Never.self) { try Validate.text("family 👨\u{200D}👩\u{200D}👧 café", field: "note", bytesMax: 100) }
    }

    @Test("look-alike player ids are refused where they are parsed, before any operation, and the real wallet is untouched", arguments: TestBackend.all)
    func lookAlikeOperations(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("Kate", "t-kate")
        for (alike, _) in Self.lookAlikes {
            let grant = await walletError { try await ledger.grant(try PlayerID(alike), "t-\(alike.unicodeScalars.count)") }
            let spend = await walletError { try await ledger.spend(try PlayerID(alike), 1, key: "k1") }
            let read = await walletError { _ = try await ledger.store.balances(playerID: try PlayerID(alike)) }
            #expect(grant?.code == "invalid_request" && spend?.code == "invalid_request" && read?.code == "invalid_request")
        }
        #expect(try await ledger.balance("Kate") == 5)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("an export for one player leaves out a stored look-alike's transactions, and verifies offline", arguments: TestBackend.all)
    func exportFilterByBytes(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        try await ledger.grant("Kate", "t-kate")
        // A ledger written before the id syntax was checked may hold a look-alike; no request can
        // name one now, so the test books its bonus as the store applies a decided plan.
        let legacy = "\u{212A}ate"
        _ = try await ledger.store.write { db, now, context in
            var draft = LedgerTransaction(draftOf: .bonus, playerID: legacy, currency: "credits", amount: 3, actor: "legacy")
            draft.reasonCode = "event"
            var plan = LedgerPlan(draft, amount: 3, counterpart: .bonuses, playerBalance: 0)
            plan.lot = LotRules.lot(ofCredit: 3, balance: 0, category: .bonus)
            let key = IdempotencyKey(scope: "bonus:\(legacy)", key: "legacy", requestHash: String(repeating: "0", count: 64), reusedDetail: "")
            return try LedgerWrites.apply(db, plan, key: key, now: now, context: &context)
        }
        var text = ""
        let summary = try await ledger.store.export(ExportQuery(playerID: "Kate"), format: .jsonl).write { text += String(decoding: $0, as: UTF8.self) }
        #expect(summary.transactions == 1, "only Kate's purchase")
        let path = ledger.directory.appendingPathComponent("kate.jsonl").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let report = try ExportFileVerifier.verify(path: path)
        #expect(report.ok && report.transactions == 1, "\(report.problem ?? "")")
        try await ledger.expectIntact()
    }

    @Test("a batch keeps accounts apart by bytes: Kate and K-elvin-ate are two accounts")
    func batchContextKeys() {
        var context = BatchContext(makeTransactionID: { "id" })
        context.update(Account(id: 1, owner: "player:Kate", currency: "credits", balance: 5))
        #expect(context.accounts[BatchContext.AccountKey("player:Kate", "credits")]?.balance == 5)
        #expect(context.accounts[BatchContext.AccountKey("player:\u{212A}ate", "credits")] == nil)
        context.currencyKnown(Identifier("credits"))
        #expect(!context.knownCurrencies.contains(Identifier("cr\u{E9}dits")))
    }

    @Test("concurrent batches for an id and its look-alike: only the real id is credited, the ledger verifies", arguments: TestBackend.all)
    func concurrentLookAlikes(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let player = index.isMultiple(of: 2) ? "Kate" : "\u{212A}ate"
                    do {
                        try await ledger.grant(try PlayerID(player), "t\(index)")
                        return "credited " + player
                    } catch let error as WalletError {
                        return error.code
                    } catch {
                        return "other"
                    }
                }
            }
            var outcomes: [String: Int] = [:]
            for await outcome in group { outcomes[outcome, default: 0] += 1 }
            return outcomes
        }
        #expect(outcomes == ["credited Kate": 100, "invalid_request": 100])
        #expect(try await ledger.balance("Kate") == 500)
        #expect(try await ledger.store.verify().ok)
    }

    @Test("the chain checker keeps canonically equivalent owners apart: a ledger holding both verifies")
    func checkerKeepsOwnersApart() throws {
        var checker = ChainChecker(after: 0, hash: HashChain.genesis, unknownAccounts: .startAtZero)
        var previous = HashChain.genesis
        var storeBalance: Int64 = 0
        for (seq, player) in ["caf\u{E9}", "cafe\u{301}"].enumerated() {
            storeBalance -= 5
            var transaction = LedgerTransaction(draftOf: .purchase, playerID: player, currency: "credits", amount: 5, actor: "test")
            transaction.seq = Int64(seq + 1)
            transaction.id = "00000000-0000-0000-0000-00000000000\(seq)"
            transaction.createdAt = "2026-11-22T00:00:00.000Z"
            transaction.store = "apple"
            transaction.storeTransactionID = "t\(seq)"
            transaction.productID = "p"
            transaction.quantity = 1
            transaction.prevHash = previous
            transaction.postings = [
                Posting(account: "@store:apple", currency: "credits", amount: -5, balanceAfter: storeBalance),
                Posting(account: "player:\(player)", currency: "credits", amount: 5, balanceAfter: 5),
            ]
            transaction.hash = HashChain.hash(of: transaction, previous: previous)
            previous = transaction.hash
            #expect(throws: Never.self) { try checker.check(transaction) }
        }
        #expect(checker.checkedCount == 2)
    }

    /// Random Unicode pairs: two ids reach the same wallet exactly when their bytes are equal.
    @Test("property: equal bytes ⇔ same wallet, over random Unicode pairs", arguments: TestBackend.all)
    func sameWalletIffSameBytes(backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        var random = SeededRandom(seed: 20_261_122)
        let alphabet: [Unicode.Scalar] = ["a", "K", "e", "1", "_", "\u{212A}", "\u{E9}", "\u{301}", "\u{430}", "\u{200B}", "\u{202E}", "\u{FF50}", " ", "/"]
        func randomID() -> String {
            var text = ""
            for _ in 0..<Int.random(in: 1...4, using: &random) { text.unicodeScalars.append(alphabet.randomElement(using: &random) ?? "a") }
            return text
        }
        var credited: [Identifier: Int64] = [:]
        for index in 0..<300 {
            let (first, second) = (randomID(), randomID())
            guard (try? PlayerID.validate(first)) != nil else {
                let error = await walletError { try await ledger.grant(try PlayerID(first), "g\(index)") }
                #expect(error?.code == "invalid_request")
                continue
            }
            try await ledger.grant(try PlayerID(first), "g\(index)")
            credited[Identifier(first), default: 0] += 5
            guard (try? PlayerID.validate(second)) != nil else { continue }
            let seen = try await ledger.balance(try PlayerID(second))
            #expect(seen == credited[Identifier(second), default: 0], "\(first) / \(second)")
        }
        #expect(try await ledger.store.verify().ok)
    }

    @Test("random ids are version 4 UUIDs in lowercase, all different, across many refills of their random bytes and from concurrent callers")
    func randomIDs() async {
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 { group.addTask { (0..<1_000).map { _ in RandomID.uuid() } } }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(Set(ids).count == 4_000)
        let hex = Set("0123456789abcdef")
        for id in ids {
            let parts = id.split(separator: "-", omittingEmptySubsequences: false)
            #expect(parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(hex.contains) }, "\(id)")
            #expect(parts[2].first == "4" && "89ab".contains(parts[3].first ?? "x"), "\(id)")
        }
        // Where /dev/urandom cannot be opened, or reads short, the system generator fills in.
        for source in [nil, FileHandle(forReadingAtPath: "/dev/null")] {
            var bits = RandomBits(source: source)
            let drawn = (0..<1_000).map { _ in bits.next128() }
            #expect(Set(drawn.map { "\($0.0)-\($0.1)" }).count == 1_000 && drawn.allSatisfy { $0 != (0, 0) })
        }
        // Each hex digit takes all its values (the version digit one, the variant digit four): no
        // part of an id is left constant by how the random bytes are cut.
        let characters = ids.map(Array.init)
        for position in 0..<36 where ![8, 13, 18, 23].contains(position) {
            let values = Set(characters.map { $0[position] }).count
            #expect(values == (position == 14 ? 1 : position == 19 ? 4 : 16), "digit \(position) took \(values) values")
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing property run can be repeated.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
