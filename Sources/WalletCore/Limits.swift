/// The bounds on every input, in one place (TigerBeetle style: put a limit on everything).
public enum Limits {
    /// Largest amount one spend, adjustment or grant may move.
    public static let amountPerOperationMax: Int64 = 1_000_000_000
    /// Largest number of credits one unit of a product may grant.
    public static let productCreditsMax: Int64 = 1_000_000_000
    /// Largest quantity of one store transaction.
    public static let quantityMax: Int64 = 100
    /// Most store transactions credited in one write (`grantEach`): a customer's whole
    /// consumable history as the App Store Server API pages it (50 pages of 20).
    public static let grantsPerWriteMax = 1_000
    /// Length limit, in UTF-8 bytes, of player ids, idempotency keys, store transaction ids,
    /// product ids, tickets and actors.
    public static let identifierBytesMax = 255
    /// Length limit, in UTF-8 bytes, of a store name such as `apple`.
    public static let storeBytesMax = 32
    /// Length limit, in UTF-8 bytes, of a currency code such as `credits`.
    public static let currencyBytesMax = 16
    /// Length limit, in UTF-8 bytes, of an adjustment reason code such as `goodwill`.
    public static let reasonCodeBytesMax = 64
    /// Length limit, in UTF-8 bytes, of a spend reason.
    public static let reasonBytesMax = 255
    /// Length limit, in UTF-8 bytes, of an adjustment note.
    public static let noteBytesMax = 2_000
    /// Length limit, in UTF-8 bytes, of a spend's metadata once serialised as JSON.
    public static let metadataBytesMax = 4_096
    /// Deepest nesting of objects and arrays in metadata, the metadata object itself counting
    /// as one: every reader (request bodies, where metadata is a member, and export lines) then
    /// sees at most `metadataDepthMax + 1` levels, the strict parser's limit.
    public static let metadataDepthMax = 63
    /// Most open lots (with credits left) one wallet keeps in one currency. A debit reads and
    /// draws from them in one write, so they are bounded: at this many, a credit that would
    /// make another lot is refused (`too_many_lots`); a debit from all of them still works on
    /// both stores, its statements cut to the engines' parameter limits.
    public static let openLotsPerWalletMax: Int64 = 100_000
    /// Largest history page.
    public static let pageSizeMax = 500
    /// History page size when the caller gives none.
    public static let pageSizeDefault = 50
    /// Longest line (CSV record) `verify --export` reads. The exporter's longest line, a
    /// posting of a transaction whose every field is at its limit, is under 20 KiB; a longer
    /// one is refused as not a wallet export, so a hostile file cannot make it buffer more.
    public static let exportRecordBytesMax = 64 * 1024
    /// A refund share is given in millipercent (thousandths of a percent: 100,000 is the whole
    /// purchase), as Apple's `revocationPercentage`; the stored columns keep the older name
    /// `share_thousandths`.
    public static let refundShareMax: Int64 = 100_000
}
