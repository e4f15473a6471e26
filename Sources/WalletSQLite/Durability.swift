/// How hard a commit waits for the disk: SQLite's `synchronous` setting, which the CLI's
/// `--durability` option chooses (through `WalletStores`, which names it for the CLI).
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous=FULL`: an acknowledged write survives power loss. The default.
    case full
    /// `synchronous=NORMAL`: faster; the last commits may be lost on power loss (never corrupted).
    case normal
}
