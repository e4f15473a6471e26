import WalletCore

// What each operation looks up, for its batch's prefetch (`BatchContext.prefetch`): its key,
// and for an operation on one wallet, that wallet's account and its counterpart's.
extension Checked where Request == GrantRequest {
    var hints: WriteHints { WriteHints(keys: [(key.scope, key.key)]) }
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
