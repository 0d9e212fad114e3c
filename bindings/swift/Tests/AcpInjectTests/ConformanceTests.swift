import AcpInjectFFI
import Foundation
import XCTest

/// Every conformance vector replays through the binding (AgentCore / ClientSession), the
/// project's and those of `ACP_INJECT_VECTORS`, and the Swift replay agrees with the Rust runner.
final class ConformanceTests: XCTestCase {
    func testEveryVector() {
        let report = runDirs([projectVectors.path] + envVectorDirs())
        // The closing `N passed, N failed` line is what `cargo xtask test` reads.
        print("== conformance vectors through the Swift binding ==")
        print(report.render(), terminator: "")
        XCTAssertGreaterThanOrEqual(report.results.count, 90)
        for r in report.results { XCTAssertNil(r.mismatch, "\(r.name) (\(r.file))") }
    }

    func testSwiftReplayAgreesWithTheRustRunner() throws {
        let swift = runDirs([projectVectors.path])
        let rust = try runConformance(dirs: [projectVectors.path])
        XCTAssertEqual(swift.passed, Int(rust.passed))
        XCTAssertEqual(swift.failed, Int(rust.failed))
        XCTAssertEqual(rust.failed, 0, rust.rendered)
    }

    func testACopiedVectorRunsFromAnywhereAndAChangedOneFails() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("acp-inject-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let src = projectVectors.appendingPathComponent("agent/steer-delivered-at-tool-result.json")
        let copy = tmp.appendingPathComponent("copy.json")
        try FileManager.default.copyItem(at: src, to: copy)
        let ok = runDirs([tmp.path])
        XCTAssertEqual([ok.passed, ok.failed], [1, 0])
        XCTAssertTrue(ok.render().contains("1 passed, 0 failed"))

        let text = try String(contentsOf: src, encoding: .utf8)
        let changed = text.replacingOccurrences(of: "use auth_v2", with: "use auth_v3", options: [], range: text.range(of: "use auth_v2"))
        try changed.write(to: copy, atomically: true, encoding: .utf8)
        let bad = runDirs([tmp.path])
        let out = bad.render()
        XCTAssertEqual([bad.passed, bad.failed], [0, 1])
        XCTAssertTrue(out.contains("0 passed, 1 failed") && out.contains("auth_v3") && out.contains("step"), out)
        // The Rust runner sees the same failure.
        XCTAssertEqual(try runConformance(dirs: [tmp.path]).failed, 1)
    }

    func testAMalformedVectorIsAFailureNotACrash() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("acp-inject-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        try "{not json".write(to: tmp.appendingPathComponent("bad.json"), atomically: true, encoding: .utf8)
        try #"{"name": "odd", "side": "agent", "steps": [{"runtime": {"event": "break_point", "kind": "lunch"}}]}"#
            .write(to: tmp.appendingPathComponent("odd.json"), atomically: true, encoding: .utf8)
        let report = runDirs([tmp.path])
        XCTAssertEqual([report.passed, report.failed], [0, 2])
        XCTAssertTrue(report.render().contains("unreadable") && report.render().contains("lunch"), report.render())
    }
}
