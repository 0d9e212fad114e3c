// swift-tools-version:5.9
// A throwaway package that depends on the distributed acp-inject package, as a user's would.
// `cargo xtask test` writes it into the cache dir with the path filled in.
import PackageDescription

let package = Package(
    name: "Consumer",
    dependencies: [
        .package(path: "@ACP_INJECT_SWIFT_PACKAGE@"),
    ],
    targets: [
        .executableTarget(
            name: "Consumer",
            dependencies: [.product(name: "AcpInject", package: "AcpInject")],
            path: "Sources/Consumer"
        ),
    ]
)
