import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import WalletCore
@testable import WalletSQL
import WalletTestSupport
@testable import WalletServer

/// Connections an attacker or a broken client holds open.
@Suite("Connections")
struct ConnectionTests {
    @Test("a client that stops reading an export is disconnected after the idle timeout, others are answered meanwhile, and the export's snapshot is released", arguments: TestBackend.all)
    func stalledReader(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 { group.addTask { try await server.credit("p\(index)", quantity: 100) } }
            try await group.waitForAll()
            // An export of about 13 MB, more than the kernel buffers between the two ends hold,
            // in several pages, so the server must wait for the reader between them. Each
            // spend's posting lines repeat its 1 KB of metadata.
            let metadata = try Metadata(.object(["blob": .string(String(repeating: "x", count: 1_000))]))
            for index in 0..<5_000 {
                group.addTask {
                    _ = try await server.store.spend(SpendRequest(playerID: "p\(index % 50)", amount: 1, idempotencyKey: "k\(index)", metadata: metadata, actor: "test"))
                }
            }
            try await group.waitForAll()
        }
        var counted = 0
        _ = try await server.store.export(ExportQuery(), format: .csv).write { counted += $0.count }
        let exportBytes = counted
        #expect(exportBytes > 10_000_000, "the export must outgrow the socket buffers: \(exportBytes) bytes")
        let configuration = ServerConfiguration(port: 0, idleTimeoutSeconds: 1)
        let app = buildApplication(store: server.store, configuration: configuration, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let socket = try LoopbackSocket(port: port, receiveBuffer: 4_096)
            #expect(socket.send("GET /v1/ledger/export HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(server.keys[.auditor]!)\r\n\r\n"))
            // Read nothing until the server is blocked on this reader for longer than its idle
            // timeout (however long a loaded machine takes to produce the first page).
            try await socket.waitUntilSenderBlocked(atLeast: 4_096, quiet: .milliseconds(2_500))
            // (The test client's own keep-alive connection has been idle too long by now: a new one.)
            let other = try LoopbackSocket(port: port)
            #expect(other.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            #expect(String(decoding: await other.readToEnd().bytes.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
            let (received, closed) = await socket.readToEnd()
            #expect(closed, "the stalled connection was closed")
            #expect(String(decoding: received.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
            #expect(received.count < exportBytes, "\(received.count) of \(exportBytes) bytes were sent to a client that read nothing")
            #expect(!received.suffix(7).elementsEqual("\r\n0\r\n\r\n".utf8), "the export was cut off, not finished")
        }
        if backend == .postgres {
            // The export's reads end with it: within a few seconds (the page read ahead may still
            // be finishing) no other session is in a transaction, holding a snapshot that would
            // pin old row versions until the session timeout.
            var open: Int64? = nil
            for _ in 0..<100 {
                open = try await server.store.read { db in
                    try db.integer("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL")
                }
                if open == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(open == 0)
        }
        _ = try await server.credit("after-stall")
        #expect(try await server.store.verify().ok)
    }
}
