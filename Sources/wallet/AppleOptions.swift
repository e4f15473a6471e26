import ArgumentParser
import Foundation
import WalletApple
import WalletCore

/// The App Store settings shared by `serve` and the Apple commands, with environment fallbacks.
struct AppleOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The app's bundle id; Apple purchases are refused (not_configured) without it (env WALLET_APPLE_BUNDLE_ID).", valueName: "id"))
    var appleBundleID: String?

    @Option(help: ArgumentHelp("Accepted App Store environments, comma-separated: production, sandbox (env WALLET_APPLE_ENVIRONMENTS; default production).", valueName: "list"))
    var appleEnvironments: String?

    @Option(help: ArgumentHelp("Extra trusted root certificates, PEM files, comma-separated (env WALLET_APPLE_ROOT_CERTS). Apple Root CA - G3 is built in.", valueName: "files"))
    var appleRootCerts: String?

    @Option(
        help: ArgumentHelp(
            "A UUID under which the game derives each player's purchase account token, UUIDv5(namespace, player id): every store purchase must then carry exactly that token for the player it credits (env WALLET_ACCOUNT_TOKEN_NAMESPACE; default: a token binds to the first player it credits).",
            valueName: "uuid"))
    var accountTokenNamespace: String?

    @Option(help: ArgumentHelp("How REFUND notifications treat spent credits: debt or floor (env WALLET_APPLE_REFUND_POLICY; default debt).", valueName: "policy"))
    var appleRefundPolicy: RefundPolicy?

    @Option(help: ArgumentHelp("The App Store Connect issuer id of the in-app purchase key, for the App Store Server API (env WALLET_APPLE_ISSUER_ID).", valueName: "id"))
    var appleIssuerID: String?

    @Option(help: ArgumentHelp("The in-app purchase key's id (env WALLET_APPLE_KEY_ID).", valueName: "id"))
    var appleKeyID: String?

    @Option(help: ArgumentHelp("The in-app purchase key, the .p8 PEM file App Store Connect gives (env WALLET_APPLE_PRIVATE_KEY: a path, or the PEM itself).", valueName: "file"))
    var applePrivateKey: String?

    @Option(name: .customLong("apple-api-url"), help: ArgumentHelp("The App Store Server API's production base URL (env WALLET_APPLE_API_URL; default \(AppStoreServerAPIConfiguration.productionURL)).", valueName: "url"))
    var appleAPIURL: String?

    @Option(name: .customLong("apple-sandbox-api-url"), help: ArgumentHelp("The App Store Server API's sandbox base URL (env WALLET_APPLE_SANDBOX_API_URL; default \(AppStoreServerAPIConfiguration.sandboxURL)).", valueName: "url"))
    var appleSandboxAPIURL: String?

    @Flag(help: ArgumentHelp("Answer Apple's CONSUMPTION_REQUESTs (Send Consumption Information), stating that the customer consented; needs the App Store Server API key (env WALLET_APPLE_SEND_CONSUMPTION=true)."))
    var appleSendConsumption = false

    @Flag(help: ArgumentHelp("Tell Apple the game provides a free sample or trial of its content (env WALLET_APPLE_SAMPLE_CONTENT_PROVIDED=true)."))
    var appleSampleContentProvided = false

    @Option(help: ArgumentHelp("The refund the consumption answers prefer: decline, grant_full or grant_prorated (env WALLET_APPLE_REFUND_PREFERENCE; default none stated).", valueName: "preference"))
    var appleRefundPreference: String?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// A boolean setting: its flag, else its variable (`true` or `false`).
    private func enabled(_ flag: Bool, _ variable: String) throws -> Bool {
        if flag { return true }
        switch environment[variable]?.lowercased() {
        case nil, "", "false", "0": return false
        case "true", "1": return true
        case let other?: throw ValidationError("\(variable) must be true or false, not '\(other.prefix(40))'.")
        }
    }

    /// The consumption answers' policy, or nil when the operator does not answer.
    private func consumptionReplies() throws -> ConsumptionReplyPolicy? {
        guard try enabled(appleSendConsumption, "WALLET_APPLE_SEND_CONSUMPTION") else { return nil }
        let preference = (appleRefundPreference ?? environment["WALLET_APPLE_REFUND_PREFERENCE"]).flatMap { $0.isEmpty ? nil : $0.uppercased() }
        let sampleContentProvided = try enabled(appleSampleContentProvided, "WALLET_APPLE_SAMPLE_CONTENT_PROVIDED")
        do {
            return try ConsumptionReplyPolicy(sampleContentProvided: sampleContentProvided, refundPreference: preference == "NONE" ? nil : preference)
        } catch {
            throw ValidationError(error.detail)
        }
    }

    func validate() throws {
        let configuration = try configuration()
        let api = try serverAPI()
        if configuration?.consumptionReplies != nil, api == nil {
            throw ValidationError("--apple-send-consumption needs the App Store Server API key: --apple-issuer-id, --apple-key-id and --apple-private-key.")
        }
    }

    /// What the Apple routes and commands run on, or nil when no bundle id is set.
    func purchases(ledger: any LedgerWriting & LedgerReading) throws -> ApplePurchases? {
        try configuration().map { ApplePurchases(configuration: $0, ledger: ledger, api: try serverAPI()) }
    }

    /// The App Store Server API client, or nil when no API key is configured. A key half
    /// configured (an issuer id without a key, say) is refused, naming what is missing.
    func serverAPI() throws -> AppStoreServerAPI? {
        let issuerID = appleIssuerID ?? environment["WALLET_APPLE_ISSUER_ID"]
        let keyID = appleKeyID ?? environment["WALLET_APPLE_KEY_ID"]
        let privateKey = applePrivateKey ?? environment["WALLET_APPLE_PRIVATE_KEY"]
        let given = [("--apple-issuer-id", issuerID), ("--apple-key-id", keyID), ("--apple-private-key", privateKey)]
        let missing = given.filter { $0.1?.isEmpty ?? true }.map(\.0)
        if missing.count == given.count { return nil }
        guard missing.isEmpty, let issuerID, let keyID, let privateKey else {
            throw ValidationError("the App Store Server API needs an issuer id, a key id and a private key; missing \(missing.joined(separator: ", ")).")
        }
        guard let bundleID = appleBundleID ?? environment["WALLET_APPLE_BUNDLE_ID"], !bundleID.isEmpty else {
            throw ValidationError("the App Store Server API needs the app's bundle id too: --apple-bundle-id or WALLET_APPLE_BUNDLE_ID.")
        }
        // The PEM itself, or a path: a value holding a PEM marker is never used as a path, and
        // no message ever repeats the value (it may be the key).
        let pem: String
        if privateKey.contains("-----BEGIN") {
            pem = privateKey.trimmingCharacters(in: CharacterSet(charactersIn: "\"' \t\r\n"))
        } else {
            guard let contents = try? String(contentsOfFile: privateKey, encoding: .utf8) else {
                throw ValidationError("cannot read the Apple private key file given by --apple-private-key (or WALLET_APPLE_PRIVATE_KEY).")
            }
            pem = contents
        }
        do {
            let credentials = try AppStoreServerAPICredentials(issuerID: issuerID, keyID: keyID, privateKeyPEM: pem, bundleID: bundleID)
            return AppStoreServerAPI(
                configuration: try AppStoreServerAPIConfiguration(
                    credentials: credentials, productionURL: appleAPIURL ?? environment["WALLET_APPLE_API_URL"] ?? AppStoreServerAPIConfiguration.productionURL,
                    sandboxURL: appleSandboxAPIURL ?? environment["WALLET_APPLE_SANDBOX_API_URL"] ?? AppStoreServerAPIConfiguration.sandboxURL))
        } catch {
            throw ValidationError(error.detail)
        }
    }

    /// How purchases' account tokens tie them to players: derived from the player id under the
    /// configured namespace, else bound on first use. Named without a store: Google's
    /// `obfuscatedExternalAccountId` takes the same setting.
    func accountTokenBinding() throws -> AccountTokenBinding {
        try Self.accountTokenBinding(namespace: accountTokenNamespace ?? environment["WALLET_ACCOUNT_TOKEN_NAMESPACE"])
    }

    /// The binding a `--account-token-namespace` value (or its variable's) names: the one parser
    /// for the Apple and Google commands alike.
    static func accountTokenBinding(namespace text: String?) throws -> AccountTokenBinding {
        guard let text, !text.isEmpty else { return .firstUse }
        guard let namespace = UUID(uuidString: text) else {
            throw ValidationError("--account-token-namespace (or WALLET_ACCOUNT_TOKEN_NAMESPACE) must be a UUID such as 6ba7b810-9dad-11d1-80b4-00c04fd430c8, not '\(text.prefix(40))'.")
        }
        return .derived(namespace: namespace)
    }

    /// The verifier's configuration, or nil when no bundle id is set.
    func configuration() throws -> AppleConfiguration? {
        guard let bundleID = appleBundleID ?? environment["WALLET_APPLE_BUNDLE_ID"], !bundleID.isEmpty else { return nil }
        let environmentNames = (appleEnvironments ?? environment["WALLET_APPLE_ENVIRONMENTS"] ?? "production")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let environments = try environmentNames.map { name in
            switch name {
            case "production": AppleConfiguration.Environment.production
            case "sandbox": AppleConfiguration.Environment.sandbox
            default: throw ValidationError("Apple environments are production and sandbox, not '\(name)'.")
            }
        }
        let rootFiles = (appleRootCerts ?? environment["WALLET_APPLE_ROOT_CERTS"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let roots = try rootFiles.filter { !$0.isEmpty }.map { path in
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else { throw ValidationError("cannot read the root certificate \(path).") }
            return pem
        }
        let policyText = environment["WALLET_APPLE_REFUND_POLICY"] ?? RefundPolicy.debt.rawValue
        guard let policy = appleRefundPolicy ?? RefundPolicy(rawValue: policyText) else {
            throw ValidationError("WALLET_APPLE_REFUND_POLICY must be debt or floor, not '\(policyText)'.")
        }
        let replies = try consumptionReplies()
        let binding = try accountTokenBinding()
        do {
            var configuration = try AppleConfiguration(bundleID: bundleID, environments: Set(environments), extraRootsPEM: roots, refundPolicy: policy)
            configuration.consumptionReplies = replies
            configuration.accountTokenBinding = binding
            return configuration
        } catch {
            throw ValidationError(error.detail)
        }
    }
}
