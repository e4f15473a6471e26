import WalletCore

/// What the ledger keeps about store transactions beside the chain: the latest state a store
/// reported for each (`store_transaction_states`), the player each account token was first
/// credited to (`store_account_tokens`), and a purchase's corrections (its refunds and reversals).
extension StoreTransactionState {
    /// The state reported for a store transaction, nil if none was: read once per batch
    /// (`BatchContext.storeStates`, which the batch's prefetch may have filled).
    static func find(_ db: any SQLSession, store: String, storeTransactionID: String, context: inout BatchContext) throws -> StoreTransactionState? {
        if let known = context.storeStates[BatchContext.ExactPair(store, storeTransactionID)] { return known }
        let state = try db.first(selectByID, [.text(store), .text(storeTransactionID)]) { row in
            try StoreTransactionState(row: row, at: 0, store: store, storeTransactionID: storeTransactionID)
        }
        context.remember(state, store: store, storeTransactionID: storeTransactionID)
        return state
    }

    private static let selectByID = "SELECT \(columns()) FROM store_transaction_states WHERE store = ? AND store_transaction_id = ?"

    /// The columns `init(row:at:…)` reads, in its order, of the table named `alias` if given.
    static func columns(alias: String? = nil) -> String {
        ["state", "share_thousandths", "reported_at"].map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    /// A state from a row whose columns from `index` on are `columns`, in their order.
    init(row: any SQLRow, at index: Int, store: String, storeTransactionID: String) throws {
        let stateText = try row.text(index)
        guard let state = State(rawValue: stateText) else {
            throw WalletError.corrupt("store transaction \(store)/\(storeTransactionID) has an unknown state '\(stateText.prefix(40))'")
        }
        self.init(state: state, shareMillipercent: try row.integer(index + 1), reportedAt: try row.integer(index + 2))
    }

    /// Keeps this state as the store transaction's latest, in the table and for the rest of the batch.
    func save(_ db: any SQLSession, store: String, storeTransactionID: String, context: inout BatchContext) throws {
        try db.execute(
            """
            INSERT INTO store_transaction_states (store, store_transaction_id, state, share_thousandths, reported_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (store, store_transaction_id) DO UPDATE SET state = excluded.state,
                share_thousandths = excluded.share_thousandths, reported_at = excluded.reported_at
            """,
            [.text(store), .text(storeTransactionID), .text(state.rawValue), .integer(shareMillipercent), .integer(reportedAt)])
        context.remember(self, store: store, storeTransactionID: storeTransactionID)
    }
}

/// The player a store's account token was first credited to (`store_account_tokens`).
enum StoreAccountToken {
    static func owner(_ db: any SQLSession, store: String, token: String) throws -> String? {
        try db.first("SELECT player_id FROM store_account_tokens WHERE store = ? AND token = ?", [.text(store), .text(token)]) { row in try row.text(0) }
    }

    static func bind(_ db: any SQLSession, store: String, token: String, playerID: PlayerID, seq: Int64) throws {
        try db.execute(
            "INSERT INTO store_account_tokens (store, token, player_id, seq) VALUES (?, ?, ?, ?)", [.text(store), .text(token), .text(playerID.text), .integer(seq)])
    }
}

extension Corrections {
    static func of(_ db: any SQLSession, purchase: LedgerTransaction) throws -> Corrections {
        var corrections = Corrections()
        try db.forEach("SELECT seq, kind, amount, uncollected FROM transactions WHERE refund_of_seq = ? ORDER BY seq", [.integer(purchase.seq)]) { row in
            let (seq, kindText) = (try row.integer(0), try row.text(1))
            // A stored row the wallet cannot read is an error, never a guess about what it undid.
            guard let kind = TransactionKind(rawValue: kindText), kind == .refund || kind == .refundReversal else {
                throw WalletError.corrupt("transaction \(seq) corrects purchase \(purchase.seq) but is a '\(kindText.prefix(40))'")
            }
            corrections.add(seq: seq, kind: kind, amount: try row.integer(2), uncollected: try row.integer(3))
        }
        return corrections
    }
}
