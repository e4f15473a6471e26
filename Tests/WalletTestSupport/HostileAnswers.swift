import WalletCore

/// Ledger values whose strings hold what a JSON writer must escape exactly as `JSONEncoder` does:
/// quotes, backslashes, every control character, U+2028 and U+2029, non-BMP characters.
package enum HostileAnswers {
    package static let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
    package static let strings = [
        "plain", "", "quote \" and \\ backslash", controls, "\u{7F} del", "line\u{2028}separator\u{2029}", "non-BMP 😀 𝄞", "é accents", "</script>/slash",
        "\\u0000 literal", "\"\\\"\\",
    ]

    package static func transaction(_ index: Int, kind: TransactionKind, metadata: String? = nil, postings: Bool = true) -> LedgerTransaction {
        let text = strings[index % strings.count]
        let other = strings[(index + 3) % strings.count]
        let player = "p\(text)"
        return LedgerTransaction(
            seq: Int64(index + 1), id: "id-\(text)", kind: kind, playerID: player, currency: "credits", amount: index % 2 == 0 ? Int64.min : Int64.max,
            actor: "actor \(other)", createdAt: "2026-11-22T12:00:00.000Z", idempotencyKey: index % 3 == 0 ? nil : "key \(text)",
            store: index % 2 == 0 ? nil : "store\(other)", storeTransactionID: index % 2 == 0 ? nil : "T\(text)", productID: index % 2 == 0 ? nil : "prod\(text)",
            quantity: index % 2 == 0 ? nil : 3, reasonCode: index % 4 == 1 ? "reason\(other)" : nil, note: index % 3 == 2 ? nil : "note \(other)",
            ticket: index % 2 == 1 ? "ticket\(text)" : nil, refundOfSeq: index % 5 == 0 ? 7 : nil, uncollected: Int64(index), metadata: metadata.map(Metadata.init(canonicalText:)),
            prevHash: String(repeating: "a", count: 64), hash: String(repeating: "b", count: 64),
            postings: postings
                ? [
                    Posting(account: "@spend", currency: "credits", amount: 3, balanceAfter: 9),
                    Posting(account: AccountOwner.player(player).text, currency: "credits", amount: -3, balanceAfter: Int64.min),
                ] : [])
    }

    /// Every kind, each with every hostile string in some field, with and without metadata.
    package static var transactions: [LedgerTransaction] {
        let metadata = [
            nil, #"{"campaign":"nov\u2028\"ember","level":3}"#, #"{"a":[1,2.5,true,null,"\\"],"b":{"c":"😀"}}"#, #"{"reason_code":"x","state":"active"}"#,
            #"{"campaign":"only"}"#,
        ]
        return TransactionKind.allCases.enumerated().flatMap { index, kind in
            (0..<strings.count).map { offset in
                transaction(index + offset, kind: kind, metadata: metadata[(index + offset) % metadata.count], postings: offset != 1)
            }
        }
    }
}
