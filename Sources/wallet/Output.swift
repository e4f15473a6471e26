import Foundation
import WalletCore

/// Printing results and errors: JSON for scripts, short sentences for people.
enum Output {
    static func json<Value: Encodable>(_ value: Value) throws(WalletError) {
        try line(WalletJSON.text(value))
    }

    /// Prints `value` as JSON when asked to, else the sentence `text()` makes.
    static func result<Value: Encodable>(_ value: Value, json: Bool, text: () -> String) throws(WalletError) {
        if json { try self.json(value) } else { try line(text()) }
    }

    /// Writes `text` and a newline to stdout and flushes it, so that a full disk, a closed pipe
    /// or `/dev/full` is an error (and a non-zero exit), not output silently lost.
    static func line(_ text: String) throws(WalletError) {
        guard writeAll(Array((text + "\n").utf8), to: STDOUT_FILENO) else {
            throw .storage("cannot write the output: \(String(cString: strerror(errno)))")
        }
    }

    /// Writes `text` to stderr; a failure there has nowhere left to be reported.
    static func standardError(_ text: String) {
        _ = writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// write(2) until every byte is written; false on an error (errno tells which).
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    static func report(_ error: WalletError, json: Bool) {
        report(code: error.code, detail: error.detail, json: json)
    }

    static func report(code: String, detail: String, json: Bool) {
        let line: String
        if json {
            line = (try? WalletJSON.text(["code": code, "detail": detail])) ?? #"{"code":"internal_error","detail":"the error could not be encoded"}"#
        } else {
            line = "error: \(detail) [\(code)]"
        }
        standardError(line + "\n")
    }

    /// `+5 credits`, `-3 gems`.
    static func signed(_ amount: Int64, _ currency: String) -> String {
        "\(amount > 0 ? "+" : "")\(amount) \(currency)"
    }

    /// The line every mutation prints for a person.
    static func mutation(_ result: MutationResult, _ summary: String) -> String {
        let transaction = result.transaction
        let replay = result.replayed ? " Replayed: the key was already used for this request; nothing changed." : ""
        return "\(summary) (seq \(transaction.seq), \(transaction.id)). Balance of \(transaction.playerID): \(result.balance) \(transaction.currency).\(replay)"
    }
}
