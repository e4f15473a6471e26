/// What support sends a player who disputes a charge: per currency, the balance at the start
/// of the period, every transaction in it, and the balance at its end.
public struct Statement: Codable, Sendable, Equatable {
    /// Text, as every answer names a player (see `LedgerTransaction.playerID`).
    public var playerID: String
    public var from: String?
    public var to: String?
    public var currencies: [CurrencyStatement]

    public struct CurrencyStatement: Codable, Sendable, Equatable {
        public var currency: String
        public var openingBalance: Int64
        /// Always `openingBalance` plus the transactions' amounts.
        public var closingBalance: Int64
        public var transactions: [LedgerTransaction]

        enum CodingKeys: String, CodingKey {
            case currency, transactions
            case openingBalance = "opening_balance"
            case closingBalance = "closing_balance"
        }

        package init(currency: String, openingBalance: Int64, closingBalance: Int64, transactions: [LedgerTransaction]) {
            self.currency = currency
            self.openingBalance = openingBalance
            self.closingBalance = closingBalance
            self.transactions = transactions
        }
    }

    package enum CodingKeys: String, CodingKey {
        case from, to, currencies
        case playerID = "player_id"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(playerID, forKey: .playerID)
        try container.encode(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encode(currencies, forKey: .currencies)
    }

    package init(playerID: PlayerID, from: String?, to: String?, currencies: [CurrencyStatement]) {
        self.playerID = playerID.text
        self.from = from
        self.to = to
        self.currencies = currencies
    }
}

/// A statement request: a player and an optional period (RFC 3339, `to` exclusive).
public struct StatementQuery: Sendable, Equatable {
    public var playerID: PlayerID
    public var from: String?
    public var to: String?

    /// A statement lists at most this many transactions; a longer period must be split.
    public static let transactionsMax = 10_000

    public init(playerID: PlayerID, from: String? = nil, to: String? = nil) {
        self.playerID = playerID
        self.from = from
        self.to = to
    }
}

/// A period whose activity is summed per day (`LedgerAuditing.volume`).
public struct VolumeQuery: Sendable, Equatable {
    public var from: String
    public var to: String

    /// The longest period summed at once.
    public static let daysMax = 366

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// The bounds in the ledger's timestamp format.
    package func bounds() throws(WalletError) -> (from: String, to: String) {
        let fromDate = try Timestamp.date(from, field: .member("from"))
        let toDate = try Timestamp.date(to, field: .member("to"))
        guard fromDate < toDate else { throw .invalidRequest("from must be before to", field: "to") }
        guard toDate.timeIntervalSince(fromDate) <= Double(Self.daysMax) * 86_400 else {
            throw .invalidRequest("the period may span at most \(Self.daysMax) days", field: "to")
        }
        return (Timestamp.format(fromDate), Timestamp.format(toDate))
    }
}

/// One day's transactions of one kind and currency (UTC days).
public struct DailyVolume: Codable, Sendable, Equatable {
    /// `2026-11-22`.
    public var day: String
    public var kind: TransactionKind
    public var currency: String
    public var count: Int64
    /// The sum of the amounts' magnitudes.
    public var amount: Int64

    package init(day: String, kind: TransactionKind, currency: String, count: Int64, amount: Int64) {
        self.day = day
        self.kind = kind
        self.currency = currency
        self.count = count
        self.amount = amount
    }
}
