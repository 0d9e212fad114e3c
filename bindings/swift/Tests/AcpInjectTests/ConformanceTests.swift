import AcpInject
import class AcpInjectFFI.VectorRun
import Foundation
import XCTest

/// Every conformance vector replays through the package (`AgentCore`, `ClientCore`, the value
/// codec) with the shared engine (`VectorRun`): the project's and those of `ACP_INJECT_VECTORS`.
final class ConformanceTests: XCTestCase {
    /// `cargo xtask test` counts this test as every file of spec/vectors passing.
    func testEveryVector() {
        let extra = (ProcessInfo.processInfo.environment["ACP_INJECT_VECTORS"] ?? "")
            .split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        let project = Conformance.run(paths: [projectVectors])
        let outcomes = project + Conformance.run(paths: extra)
        print("== conformance vectors through the Swift binding ==")
        print(Conformance.report(outcomes), terminator: "")
        XCTAssertEqual(project.count, Conformance.vectorFiles([projectVectors]).count)
        XCTAssertGreaterThanOrEqual(project.count, 116)
        XCTAssertEqual(Set(project.map(\.name)).count, project.count, "vector names are unique")
        for o in outcomes { XCTAssertNil(o.mismatch, "\(o.name) (\(o.file))") }
    }

    func testACopiedVectorRunsFromAnywhereAndAChangedOneFails() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("acp-inject-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let src = projectVectors.appendingPathComponent("agent/steer-delivered-at-tool-result.json")
        let copy = tmp.appendingPathComponent("copy.json")
        try FileManager.default.copyItem(at: src, to: copy)
        let ok = Conformance.run(paths: [tmp])
        XCTAssertEqual(ok.map(\.mismatch), [nil])
        XCTAssertTrue(Conformance.report(ok).hasSuffix("1 passed, 0 failed\n"))

        let text = try String(contentsOf: src, encoding: .utf8)
        let original = try XCTUnwrap(text.range(of: "use auth_v2"))
        try text.replacingCharacters(in: original, with: "use auth_v3").write(to: copy, atomically: true, encoding: .utf8)
        let bad = Conformance.run(paths: [tmp])
        let report = Conformance.report(bad)
        XCTAssertEqual(bad.count, 1)
        XCTAssertNotNil(bad.first?.mismatch)
        XCTAssertTrue(report.contains("0 passed, 1 failed") && report.contains("auth_v3"), report)
    }

    func testAMalformedVectorIsAFailureNotACrash() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("acp-inject-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        try "{not json".write(to: tmp.appendingPathComponent("bad.json"), atomically: true, encoding: .utf8)
        try #"{"name": "odd", "side": "agent", "steps": [{"runtime": {"event": "break_point", "kind": "lunch"}}]}"#
            .write(to: tmp.appendingPathComponent("odd.json"), atomically: true, encoding: .utf8)
        let outcomes = Conformance.run(paths: [tmp])
        XCTAssertEqual(outcomes.filter { $0.mismatch != nil }.count, 2)
        XCTAssertTrue(Conformance.report(outcomes).contains("0 passed, 2 failed"))
        XCTAssertThrowsError(try Conformance.engine { try VectorRun(vectorJson: "{not json") }) { error in
            guard case let AcpError.mismatch(detail) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(detail.contains("not JSON"), detail)
        }
    }
}
