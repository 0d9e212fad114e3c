// swift-tools-version:6.0
//
// acp-inject for Swift: the module `AcpInject` (connect, Client, Session, PromptTurn, the agent
// runtime, the sans-IO cores, and every value type, generated) over the UniFFI binding of
// crates/ffi (module `AcpInjectFFI`, which users never see: values cross it encoded, in the
// boundary encoding of docs/encoding.md, and AcpInject decodes them into its own types).
//
// Swift 6 (tools version 6.0, the Swift 6 language mode for AcpInject): its types are `Sendable`
// as the compiler checks them. The generated binding is compiled in the Swift 5 mode it is
// written for.
//
// The binding's sources and the value types (Values.swift) are the generated files of `cargo
// xtask codegen` (generated/swift), reached through symlinks in Sources/ (SwiftPM wants target
// files inside the package; symlinks keep generated/ the single source). The Rust library is
// linked from `ACP_INJECT_LIB_DIR` (set by ./swiftw from `cargo metadata`), else the workspace's
// target/debug.
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
        // What an app imports: connect, Client, Session, PromptTurn, the agent runtime, values.
        .library(name: "AcpInject", targets: ["AcpInject"]),
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
            swiftSettings: [.swiftLanguageMode(.v5)],
            linkerSettings: [
                .linkedLibrary("acp_inject_ffi_conformance"),
                .unsafeFlags(["-L", libDir, "-Xlinker", "-rpath", "-Xlinker", libDir]),
            ]
        ),
        // The per-line C functions of crates/ffi/src/lines.rs (a hand-written header: UniFFI
        // generates none for them), in the library AcpInjectFFI links.
        .systemLibrary(name: "AcpInjectLines", path: "Sources/AcpInjectLines"),
        // The public layer: the value types (Values.swift, generated; MessagePack.swift, their
        // boundary codec) and Swift shapes over the binding; no protocol logic.
        .target(name: "AcpInject", dependencies: ["AcpInjectFFI", "AcpInjectLines"], path: "Sources/AcpInject"),
        // The recorded benchmark stream, shared by the benchmark and the tests.
        .target(name: "RecordedStream", path: "Sources/RecordedStream"),
        // A streaming client's per-line cost (see its header).
        .executableTarget(
            name: "AcpInjectBench",
            dependencies: ["AcpInject", "AcpInjectFFI", "RecordedStream"],
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
        // The tests; the conformance driver also reaches the test-only engine (`VectorRun`) in
        // AcpInjectFFI.
        .testTarget(
            name: "AcpInjectTests",
            dependencies: ["AcpInject", "AcpInjectFFI", "RecordedStream"],
            path: "Tests/AcpInjectTests",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
