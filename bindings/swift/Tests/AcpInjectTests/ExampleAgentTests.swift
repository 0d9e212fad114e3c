import AcpInject
import Foundation
import XCTest

/// The example agent (`Sources/ExampleAgent/main.swift`, which `swift test` builds beside the
/// test bundle) in its own process, driven by the Swift client over stdio and over WebSocket.
final class ExampleAgentTests: XCTestCase {
    /// The built example agent.
    private func exampleAgent() throws -> String {
        try builtExecutable("ExampleAgent")
    }

    /// Follows `session`'s events, answering every permission request with `option`, until
    /// `done` holds for the snapshot.
    private func drive(_ session: Session, answering option: String, until done: @escaping @Sendable (MirrorSnapshot) -> Bool) async throws {
        try await withDeadline(60) {
            while try !done(session.snapshot()) {
                for case let .permissionRequested(p) in try await session.nextEvents() {
                    try session.allow(p.request, optionId: option)
                }
            }
        }
    }

    private func agentText(_ snapshot: MirrorSnapshot) -> String {
        snapshot.transcript.filter { $0.role == .agent }.map(\.content.text).joined(separator: "|")
    }

    func testOverStdioItReadsASteerAtAToolResultAndAsksBeforeStep2() async throws {
        let client = try await connect([exampleAgent(), "--delay-ms", "300"], name: "swift-example-agent-test", forwardStderr: false)
        XCTAssertEqual(client.agent.info.name, "acp-inject-swift-example")
        let session = try await client.newSession(cwd: "/tmp/example")
        try await session.prompt("fix the login test")
        // The first break-point comes three delays into the turn: both go in before it.
        let steer = try await session.inject("use auth_v2", mode: .steer)
        let queued = try await session.inject("then update the changelog")
        try await drive(session, answering: "allow") { s in
            s.state == .idle && s.stopReason != nil && users(s).count == 3
                && s.transcript.contains { $0.role == .agent && $0.content.text.contains("Done (1 message(s)") }
        }
        let snap = try session.snapshot()
        XCTAssertEqual(users(snap), ["fix the login test", "use auth_v2", "then update the changelog"])
        XCTAssertEqual(snap.transcript.filter { $0.role == .user }.map(\.messageId).suffix(2), [steer, queued])
        let said = agentText(snap)
        XCTAssertTrue(said.contains("(noted: use auth_v2)"), said)
        XCTAssertTrue(said.contains("Done (2 message(s) handled this turn)."), said)
        XCTAssertTrue(said.contains("Done (1 message(s) handled this turn)."), said)
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertEqual(snap.usage?.totalTokens, 150)
        XCTAssertEqual(snap.violations, [])
        try await client.close()
    }

    func testWithListenItPrintsItsUrlAndServesOverWebSocket() async throws {
        let agent = try Started([exampleAgent(), "--listen", "127.0.0.1:0", "--delay-ms", "1"])
        defer { agent.stop() }
        XCTAssertTrue(agent.line.hasPrefix("http://127.0.0.1:") && agent.line.hasSuffix("/acp"), agent.line)
        let client = try await connect(url: agent.line.replacingOccurrences(of: "http://", with: "ws://"), name: "swift-example-agent-test")
        let session = try await client.newSession(cwd: "/tmp/example")
        try await session.prompt("deploy")
        try await drive(session, answering: "reject") { $0.state == .idle && $0.stopReason != nil }
        let snap = try session.snapshot()
        let said = agentText(snap)
        XCTAssertTrue(said.hasPrefix("Working on: deploy. step 1 of my plan. step 2 of my plan. "), said)
        XCTAssertTrue(said.hasSuffix("Done (1 message(s) handled this turn)."), said)
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertEqual(snap.violations, [])
        try await client.close()
    }
}
