import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import WalletTestSupport

/// `wallet serve` on a PostgreSQL server that stops answering: SIGTERM still ends the process
/// within its bounded drain. The cluster is the test's own (freezing the shared one would stall
/// the tests running beside it).
@Suite("wallet serve when PostgreSQL hangs", .enabled(if: TestBackend.all.contains(.postgres)), .throttled)
struct PostgresFaultCLITests {
    /// Far beyond the drain's bound (20 s); reached only if the process never exits.
    static let exitDeadlineSeconds = 180

    @Test("SIGTERM while PostgreSQL hangs under a write: the drain ends within its bound, with status 1 and a log line that says why")
    func drainWhileFrozen() async throws {
        let cluster = try await TestPostgres.Cluster.make()
        defer { cluster.remove() }
        let cli = CLI(database: try await cluster.freshDatabase())
        #expect(try await cli.run("products", "set", "com.example.consume5credits", "--credits", "5").status == 0)
        _ = try await cli.grant("p1", "T1", quantity: 2)
        let key = try #require(try await cli.json("keys", "create", "--role", "service", "--name", "frozen")["key"] as? String)
        let (server, base) = try await ServeTests.serve(cli)
        let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json", "Idempotency-Key": "frozen-1"]
        #expect(await send("POST", "\(base)/v1/wallets/p1/spend", headers: headers.merging(["Idempotency-Key": "before"]) { $1 }, body: #"{"amount": 1}"#)?.status == 201)
        try cluster.freeze()
        let spend = Task { await send("POST", "\(base)/v1/wallets/p1/spend", headers: headers, body: #"{"amount": 1}"#) }
        // Let the spend reach the writer, which then waits on the frozen server: 3 s, since under the
        // whole suite on two cores 1 s was once not enough for the request to be sent, and the
        // server, with nothing in flight, drained cleanly (exit 0).
        try await Task.sleep(for: .seconds(3))
        kill(server.0.processIdentifier, SIGTERM)
        let exit = await withCheckedContinuation { (continuation: CheckedContinuation<CommandOutput?, Never>) in
            let answer = ExitWatch(continuation)
            Thread.detachNewThread { answer.resume(CLI.finishBlocking(server)) }
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: TimeInterval(Self.exitDeadlineSeconds))
                answer.resume(nil)
            }
        }
        try cluster.thaw()
        let exited = try #require(exit, "wallet serve did not exit within \(Self.exitDeadlineSeconds) s of SIGTERM")
        #expect(exited.status == 1, "\(exited.stderr)")
        #expect((exited.stdout + exited.stderr).contains("drain not finished"), "\(exited.stdout.suffix(2_000)) \(exited.stderr.suffix(2_000))")
        // The unanswered spend got no 2xx; its retry with the same key applies it once.
        let unanswered = await spend.value
        #expect(unanswered == nil || unanswered?.status == 503, "\(String(describing: unanswered))")
        let retried = try await cli.run("spend", "--player", "p1", "--amount", "1", "--key", "frozen-1", "--json")
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(try await cli.json("balance", "--player", "p1")["balances"] as? [String: Int] == ["credits": 8])
        #expect(try await cli.json("verify")["ok"] as? Bool == true)
    }
}

/// Resumes a continuation once, with the first of two answers.
private final class ExitWatch: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<CommandOutput?, Never>?

    init(_ continuation: CheckedContinuation<CommandOutput?, Never>) {
        self.continuation = continuation
    }

    func resume(_ output: CommandOutput?) {
        lock.lock()
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: output)
    }
}
