import Foundation
import WalletCore

/// Printing results and errors: JSON for scripts, short sentences for people.
enum Output {
    static func json<Value: Encodable>(_ value: Value) {
        print(WalletJSON.text(value))
    }

    /// Prints `value` as JSON when asked to, else the sentence `text()` makes.
    static func result<Value: Encodable>(_ value: Value, json: Bool, text: () -> String) {
        if json { self.json(value) } else { print(text()) }
    }

    static func report(_ error: WalletError, json: Bool) {
        report(code: error.code, detail: error.detail, json: json)
    }

    static func report(code: String, detail: String, json: Bool) {
        let line: String
        if json {
            line = WalletJSON.text(["code": code, "detail": detail])
        } else {
            line = "error: \(detail) [\(code)]"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
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
