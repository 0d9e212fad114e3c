// swift-tools-version:5.9
//
// acp-inject for Swift: the UniFFI binding of crates/ffi (module `AcpInjectFFI`) plus a thin
// idiomatic layer over it (module `AcpInject`, which re-exports the binding).
//
// The binding's sources are the generated files of `cargo xtask codegen` (generated/swift),
// reached through symlinks in Sources/ (SwiftPM wants target files inside the package; symlinks
// keep generated/ the single source). The Rust library is linked from `ACP_INJECT_LIB_DIR` (set
// by ./swiftw from `cargo metadata`), else the workspace's target/debug.
//
// The tests replay every conformance vector through the binding with the conformance engine, a
// test-only UniFFI component (crates/ffi-conformance) that never ships: here its binding
// (generated/conformance/swift, symlinked too) joins the AcpInjectFFI module, its header joins
// the AcpInjectFFIFFI module map (generated/conformance/swift/module.modulemap: both headers),
// and the library linked is that crate's libacp_inject_ffi_conformance, which holds the shipped
// component as well. The distributed package (`cargo xtask dist`) copies generated/swift only.
//
//   bindings/swift/swiftw test                              # Linux: in a Debian trixie chroot
//   bindings/swift/swiftw run -c release AcpInjectBench
//   ACP_INJECT_LIB_DIR=/abs/target/debug swift test         # where a Swift toolchain exists
//
// This is the development package (tests, benchmark): it links the library with unsafeFlags,
// which SwiftPM allows only in a root package. The package other packages depend on is
// `cargo xtask dist`'s dist/swift/AcpInject (manifest: dist/Package.swift).
import Foundation
import PackageDescription

let packageDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
let libDir = ProcessInfo.processInfo.environment["ACP_INJECT_LIB_DIR"]
    ?? packageDir.appendingPathComponent("../../target/debug").standardized.path

let package = Package(
    name: "AcpInject",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        // What an app imports: connect, Client, Session, events, content helpers.
        .library(name: "AcpInject", targets: ["AcpInject"]),
        // The generated binding alone (re-exported by AcpInject).
        .library(name: "AcpInjectFFI", targets: ["AcpInjectFFI"]),
    ],
    targets: [
        // The C side of the binding: the uniffi header and its module map.
        .systemLibrary(name: "AcpInjectFFIFFI", path: "Sources/AcpInjectFFIFFI"),
        // The generated Swift (symlinked), linked to the Rust cdylib that holds the shipped
        // component and the test-only conformance engine.
        .target(
            name: "AcpInjectFFI",
            dependencies: ["AcpInjectFFIFFI"],
            path: "Sources/AcpInjectFFI",
            linkerSettings: [
                .linkedLibrary("acp_inject_ffi_conformance"),
                .unsafeFlags(["-L", libDir, "-Xlinker", "-rpath", "-Xlinker", libDir]),
            ]
        ),
        // The idiomatic layer: no protocol logic, only Swift shapes over the binding.
        .target(name: "AcpInject", dependencies: ["AcpInjectFFI"], path: "Sources/AcpInject"),
        // The recorded benchmark stream, shared by the benchmark and the tests.
        .target(name: "RecordedStream", path: "Sources/RecordedStream"),
        // A streaming client's per-line cost (see its header).
        .executableTarget(
            name: "AcpInjectBench",
            dependencies: ["AcpInject", "RecordedStream"],
            path: "Sources/AcpInjectBench"
        ),
        // The example agent (Sources/ExampleAgent/main.swift): `swiftw run ExampleAgent`.
        .executableTarget(name: "ExampleAgent", dependencies: ["AcpInject"], path: "Sources/ExampleAgent"),
        // The side-by-side agent and client (side-by-side/swift/OursAgent.swift, OursClient.swift):
        // `swiftw run OursClient .build/debug/OursAgent`. SwiftPM refuses a target path outside
        // the package ("target … is outside the package root"), so each target's main.swift is a
        // symlink to its file there, as the generated binding's files are.
        .executableTarget(name: "OursAgent", dependencies: ["AcpInject"], path: "Sources/OursAgent"),
        .executableTarget(name: "OursClient", dependencies: ["AcpInject"], path: "Sources/OursClient"),
        .testTarget(
            name: "AcpInjectTests",
            dependencies: ["AcpInject", "RecordedStream"],
            path: "Tests/AcpInjectTests"
        ),
    ]
)
