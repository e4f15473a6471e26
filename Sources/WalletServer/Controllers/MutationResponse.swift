import HTTPTypes
import Hummingbird
import WalletCore

/// The body of every ledger mutation: the transaction and the player's balance right after it.
/// A replay answers the same body, with `Idempotent-Replayed: true`.
struct MutationResponse: JSONWritable {
    var transaction: LedgerTransaction
    var balance: Int64
    /// For a store purchase of a non-consumable or a pass: the entitlement as it stands now
    /// (left out for everything else).
    var entitlement: Entitlement?

    /// The synthesized encoding's members, in sorted key order.
    func write(to writer: inout JSONWriter) throws(WalletError) {
        try writer.object { (writer: inout JSONWriter) throws(WalletError) in
            writer.member("balance", balance)
            if let entitlement {
                writer.key("entitlement")
                try writer.encoded(entitlement)
            }
            writer.key("transaction")
            try transaction.write(to: &writer)
        }
    }

    static func response(for result: MutationResult, context: WalletRequestContext) throws(WalletError) -> Response {
        try response(
            MutationResponse(transaction: result.transaction, balance: result.balance, entitlement: result.entitlement), of: result.transaction,
            replayed: result.replayed, context: context)
    }

    /// Any mutation's answer: 201 with `body`, counted once in the metrics, or marked replayed.
    static func response(_ body: some Encodable, of transaction: LedgerTransaction, replayed: Bool, context: WalletRequestContext) throws(WalletError) -> Response {
        var headers: HTTPFields = [:]
        if replayed {
            headers[.idempotentReplayed] = "true"
        } else {
            WalletMetrics.recordTransaction(transaction.kind)
        }
        return try JSONBody.response(body, for: context, status: .created, headers: headers)
    }
}

enum IdempotencyKeyReader {
    /// The `Idempotency-Key` header, or the body's `idempotency_key`; both must agree if both are sent.
    static func key(_ request: Request, bodyKey: String?) throws -> String {
        let headerKey = request.headers.value(.idempotencyKey)
        switch (headerKey, bodyKey) {
        case (let header?, let body?) where !Identifier.same(header, body):
            throw APIError.invalidRequest("the Idempotency-Key header and the idempotency_key field differ", field: "idempotency_key")
        case (let key?, _), (nil, let key?):
            return key
        case (nil, nil):
            throw APIError.invalidRequest("an Idempotency-Key header (or idempotency_key field) is required", field: "idempotency_key")
        }
    }
}
