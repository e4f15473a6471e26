import Foundation
import Testing
import WalletTestSupport

/// The `wallet` binary that `swift test` built beside the test bundle.
let walletBinary: URL = {
    let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("wallet")
    if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/wallet")
}()

struct CommandOutput {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as one JSON object.
    func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] ?? [:]
    }

    /// stderr parsed as the `{"code", "detail"}` error object.
    func errorCode() -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(stderr.utf8)) as? [String: Any]
        return object?["code"] as? String
    }
}

/// A scratch database and a way to run `wallet` on it as a separate process.
struct CLI {
    let databasePath: String

    init() throws {
        let directory = try Scratch.directory("cli")
        databasePath = directory.appendingPathComponent("wallet.sqlite").path
    }

    /// Commands on `database`: a path, or a PostgreSQL URL.
    init(database: String) {
        databasePath = database
    }

    func start(_ arguments: [String], environment: [String: String]? = nil) throws -> (ChildProcess, ChildPipe, ChildPipe) {
        var processEnvironment = ProcessInfo.processInfo.environment
        processEnvironment["WALLET_DB"] = databasePath
        for (name, value) in environment ?? [:] { processEnvironment[name] = value }
        let stdout = try ChildPipe()
        let stderr = try ChildPipe()
        let process = try ChildProcess(walletBinary.path, arguments, environment: processEnvironment, stdout: .pipe(stdout), stderr: .pipe(stderr))
        return (process, stdout, stderr)
    }

    /// Waits for a started command and collects what it printed, on a thread of its own: a test
    /// blocked on a child process must not hold one of the concurrency pool's few threads (two on
    /// a two-core machine), or every server and store of the whole test process waits with it.
    static func finish(_ started: (ChildProcess, ChildPipe, ChildPipe)) async -> CommandOutput {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: finishBlocking(started)) }
        }
    }

    /// Waits for each of several commands started together.
    static func finish(_ started: [(ChildProcess, ChildPipe, ChildPipe)]) async -> [CommandOutput] {
        var outputs: [CommandOutput] = []
        for one in started { outputs.append(await finish(one)) }
        return outputs
    }

    /// `finish` on the calling thread: only for a thread that is not the concurrency pool's.
    static func finishBlocking(_ started: (ChildProcess, ChildPipe, ChildPipe)) -> CommandOutput {
        let (process, stdout, stderr) = started
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandOutput(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }

    /// Runs `wallet arguments...` with WALLET_DB pointing at this scratch database.
    @discardableResult
    func run(_ arguments: String..., environment: [String: String]? = nil) async throws -> CommandOutput {
        await Self.finish(try start(arguments, environment: environment))
    }

    /// Runs a command that must succeed and returns its JSON output.
    func json(_ arguments: String...) async throws -> [String: Any] {
        let output = await Self.finish(try start(arguments + ["--json"]))
        #expect(output.status == 0, "wallet \(arguments.joined(separator: " ")) failed: \(output.stderr)")
        return try output.json()
    }

    /// Runs `sql` on this scratch database with the sqlite3 shell, as an operator (or an
    /// attacker with the file) would, and requires that it worked.
    func sqlite3(_ sql: String) async throws {
        let shell = try ChildProcess("/usr/bin/env", ["sqlite3", databasePath, sql])
        await shell.exited()
        try #require(shell.terminationStatus == 0, "sqlite3 is needed for this test: \(sql)")
    }

    /// A catalog with com.example.consume5credits.
    static func withCatalog() async throws -> CLI {
        let cli = try CLI()
        let output = try await cli.run("products", "set", "com.example.consume5credits", "--credits", "5")
        #expect(output.status == 0, "\(output.stderr)")
        return cli
    }

    func grant(_ player: String, _ transactionID: String, quantity: Int = 1) async throws -> [String: Any] {
        try await json("grant", "--player", player, "--store", "apple", "--store-transaction-id", transactionID, "--product", "com.example.consume5credits", "--quantity", "\(quantity)")
    }
}

extension CLI {
    /// `run` with the arguments as an array.
    func run(_ arguments: [String], environment: [String: String]? = nil) async throws -> CommandOutput {
        await Self.finish(try start(arguments, environment: environment))
    }
}
