import Crypto
import Foundation
import Testing
import WalletTestSupport
@testable import WalletCore

/// The README's receivers, checked against the wallet's own signatures: the Python one run as
/// the README prints it, the Swift one below (the test also checks that it is the README's text).
@Suite("The README's webhook receivers", .throttled)
struct ReceiverSnippetTests {
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    /// The fenced block of `language` that starts with `opening`.
    static func block(_ language: String, startingWith opening: String) -> String? {
        guard let start = readme.range(of: "```\(language)\n\(opening)"),
            let end = readme.range(of: "\n```\n", range: start.upperBound..<readme.endIndex)
        else { return nil }
        return String(readme[readme.index(start.lowerBound, offsetBy: 4 + language.count)..<end.lowerBound])
    }

    // The README's Swift receiver, word for word (checked below).
    func verify(secret: String, header: String, body: Data, tolerance: TimeInterval = 300) -> Bool {
        let items = header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        guard let t = items.first(where: { $0.first == "t" })?.last, let seconds = TimeInterval(t),
              abs(Date().timeIntervalSince1970 - seconds) <= tolerance else { return false }
        let signed = Data("\(t).".utf8) + body
        let key = SymmetricKey(data: Data(secret.utf8))
        return items.filter { $0.first == "v1" }.compactMap(\.last).contains { hex in
            let bytes = stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(hex.dropFirst($0).prefix(2), radix: 16) }
            return bytes.count == 32 && HMAC<SHA256>.isValidAuthenticationCode(bytes, authenticating: signed, using: key)
        }
    }

    static let body = Data(#"{"amount":5,"id":"9b2f6a1e","seq":7,"type":"purchase.credited"}"#.utf8)

    @Test("the Swift receiver is the README's, and accepts the wallet's signature under either secret of a rotation, refusing the rest")
    func swiftReceiver() throws {
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let readmeBlock = try #require(Self.block("swift", startingWith: "import Crypto"))
        let function = try #require(readmeBlock.range(of: "func verify(")).lowerBound
        let readmeFunction = readmeBlock[function...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n").contains(readmeFunction.joined(separator: "\n")))
        let now = Int64(Date().timeIntervalSince1970)
        let header = WebhookSignature.header(timestamp: now, body: Self.body, secrets: ["whsec_new", "whsec_old"])
        #expect(verify(secret: "whsec_new", header: header, body: Self.body))
        #expect(verify(secret: "whsec_old", header: header, body: Self.body))
        #expect(!verify(secret: "whsec_other", header: header, body: Self.body))
        #expect(!verify(secret: "whsec_new", header: header, body: Self.body + Data(" ".utf8)))
        #expect(!verify(secret: "whsec_new", header: WebhookSignature.header(timestamp: now - 600, body: Self.body, secrets: ["whsec_new"]), body: Self.body))
        #expect(!verify(secret: "whsec_new", header: "v1=00,t=x", body: Self.body))
    }

    @Test("the Python receiver, run as the README prints it, gives the same answers")
    func pythonReceiver() async throws {
        let snippet = try #require(Self.block("python", startingWith: "import hashlib, hmac, time"))
        let now = Int64(Date().timeIntervalSince1970)
        let header = WebhookSignature.header(timestamp: now, body: Self.body, secrets: ["whsec_new", "whsec_old"])
        let stale = WebhookSignature.header(timestamp: now - 600, body: Self.body, secrets: ["whsec_new"])
        let script = snippet + """

            import sys
            body = \(String(reflecting: String(decoding: Self.body, as: UTF8.self))).encode()
            print(verify("whsec_new", "\(header)", body), verify("whsec_old", "\(header)", body), verify("whsec_other", "\(header)", body),
                  verify("whsec_new", "\(header)", body + b" "), verify("whsec_new", "\(stale)", body), verify("whsec_new", "v1=00,t=x", body))
            """
        let output = try ChildPipe()
        let process = try ChildProcess("/usr/bin/env", ["python3", "-c", script], environment: ProcessInfo.processInfo.environment, stdout: .pipe(output), stderr: .stdout)
        await process.exited()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "True True False False False False", "\(text)")
    }
}
