/// What support sends a player who disputes a charge: per currency, the balance at the start
/// of the period, every transaction in it, and the balance at its end.
public struct Statement: Codable, Sendable, Equatable {
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

    package init(playerID: String, from: String?, to: String?, currencies: [CurrencyStatement]) {
        self.playerID = playerID
        self.from = from
        self.to = to
        self.currencies = currencies
    }
}

/// A statement request: a player and an optional period (RFC 3339, `to` exclusive).
public struct StatementQuery: Sendable, Equatable {
    public var playerID: String
    public var from: String?
    public var to: String?

    /// A statement lists at most this many transactions; a longer period must be split.
    public static let transactionsMax = 10_000

    public init(playerID: String, from: String? = nil, to: String? = nil) {
        self.playerID = playerID
        self.from = from
        self.to = to
    }
}
