import ArgumentParser
import Foundation
import WalletCore
import WalletGoogle

/// The Google Play settings shared by `serve` and the Google commands, with environment fallbacks.
struct GoogleOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The app's package name; Google purchases are refused (not_configured) without it (env WALLET_GOOGLE_PACKAGE_NAME).", valueName: "name"))
    var googlePackageName: String?

    @Option(
        help: ArgumentHelp(
            "The service account's key file exactly as Google Cloud issues it (env WALLET_GOOGLE_SERVICE_ACCOUNT: a path, or the JSON itself). Never printed.",
            valueName: "file"))
    var googleServiceAccount: String?

    @Option(name: .customLong("google-api-url"), help: ArgumentHelp("The Android Publisher API's base URL (env WALLET_GOOGLE_API_URL; default \(GooglePlayAPIConfiguration.productionURL)).", valueName: "url"))
    var googleAPIURL: String?

    @Flag(help: ArgumentHelp("Credit license testers' test purchases (env WALLET_GOOGLE_ALLOW_TEST_PURCHASES=true; default refused)."))
    var googleAllowTestPurchases = false

    @Option(help: ArgumentHelp("How voided purchases treat spent credits: debt or floor (env WALLET_GOOGLE_REFUND_POLICY; default debt).", valueName: "policy"))
    var googleRefundPolicy: RefundPolicy?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    private func setting(_ option: String?, _ variable: String) -> String? {
        let value = option ?? environment[variable]
        return value?.isEmpty == true ? nil : value
    }

    func validate() throws {
        _ = try configuration(binding: .firstUse)
    }

    /// Refuses, before any database is opened, a command that must ask Google but has no client.
    func requireAPI() throws {
        guard try api() != nil else {
            throw ValidationError("this command asks Google Play: give --google-package-name and --google-service-account (or WALLET_GOOGLE_PACKAGE_NAME and WALLET_GOOGLE_SERVICE_ACCOUNT).")
        }
    }

    /// The Android Publisher API client, or nil when no package name is set. A package name
    /// without a service account (or the reverse) is refused, naming what is missing.
    func api() throws -> GooglePlayAPI? {
        let packageName = setting(googlePackageName, "WALLET_GOOGLE_PACKAGE_NAME")
        let key = setting(googleServiceAccount, "WALLET_GOOGLE_SERVICE_ACCOUNT")
        switch (packageName, key) {
        case (nil, nil): return nil
        case (nil, _?): throw ValidationError("--google-service-account needs --google-package-name (or WALLET_GOOGLE_PACKAGE_NAME).")
        case (_?, nil): throw ValidationError("--google-package-name needs --google-service-account (or WALLET_GOOGLE_SERVICE_ACCOUNT): the wallet asks Google for every purchase.")
        case (let packageName?, let key?):
            do {
                let account = try GoogleServiceAccount.load(key)
                return GooglePlayAPI(
                    configuration: try GooglePlayAPIConfiguration(
                        serviceAccount: account, packageName: packageName,
                        baseURL: setting(googleAPIURL, "WALLET_GOOGLE_API_URL") ?? GooglePlayAPIConfiguration.productionURL))
            } catch {
                throw ValidationError(error.detail)
            }
        }
    }

    /// What the Google routes and commands check purchases against, or nil when no package name is set.
    func configuration(binding: AccountTokenBinding) throws -> GoogleConfiguration? {
        guard let packageName = setting(googlePackageName, "WALLET_GOOGLE_PACKAGE_NAME") else { return nil }
        let policyText = setting(nil, "WALLET_GOOGLE_REFUND_POLICY") ?? RefundPolicy.debt.rawValue
        guard let policy = googleRefundPolicy ?? RefundPolicy(rawValue: policyText) else {
            throw ValidationError("WALLET_GOOGLE_REFUND_POLICY must be debt or floor, not '\(policyText.prefix(40))'.")
        }
        let allowTests: Bool
        switch (googleAllowTestPurchases, environment["WALLET_GOOGLE_ALLOW_TEST_PURCHASES"]?.lowercased()) {
        case (true, _), (_, "true"?), (_, "1"?): allowTests = true
        case (_, nil), (_, ""?), (_, "false"?), (_, "0"?): allowTests = false
        case (_, let other?): throw ValidationError("WALLET_GOOGLE_ALLOW_TEST_PURCHASES must be true or false, not '\(other.prefix(40))'.")
        }
        do {
            var configuration = try GoogleConfiguration(packageName: packageName)
            configuration.allowTestPurchases = allowTests
            configuration.refundPolicy = policy
            configuration.accountTokenBinding = binding
            return configuration
        } catch {
            throw ValidationError(error.detail)
        }
    }

    /// Google Play purchases on `ledger`, or nil when no package name is set.
    func purchases(ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox & WorkLeases, binding: AccountTokenBinding) throws -> GooglePurchases? {
        guard let configuration = try configuration(binding: binding), let api = try api() else { return nil }
        return GooglePurchases(configuration: configuration, api: api, ledger: ledger)
    }

    /// Google Play purchases, or `not_configured` naming the options.
    func requirePurchases(ledger: any LedgerWriting & LedgerReading & PurchaseFinishOutbox & WorkLeases, binding: AccountTokenBinding) throws -> GooglePurchases {
        guard let purchases = try purchases(ledger: ledger, binding: binding) else {
            throw WalletError.notConfigured("Google Play needs --google-package-name and --google-service-account (or WALLET_GOOGLE_PACKAGE_NAME and WALLET_GOOGLE_SERVICE_ACCOUNT)")
        }
        return purchases
    }
}

/// How Pub/Sub pushes are authenticated (`serve` only).
struct GooglePushOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The audience the push subscription's OIDC tokens carry: the push endpoint's URL, or the audience set on the subscription (env WALLET_GOOGLE_PUSH_AUDIENCE).", valueName: "audience"))
    var googlePushAudience: String?

    @Option(help: ArgumentHelp("The service account the push subscription signs its tokens as (env WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT).", valueName: "email"))
    var googlePushServiceAccount: String?

    @Option(name: .customLong("google-jwks-url"), help: ArgumentHelp("Where Google publishes its token signing keys (env WALLET_GOOGLE_JWKS_URL; default \(GooglePushAuthentication.googleJWKSURL)).", valueName: "url"))
    var googleJWKSURL: String?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The push verifier, or nil when no audience is set; an audience without the account (or the
    /// reverse) is refused.
    func authentication() throws -> GooglePushAuthentication? {
        let audience = googlePushAudience ?? environment["WALLET_GOOGLE_PUSH_AUDIENCE"]
        let account = googlePushServiceAccount ?? environment["WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT"]
        switch (audience.flatMap { $0.isEmpty ? nil : $0 }, account.flatMap { $0.isEmpty ? nil : $0 }) {
        case (nil, nil): return nil
        case (let audience?, let account?):
            do {
                return try GooglePushAuthentication(
                    audience: audience, serviceAccountEmail: account,
                    jwksURL: googleJWKSURL ?? environment["WALLET_GOOGLE_JWKS_URL"] ?? GooglePushAuthentication.googleJWKSURL)
            } catch {
                throw ValidationError(error.detail)
            }
        default:
            throw ValidationError("Google push notifications need both --google-push-audience and --google-push-service-account (or their WALLET_GOOGLE_PUSH_* variables).")
        }
    }
}
