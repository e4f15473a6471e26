import Foundation

/// Work that one instance at a time does (Google Play's catch-up), held by one run under a name
/// until the run gives it back or `expiresAt` passes: a run that crashed holds it no longer than that.
public struct WorkLease: Codable, Sendable, Equatable {
    public var name: String
    /// The run that holds it (a random id per run).
    public var holder: String
    /// RFC 3339 UTC with milliseconds, as the ledger writes times.
    public var expiresAt: String

    public init(name: String, holder: String, expiresAt: String) {
        self.name = name
        self.holder = holder
        self.expiresAt = expiresAt
    }

    /// Whether `holder` may take the lease at `now` from `current`: free, lapsed, or its own already.
    package static func mayTake(_ current: WorkLease?, holder: String, at now: String) -> Bool {
        guard let current else { return true }
        return Identifier.same(current.holder, holder) || current.expiresAt <= now
    }

    /// The longest a lease is taken for: a run that needs longer takes it again.
    public static let durationMax: Duration = .seconds(86_400)

    package static func validate(name: String, holder: String) throws(WalletError) {
        try Validate.visibleText(name, field: "lease name", bytesMax: 64)
        try Validate.asciiIdentifier(holder, field: "lease holder")
        guard holder.utf8.count <= 64 else { throw .invalidRequest("a lease holder is at most 64 characters") }
    }
}

/// Leases on work one instance at a time does, kept in the ledger's database so that every
/// `wallet serve` instance and the CLI beside them see the same ones.
public protocol WorkLeases: Sendable {
    /// Takes the lease `name` for `holder` until `duration` from the store's clock, unless another
    /// holder has it unexpired; answers the lease as it stands (taken when its holder is `holder`).
    func takeLease(_ name: String, holder: String, for duration: Duration) async throws(WalletError) -> WorkLease
    /// Gives the lease back, if `holder` still holds it.
    func releaseLease(_ name: String, holder: String) async throws(WalletError)
}
