// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "CreditsWallet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "wallet", targets: ["wallet"]),
        .library(name: "WalletCore", targets: ["WalletCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Already built for Hummingbird and AsyncHTTPClient: named here for traces of our own.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        // The ledger itself, with no database and no network: the model, the rules, canonical
        // bytes and the hash chain, the audit formats, and the protocols every store implements.
        .target(
            name: "WalletCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // App Store signed data, verified offline against Apple's root, and the App Store
        // Server API client.
        .target(
            name: "WalletApple",
            dependencies: [
                "WalletCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Google Play: the Android Publisher API client (service-account OAuth, purchases, consume,
        // voided purchases), Pub/Sub push authentication, and crediting through the ledger.
        .target(
            name: "WalletGoogle",
            dependencies: [
                "WalletCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The ledger's reads and writes on any SQL engine, written once, and the store's lifecycle
        // (`LedgerDatabase`, run as a service): kept out of Core, which needs no service.
        .target(
            name: "WalletSQL",
            dependencies: [
                "WalletCore", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "WalletSQLite",
            dependencies: [
                "WalletCore", "WalletSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "WalletPostgres",
            dependencies: [
                "WalletCore", "WalletSQL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The one place that knows every store: opens a database from a path or a URL.
        .target(
            name: "WalletStores",
            dependencies: ["WalletCore", "WalletSQL", "WalletSQLite", "WalletPostgres"]
        ),
        .target(
            name: "WalletServer",
            dependencies: [
                "WalletCore", "WalletApple", "WalletGoogle",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            // The web console and the OpenAPI document, embedded in the binary: nothing is read from
            // disk or fetched at run time.
            resources: [
                .embedInCode("Console/index.html"), .embedInCode("Console/console.css"), .embedInCode("Console/console.js"),
                .embedInCode("Console/api.js"), .embedInCode("Console/dom.js"), .embedInCode("Console/forms.js"), .embedInCode("Console/page.js"),
                .embedInCode("Console/charts.js"), .embedInCode("Console/players.js"), .embedInCode("Console/entitlements.js"),
                .embedInCode("Console/support.js"), .embedInCode("Console/audit.js"), .embedInCode("Console/admin.js"),
                .embedInCode("OpenAPI/openapi.json"),
            ]
        ),
        .executableTarget(
            name: "wallet",
            dependencies: [
                "WalletCore", "WalletApple", "WalletGoogle", "WalletSQL", "WalletStores", "WalletServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "WalletTestSupport",
            dependencies: [
                "WalletCore", "WalletApple", "WalletGoogle", "WalletSQL", "WalletStores",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA keys, for test receipts signed as Apple signs them.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/WalletTestSupport"
        ),
        .testTarget(
            name: "WalletCoreTests",
            dependencies: [
                "WalletCore", "WalletApple", "WalletGoogle", "WalletSQL", "WalletSQLite", "WalletPostgres", "WalletStores", "WalletTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "WalletServerTests",
            dependencies: [
                "WalletServer", "WalletCore", "WalletApple", "WalletGoogle", "WalletSQL", "WalletSQLite", "WalletPostgres", "WalletStores", "WalletTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "WalletCLITests",
            dependencies: [
                "wallet", "WalletCore", "WalletGoogle", "WalletSQL", "WalletSQLite", "WalletStores", "WalletTestSupport",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
