// swift-tools-version:6.0
//
// acp-inject for Swift, as `cargo xtask dist` lays it out in dist/swift/AcpInject: a package
// another package depends on with `.package(path:)` (or by URL, once this directory is
// published as a repository), with no `unsafeFlags` and no environment variables.
//
//   Sources/AcpInject/         the module an app imports: connect, Client, Session, PromptTurn,
//                              the agent runtime, the sans-IO cores and every value type
//                              (Values.swift, generated, with its MessagePack codec)
//   Sources/AcpInjectFFI/      the generated UniFFI binding (real files), which AcpInject wraps
//                              and never re-exports: values cross it encoded
//   Sources/AcpInjectFFIFFI/   the uniffi header and its module map (a system-library target)
//   Sources/AcpInjectLines/    the header of the library's per-line C functions, and its module map
//   lib/<os>-<arch>/libacp_inject_ffi.a               the Rust library, static
//   lib/<os>-<arch>/pkgconfig/acp-inject-ffi.pc       -L/-l flags for it, relative to itself
//
// SwiftPM takes a system-library target's linker flags from pkg-config, and accepts an
// absolute path to the .pc file as the `pkgConfig` name, so the manifest points at the file
// inside this package (found from #filePath): nothing is installed and no PKG_CONFIG_PATH is
// needed. The .pc file may only use -L/-l (SwiftPM drops other flags, such as an rpath), which
// is why the library is static: the consumer's binary carries it and needs nothing at run time.
// Swift 6.0's binary targets cannot hold a library on Linux (artifact bundles there take
// executables only), so this is the supported way to ship a prebuilt library to Linux.
import Foundation
import PackageDescription

let packageDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
#if os(Linux) && arch(x86_64)
let libraryDir = "linux-x86_64"
#elseif os(Linux) && arch(arm64)
let libraryDir = "linux-aarch64"
#else
let libraryDir = "unsupported" // Apple platforms: an XCFramework binary target (not built here)
#endif

let package = Package(
    name: "AcpInject",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "AcpInject", targets: ["AcpInject"]),
    ],
    targets: [
        .systemLibrary(
            name: "AcpInjectFFIFFI",
            path: "Sources/AcpInjectFFIFFI",
            pkgConfig: "\(packageDir)/lib/\(libraryDir)/pkgconfig/acp-inject-ffi.pc"
        ),
        // The generated binding, in the Swift 5 language mode it is written for; AcpInject is
        // Swift 6.
        .target(
            name: "AcpInjectFFI", dependencies: ["AcpInjectFFIFFI"], path: "Sources/AcpInjectFFI",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The per-line C functions of the same library (a hand-written header).
        .systemLibrary(name: "AcpInjectLines", path: "Sources/AcpInjectLines"),
        .target(name: "AcpInject", dependencies: ["AcpInjectFFI", "AcpInjectLines"], path: "Sources/AcpInject"),
    ]
)
