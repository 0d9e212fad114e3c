import AcpInject
import Foundation
import XCTest

/// This client against an agent written with the official ACP TypeScript SDK
/// (`interop/typescript-sdk/sdk-agent.mjs`), which checks every line both ways with the SDK's own
/// schemas and writes what it found to a report. Runs in the `interop` stage of `cargo xtask
/// test`, which sets `ACP_INJECT_SDK_AGENT` to the script (swiftw installs Node.js into the
/// chroot for it); skipped without it (the `swift` stage).
final class SdkAgentInteropTests: XCTestCase {
    func testASessionAgainstAnAgentWrittenWithTheOfficialTypeScriptSdk() async throws {
        guard let script = ProcessInfo.processInfo.environment["ACP_INJECT_SDK_AGENT"], !script.isEmpty else {
            throw XCTSkip("ACP_INJECT_SDK_AGENT names the SDK agent (the interop stage sets it)")
        }
        let report = NSTemporaryDirectory() + "sdk-agent-report-\(UUID().uuidString).json"
        let client = try await connect(["node", script, "--delay-ms", "20", "--report", report], name: "acp-inject-swift-tests", forwardStderr: false)
        XCTAssertEqual(client.agent.info.name, "interop-sdk-agent")
        XCTAssertNil(client.inject, "the SDK agent offers no session/inject")
        let session = try await client.newSession(cwd: "/tmp")

        // A turn with a permission request, allowed; then a turn cancelled mid-way.
        let id = try await session.prompt("fix the bug")
        let ends = try await withDeadline(30) { () -> [StopReason?] in
            var ends: [StopReason?] = []
            var cancelled = false
            for try await activity in session.events {
                switch activity {
                case let .permissionRequested(request, params):
                    let allow = params.options.first { $0.kind == .allowOnce } ?? params.options[0]
                    try session.allow(request, optionId: allow.optionId)
                case let .event(.update(.stateUpdate(.idle(idle)))):
                    ends.append(idle.stopReason)
                    if ends.count == 1 { _ = try await session.prompt("then the docs") }
                    if ends.count == 2 { return ends }
                case .event(.update(.agentMessageChunk)) where ends.count == 1 && !cancelled:
                    cancelled = true
                    try session.cancel()
                default:
                    break
                }
            }
            return ends
        }
        XCTAssertEqual(ends, [.endTurn, .cancelled])
        let snap = try session.snapshot()
        XCTAssertEqual(snap.transcript.first?.messageId, id)
        XCTAssertTrue(snap.violations.isEmpty, "\(snap.violations)")
        let open = try await session.status()
        XCTAssertEqual(open.status, .open)
        if case .idle? = open.state {} else { XCTFail("state \(String(describing: open.state))") }
        try await session.close()
        try await client.close()

        // The agent writes its report when its input ends, just after the connection closes.
        var text: String?
        for _ in 0..<500 where text == nil {
            text = try? String(contentsOfFile: report, encoding: .utf8)
            if text == nil { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        try? FileManager.default.removeItem(atPath: report)
        let found = try XCTUnwrap(text, "the agent wrote no report")
        XCTAssertNotNil(found.range(of: #""problems":\s*\[\s*\]"#, options: .regularExpression), "the SDK's schemas refused lines: \(found)")
        XCTAssertNotNil(found.range(of: #""lines":\s*[1-9]"#, options: .regularExpression), "no lines checked: \(found)")
    }
}
