import Foundation

/// The ledger's rules as plain functions of what an operation read, with no database in
/// sight: a store reads what a rule needs inside its write, calls the rule, and writes what
/// it returns. One set of rules, whatever store keeps the ledger.
package enum LedgerRules {
    /// One posting about to be made: into `owner`'s account in `currency`, whose balance is
    /// `balance` before it.
    package struct Leg {
        var owner: String
        var currency: String
        var balance: Int64
        var amount: Int64

        package init(owner: String, currency: String, balance: Int64, amount: Int64) {
            self.owner = owner
            self.currency = currency
            self.balance = balance
            self.amount = amount
        }
    }

    /// A debit of `debit` may not take `balance` below zero (a negative balance, a refund's
    /// debt, allows no debit at all until it is repaid).
    package static func requireFunds(balance: Int64, debit: Int64, currency: String) throws(WalletError) {
        guard balance >= debit else { throw .insufficientFunds(balance: balance, currency: currency) }
    }

    /// What a refund of `request.shareMillipercent` of `purchase` claims now (`owed`) and takes
    /// (`taken`) from a player whose balance is `playerBalance`, given what the refunds since
    /// the last reversal already claimed. Rounds down: a partial refund never takes back more
    /// than its share; under `floor`, it takes at most the balance and leaves the rest
    /// uncollected.
    package static func refund(
        _ request: RefundRequest, of purchase: LedgerTransaction, corrections: Corrections, playerBalance: Int64
    ) throws(WalletError) -> (owed: Int64, taken: Int64) {
        let owedInAll = purchase.amount * request.shareMillipercent / Limits.refundShareMax
        let owed = owedInAll - corrections.claimed
        guard owed > 0 else {
            throw .alreadyRefunded(
                "store transaction \(request.store)/\(request.storeTransactionID) is already refunded by \(corrections.claimed) of its \(purchase.amount) \(purchase.currency); this share claims \(owedInAll), so nothing was refunded")
        }
        let taken = switch request.policy {
        case .debt: owed
        case .floor: max(0, min(owed, playerBalance))
        }
        return (owed, taken)
    }

    /// The share of a purchase of `credited` no longer in the wallet, in thousandths of a percent,
    /// when `remaining` of it is left (what remains of its lot, or, for a purchase older than
    /// lots, the balance: at most the purchase either way).
    package static func spentShare(credited: Int64, remaining: Int64) -> Int64 {
        guard credited > 0 else { return 0 }
        return (credited - min(max(remaining, 0), credited)) * Limits.refundShareMax / credited
    }

    /// Seals `draft` as the next transaction after `head`: its seq, id, time and previous hash,
    /// its postings with each account's balance after (ordered by bytes, as stores read them
    /// back), and its hash. The legs must sum to zero and the first must be the player's; the
    /// answer's `balancesAfter` follows the order of `legs`.
    package static func seal(
        _ draft: LedgerTransaction, legs: [Leg], head: (seq: Int64, hash: String), id: String, now: Date
    ) throws(WalletError) -> (transaction: LedgerTransaction, balancesAfter: [Int64]) {
        // The writes build their legs this way; a draft that breaks it is refused, never written.
        guard legs.count >= 2, legs.reduce(0, { $0 &+ $1.amount }) == 0, Identifier.same(legs[0].owner, AccountOwner.player(draft.playerID).text) else {
            throw .corrupt("a \(draft.kind.rawValue) was drafted with postings that do not sum to zero or do not start with the player's")
        }
        var balancesAfter: [Int64] = []
        for leg in legs {
            let (balanceAfter, overflow) = leg.balance.addingReportingOverflow(leg.amount)
            guard !overflow else { throw .invalidRequest("the balance of \(leg.owner) would overflow") }
            balancesAfter.append(balanceAfter)
        }
        var transaction = draft
        transaction.seq = head.seq + 1
        transaction.id = id
        transaction.createdAt = Timestamp.format(now)
        transaction.prevHash = head.hash
        transaction.postings = zip(legs, balancesAfter)
            .map { leg, balanceAfter in Posting(account: leg.owner, currency: leg.currency, amount: leg.amount, balanceAfter: balanceAfter) }
            .sorted { (Identifier($0.account), Identifier($0.currency)) < (Identifier($1.account), Identifier($1.currency)) }
        transaction.hash = HashChain.hash(of: transaction, previous: head.hash)
        return (transaction, balancesAfter)
    }
}

/// What the corrections of a purchase (its refunds and refund reversals, in seq order) add up
/// to since the last reversal: what refunds claimed (taken plus uncollected) and what they took.
package struct Corrections {
    package var claimed: Int64 = 0
    package var taken: Int64 = 0
    package var lastRefundSeq: Int64?

    /// Takes the next correction into account: a refund adds to the sums, a reversal clears them.
    package mutating func add(seq: Int64, kind: TransactionKind, amount: Int64, uncollected: Int64) {
        if kind == .refund {
            claimed += -amount + uncollected
            taken += -amount
            lastRefundSeq = seq
        } else {
            claimed = 0
            taken = 0
        }
    }

    /// The key of a reversal of these refunds: one per last refund reversed, so that a purchase
    /// refunded again after a reversal can be reversed again.
    package func reversalKey(store: String, storeTransactionID: String) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("refund_reversal")
        canonical.append(store)
        canonical.append(storeTransactionID)
        return IdempotencyKey(
            scope: "refund_reversal:\(store):\(lastRefundSeq ?? 0)", key: storeTransactionID, requestHash: canonical.sha256Hex(),
            reusedDetail: "store transaction \(store)/\(storeTransactionID) had its refund reversed already")
    }

    package init(claimed: Int64 = 0, taken: Int64 = 0, lastRefundSeq: Int64? = nil) {
        self.claimed = claimed
        self.taken = taken
        self.lastRefundSeq = lastRefundSeq
    }
}
