import WalletCore

/// A ledger account as read inside a write: its row id and current balance.
struct Account: Equatable {
    let id: Int64
    let owner: String
    let currency: String
    let balance: Int64

    /// The account of `owner` in `currency`, created with a zero balance if it does not exist.
    static func fetch(_ db: any SQLSession, context: inout BatchContext, owner: String, currency: String) throws -> Account {
        if let account = try find(db, context: &context, owner: owner, currency: currency) { return account }
        guard let id = try db.first("INSERT INTO accounts (owner, currency, balance) VALUES (?, ?, 0) RETURNING id", [.text(owner), .text(currency)], { row in try row.integer(0) })
        else { throw WalletError.storage("creating the account of \(owner) returned no id") }
        let account = Account(id: id, owner: owner, currency: currency, balance: 0)
        context.remember(account)
        return account
    }

    /// The account of `owner` in `currency`, nil if it does not exist. An account the batch
    /// read or changed is taken from `context` (a changed one's row is written only when the
    /// batch ends), as is one found missing; what is read here is kept in `context`, so that
    /// the write which decided on it and then posts to it (or creates it) reads it once.
    static func find(_ db: any SQLSession, context: inout BatchContext, owner: String, currency: String) throws -> Account? {
        let key = BatchContext.AccountKey(owner, currency)
        if let account = context.accounts[key] { return account }
        if context.absentAccounts.contains(key) { return nil }
        let account = try db.first("SELECT id, balance FROM accounts WHERE owner = ? AND currency = ?", [.text(owner), .text(currency)]) { row in
            Account(id: try row.integer(0), owner: owner, currency: currency, balance: try row.integer(1))
        }
        if let account { context.remember(account) } else { context.rememberAbsent(key) }
        return account
    }
}
