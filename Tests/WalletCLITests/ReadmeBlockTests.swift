import Foundation
import Testing
import WalletTestSupport

/// The README's shell blocks, run as a newcomer pastes them, with the outputs they show compared
/// with what they print, so the README cannot drift from the code.
///
/// Every ` ```sh ` block runs, unless the line before it is `<!-- doc-test: skip (why) -->` (it
/// needs something no test has: Apple's or Google's servers, a system PostgreSQL, a browser).
/// A block after `<!-- doc-test: continues -->` runs in the same shell as the block before it, as
/// a reader goes on where the last block left off. A block runs from the repository's root, as
/// the README tells a reader to paste it; two things differ: the ports 8080 and 8081 become free
/// ones (another test may hold them), and `swift build && ` is left out (the test runs inside
/// `swift test`, which has built `wallet` already and holds the build folder).
///
/// The outputs a block shows are its comment lines right under a command (or under another shown
/// output); a comment after a blank line, or at the top of a block, is prose. Each shown line
/// must match one printed line (stdout and stderr together), in order; `...` stands for any text.
/// Printed lines the README does not show are allowed.
@Suite("The README's shell blocks", .throttled)
struct ReadmeBlockTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    // One block at a time: each starts servers and several processes, and nine at once on two
    // cores starve the suites that run beside them (PostgreSQL's connection waits).
    @Test("each runs as pasted and prints what the README shows", .serialized, arguments: ReadmeSession.all())
    func runs(_ session: ReadmeSession) async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let ports = (try LoopbackSocket.freePort(), try LoopbackSocket.freePort())
        let script = "cd '\(Self.root.path)'\n" + session.script(ports: ports)
        let scriptPath = scratch.appendingPathComponent("block.sh").path
        let outputPath = scratch.appendingPathComponent("output.txt").path
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)

        // A reader's shell, not the test's: no WALLET_* settings, a scratch TMPDIR for mktemp.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("WALLET_") }
        environment["TMPDIR"] = scratch.path
        environment["WALLET_PORT"] = String(ports.0)  // `wallet serve` without --port: 8080, moved as above
        // setsid makes the block a process group of its own, so whatever it leaves running is found
        // and stopped below; timeout ends a block that hangs (a server that never listens).
        let process = try ChildProcess(
            "/usr/bin/setsid", ["timeout", "-k", "5", "240", "bash", scriptPath], environment: environment,
            stdout: .file(outputPath), stderr: .stdout)
        await process.exited()
        let leftRunning = await Self.stopGroup(process.processIdentifier)
        let printed = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Split at every line break: curl prints headers with CRLF, one Character in Swift.
        let lines = printed.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map { String($0).trimmingTrailingWhitespace() }

        #expect(process.terminationStatus != 124, "\(session) did not finish within 240 s:\n\(printed)")
        #expect(!leftRunning, "\(session) left a process running (a server it did not stop):\n\(printed)")
        for complaint in ["command not found", "curl: (", "Traceback (most recent call last)", "No such file or directory"] {
            #expect(!printed.contains(complaint), "\(session) printed '\(complaint)':\n\(printed)")
        }
        var next = 0
        for shown in session.shown {
            guard let found = lines[next...].firstIndex(where: { shown.matches($0) }) else {
                Issue.record("\(session): the README shows\n  \(shown.text)\n(README.md line \(shown.line)), but after the lines matched so far the block printed:\n\(lines[next...].joined(separator: "\n"))")
                return
            }
            next = found + 1
        }
    }

    /// Stops every process left in the block's group; true when there was one, given a few seconds
    /// to finish what the block asked of it (a server draining after `kill`).
    static func stopGroup(_ group: pid_t) async -> Bool {
        for _ in 0..<100 {
            if kill(-group, 0) != 0 { return false }
            try? await Task.sleep(for: .milliseconds(100))
        }
        kill(-group, SIGKILL)
        return true
    }

    @Test("the parser finds the blocks, the shown lines and the markers")
    func parser() throws {
        let readme = """
            Intro.

            ```sh
            # Prose at the top.
            swift build && export PATH="$PWD/.build/debug:$PATH"
            wallet grant --player p1 \\
                --amount 5
            # Credited +5 ... Balance of p1: 5 credits.
            #   and a second line

            # More prose.
            curl -s localhost:8080/x
            ```

            <!-- doc-test: continues -->
            ```sh
            echo 8081 done
            # 8081 done
            ```

            <!-- doc-test: skip (needs Apple) -->
            ```sh
            curl apple
            ```
            """
        let sessions = ReadmeSession.parse(readme)
        #expect(sessions.count == 1)
        let session = try #require(sessions.first)
        #expect(session.shown.map(\.text) == ["Credited +5 ... Balance of p1: 5 credits.", "  and a second line", "8081 done"])
        #expect(session.shown.map(\.line) == [8, 9, 18])
        let script = session.script(ports: (9001, 9002))
        #expect(script.contains("export PATH=\"$PWD/.build/debug:$PATH\"") && !script.contains("swift build"))
        #expect(script.contains("localhost:9001/x") && script.contains("echo 9002 done"))
        #expect(!script.contains("curl apple"))
        let shown = session.shown[0]
        #expect(shown.matches("Credited +5 credits for apple transaction 1 (seq 1, ab12). Balance of p1: 5 credits."))
        #expect(!shown.matches("Credited +6 credits. Balance of p1: 5 credits."))
        #expect(!shown.matches("xCredited +5 . Balance of p1: 5 credits."))
        #expect(ReadmeSession.Shown(text: #"{"a":[1],"b":"x(y)"} 201"#, line: 1).matches(#"{"a":[1],"b":"x(y)"} 201"#))
        #expect(!ReadmeSession.Shown(text: #"{"a":1} 201"#, line: 1).matches(#"{"a":1} 2010"#))
        #expect(ReadmeSession.Shown(text: "2 ... spend   -3 credits  balance 2", line: 1).matches("2\t2026-11-24T17:30:13.361Z\tspend\t-3 credits\tbalance 2"))
    }

    @Test("a skipped block says why, and every block is run or skipped on purpose")
    func markers() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where line.hasPrefix("<!-- doc-test") {
            let known = line == "<!-- doc-test: continues -->" || (line.hasPrefix("<!-- doc-test: skip (") && line.hasSuffix(") -->"))
            #expect(known, "README.md line \(index + 1): \(line) is not a marker the doc test knows")
            #expect(index + 1 < lines.count && lines[index + 1] == "```sh", "README.md line \(index + 1): a marker must be right above a ```sh block")
        }
        #expect(ReadmeSession.all().count >= 8, "the README's walkthroughs are run")
    }
}

/// One shell session of the README: a block, and the blocks that continue it.
struct ReadmeSession: Sendable, CustomTestStringConvertible {
    struct Shown: Sendable {
        var text: String
        var line: Int

        /// Whether `printed` is this line, with `...` standing for any text. Runs of spaces and tabs
        /// count as one space, so a table the CLI prints with tabs reads aligned in the README.
        func matches(_ printedLine: String) -> Bool {
            let printed = Self.squeezed(printedLine)
            let parts = Self.squeezed(text).components(separatedBy: "...")
            guard let first = parts.first, printed.hasPrefix(first) else { return false }
            var rest = printed.dropFirst(first.count)
            for (index, part) in parts.enumerated().dropFirst() {
                if index == parts.count - 1 {
                    return part.isEmpty || rest.hasSuffix(part)
                }
                guard let range = rest.range(of: part) else { return false }
                rest = rest[range.upperBound...]
            }
            return rest.isEmpty
        }

        static func squeezed(_ line: String) -> String {
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        }
    }

    var heading: String
    var line: Int
    var blocks: [String]
    var shown: [Shown]

    var testDescription: String { "the block at README.md line \(line) (\(heading))" }

    static func all() -> [ReadmeSession] {
        let readme = (try? String(contentsOf: ReadmeBlockTests.root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
        return parse(readme)
    }

    static func parse(_ readme: String) -> [ReadmeSession] {
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var sessions: [ReadmeSession] = []
        var heading = ""
        var index = 0
        var inOtherFence = false
        while index < lines.count {
            let line = lines[index]
            if line.hasPrefix("```") && line != "```sh" {
                inOtherFence.toggle()
                index += 1
                continue
            }
            if inOtherFence {
                index += 1
                continue
            }
            if line.hasPrefix("#") { heading = line.drop { $0 == "#" || $0 == " " }.description }
            guard line == "```sh" else {
                index += 1
                continue
            }
            let marker = index > 0 ? lines[index - 1] : ""
            var end = index + 1
            while end < lines.count && lines[end] != "```" { end += 1 }
            let body = Array(lines[(index + 1)..<min(end, lines.count)])
            let firstLine = index + 2
            index = end + 1
            if marker.hasPrefix("<!-- doc-test: skip") { continue }
            let shown = shownLines(body, firstLine: firstLine)
            if marker == "<!-- doc-test: continues -->", !sessions.isEmpty {
                sessions[sessions.count - 1].blocks.append(body.joined(separator: "\n"))
                sessions[sessions.count - 1].shown += shown
            } else {
                sessions.append(ReadmeSession(heading: heading, line: firstLine - 1, blocks: [body.joined(separator: "\n")], shown: shown))
            }
        }
        return sessions
    }

    /// The comment lines right under a command or under another shown line.
    static func shownLines(_ body: [String], firstLine: Int) -> [Shown] {
        var shown: [Shown] = []
        var previous: Bool? = nil  // nil: blank or top; false: prose; true: a command or a shown line
        for (offset, line) in body.enumerated() {
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                previous = nil
            } else if line.hasPrefix("#") {
                if previous == true {
                    shown.append(Shown(text: line.hasPrefix("# ") ? String(line.dropFirst(2)) : String(line.dropFirst()), line: firstLine + offset))
                } else {
                    previous = false
                }
            } else {
                previous = true
            }
        }
        return shown
    }

    func script(ports: (Int, Int)) -> String {
        blocks.joined(separator: "\n")
            .replacingOccurrences(of: "swift build && ", with: "")
            .replacingOccurrences(of: "8080", with: String(ports.0))
            .replacingOccurrences(of: "8081", with: String(ports.1)) + "\n"
    }
}

extension String {
    fileprivate func trimmingTrailingWhitespace() -> String {
        var text = Substring(self)
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }
}
