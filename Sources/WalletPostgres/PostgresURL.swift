import WalletCore
import Foundation
import NIOSSL
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=...&sslrootcert=...` URL, read as
/// libpq reads it (for the parts the wallet supports), with its password kept out of every
/// description.
struct PostgresURL: Sendable {
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var sslMode: String
    var rootCertificatePath: String?

    static let sslModes = ["disable", "prefer", "require", "verify-ca", "verify-full"]

    init(_ text: String) throws(WalletError) {
        guard text.utf8.count <= 2_048, let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw .invalidRequest("the database URL is not a valid postgres:// URL")
        }
        user = components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? NSUserName()
        password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw .invalidRequest("the database URL's port must be from 1 to 65535") }
        let path = String(components.percentEncodedPath.drop { $0 == "/" }).removingPercentEncoding ?? ""
        database = path.isEmpty ? user : path
        sslMode = "prefer"
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value, Self.sslModes.contains(mode) else {
                    throw .invalidRequest("the database URL's sslmode must be one of \(Self.sslModes.joined(separator: ", "))")
                }
                sslMode = mode
            case "sslrootcert":
                rootCertificatePath = item.value
            default:
                // Not echoed: a password with a '?' in it would otherwise be shown here.
                throw .invalidRequest("the database URL has a parameter this wallet does not know (known: sslmode, sslrootcert)")
            }
        }
    }

    /// The URL with its password replaced by `***`: what logs and errors show.
    var redacted: String {
        let credentials = password == nil ? user : "\(user):***"
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(sslMode)"
    }

    /// TLS as libpq's sslmode means it: `prefer` and `require` encrypt without checking the
    /// certificate, `verify-ca` checks it against the CA, `verify-full` also checks the name.
    func tls() throws(WalletError) -> PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificatePath {
            do {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootCertificatePath))
            } catch {
                throw .invalidRequest("cannot read the CA certificates (PEM) at sslrootcert '\(rootCertificatePath.prefix(200))'")
            }
        }
        switch sslMode {
        case "disable":
            return .disable
        case "prefer":
            configuration.certificateVerification = .none
            return .prefer(configuration)
        case "require":
            configuration.certificateVerification = rootCertificatePath == nil ? .none : .noHostnameVerification
            return .require(configuration)
        case "verify-ca":
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        default:
            configuration.certificateVerification = .fullVerification
            return .require(configuration)
        }
    }
}
