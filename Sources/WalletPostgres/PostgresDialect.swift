import Synchronization

/// The ledger's SQL, written with `?` parameters (SQLite's), as PostgreSQL reads it.
enum PostgresDialect {
    private static let cache = Mutex<[String: String]>([:])

    /// Whether `sql` is worth a prepared statement: a query or a change of rows. Transaction
    /// control and schema statements run as they are.
    static func preparable(_ sql: String) -> Bool {
        let head = sql.prefix(7).uppercased()
        return head.hasPrefix("SELECT") || head.hasPrefix("INSERT") || head.hasPrefix("UPDATE") || head.hasPrefix("DELETE")
    }

    /// `sql` with each `?` outside quotes numbered `$1`, `$2`, ... in order, and each `?N` as `$N`.
    static func numbered(_ sql: String) -> String {
        if let cached = cache.withLock({ $0[sql] }) { return cached }
        var result = ""
        var next = 1
        var quoted = false
        var characters = sql.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            if character == "'" { quoted.toggle() }
            guard character == "?", !quoted else {
                result.append(character)
                continue
            }
            var digits = ""
            while let digit = pending, digit.isASCII, digit.isNumber {
                digits.append(digit)
                pending = characters.next()
            }
            if digits.isEmpty {
                digits = String(next)
                next += 1
            }
            result += "$" + digits
        }
        // Statements are a fixed set written in the code: the cache stays small.
        cache.withLock { $0[sql] = result }
        return result
    }
}
