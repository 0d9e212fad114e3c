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
        let id = try await session.prompt("fix the bug").messageId
        let ends = try await withDeadline(30) { () -> [StopReason?] in
            var ends: [StopReason?] = []
            var cancelled = false
            for try await activity in session.events {
                switch activity {
                case let .permissionRequested(p):
                    let allow = p.params.options.first { $0.kind == .allowOnce } ?? p.params.options[0]
                    try session.allow(p.request, optionId: allow.optionId)
                case let .update(.stateUpdate(.idle(idle))):
                    ends.append(idle.stopReason)
                    if ends.count == 1 { _ = try await session.prompt("then the docs") }
                    if ends.count == 2 { return ends }
                case .update(.agentMessageChunk) where ends.count == 1 && !cancelled:
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

        let found = try await cleanReport(report)
        XCTAssertNotNil(found.range(of: #""lines":\s*[1-9]"#, options: .regularExpression), "no lines checked: \(found)")
    }

    /// This client over the network, WebSocket and Streamable HTTP, against the same SDK agent
    /// served by the SDK's own `AcpServer` (`sdk-agent.mjs --listen`): the interop stage starts
    /// it, sets `ACP_INJECT_SDK_REMOTE_URL` to its endpoint and checks its report afterwards.
    func testASessionOverTheNetworkAgainstTheOfficialTypeScriptSdksServer() async throws {
        guard let url = ProcessInfo.processInfo.environment["ACP_INJECT_SDK_REMOTE_URL"], !url.isEmpty else {
            throw XCTSkip("ACP_INJECT_SDK_REMOTE_URL is the SDK server's endpoint (the interop stage sets it)")
        }
        for endpoint in [url.replacingOccurrences(of: "http://", with: "ws://"), url] {
            let client = try await connect(url: endpoint, name: "acp-inject-swift-tests")
            XCTAssertEqual(client.agent.info.name, "interop-sdk-agent")
            let session = try await client.newSession(cwd: "/tmp")
            let id = try await session.prompt("fix the bug").messageId
            let end = try await withDeadline(30) { () -> StopReason? in
                for try await activity in session.events {
                    switch activity {
                    case let .permissionRequested(p):
                        let allow = p.params.options.first { $0.kind == .allowOnce } ?? p.params.options[0]
                        try session.allow(p.request, optionId: allow.optionId)
                    case let .update(.stateUpdate(.idle(idle))):
                        return idle.stopReason
                    default:
                        break
                    }
                }
                return nil
            }
            XCTAssertEqual(end, .endTurn, endpoint)
            let snap = try session.snapshot()
            XCTAssertEqual(snap.transcript.first?.messageId, id)
            XCTAssertTrue(snap.violations.isEmpty, "\(snap.violations)")
            let open = try await session.status()
            XCTAssertEqual(open.status, .open)
            try await session.close()
            try await client.close()
        }
    }

    /// This client against an ACP v1 agent written with an official SDK's v1 API
    /// (`interop/typescript-sdk/sdk-v1-agent.mjs`): the same session API, and the queue held by
    /// this client (C-HELD-1): queue, revoke and replace during a turn, each held message sent
    /// as the next prompt when a turn ends. `ACP_INJECT_SDK_V1_AGENT` is the agent's command,
    /// one argument per line (the interop stage sets it).
    func testAV1SessionWithAQueueHeldByThisClientAgainstAnAgentWrittenWithAnOfficialSdk() async throws {
        guard let command = ProcessInfo.processInfo.environment["ACP_INJECT_SDK_V1_AGENT"], !command.isEmpty else {
            throw XCTSkip("ACP_INJECT_SDK_V1_AGENT names the SDK v1 agent (the interop stage sets it)")
        }
        let report = NSTemporaryDirectory() + "sdk-v1-agent-report-\(UUID().uuidString).json"
        let argv = command.split(separator: "\n").map(String.init) + ["--delay-ms", "20", "--report", report]
        let client = try await connect(argv, name: "acp-inject-swift-tests", forwardStderr: false)
        XCTAssertEqual(client.agent.protocolVersion, 1, "the agent speaks ACP v1")
        XCTAssertNil(client.inject, "a v1 agent takes no session/inject")
        let session = try await client.newSession(cwd: "/tmp")

        _ = try await session.prompt("fix the bug")
        XCTAssertEqual(try session.snapshot().state, .running)
        let later = try await session.inject("then the docs")
        let gone = try await session.inject("revoke me")
        try await session.revoke(gone)
        let draft = try await session.inject("draft")
        try await session.replace(draft, with: "final text")
        do {
            _ = try await session.inject("now", mode: .steer)
            XCTFail("a steer was accepted by an agent that cannot take input mid-turn")
        } catch let AcpError.rejected(reason, _) {
            XCTAssertEqual(reason, .steerNotSupported)
        }
        let held = try session.snapshot().pending
        XCTAssertEqual(held.map(\.messageId), [later, draft])
        XCTAssertTrue(held.allSatisfy(\.held), "\(held)")

        let wanted = ["fix the bug", "then the docs", "final text"]
        try await withDeadline(30) {
            for try await activity in session.events {
                if case let .permissionRequested(p) = activity {
                    let allow = p.params.options.first { $0.kind == .allowOnce } ?? p.params.options[0]
                    try session.allow(p.request, optionId: allow.optionId)
                }
                let snap = try session.snapshot()
                let users = snap.transcript.filter { $0.role == .user }.map { $0.content.text }
                if users == wanted && snap.state == .idle && snap.pending.isEmpty { return }
            }
        }
        let snap = try session.snapshot()
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertTrue(snap.violations.isEmpty, "\(snap.violations)")
        try await client.close()

        let found = try await cleanReport(report)
        let compact = found.filter { !$0.isWhitespace }
        XCTAssertTrue(compact.contains(#""promptTexts":["fixthebug","thenthedocs","finaltext"]"#), "the agent's prompts, in order: \(found)")
    }
}

/// The agent's report, which it writes when its input ends (just after the connection closes),
/// read and deleted; it must list no problems.
private func cleanReport(_ report: String) async throws -> String {
    var text: String?
    for _ in 0..<500 where text == nil {
        text = try? String(contentsOfFile: report, encoding: .utf8)
        if text == nil { try await Task.sleep(nanoseconds: 20_000_000) }
    }
    try? FileManager.default.removeItem(atPath: report)
    let found = try XCTUnwrap(text, "the agent wrote no report")
    XCTAssertNotNil(found.range(of: #""problems":\s*\[\s*\]"#, options: .regularExpression), "the agent found problems: \(found)")
    return found
}
