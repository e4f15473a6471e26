import Foundation
import Testing
@testable import WalletCore
@testable import WalletServer
import WalletTestSupport

/// Issue 28: a mutation's answer (spends, purchases, bonuses, adjustments, refunds) is written
/// straight into bytes, and they are exactly `JSONEncoder`'s, with and without an entitlement.
@Suite("Mutation answers written as bytes", .throttled)
struct AnswerBytesTests {
    @Test("a mutation's answer: the bytes JSONEncoder writes, for staff and for players")
    func mutationAnswers() throws {
        let entitlement = Entitlement(name: "vip \"pass\"\u{2028}", state: .none, at: "2026-11-22T12:00:00.000Z", items: nil)
        for (index, transaction) in HostileAnswers.transactions.enumerated() {
            let response = MutationResponse(transaction: transaction, balance: index % 2 == 0 ? Int64.min : 5, entitlement: index % 3 == 0 ? entitlement : nil)
            for audience in [Audience.staff, .player] {
                let written = Array(buffer: try JSONBody.encode(response, for: audience))
                #expect(written == Array(try WalletJSON.data(response, for: audience)), "\(transaction.kind) for \(audience)")
            }
        }
    }
}
