import Foundation
import Testing
import WalletTestSupport

/// Every ledger suite runs on both stores, as a conformance suite does for each driver: a test
/// that opens a store takes its backend from `TestBackend.all` (the fixtures have no default, so a
/// test cannot forget to choose). What remains to check is the deliberate choice of SQLite alone,
/// which these tests find by reading the suites' sources: a store opened on `.sqlite`, or a SQLite
/// engine, GRDB connection or SQLite writer reached by hand, must carry a one-line `// SQLite only: <why>` comment
/// directly above it, or above its `@Test`, its helper function or its `@Suite`.
@Suite("Both stores by default", .throttled)
struct StoreCoverageTests {
    /// The suites held to both stores, as directories beside this file's own.
    static let suites = ["WalletCoreTests", "WalletServerTests"]

    /// `.sqlite` used as a backend (`TestBackend.sqlite`, `(.sqlite`, `case .sqlite`), never in a
    /// file name such as `"wallet.sqlite"`; the constructors that open SQLite without the fixture;
    /// and the ways to SQLite's own connection (`sqliteWriter`, `rawConnection()`), which a
    /// PostgreSQL case would reach only to fail.
    static var sqliteOnly: Regex<Substring> { #/(?:TestBackend|[(\[,\s])\.sqlite\b|SQLiteEngine\.(?:open|store)\(|Database(?:Queue|Pool)\(|\.sqliteWriter\b|rawConnection\(\)/# }

    /// Whether `line` is the comment that explains an exception: a reason, not just the words.
    static func isException(_ line: Substring) -> Bool {
        let text = line.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("// SQLite only: ") else { return false }
        return text.dropFirst("// SQLite only: ".count).count >= 10
    }

    /// The lines of `source` that use SQLite alone without saying why, as `file:line: text`.
    static func violations(in source: String, file: String) -> [String] {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        var suiteExempt = false
        var testExempt = false
        var testFunctionSeen = false
        var found: [String] = []
        for (index, line) in lines.enumerated() {
            let above = index > 0 ? lines[index - 1] : ""
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("@Suite") {
                suiteExempt = isException(above)
                testExempt = false
            } else if text.hasPrefix("@Test") {
                testExempt = isException(above)
                testFunctionSeen = false
            } else if line.hasPrefix("}") {
                // The end of a top-level type ends its suite's exception and its last test's.
                suiteExempt = false
                testExempt = false
            } else if line.wholeMatch(of: #/ {4}(?:@\w+ )*(?:(?:static|private|package|nonisolated) )*func .*/#) != nil {
                // A test's own function follows its @Test; the next function at its level is another,
                // exempt only if a comment above it says why (a helper that builds a SQLite store).
                if isException(above) {
                    testExempt = true
                } else if testFunctionSeen {
                    testExempt = false
                }
                testFunctionSeen = true
            }
            guard !text.hasPrefix("//"), line.contains(sqliteOnly) else { continue }
            if suiteExempt || testExempt || isException(above) { continue }
            found.append("\(file):\(index + 1): \(text)")
        }
        return found
    }

    @Test("every test of the ledger suites opens its stores on both backends, or says in a comment why SQLite alone")
    func suitesUseBothStores() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let ownName = URL(fileURLWithPath: #filePath).lastPathComponent
        var files = 0
        var found: [String] = []
        for suite in Self.suites {
            let directory = tests.appendingPathComponent(suite)
            let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
            for case let url as URL in enumerator where url.pathExtension == "swift" && url.lastPathComponent != ownName {
                files += 1
                let source = try String(contentsOf: url, encoding: .utf8)
                found += Self.violations(in: source, file: "\(suite)/\(url.lastPathComponent)")
            }
        }
        #expect(files >= 30, "the suites' sources were read (\(files) files)")
        #expect(found.isEmpty, "SQLite only without a `// SQLite only: <why>` comment:\n\(found.joined(separator: "\n"))")
    }

    @Test("the check finds a store opened on SQLite alone, and accepts one whose test, suite or line says why")
    func checkFindsUnexplainedSQLite() {
        let unexplained = """
            @Suite("Spends", .throttled)
            struct SpendTests {
                @Test("a spend")
                func spend() async throws {
                    let ledger = try await TestLedger.withCatalog(.sqlite)
                    let pool = try DatabasePool(path: path)
                    try await ledger.rawConnection().write { _ in }
                }

                // SQLite only: too short
                @Test("file", arguments: [TestBackend.sqlite])
                func file(backend: TestBackend) {}
            }
            """
        #expect(Self.violations(in: unexplained, file: "S.swift") == [
            "S.swift:5: let ledger = try await TestLedger.withCatalog(.sqlite)",
            "S.swift:6: let pool = try DatabasePool(path: path)",
            "S.swift:7: try await ledger.rawConnection().write { _ in }",
            "S.swift:11: @Test(\"file\", arguments: [TestBackend.sqlite])",
        ])
        let explained = """
            @Suite("Spends", .throttled)
            struct SpendTests {
                // SQLite only: the test edits the file through a raw connection.
                @Test("a tamper")
                func tamper() async throws {
                    let ledger = try await TestLedger.withCatalog(.sqlite)
                }

                static func helper() async throws {
                    // SQLite only: the SQLite side of a comparison with PostgreSQL.
                    let pool = try DatabasePool(path: "wallet.sqlite")
                }

                // SQLite only: builds a SQLite store with a fixed clock.
                static func sqliteStore() throws -> SQLLedgerStore {
                    let pool = try DatabasePool(path: path)
                    return try SQLiteEngine.store(writer: pool)
                }
            }

            // SQLite only: the SQLite file's pragmas and migrations.
            @Suite("Schema", .throttled)
            struct SchemaTests {
                @Test("pragmas")
                func pragmas() async throws { _ = try await TestLedger(.sqlite) }
            }
            """
        #expect(Self.violations(in: explained, file: "S.swift").isEmpty)
        // An exception ends with its test: the next function in the suite is held to both stores again.
        let leaking = """
            struct LotTests {
                // SQLite only: the lots are edited in the file through a raw connection.
                @Test("tamper")
                func tamper() async throws {}

                static func helper() async throws { _ = try await TestLedger(.sqlite) }
            }
            """
        #expect(Self.violations(in: leaking, file: "S.swift") == ["S.swift:6: static func helper() async throws { _ = try await TestLedger(.sqlite) }"])
    }
}
