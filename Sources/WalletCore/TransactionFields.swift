/// The one description of a ledger transaction's fields, in the order the `transactions` rows
/// store them and the hash chain covers them (`prev_hash` and `hash` last, outside the hash).
/// The SQL writes and reads, the canonical bytes, the export columns and the export file
/// verifier all take their names, order and types from here.
package enum TransactionField: Int, CaseIterable, Sendable {
    case seq, id, kind, playerID, currency, amount, actor, createdAt, idempotencyKey, store, storeTransactionID, productID, quantity
    case reasonCode, note, ticket, refundOfSeq, uncollected, metadata, prevHash, hash

    /// A field's value, typed as it is stored: text, an integer, or canonical JSON text.
    package enum Value: Equatable {
        case text(String?)
        case integer(Int64?)
        case json(String?)
    }

    /// The column of `transactions`.
    package var column: String {
        switch self {
        case .playerID: "player_id"
        case .createdAt: "created_at"
        case .idempotencyKey: "idempotency_key"
        case .storeTransactionID: "store_transaction_id"
        case .productID: "product_id"
        case .reasonCode: "reason_code"
        case .refundOfSeq: "refund_of_seq"
        case .prevHash: "prev_hash"
        default: String(describing: self)
        }
    }

    /// The field's name on an export's posting lines, where a posting's own `currency` and
    /// `amount` sit beside the transaction's.
    package var exportName: StaticString {
        switch self {
        case .seq: "seq"
        case .id: "transaction_id"
        case .kind: "kind"
        case .playerID: "player_id"
        case .currency: "transaction_currency"
        case .amount: "transaction_amount"
        case .actor: "actor"
        case .createdAt: "created_at"
        case .idempotencyKey: "idempotency_key"
        case .store: "store"
        case .storeTransactionID: "store_transaction_id"
        case .productID: "product_id"
        case .quantity: "quantity"
        case .reasonCode: "reason_code"
        case .note: "note"
        case .ticket: "ticket"
        case .refundOfSeq: "refund_of_seq"
        case .uncollected: "uncollected"
        case .metadata: "metadata"
        case .prevHash: "prev_hash"
        case .hash: "hash"
        }
    }

    /// Whether the field holds an integer (its `Value` is `.integer`).
    package var isInteger: Bool {
        switch self {
        case .seq, .amount, .quantity, .refundOfSeq, .uncollected: true
        default: false
        }
    }

    /// Whether the hash chain covers the field: all but the hashes themselves.
    package var isHashed: Bool { self != .prevHash && self != .hash }

    /// The field's value in `transaction`.
    package func value(of transaction: LedgerTransaction) -> Value {
        switch self {
        case .seq: .integer(transaction.seq)
        case .id: .text(transaction.id)
        case .kind: .text(transaction.kind.rawValue)
        case .playerID: .text(transaction.playerID)
        case .currency: .text(transaction.currency)
        case .amount: .integer(transaction.amount)
        case .actor: .text(transaction.actor)
        case .createdAt: .text(transaction.createdAt)
        case .idempotencyKey: .text(transaction.idempotencyKey)
        case .store: .text(transaction.store)
        case .storeTransactionID: .text(transaction.storeTransactionID)
        case .productID: .text(transaction.productID)
        case .quantity: .integer(transaction.quantity)
        case .reasonCode: .text(transaction.reasonCode)
        case .note: .text(transaction.note)
        case .ticket: .text(transaction.ticket)
        case .refundOfSeq: .integer(transaction.refundOfSeq)
        case .uncollected: .integer(transaction.uncollected)
        case .metadata: .json(transaction.metadata?.canonicalText)
        case .prevHash: .text(transaction.prevHash)
        case .hash: .text(transaction.hash)
        }
    }
}

/// Where a transaction's fields are read from: a stored row (by column) or an export line (by
/// name). Each source reports a missing or mistyped field in its own terms.
package protocol TransactionFieldSource {
    func optionalText(_ field: TransactionField) throws -> String?
    func optionalInteger(_ field: TransactionField) throws -> Int64?
    /// The metadata's canonical JSON text, nil if absent.
    func metadataText() throws -> String?
    /// The error for a field whose value this build cannot read.
    func invalid(_ field: TransactionField, _ why: String) -> WalletError
}

extension TransactionFieldSource {
    package func text(_ field: TransactionField) throws -> String {
        guard let text = try optionalText(field) else { throw invalid(field, "missing") }
        return text
    }

    package func integer(_ field: TransactionField) throws -> Int64 {
        guard let integer = try optionalInteger(field) else { throw invalid(field, "missing") }
        return integer
    }
}

extension LedgerTransaction {
    /// The transaction whose fields `source` holds, with `postings`.
    package init(reading source: some TransactionFieldSource, postings: [Posting]) throws {
        let kindText = try source.text(.kind)
        guard let kind = TransactionKind(rawValue: kindText) else { throw source.invalid(.kind, "unknown kind '\(kindText.prefix(40))'") }
        self.init(
            seq: try source.integer(.seq), id: try source.text(.id), kind: kind, playerID: try source.text(.playerID),
            currency: try source.text(.currency), amount: try source.integer(.amount), actor: try source.text(.actor),
            createdAt: try source.text(.createdAt), idempotencyKey: try source.optionalText(.idempotencyKey), store: try source.optionalText(.store),
            storeTransactionID: try source.optionalText(.storeTransactionID), productID: try source.optionalText(.productID),
            quantity: try source.optionalInteger(.quantity), reasonCode: try source.optionalText(.reasonCode), note: try source.optionalText(.note),
            ticket: try source.optionalText(.ticket), refundOfSeq: try source.optionalInteger(.refundOfSeq),
            uncollected: try source.integer(.uncollected), metadata: try source.metadataText().map(Metadata.init(canonicalText:)),
            prevHash: try source.text(.prevHash), hash: try source.text(.hash), postings: postings)
    }
}
