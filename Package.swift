// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "CreditsWallet",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "wallet", targets: ["wallet"]),
        .library(name: "WalletCore", targets: ["WalletCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        .target(
            name: "WalletCore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "wallet",
            dependencies: [
                "WalletCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "WalletCoreTests",
            dependencies: ["WalletCore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "WalletCLITests",
            dependencies: ["wallet", "WalletCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
