import WalletCore

/// Tests name players by literals (`SpendRequest(playerID: "p1", ...)`), as the API and the CLI
/// name them by text; a literal that breaks the player id syntax is a mistake in the test, so it
/// stops the test at once instead of becoming an answer to assert on. `PlayerID("…")` with a
/// literal is this conversion too: a test that means the throwing `init(_:)` passes a `String`
/// value. Tests only: in the wallet, every id is parsed by the throwing init, at the edge.
extension PlayerID: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) {
        do throws(WalletError) {
            self = try PlayerID(text)
        } catch {
            preconditionFailure("the test literal '\(text)' is no valid player id: \(error.detail)")
        }
    }
}
