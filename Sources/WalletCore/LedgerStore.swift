/// The ledger's operations, as the server and the CLI use them, in the parts callers need:
/// writes, reads, audit, API keys, readiness and the stores' reply outbox. Every mutation is one invariant-preserving
/// write: it fully happens or leaves nothing behind, and it is idempotent under its key.
/// `SQLLedgerStore` implements them all once, on SQLite or PostgreSQL; the server and the CLI
/// see only these protocols, each part of the server only the parts it uses.
public typealias LedgerStore = LedgerWriting & LedgerReading & LedgerAuditing & APIKeyStore & ReadinessCheck & ConsumptionReplyOutbox & PurchaseFinishOutbox & WorkLeases
    & EventFeed & WebhookStore & StaffReading

/// The ledger's mutations.
public protocol LedgerWriting: Sendable {
    /// Creates or replaces a catalog entry; a new currency code becomes known.
    func setProduct(_ update: ProductUpdate) async throws(WalletError) -> Product
    /// Credits `credits × quantity` for a verified store transaction, exactly once.
    func grant(_ request: GrantRequest) async throws(WalletError) -> MutationResult
    /// Credits several store transactions in one write: each on its own terms (one refused, say
    /// credited to another player, leaves the others), all committed together. The outcomes
    /// are in the requests' order; a replayed grant is a success with `replayed` set.
    func grantEach(_ requests: [GrantRequest]) async throws(WalletError) -> [Result<MutationResult, WalletError>]
    /// Credits a bonus: a lot that may expire (only bonuses do).
    func bonus(_ request: BonusRequest) async throws(WalletError) -> MutationResult
    /// Books every lot expired at the store's clock as an `expiry` transaction, at most `limit`
    /// of them; returns how many were booked.
    func expireLots(limit: Int) async throws(WalletError) -> Int
    /// Reserves credits in `@holds` until captured, released or expired.
    func createHold(_ request: HoldRequest) async throws(WalletError) -> HoldResult
    /// Captures or releases an open hold, once.
    func resolveHold(_ request: HoldResolution) async throws(WalletError) -> HoldResult
    /// Releases every hold past its expiry (status `expired`), at most `limit`; returns how many.
    func expireHolds(limit: Int) async throws(WalletError) -> Int
    /// Debits the wallet, never below zero.
    func spend(_ request: SpendRequest) async throws(WalletError) -> MutationResult
    /// Credits or debits the wallet as a support correction.
    func adjust(_ request: AdjustRequest) async throws(WalletError) -> MutationResult
    /// Takes back a purchase's credits under the request's policy, at most once per purchase.
    func refund(_ request: RefundRequest) async throws(WalletError) -> MutationResult
    /// Applies a verified store notification once (by its UUID): its ledger effect and its record
    /// are one write. A notification about a purchase the wallet never credited is recorded.
    func recordNotification(_ notification: StoreNotification) async throws(WalletError) -> NotificationOutcome
    /// Support's grant, revocation or extension of a player's entitlement, once under its key.
    func changeEntitlement(_ request: EntitlementChangeRequest) async throws(WalletError) -> EntitlementChangeResult
}

/// What players, games and support read.
public protocol LedgerReading: Sendable {
    /// The whole catalog, ordered by product id.
    func products() async throws(WalletError) -> [Product]
    /// The player's balances; the default currency is always listed.
    func balances(playerID: PlayerID) async throws(WalletError) -> WalletBalances
    /// A page of the player's open lots, per currency in burn order (expired ones not yet booked last).
    func lots(_ query: LotQuery) async throws(WalletError) -> LotPage
    /// The player's open holds, then the 50 most recent resolved ones.
    func holds(playerID: PlayerID) async throws(WalletError) -> [Hold]
    /// A page of the player's transactions, newest first.
    func history(_ query: HistoryQuery) async throws(WalletError) -> HistoryPage
    /// The purchase that credited a store transaction, or nil when none did.
    func purchase(store: String, storeTransactionID: String) async throws(WalletError) -> LedgerTransaction?
    /// Opening balance, transactions and closing balance per currency for a period.
    func statement(_ query: StatementQuery) async throws(WalletError) -> Statement
    /// The player's entitlements by name, each with the purchases and changes behind it.
    func entitlements(playerID: PlayerID) async throws(WalletError) -> EntitlementList
    /// One entitlement, now: one indexed read (never owned: not active, no items).
    func entitlement(playerID: PlayerID, name: EntitlementName) async throws(WalletError) -> Entitlement
}

/// What auditors run: the chain's check, its head, and exports.
public protocol LedgerAuditing: Sendable {
    /// Recomputes the hash chain, every transaction's sums and every balance. `progress`, if
    /// given, hears the number of transactions checked so far, now and then.
    func verify(progress: (@Sendable (Int64) -> Void)?) async throws(WalletError) -> VerifyReport
    /// Transactions per UTC day, kind and currency over a period: counts and sums of magnitudes.
    func volume(_ query: VolumeQuery) async throws(WalletError) -> [DailyVolume]
    /// The last transaction's seq, hash and time: what auditors note to check exports later.
    func head() async throws(WalletError) -> LedgerHead
    /// The export of a period as a stream of text chunks, all from one consistent snapshot,
    /// read page by page as the consumer asks.
    func export(_ query: ExportQuery, format: ExportFormat) async throws(WalletError) -> ExportStream
}

extension LedgerReading {
    /// Every open lot of the player, read a page of `Limits.pageSizeMax` at a time (for the CLI,
    /// which lists them all as it always did).
    public func allLots(playerID: PlayerID) async throws(WalletError) -> [WalletLot] {
        var lots: [WalletLot] = []
        var query = LotQuery(playerID: playerID, limit: Limits.pageSizeMax)
        while true {
            let page = try await self.lots(query)
            lots += page.lots
            guard let next = page.next else { return lots }
            query.after = next
        }
    }
}

/// The API keys that authenticate service, support, auditor and admin callers.
public protocol APIKeyStore: Sendable {
    /// Creates an API key; only the SHA-256 of its secret is stored.
    func createAPIKey(role: KeyRole, name: String) async throws(WalletError) -> CreatedAPIKey
    /// Every key, revoked ones included, oldest first.
    func apiKeys() async throws(WalletError) -> [APIKey]
    /// Revokes a key at once; revoking twice answers the first revocation.
    func revokeAPIKey(id: String) async throws(WalletError) -> APIKey
    /// The active key whose secret this is, or nil.
    func authenticate(secret: String) async throws(WalletError) -> APIKey?
}

/// Whether the storage can serve requests now.
public protocol ReadinessCheck: Sendable {
    /// Succeeds when the storage answers a read (and its writes can commit).
    func checkReadiness() async throws(WalletError)
}

extension LedgerAuditing {
    public func verify() async throws(WalletError) -> VerifyReport {
        try await verify(progress: nil)
    }
}
