import WalletCore
import Foundation

/// The ledger's write operations, each run inside one write transaction (or, batched, one
/// savepoint) that the caller opens, on requests already validated and keyed (`Checked`). They keep every invariant of DESIGN.md: postings sum to
/// zero, balances equal their postings, `seq` is gap-free, the hash chain is extended, and an
/// idempotency key is recorded in the same write as its effect.
enum LedgerWrites {
    static func grant(_ db: any SQLSession, _ checked: Checked<GrantRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        if try StoreTransactionState.find(db, store: request.store, storeTransactionID: request.storeTransactionID)?.state == .refunded {
            throw WalletError.purchaseInvalid(
                "refunded: the store reported store transaction \(request.store)/\(request.storeTransactionID) refunded; nothing was credited")
        }
        let tokenOwner = try request.accountToken.flatMap { token in try StoreAccountToken.owner(db, store: request.store, token: token) }
        if let tokenOwner, !Identifier.same(tokenOwner, request.playerID) {
            throw WalletError.purchaseInvalid("the purchase's account token belongs to another player; nothing was credited")
        }
        guard let product = try LedgerReads.product(db, id: request.productID), product.active else {
            throw WalletError.unknownProduct("product '\(request.productID)' is not in the catalog or is inactive; nothing was credited")
        }
        if let store = product.store, !Identifier.same(store, request.store) {
            throw WalletError.unknownProduct("product '\(request.productID)' is sold on \(store), not \(request.store); nothing was credited")
        }
        let (amount, overflow) = product.credits.multipliedReportingOverflow(by: request.quantity)
        guard !overflow else { throw WalletError.invalidRequest("credits × quantity is too large") }
        let player = try Account.fetch(db, context: &context, owner: LedgerRules.playerOwner(request.playerID), currency: product.currency)
        let store = try Account.fetch(db, context: &context, owner: "@store:\(request.store)", currency: product.currency)
        var draft = LedgerTransaction(draftOf: .purchase, playerID: request.playerID, currency: product.currency, amount: amount, actor: request.actor)
        draft.idempotencyKey = request.storeTransactionID
        draft.store = request.store
        draft.storeTransactionID = request.storeTransactionID
        draft.productID = request.productID
        draft.quantity = request.quantity
        let result = try append(db, draft, legs: [(player, amount), (store, -amount)], key: key, now: now, context: &context)
        try LotStorage.credit(db, accountID: player.id, balanceBefore: player.balance, amount: amount, category: .paid, transaction: result.transaction)
        if let token = request.accountToken, tokenOwner == nil {
            try StoreAccountToken.bind(db, store: request.store, token: token, playerID: request.playerID, seq: result.transaction.seq)
        }
        return result
    }

    static func bonus(_ db: any SQLSession, _ checked: Checked<BonusRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        let expiry = try request.expiry
        if let expiry, expiry <= Timestamp.format(now) {
            throw WalletError.invalidRequest("expires_at must be in the future; \(request.expiresAt ?? "") has passed")
        }
        try requireKnownCurrency(db, request.currency, context: &context)
        let player = try Account.player(db, context: &context, request.playerID, currency: request.currency, debiting: nil)
        try LotStorage.requireRoom(db, account: player, balanceBefore: player.balance, amount: request.amount)
        let source = try Account.fetch(db, context: &context, owner: "@bonuses", currency: request.currency)
        var draft = LedgerTransaction(draftOf: .bonus, playerID: request.playerID, currency: request.currency, amount: request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.reasonCode = request.reasonCode
        draft.note = request.note
        var details: [String: JSONValue] = [:]
        if let expiry { details["expires_at"] = .string(expiry) }
        if let campaign = request.campaign { details["campaign"] = .string(campaign) }
        if !details.isEmpty { draft.metadata = try Metadata(.object(details)) }
        let result = try append(db, draft, legs: [(player, request.amount), (source, -request.amount)], key: key, now: now, context: &context)
        try LotStorage.credit(
            db, accountID: player.id, balanceBefore: player.balance, amount: request.amount, category: .bonus, expiresAt: expiry, transaction: result.transaction)
        return result
    }

    static func createHold(_ db: any SQLSession, _ checked: Checked<HoldRequest>, now: Date, context: inout BatchContext) throws -> HoldResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return try holdResult(db, replay) }
        try requireKnownCurrency(db, request.currency, context: &context)
        let lots = try settle(db, playerID: request.playerID, currency: request.currency, now: now, context: &context, debiting: request.amount)
        let player = try Account.player(db, context: &context, request.playerID, currency: request.currency, debiting: request.amount)
        let held = try Account.fetch(db, context: &context, owner: "@holds", currency: request.currency)
        let draws = try LotRules.draw(request.amount, from: lots, at: Timestamp.format(now), currency: request.currency)
        let id = RandomID.uuid()
        let expiresAt = Timestamp.format(now.addingTimeInterval(Double(request.expiresInSeconds)))
        var draft = LedgerTransaction(draftOf: .hold, playerID: request.playerID, currency: request.currency, amount: -request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.note = request.reason
        // The game's metadata as it sent it, within a spend's limits: the hold's id and expiry
        // are in `holds` (by `hold_seq`), and its capture or release names both.
        draft.metadata = request.metadata
        let result = try append(db, draft, legs: [(player, -request.amount), (held, request.amount)], key: key, now: now, context: &context)
        try LotStorage.apply(db, seq: result.transaction.seq, draws: draws)
        try db.execute(
            "INSERT INTO holds (id, player_id, currency, amount, status, expires_at, hold_seq) VALUES (?, ?, ?, ?, 'open', ?, ?)",
            [.text(id), .text(request.playerID), .text(request.currency), .integer(request.amount), .text(expiresAt), .integer(result.transaction.seq)])
        let hold = Hold(
            id: id, playerID: request.playerID, currency: request.currency, amount: request.amount, status: .open, expiresAt: expiresAt,
            holdSeq: result.transaction.seq, resolvedSeq: nil, captured: nil, placedBy: HoldParty(actor: request.actor))
        return HoldResult(hold: hold, transaction: result.transaction, balance: result.balance, replayed: false)
    }

    private static func holdResult(_ db: any SQLSession, _ result: MutationResult) throws -> HoldResult {
        guard let hold = try HoldStorage.find(db, seq: result.transaction.seq) else {
            throw WalletError.corrupt("transaction \(result.transaction.seq) has no hold")
        }
        return HoldResult(hold: hold, transaction: result.transaction, balance: result.balance, replayed: result.replayed)
    }

    /// Captures or releases an open hold, once: the key that resolved it replays its answer,
    /// any other request gets 409 `hold_<status>`. A hold past its expiry cannot be captured.
    static func resolveHold(_ db: any SQLSession, _ checked: Checked<HoldResolution>, now: Date, context: inout BatchContext) throws -> HoldResult {
        let (request, key) = (checked.request, checked.key)
        // Who may resolve it is checked before anything, a replay included: another player's
        // hold stays unknown, whatever key is sent.
        guard let hold = try HoldStorage.find(db, id: request.holdID) else { throw WalletError.notFound("no hold \(request.holdID)") }
        try Hold.requireResolvable(placedBy: hold.placedBy, wallet: hold.playerID, by: request.resolver, holdID: hold.id)
        if let replay = try key.replay(db, context: context) { return try holdResult(db, replay) }
        guard hold.status == .open else {
            throw WalletError.holdResolved(status: hold.status.rawValue, detail: "the hold was \(hold.status.rawValue) already (seq \(hold.resolvedSeq ?? 0)); nothing changed")
        }
        let expired = hold.isExpired(at: Timestamp.format(now))
        switch request.action {
        case .capture(let amount):
            if expired { throw WalletError.holdResolved(status: "expired", detail: "the hold expired at \(hold.expiresAt) and cannot be captured; nothing changed") }
            let captured = amount ?? hold.amount
            guard captured <= hold.amount else {
                throw WalletError.captureExceedsHold("the hold holds \(hold.amount) \(hold.currency); a capture of \(captured) is more")
            }
            return try resolve(db, hold, status: .captured, captured: captured, key: key, actor: request.actor, now: now, context: &context)
        case .release:
            return try resolve(db, hold, status: expired ? .expired : .released, captured: nil, key: key, actor: request.actor, now: now, context: &context)
        }
    }

    /// The `capture` or `release` transaction of a hold: `captured` to `@spend`, the rest back
    /// to the player's lots it came from (purchase lots before free ones).
    private static func resolve(
        _ db: any SQLSession, _ hold: Hold, status: Hold.Status, captured: Int64?, key: IdempotencyKey, actor: String, now: Date, context: inout BatchContext
    ) throws -> HoldResult {
        let player = try Account.fetch(db, context: &context, owner: LedgerRules.playerOwner(hold.playerID), currency: hold.currency)
        let held = try Account.fetch(db, context: &context, owner: "@holds", currency: hold.currency)
        let kept = captured ?? 0
        let returned = hold.amount - kept
        let drawn = try HoldStorage.draws(db, holdSeq: hold.holdSeq)
        let split = try LotRules.splitCapture(kept, of: drawn.draws)
        // What would go back to a lot past its expiry expires with it, in this same transaction:
        // it is never spendable, repays nothing, and no lot holds credits again after its expiry.
        let returns = LotRules.splitReturns(split.returned, lots: drawn.lots, at: Timestamp.format(now))
        // The rest is a credit like any other: a debt (a refund taken while the credits were
        // held) is repaid first, and only the rest goes back to its lots.
        let plan = LotRules.planReturn(returns.live, balance: player.balance)
        var legs: [(account: Account, amount: Int64)] = [(player, returned - returns.expired), (held, -hold.amount)]
        if kept > 0 { legs.append((try Account.fetch(db, context: &context, owner: "@spend", currency: hold.currency), kept)) }
        if returns.expired > 0 { legs.append((try Account.fetch(db, context: &context, owner: "@expired", currency: hold.currency), returns.expired)) }
        var draft = LedgerTransaction(
            draftOf: captured == nil ? .release : .capture, playerID: hold.playerID, currency: hold.currency, amount: returned - returns.expired, actor: actor)
        draft.idempotencyKey = key.key
        draft.note = status == .expired ? "hold \(hold.id) expired at \(hold.expiresAt)" : nil
        var details: [String: JSONValue] = ["hold_id": .string(hold.id), "hold_seq": .integer(hold.holdSeq), "status": .string(status.rawValue)]
        if returns.expired > 0 { details["expired"] = .integer(returns.expired) }
        draft.metadata = try Metadata(.object(details))
        let result = try append(db, draft, legs: legs, key: key, now: now, context: &context)
        try LotStorage.apply(db, seq: result.transaction.seq, draws: plan.toLots.map { LotDraw(lotID: $0.lotID, amount: -$0.amount) })
        try db.execute(
            "UPDATE holds SET status = ?, resolved_seq = ?, captured = ? WHERE id = ? AND status = 'open'",
            [.text(status.rawValue), .integer(result.transaction.seq), .integer(captured), .text(hold.id)])
        var resolved = hold
        resolved.status = status
        resolved.resolvedSeq = result.transaction.seq
        resolved.captured = captured
        return HoldResult(hold: resolved, transaction: result.transaction, balance: result.balance, replayed: false)
    }

    /// Releases up to `limit` holds past their expiry (status `expired`), soonest first.
    static func expireHolds(_ db: any SQLSession, limit: Int, now: Date, context: inout BatchContext) throws -> Int {
        let due = try db.all(
            "SELECT \(HoldStorage.columns) FROM \(HoldStorage.source) WHERE h.status = 'open' AND h.expires_at <= ? ORDER BY h.expires_at, h.id LIMIT ?",
            [.text(Timestamp.format(now)), .integer(Int64(limit))], HoldStorage.hold(from:))
        for hold in due { _ = try releaseExpired(db, hold, now: now, context: &context) }
        return due.count
    }

    private static func releaseExpired(_ db: any SQLSession, _ hold: Hold, now: Date, context: inout BatchContext) throws -> HoldResult {
        var canonical = CanonicalBytes()
        canonical.append("hold_expiry")
        canonical.append(hold.id)
        let key = IdempotencyKey(
            scope: "hold_resolution:\(hold.id)", key: "expiry", requestHash: canonical.sha256Hex(), reusedDetail: "the hold's expiry was booked already")
        return try resolve(db, hold, status: .expired, captured: nil, key: key, actor: "wallet:expiry", now: now, context: &context)
    }

    /// Books up to `limit` lots expired at `now`, soonest expiry first, across wallets.
    static func expireLots(_ db: any SQLSession, limit: Int, now: Date, context: inout BatchContext) throws -> Int {
        let due = try db.all(
            """
            SELECT \(LotStorage.columns(alias: "l")), a.owner, a.currency FROM lots l JOIN accounts a ON a.id = l.account_id
            WHERE l.remaining > 0 AND l.expires_at IS NOT NULL AND l.expires_at <= ? ORDER BY l.expires_at, l.id LIMIT ?
            """, [.text(Timestamp.format(now)), .integer(Int64(limit))]
        ) { row -> (Lot, String, String) in
            (try LotStorage.lot(from: row), String(try row.text(7).dropFirst(LedgerRules.playerOwner("").count)), try row.text(8))
        }
        var booked = 0
        for (lot, playerID, currency) in due where try expire(db, lot: lot, playerID: playerID, currency: currency, now: now, context: &context) {
            booked += 1
        }
        return booked
    }

    static func spend(_ db: any SQLSession, _ checked: Checked<SpendRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        try requireKnownCurrency(db, request.currency, context: &context)
        let lots = try settle(db, playerID: request.playerID, currency: request.currency, now: now, context: &context, debiting: request.amount)
        let player = try Account.player(db, context: &context, request.playerID, currency: request.currency, debiting: request.amount)
        let sink = try Account.fetch(db, context: &context, owner: "@spend", currency: request.currency)
        var draft = LedgerTransaction(draftOf: .spend, playerID: request.playerID, currency: request.currency, amount: -request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.note = request.reason
        draft.metadata = request.metadata
        let result = try append(db, draft, legs: [(player, -request.amount), (sink, request.amount)], key: key, now: now, context: &context)
        try LotStorage.apply(db, seq: result.transaction.seq, draws: LotRules.drawAvailable(request.amount, from: lots, at: result.transaction.createdAt))
        return result
    }

    static func adjust(_ db: any SQLSession, _ checked: Checked<AdjustRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        try requireKnownCurrency(db, request.currency, context: &context)
        let debit = request.amount < 0 && !request.allowNegative ? -request.amount : nil
        let lots = request.amount < 0 ? try settle(db, playerID: request.playerID, currency: request.currency, now: now, context: &context, debiting: debit) : []
        let player = try Account.player(db, context: &context, request.playerID, currency: request.currency, debiting: debit)
        if request.amount > 0 { try LotStorage.requireRoom(db, account: player, balanceBefore: player.balance, amount: request.amount) }
        let source = try Account.fetch(db, context: &context, owner: "@adjustments", currency: request.currency)
        var draft = LedgerTransaction(draftOf: .adjustment, playerID: request.playerID, currency: request.currency, amount: request.amount, actor: request.actor)
        draft.idempotencyKey = request.idempotencyKey
        draft.reasonCode = request.reasonCode
        draft.note = request.note
        draft.ticket = request.ticket
        let result = try append(db, draft, legs: [(player, request.amount), (source, -request.amount)], key: key, now: now, context: &context)
        if request.amount > 0 {
            try LotStorage.credit(db, accountID: player.id, balanceBefore: player.balance, amount: request.amount, category: .adjustment, transaction: result.transaction)
        } else {
            try LotStorage.apply(db, seq: result.transaction.seq, draws: LotRules.drawAvailable(-request.amount, from: lots, at: result.transaction.createdAt))
        }
        return result
    }

    /// Refunds a purchase up to `shareMillipercent` of it in all: a refund of 50% followed by one
    /// of 100% takes the other half. What earlier refunds (since the last reversal) already
    /// claimed is not claimed again; a share already reached changes nothing.
    static func refund(_ db: any SQLSession, _ checked: Checked<RefundRequest>, now: Date, context: inout BatchContext) throws -> MutationResult {
        let (request, key) = (checked.request, checked.key)
        if let replay = try key.replay(db, context: context) { return replay }
        guard let purchase = try LedgerReads.purchase(db, store: request.store, storeTransactionID: request.storeTransactionID) else {
            throw WalletError.notFound("no purchase for store transaction \(request.store)/\(request.storeTransactionID); nothing was refunded")
        }
        let corrections = try Corrections.of(db, purchase: purchase)
        let lots = try settle(db, playerID: purchase.playerID, currency: purchase.currency, now: now, context: &context)
        let player = try Account.fetch(db, context: &context, owner: LedgerRules.playerOwner(purchase.playerID), currency: purchase.currency)
        let (owed, taken) = try LedgerRules.refund(request, of: purchase, corrections: corrections, playerBalance: player.balance)
        let sink = try Account.fetch(db, context: &context, owner: "@refunds", currency: purchase.currency)
        var draft = LedgerTransaction(draftOf: .refund, playerID: purchase.playerID, currency: purchase.currency, amount: -taken, actor: request.actor)
        draft.idempotencyKey = request.storeTransactionID
        draft.store = request.store
        draft.storeTransactionID = request.storeTransactionID
        draft.refundOfSeq = purchase.seq
        draft.uncollected = owed - taken
        let result = try append(db, draft, legs: [(player, -taken), (sink, taken)], key: key, now: now, context: &context)
        // The purchase's own lot first: what is left of it is what the player has not spent.
        try LotStorage.apply(
            db, seq: result.transaction.seq, draws: LotRules.drawAvailable(taken, from: lots, at: result.transaction.createdAt, firstFrom: purchase.seq))
        return result
    }

    /// Re-credits what the purchase's refunds since the last reversal took back, keyed by the
    /// store transaction and the last refund reversed.
    static func reverseRefund(_ db: any SQLSession, store: String, storeTransactionID: String, actor: String, now: Date, context: inout BatchContext) throws -> MutationResult {
        guard let purchase = try LedgerReads.purchase(db, store: store, storeTransactionID: storeTransactionID) else {
            throw WalletError.notFound("no purchase for store transaction \(store)/\(storeTransactionID)")
        }
        let corrections = try Corrections.of(db, purchase: purchase)
        var canonical = CanonicalBytes()
        canonical.append("refund_reversal")
        canonical.append(store)
        canonical.append(storeTransactionID)
        let key = IdempotencyKey(
            scope: "refund_reversal:\(store):\(corrections.lastRefundSeq ?? 0)", key: storeTransactionID, requestHash: canonical.sha256Hex(),
            reusedDetail: "store transaction \(store)/\(storeTransactionID) had its refund reversed already")
        if let replay = try key.replay(db, context: context) { return replay }
        guard corrections.lastRefundSeq != nil, corrections.claimed > 0 else {
            throw WalletError.notFound("store transaction \(store)/\(storeTransactionID) has no refund to reverse")
        }
        let taken = corrections.taken
        let player = try Account.fetch(db, context: &context, owner: LedgerRules.playerOwner(purchase.playerID), currency: purchase.currency)
        let source = try Account.fetch(db, context: &context, owner: "@refunds", currency: purchase.currency)
        var draft = LedgerTransaction(draftOf: .refundReversal, playerID: purchase.playerID, currency: purchase.currency, amount: taken, actor: actor)
        draft.idempotencyKey = storeTransactionID
        draft.store = store
        draft.storeTransactionID = storeTransactionID
        draft.refundOfSeq = purchase.seq
        let result = try append(db, draft, legs: [(player, taken), (source, -taken)], key: key, now: now, context: &context)
        try LotStorage.credit(db, accountID: player.id, balanceBefore: player.balance, amount: taken, category: .paid, transaction: result.transaction)
        return result
    }

    static func setProduct(_ db: any SQLSession, _ update: ProductUpdate, now: Date, context: inout BatchContext) throws -> Product {
        try update.validate()
        // Naming a currency in the catalog is what makes it known to spends and adjustments.
        try db.execute("INSERT INTO currencies (code) VALUES (?) ON CONFLICT DO NOTHING", [.text(update.currency)])
        let product = Product(
            productID: update.productID, currency: update.currency, credits: update.credits,
            store: update.store, active: update.active, updatedAt: Timestamp.format(now))
        try db.execute(
            """
            INSERT INTO products (product_id, currency, credits, store, active, updated_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (product_id) DO UPDATE SET currency = excluded.currency, credits = excluded.credits,
                store = excluded.store, active = excluded.active, updated_at = excluded.updated_at
            """,
            [
                .text(product.productID), .text(product.currency), .integer(product.credits), .text(product.store),
                .integer(product.active ? 1 : 0), .text(product.updatedAt),
            ])
        return product
    }

    /// Settles the player's wallet before a debit reads its balance: its own holds past their
    /// expiry are released (status `expired`; their credits come back as every credit does, a
    /// debt repaid first), then its expired lots that still hold credits are booked as expiry to
    /// `@expired` (breakage). Expiry is a ledger entry, never silent: a debit never draws from an
    /// expired lot, and never finds credits locked by an expired hold. A debit of `debit` that
    /// the settled balance cannot cover is refused before anything is written
    /// (`LotRules.settledBalance`), so a refused debit leaves the wallet as it was.
    /// Returns the wallet's open lots after that: what the debit draws from (none for a wallet
    /// without an account yet).
    static func settle(
        _ db: any SQLSession, playerID: String, currency: String, now: Date, context: inout BatchContext, debiting debit: Int64? = nil
    ) throws -> [Lot] {
        guard let player = try Account.find(db, context: context, owner: LedgerRules.playerOwner(playerID), currency: currency) else { return [] }
        let at = Timestamp.format(now)
        let holds = try HoldStorage.expired(db, playerID: playerID, currency: currency, now: now)
        var lots = try LotStorage.open(db, accountID: player.id)
        guard !holds.isEmpty || lots.contains(where: { $0.isExpired(at: at) }) else { return lots }
        if let debit {
            let drawn = try holds.map { hold in try HoldStorage.draws(db, holdSeq: hold.holdSeq) }
            let settled = LotRules.settledBalance(
                player.balance, lots: lots + drawn.flatMap(\.lots), expiredHolds: zip(holds, drawn).map { ($0.amount, $1.draws) }, at: at)
            try LedgerRules.requireFunds(balance: settled, debit: debit, currency: currency)
        }
        for hold in holds { _ = try releaseExpired(db, hold, now: now, context: &context) }
        if !holds.isEmpty { lots = try LotStorage.open(db, accountID: player.id) }
        let expired = LotRules.expired(lots, at: at, limit: lots.count)
        if expired.count == 1, let lot = expired.first {
            try expire(db, lot: lot, playerID: playerID, currency: currency, now: now, context: &context)
        } else if expired.count > 1 {
            try expireTogether(db, expired, playerID: playerID, currency: currency, now: now, context: &context)
        }
        let booked = Set(expired.map(\.id))
        return booked.isEmpty ? lots : lots.filter { !booked.contains($0.id) }
    }

    /// One `expiry` transaction for several expired lots of one wallet (a debit's settling): their
    /// remainders leave the wallet for `@expired` together, each lot's share in its breakdown, so
    /// a wallet with thousands of expired lots costs one transaction, not thousands. Keyed by the
    /// seq it takes (`lots:<count>:at:<seq>`): it is booked because the lots hold credits past
    /// their expiry, read in this same write, so no key could replay it anyway.
    private static func expireTogether(_ db: any SQLSession, _ lots: [Lot], playerID: String, currency: String, now: Date, context: inout BatchContext) throws {
        let seq = (try context.head ?? LedgerReads.head(db)).seq + 1
        var canonical = CanonicalBytes()
        canonical.append("expiry")
        for lot in lots { canonical.append(lot.id) }
        let key = IdempotencyKey(
            scope: "expiry", key: "lots:\(lots.count):at:\(seq)", requestHash: canonical.sha256Hex(), reusedDetail: "these lots have expired already")
        let note = "\(lots.count) lots expired, from \(lots.first?.expiresAt ?? "") to \(lots.last?.expiresAt ?? "")"
        try bookExpiry(db, lots, key: key, note: note, playerID: playerID, currency: currency, now: now, context: &context)
    }

    /// The `expiry` transaction of one lot: its remainder leaves the wallet for `@expired`.
    /// Keyed `lot:<id>`. A lot that holds credits again after its expiry was booked (a hold
    /// released into it by a version before releases booked such credits themselves) is booked
    /// again under `lot:<id>:after:<seq>`, `seq` its last draw, so that no sweep is ever stuck on
    /// it. Returns whether it booked anything.
    @discardableResult
    static func expire(_ db: any SQLSession, lot: Lot, playerID: String, currency: String, now: Date, context: inout BatchContext) throws -> Bool {
        guard lot.remaining > 0 else { return false }
        var key = expiryKey(lot, after: nil)
        if try key.replay(db, context: context) != nil {
            let last = try db.integer("SELECT max(seq) FROM lot_draws WHERE lot_id = ?", [.integer(lot.id)]) ?? lot.sourceSeq
            key = expiryKey(lot, after: last)
        }
        let note = "lot \(lot.id) (\(lot.category.rawValue), credited at seq \(lot.sourceSeq)) expired at \(lot.expiresAt ?? "")"
        try bookExpiry(db, [lot], key: key, note: note, playerID: playerID, currency: currency, now: now, context: &context)
        return true
    }

    /// The one `expiry` transaction of `lots` (one wallet's): their remainders leave the wallet
    /// for `@expired`, each lot's share in the breakdown.
    private static func bookExpiry(
        _ db: any SQLSession, _ lots: [Lot], key: IdempotencyKey, note: String, playerID: String, currency: String, now: Date, context: inout BatchContext
    ) throws {
        let total = lots.reduce(Int64(0)) { $0 + $1.remaining }
        let player = try Account.fetch(db, context: &context, owner: LedgerRules.playerOwner(playerID), currency: currency)
        let breakage = try Account.fetch(db, context: &context, owner: "@expired", currency: currency)
        var draft = LedgerTransaction(draftOf: .expiry, playerID: playerID, currency: currency, amount: -total, actor: "wallet:expiry")
        draft.idempotencyKey = key.key
        draft.note = note
        let result = try append(db, draft, legs: [(player, -total), (breakage, total)], key: key, now: now, context: &context)
        try LotStorage.apply(db, seq: result.transaction.seq, draws: lots.map { LotDraw(lotID: $0.id, amount: $0.remaining) })
    }

    private static func expiryKey(_ lot: Lot, after lastDrawSeq: Int64?) -> IdempotencyKey {
        var canonical = CanonicalBytes()
        canonical.append("expiry")
        canonical.append(lot.id)
        // The first key's hash is what every version wrote for it.
        if let lastDrawSeq { canonical.append(lastDrawSeq) }
        let key = lastDrawSeq.map { "lot:\(lot.id):after:\($0)" } ?? "lot:\(lot.id)"
        return IdempotencyKey(scope: "expiry", key: key, requestHash: canonical.sha256Hex(), reusedDetail: "lot \(lot.id) has expired already")
    }

    private static func requireKnownCurrency(_ db: any SQLSession, _ currency: String, context: inout BatchContext) throws {
        if context.knownCurrencies.contains(Identifier(currency)) { return }
        guard try db.first("SELECT 1 FROM currencies WHERE code = ?", [.text(currency)], { _ in true }) == true else {
            throw WalletError.unknownCurrency("currency '\(currency)' is unknown: no product in the catalog uses it")
        }
        context.knownCurrencies.insert(Identifier(currency))
    }

    /// Appends `draft` with its postings as the next transaction of the chain, updates the
    /// balances, and records the idempotency key: one indivisible step of the ledger.
    /// The first leg is the player's; its balance after is the result's `balance`.
    private static func append(
        _ db: any SQLSession, _ draft: LedgerTransaction, legs: [(account: Account, amount: Int64)], key: IdempotencyKey, now: Date,
        context: inout BatchContext
    ) throws -> MutationResult {
        let head = try context.head ?? LedgerReads.head(db)
        let (transaction, balancesAfter) = try LedgerRules.seal(
            draft, legs: legs.map { LedgerRules.Leg(owner: $0.account.owner, currency: $0.account.currency, balance: $0.account.balance, amount: $0.amount) },
            head: head, id: context.makeTransactionID(), now: now)
        try insert(db, transaction)
        // The postings in one statement: one round trip fewer on PostgreSQL.
        try db.execute(
            legs.count == 2 ? insertTwoPostings : insertPostings(count: legs.count),
            zip(legs, balancesAfter).flatMap { leg, balanceAfter in
                [SQLValue.integer(transaction.seq), .integer(leg.account.id), .integer(leg.amount), .integer(balanceAfter)]
            })
        try key.record(db, seq: transaction.seq, context: &context)
        // Only now, with every statement done, may the batch's later operations rely on this one.
        // The balances themselves are written once per account when the batch ends
        // (`BatchContext.writeBalances`), in the same SQL transaction.
        context.head = (transaction.seq, transaction.hash)
        for (leg, balanceAfter) in zip(legs, balancesAfter) {
            context.update(Account(id: leg.account.id, owner: leg.account.owner, currency: leg.account.currency, balance: balanceAfter))
        }
        return MutationResult(transaction: transaction, balance: balancesAfter[0], replayed: false)
    }

    private static let insertTwoPostings = insertPostings(count: 2)

    private static func insertPostings(count: Int) -> String {
        "INSERT INTO postings (seq, account_id, amount, balance_after) VALUES " + Array(repeating: "(?, ?, ?, ?)", count: count).joined(separator: ", ")
    }

    private static func insert(_ db: any SQLSession, _ transaction: LedgerTransaction) throws {
        try db.execute(LedgerReads.insertTransaction, LedgerReads.values(of: transaction))
    }
}

extension IdempotencyKey {
    /// The original result if this key was used for this same request; throws
    /// `idempotencyKeyReused` if it was used for another; nil if unused.
    func replay(_ db: any SQLSession, context: BatchContext) throws -> MutationResult? {
        let used: (requestHash: String, seq: Int64)?
        switch context.keys[BatchContext.KeyID(scope, key)] {
        case .unused?:
            used = nil
        case .used(let requestHash, let seq)?:
            used = (requestHash, seq)
        case nil:
            used = try db.first("SELECT request_hash, seq FROM idempotency_keys WHERE scope = ? AND key = ?", [.text(scope), .text(key)]) { row in
                (requestHash: try row.text(0), seq: try row.integer(1))
            }
        }
        guard let used else { return nil }
        guard used.requestHash == requestHash else { throw WalletError.idempotencyKeyReused(reusedDetail) }
        let transaction = try LedgerReads.transaction(db, seq: used.seq)
        let playerOwner = LedgerRules.playerOwner(transaction.playerID)
        guard let posting = transaction.postings.first(where: { Identifier.same($0.account, playerOwner) }) else {
            throw WalletError.corrupt("transaction \(transaction.seq) has no posting for \(playerOwner)")
        }
        return MutationResult(transaction: transaction, balance: posting.balanceAfter, replayed: true)
    }

    func record(_ db: any SQLSession, seq: Int64, context: inout BatchContext) throws {
        try db.execute("INSERT INTO idempotency_keys (scope, key, request_hash, seq) VALUES (?, ?, ?, ?)", [.text(scope), .text(key), .text(requestHash), .integer(seq)])
        context.recordKey(scope: scope, key: key, requestHash: requestHash, seq: seq)
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

/// The latest state a store reported for one of its transactions (see `store_transaction_states`).
struct StoreTransactionState {
    enum State: String {
        case refunded
        case refundReversed = "refund_reversed"
    }

    var state: State
    var shareMillipercent: Int64
    /// The report's signing time, milliseconds since 1970.
    var reportedAt: Int64

    static func find(_ db: any SQLSession, store: String, storeTransactionID: String) throws -> StoreTransactionState? {
        try db.first(
            "SELECT state, share_thousandths, reported_at FROM store_transaction_states WHERE store = ? AND store_transaction_id = ?",
            [.text(store), .text(storeTransactionID)]
        ) { row in
            let stateText = try row.text(0)
            guard let state = State(rawValue: stateText) else {
                throw WalletError.corrupt("store transaction \(store)/\(storeTransactionID) has an unknown state '\(stateText.prefix(40))'")
            }
            return StoreTransactionState(state: state, shareMillipercent: try row.integer(1), reportedAt: try row.integer(2))
        }
    }

    func save(_ db: any SQLSession, store: String, storeTransactionID: String) throws {
        try db.execute(
            """
            INSERT INTO store_transaction_states (store, store_transaction_id, state, share_thousandths, reported_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (store, store_transaction_id) DO UPDATE SET state = excluded.state,
                share_thousandths = excluded.share_thousandths, reported_at = excluded.reported_at
            """,
            [.text(store), .text(storeTransactionID), .text(state.rawValue), .integer(shareMillipercent), .integer(reportedAt)])
    }
}

/// The player a store's account token was first credited to (`store_account_tokens`).
enum StoreAccountToken {
    static func owner(_ db: any SQLSession, store: String, token: String) throws -> String? {
        try db.first("SELECT player_id FROM store_account_tokens WHERE store = ? AND token = ?", [.text(store), .text(token)]) { row in try row.text(0) }
    }

    static func bind(_ db: any SQLSession, store: String, token: String, playerID: String, seq: Int64) throws {
        try db.execute("INSERT INTO store_account_tokens (store, token, player_id, seq) VALUES (?, ?, ?, ?)", [.text(store), .text(token), .text(playerID), .integer(seq)])
    }
}

/// A ledger account as read inside a write: its row id and current balance.
struct Account {
    let id: Int64
    let owner: String
    let currency: String
    let balance: Int64

    /// The account of `owner` in `currency`, created with a zero balance if it does not exist.
    static func fetch(_ db: any SQLSession, context: inout BatchContext, owner: String, currency: String) throws -> Account {
        if let account = try find(db, context: context, owner: owner, currency: currency) { return account }
        guard let id = try db.first("INSERT INTO accounts (owner, currency, balance) VALUES (?, ?, 0) RETURNING id", [.text(owner), .text(currency)], { row in try row.integer(0) })
        else { throw WalletError.storage("creating the account of \(owner) returned no id") }
        let account = Account(id: id, owner: owner, currency: currency, balance: 0)
        context.remember(account)
        return account
    }

    /// The player's account in `currency` for an operation that debits `debit` from it (nil:
    /// no funds needed). The funds are checked before a new wallet's account is created, so a
    /// refused debit writes nothing.
    static func player(_ db: any SQLSession, context: inout BatchContext, _ playerID: String, currency: String, debiting debit: Int64?) throws -> Account {
        let owner = LedgerRules.playerOwner(playerID)
        let existing = try find(db, context: context, owner: owner, currency: currency)
        if let debit { try LedgerRules.requireFunds(balance: existing?.balance ?? 0, debit: debit, currency: currency) }
        return try existing ?? fetch(db, context: &context, owner: owner, currency: currency)
    }

    /// The account of `owner` in `currency`, nil if it does not exist. An account the batch
    /// read or changed is taken from `context` (a changed one's row is written only when the
    /// batch ends), as is one its prefetch found missing.
    static func find(_ db: any SQLSession, context: BatchContext, owner: String, currency: String) throws -> Account? {
        let key = BatchContext.AccountKey(owner, currency)
        if let account = context.accounts[key] { return account }
        if context.absentAccounts.contains(key) { return nil }
        return try db.first("SELECT id, balance FROM accounts WHERE owner = ? AND currency = ?", [.text(owner), .text(currency)]) { row in
            Account(id: try row.integer(0), owner: owner, currency: currency, balance: try row.integer(1))
        }
    }
}

// What each operation looks up, for its batch's prefetch (`BatchContext.prefetch`).
extension Checked where Request == GrantRequest {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
}

extension Checked where Request == BonusRequest {
    var hints: WriteHints {
        WriteHints(keys: [(key.scope, key.key)], accounts: [(LedgerRules.playerOwner(request.playerID), request.currency), ("@bonuses", request.currency)])
    }
}

extension Checked where Request == HoldRequest {
    var hints: WriteHints {
        WriteHints(keys: [(key.scope, key.key)], accounts: [(LedgerRules.playerOwner(request.playerID), request.currency), ("@holds", request.currency)])
    }
}

extension Checked where Request == HoldResolution {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
}

extension Checked where Request == SpendRequest {
    var hints: WriteHints {
        WriteHints(keys: [(key.scope, key.key)], accounts: [(LedgerRules.playerOwner(request.playerID), request.currency), ("@spend", request.currency)])
    }
}

extension Checked where Request == AdjustRequest {
    var hints: WriteHints {
        WriteHints(keys: [(key.scope, key.key)], accounts: [(LedgerRules.playerOwner(request.playerID), request.currency), ("@adjustments", request.currency)])
    }
}

extension Checked where Request == RefundRequest {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
}
