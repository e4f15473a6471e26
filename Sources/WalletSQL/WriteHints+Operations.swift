import WalletCore

// What each operation looks up, for its batch's prefetch (`BatchContext.prefetch`): its key;
// for an operation on one wallet, that wallet's account and its counterpart's; for a grant,
// also its store transaction's reported state.
extension Checked where Request == GrantRequest {
    /// Its key, the state reported for its store transaction, and the player's and the store's
    /// accounts in the default currency, which most products credit (a grant of another
    /// currency reads its accounts itself).
    var hints: WriteHints {
        WriteHints(
            keys: [(key.scope, key.key)],
            accounts: [(AccountOwner.player(request.playerID.text).text, defaultCurrency), (SystemAccount.store(request.store).text, defaultCurrency)],
            storeTransactions: [(request.store, request.storeTransactionID)])
    }
}

extension Checked where Request == HoldResolution {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
}

extension Checked where Request == RefundRequest {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
}

extension Checked where Request: WalletOperation {
    var hints: WriteHints {
        WriteHints(
            keys: [(key.scope, key.key)],
            accounts: [(AccountOwner.player(request.playerID.text).text, request.currency), (Request.counterpart.text, request.currency)])
    }
}
