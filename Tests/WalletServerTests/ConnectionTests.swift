import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import WalletCore
import WalletTestSupport
@testable import WalletServer

/// Connections an attacker or a broken client holds open.
@Suite("Connections")
struct ConnectionTests {
    @Test("a client that stops reading an export is disconnected after the idle timeout, and others are answered meanwhile")
    func stalledReader() async throws {
        let server = try await TestServer()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // An export of about 9 MB: more than the kernel buffers between the two ends hold.
            for index in 0..<12_000 { group.addTask { try await server.credit("p\(index % 50)") } }
            try await group.waitForAll()
        }
        var counted = 0
        _ = try await server.store.export(ExportQuery(), format: .csv).write { counted += $0.count }
        let exportBytes = counted
        let configuration = ServerConfiguration(port: 0, idleTimeoutSeconds: 1)
        let app = buildApplication(store: server.store, configuration: configuration, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let socket = try LoopbackSocket(port: port, receiveBuffer: 4_096)
            #expect(socket.send("GET /v1/ledger/export HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(server.keys[.auditor]!)\r\n\r\n"))
            try await Task.sleep(for: .seconds(3))
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
        #expect(try await server.store.verify().ok)
    }
}
