import ArgumentParser
import Foundation
import WalletApple
import WalletCore

/// The App Store settings shared by `serve` and `redeem-apple`, with environment fallbacks.
struct AppleOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The app's bundle id; Apple purchases are refused (not_configured) without it (env WALLET_APPLE_BUNDLE_ID).", valueName: "id"))
    var appleBundleID: String?

    @Option(help: ArgumentHelp("Accepted App Store environments, comma-separated: production, sandbox (env WALLET_APPLE_ENVIRONMENTS; default production).", valueName: "list"))
    var appleEnvironments: String?

    @Option(help: ArgumentHelp("Extra trusted root certificates, PEM files, comma-separated (env WALLET_APPLE_ROOT_CERTS). Apple Root CA - G3 is built in.", valueName: "files"))
    var appleRootCerts: String?

    @Option(help: ArgumentHelp("How REFUND notifications treat spent credits: debt or floor (env WALLET_APPLE_REFUND_POLICY; default debt).", valueName: "policy"))
    var appleRefundPolicy: RefundPolicy?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    func validate() throws {
        _ = try configuration()
    }

    /// The configuration, or nil when no bundle id is set.
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
        do {
            return try AppleConfiguration(bundleID: bundleID, environments: Set(environments), extraRootsPEM: roots, refundPolicy: policy)
        } catch {
            throw ValidationError(error.detail)
        }
    }
}
