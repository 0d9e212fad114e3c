import AcpInject
import Foundation
import XCTest

/// This client against a shipping agent, `@agentclientprotocol/claude-agent-acp` (the ACP agent
/// around Claude Code), offline: the agent talks to `interop/claude-agent-acp/mock-anthropic.mjs`,
/// a mock of the Anthropic Messages API that answers every request with a streamed reply quoting
/// the last user turn and logs every request, so the test sees what reached the model. The Swift
/// port of `interop/claude-agent-acp/drive.py` (and of Kotlin's `ShippingAgentInteropTest`), with
/// the same checks.
///
/// Runs in the `interop` stage of `cargo xtask test`, which installs the agent, starts the mock
/// (on the host: the chroot shares its network) and sets, for each protocol version:
/// `ACP_INJECT_CLAUDE_AGENT` (the agent's command, one argument per line),
/// `ACP_INJECT_CLAUDE_MOCK_LOG` (the mock's log), `ACP_INJECT_CLAUDE_WORKDIR` (the sessions' cwd)
/// and `ACP_INJECT_CLAUDE_PROTOCOL` (`v1` or `v2`: the version the agent is forced to by
/// `CLAUDE_AGENT_ACP_PROTOCOL`, in its command with the mock's `ANTHROPIC_BASE_URL`); swiftw
/// passes them into the chroot, binds the agent's npm project and the run's directory, and
/// installs Node.js there. Skipped without them (the `swift` stage).
final class ShippingAgentInteropTests: XCTestCase {
    private struct Setup {
        let command: [String]
        let log: String
        let workdir: String
        let protocolVersion: Int
    }

    private func setup() throws -> Setup {
        let env = ProcessInfo.processInfo.environment
        guard let command = env["ACP_INJECT_CLAUDE_AGENT"], !command.isEmpty else {
            throw XCTSkip("ACP_INJECT_CLAUDE_AGENT names claude-agent-acp (the interop stage sets it)")
        }
        func required(_ name: String) throws -> String {
            guard let value = env[name], !value.isEmpty else { throw Timeout(description: "\(name) is not set") }
            return value
        }
        let version: Int
        switch try required("ACP_INJECT_CLAUDE_PROTOCOL") {
        case "v1": version = 1
        case "v2": version = 2
        case let p: throw Timeout(description: "ACP_INJECT_CLAUDE_PROTOCOL is v1 or v2, not \(p)")
        }
        return Setup(
            command: command.split(separator: "\n").map(String.init), log: try required("ACP_INJECT_CLAUDE_MOCK_LOG"),
            workdir: try required("ACP_INJECT_CLAUDE_WORKDIR"), protocolVersion: version
        )
    }

    /// Markers unique to the run, so that the mock's log, which may hold earlier runs, cannot
    /// answer for this one.
    private let run = (0..<4).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()

    private func mark(_ name: String) -> String { "\(name)-\(run)" }

    /// Whether any request the mock received carried `marker` in a user message.
    private func modelSaw(_ setup: Setup, _ marker: String) -> Bool {
        guard let text = try? String(contentsOfFile: setup.log, encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)),
                case let .array(messages)? = request["body"]?["messages"]
            else { return false }
            return messages.contains { message in
                guard message["role"] == "user", let content = message["content"],
                    let json = try? JSONEncoder().encode(content)
                else { return false }
                return String(decoding: json, as: UTF8.self).contains(marker)
            }
        }
    }

    private func said(_ snapshot: MirrorSnapshot, _ role: MessageRole, _ marker: String) -> Bool {
        snapshot.transcript.contains { $0.role == role && $0.content.text.contains(marker) }
    }

    /// Idle, nothing of ours pending, and `marker` answered: the user message carrying it is
    /// followed by an agent message.
    private func settled(_ marker: String) -> @Sendable (MirrorSnapshot) -> Bool {
        { s in
            guard let at = s.transcript.lastIndex(where: { $0.role == .user && $0.content.text.contains(marker) }) else { return false }
            return s.state == .idle && s.pending.isEmpty && s.transcript[(at + 1)...].contains { $0.role == .agent }
        }
    }

    /// Reads the turn until the agent has started answering.
    private func firstChunk(_ turn: PromptTurn) async throws {
        try await withDeadline(Self.timeout) {
            for try await update in turn.updates {
                if case .agentMessageChunk = update { return }
            }
        }
    }

    private func end(_ turn: PromptTurn) async throws -> StopReason? {
        try await withDeadline(Self.timeout) { try await turn.finished }
    }

    private static let timeout: Double = 120

    func testOurClientAgainstClaudeAgentAcpOfflineOnTheProtocolVersionTheStageForces() async throws {
        let setup = try setup()
        let sessionId = try await firstConnection(setup)
        try await secondConnection(setup, sessionId)
    }

    private func firstConnection(_ setup: Setup) async throws -> SessionId {
        let client = try await connect(setup.command, name: "swift-tests", handshakeTimeout: 90, steerFallback: .cancelAndResend)
        do {
            let id = try await drive(client, setup)
            try await client.close()
            return id
        } catch {
            try? await client.close()
            throw error
        }
    }

    private func drive(_ client: Client, _ setup: Setup) async throws -> SessionId {
        let agent = client.agent
        XCTAssertEqual(agent.protocolVersion, setup.protocolVersion, "initialize: \(agent.info.name) \(agent.info.version)")
        let steering = agent.meta?["steering"]?["supported"] == true
        // The agent serves the steering extension on v1 and does not advertise it on v2.
        XCTAssertEqual(steering, setup.protocolVersion == 1, "the steering extension is advertised: \(String(describing: agent.meta))")
        let session = try await client.newSession(cwd: setup.workdir)

        // A prompt, its turn to the end.
        var turn = try await session.prompt("\(mark("PROMPT-ONE")) first question")
        var stop = try await end(turn)
        XCTAssertEqual(stop, .endTurn, "the prompt's turn")
        XCTAssertTrue(modelSaw(setup, mark("PROMPT-ONE")), "the model saw the prompt")
        var snap = try session.snapshot()
        XCTAssertTrue(said(snap, .agent, mark("PROMPT-ONE")), "the agent's reply quotes it: \(snap)")

        // A steer mid-turn: the extension on v1, the client's cancel_and_resend on v2.
        turn = try await session.prompt("\(mark("PROMPT-TWO")) a long task")
        try await firstChunk(turn)
        let steer = try await session.inject("\(mark("STEER-MARK")) use the v2 API", mode: .steer)
        stop = try await end(turn)
        try await until(session, seconds: Self.timeout, settled(mark("STEER-MARK")))
        snap = try session.snapshot()
        XCTAssertTrue(modelSaw(setup, mark("STEER-MARK")), "the steer reached the model (id \(steer))")
        XCTAssertTrue(said(snap, .user, mark("STEER-MARK")), "the steer is in the transcript: \(snap)")
        XCTAssertTrue(said(snap, .agent, mark("STEER-MARK")), "the model's reply quotes the steer: \(snap)")
        if setup.protocolVersion == 1 {
            XCTAssertEqual(stop, .endTurn, "steered through the extension, the turn goes on to its end")
        } else {
            XCTAssertEqual(stop, .cancelled, "steered by cancel_and_resend, the turn is cancelled and the steer opens the next")
        }

        // Two queued messages held by this client: one revoked, one replaced.
        turn = try await session.prompt("\(mark("PROMPT-THREE")) another long task")
        try await firstChunk(turn)
        let alpha = try await session.inject("\(mark("QUEUED-ALPHA")) first", mode: .queue)
        let beta = try await session.inject("\(mark("QUEUED-BETA")) second", mode: .queue)
        try await session.revoke(beta)
        try await session.replace(alpha, with: "\(mark("QUEUED-GAMMA")) edited")
        let held = try session.snapshot().pending.filter(\.held).map(\.content.text)
        XCTAssertEqual(held, ["\(mark("QUEUED-GAMMA")) edited"], "held while the turn runs")
        stop = try await end(turn)
        XCTAssertEqual(stop, .endTurn, "the turn the messages were queued in")
        try await until(session, seconds: Self.timeout, settled(mark("QUEUED-GAMMA")))
        XCTAssertTrue(modelSaw(setup, mark("QUEUED-GAMMA")), "the replaced message reached the model after the turn")
        XCTAssertFalse(modelSaw(setup, mark("QUEUED-ALPHA")), "the content it replaced never did")
        XCTAssertFalse(modelSaw(setup, mark("QUEUED-BETA")), "the revoked message never did")

        // A prompt cancelled mid-stream.
        turn = try await session.prompt("\(mark("PROMPT-FOUR")) cancel me")
        try await firstChunk(turn)
        try session.cancel()
        stop = try await end(turn)
        XCTAssertEqual(stop, .cancelled, "the cancelled turn")
        snap = try session.snapshot()
        XCTAssertEqual(snap.violations, [], "violations")
        return session.id
    }

    /// A second agent process resumes the session with replay, then takes a prompt.
    private func secondConnection(_ setup: Setup, _ sessionId: SessionId) async throws {
        let client = try await connect(setup.command, name: "swift-tests", handshakeTimeout: 90)
        do {
            let session = try await client.resume(sessionId, cwd: setup.workdir, replay: true)
            let snap = try session.snapshot()
            XCTAssertTrue(said(snap, .user, mark("PROMPT-ONE")), "resumed on a new agent process: \(snap.transcript.count) messages replayed")
            let turn = try await session.prompt("\(mark("PROMPT-FIVE")) after resume")
            let stop = try await end(turn)
            XCTAssertEqual(stop, .endTurn, "prompted after the resume")
            XCTAssertTrue(modelSaw(setup, mark("PROMPT-FIVE")), "the prompt after the resume reached the model")
            try await client.close()
        } catch {
            try? await client.close()
            throw error
        }
    }
}
