import Foundation
import Testing
import WalletTestSupport

/// What a careless operator does at a shell: output to a full device, an export over a device
/// node or a link, the wallet pointed at another program's database.
@Suite("Operator mistakes", .throttled)
struct HostileCLITests {
    @Test("keys create into /dev/full exits non-zero and revokes the key whose secret was lost")
    func outputToFullDevice() async throws {
        let cli = try CLI()
        guard let full = FileHandle(forWritingAtPath: "/dev/full") else { Issue.record("no /dev/full"); return }
        let stderr = try ChildPipe()
        let process = try ChildProcess(
            walletBinary.path, ["keys", "create", "--role", "admin", "--name", "lost"],
            environment: ProcessInfo.processInfo.environment.merging(["WALLET_DB": cli.databasePath]) { $1 }, stdout: .descriptor(full.fileDescriptor), stderr: .pipe(stderr))
        await process.exited()
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(message.contains("storage_error") && message.contains("revoked"), "\(message)")
        let keys = try await cli.json("keys", "list")["keys"] as? [[String: Any]] ?? []
        #expect(keys.count == 1 && keys.first?["revoked_at"] is String)
    }

    @Test("export --output replaces only a regular file, keeping its mode; devices, FIFOs, links and directories are refused")
    func exportOutputTargets() async throws {
        let cli = try await CLI.withCatalog()
        _ = try await cli.grant("p1", "t1")
        let directory = URL(fileURLWithPath: cli.databasePath).deletingLastPathComponent()
        let regular = directory.appendingPathComponent("ledger.csv").path
        #expect(FileManager.default.createFile(atPath: regular, contents: Data("old".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(try await cli.run("export", "--output", regular).status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: regular)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: regular, encoding: .utf8).hasPrefix("type,seq,"))
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let link = directory.appendingPathComponent("link.csv").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: regular)
        for target in [fifo, link, directory.path, "/dev/null"] {
            let output = try await cli.run("export", "--output", target, "--json")
            #expect(output.status != 0 && output.errorCode() == "invalid_request", "\(target): \(output.stderr)")
        }
        var status = stat()
        #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK, "the link is still a link")
        #expect(lstat("/dev/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR, "/dev/null is still a device")
    }

    @Test("another program's SQLite database is refused and left byte for byte untouched")
    func foreignDatabaseUntouched() async throws {
        let cli = try CLI()
        try await cli.sqlite3("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.databasePath))
        let output = try await cli.run("balance", "--player", "p1", "--json")
        #expect(output.status != 0 && output.errorCode() == "unsupported_database", "\(output.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cli.databasePath)) == before)
        #expect(!FileManager.default.fileExists(atPath: cli.databasePath + "-wal"))
    }
}
