import AcpInject
import Foundation
import XCTest

/// A program that prints one line first (its address or URL): `line` is that line.
final class Started {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private(set) var line = ""

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        line = readLine()
        guard !line.isEmpty else { throw Timeout(description: "\(arguments[0]) printed nothing") }
    }

    /// One line of the program's stdout (blocking).
    func readLine() -> String {
        var bytes: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte.first == UInt8(ascii: "\n") { break }
            bytes.append(byte[byte.startIndex])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sends a command line to the relay and waits for its answer (`answer`, by default the
    /// command itself).
    func command(_ what: String, answer: String? = nil) throws {
        input.fileHandleForWriting.write(Data((what + "\n").utf8))
        guard readLine() == (answer ?? what) else { throw Timeout(description: "the relay did not answer \(what)") }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// A bearer token long enough to be one (the library refuses tokens under 16 bytes).
private let secret = "s3cret-s3cret-s3cret"

private let relayScript = workspace.appendingPathComponent("bindings/test-support/relay.py").path

private func agentPending(_ s: MirrorSnapshot) -> [String] {
    (s.agentPending ?? []).map { "\($0.mode) \($0.content.text)" }
}

/// Over the network: connect by URL to the reference agent (`--listen`) over WebSocket and over
/// Streamable HTTP, through a relay the test cuts mid-turn (over WebSocket the client connects
/// again and resumes the session with replay by itself; over Streamable HTTP it reopens the
/// session's stream); find the transcript and the pending list intact, and see every accepted
/// message delivered once.
final class RemoteTests: XCTestCase {
    private func survivesADroppedNetwork(_ scheme: String) async throws {
        // Slow steps: the turn's first break-point comes seconds after it starts.
        let agent = try Started([agentBinary(), "--listen", "127.0.0.1:0", "--delay-ms", "1500", "--chunks", "2", "--tools", "1"])
        defer { agent.stop() }
        let port = agent.line.components(separatedBy: "://")[1].components(separatedBy: "/")[0]
        let relay = try Started(["python3", relayScript, port])
        defer { relay.stop() }
        let url = "\(scheme)://\(relay.line)/acp"

        let client = try await connect(url: url, name: "swift-remote-test")
        let session = try await client.newSession(cwd: "/tmp")
        _ = try await session.prompt("first")
        try await until(session) { $0.state == .running }
        _ = try await session.inject("later")
        _ = try await session.inject("now", mode: .steer)
        try await session.revoke(try await session.inject("revoke me"))
        try await session.replace(try await session.inject("old"), with: "new")
        let expected = ["steer now", "queue later", "queue new"]
        try await until(session) { agentPending($0) == expected }
        let before = try session.snapshot()

        // The network goes away mid-turn, and comes back.
        try relay.command("cut")
        // The connection outlives the cut: over WebSocket the client connects again and resumes
        // the session with replay; over Streamable HTTP it reopens the session's stream from the
        // last event it read. A call made now is answered, and the transcript and the pending
        // list are intact.
        let status = try await session.status()
        if case .running? = status.state {} else { XCTFail("state after the cut \(String(describing: status.state))") }
        try await until(session) { agentPending($0) == expected && $0.state == .running }
        let after = try session.snapshot()
        XCTAssertEqual(after.transcript.map { "\($0.role) \($0.messageId) \($0.content.text)" }, before.transcript.map { "\($0.role) \($0.messageId) \($0.content.text)" })

        // The turn goes on: each accepted message delivered once, the revoked one never.
        try await until(session) { $0.state == .idle && agentPending($0).isEmpty && users($0).count == 4 }
        let done = try session.snapshot()
        XCTAssertEqual(Array(users(done).prefix(2)), ["first", "now"])
        XCTAssertEqual(users(done).dropFirst(2).sorted(), ["later", "new"])
        XCTAssertEqual(done.violations, [])
        try await session.close()
        try await client.close()
    }

    func testOverWebSocketASessionSurvivesADroppedNetwork() async throws {
        try await survivesADroppedNetwork("ws")
    }

    func testOverStreamableHttpASessionSurvivesADroppedNetwork() async throws {
        try await survivesADroppedNetwork("http")
    }

    /// The relay gives up on a session's stream (Streamable HTTP) without telling the agent,
    /// mid-turn: the client reopens it from the last event it read, and loses nothing.
    func testADroppedSessionStreamLosesNothing() async throws {
        // Many small chunks, so the stream is dropped while the agent is writing.
        let agent = try Started([agentBinary(), "--listen", "127.0.0.1:0", "--delay-ms", "15", "--chunks", "60", "--tools", "0"])
        defer { agent.stop() }
        let port = agent.line.components(separatedBy: "://")[1].components(separatedBy: "/")[0]
        let relay = try Started(["python3", relayScript, port])
        defer { relay.stop() }
        @Sendable func agentText(_ s: MirrorSnapshot) -> String {
            s.transcript.filter { $0.role == .agent }.map(\.content.text).joined()
        }
        let client = try await connect(url: "http://\(relay.line)/acp", name: "swift-remote-test")
        let session = try await client.newSession(cwd: "/tmp")
        try await session.prompt("stream")
        try await until(session) { agentText($0).count > 20 }
        try relay.command("drop-stream \(session.id)", answer: "dropped")
        try await until(session) { $0.state == .idle && $0.stopReason != nil }
        let done = try session.snapshot()
        // What the client saw is what the agent recorded: the replay on a fresh connection.
        let check = try await connect(url: agent.line, name: "swift-remote-check")
        let replayed = try await check.resume(session.id, cwd: "/tmp", replay: true).snapshot()
        XCTAssertEqual(agentText(done), agentText(replayed))
        XCTAssertGreaterThan(agentText(done).count, 60)
        try await check.close()
        try await client.close()
    }

    /// The network breaks after the agent accepted a prompt, then an inject, before its answer:
    /// the client sends each again with its idempotency key (over WebSocket on a new socket,
    /// after resuming the session), and the agent keeps one copy of each (R-IDEM-2, C-IDEM-1).
    private func aCutBetweenAcceptanceAndAnswerLeavesOneCopy(_ scheme: String) async throws {
        let agent = try Started([agentBinary(), "--listen", "127.0.0.1:0", "--delay-ms", "20", "--chunks", "20", "--tools", "0"])
        defer { agent.stop() }
        let port = agent.line.components(separatedBy: "://")[1].components(separatedBy: "/")[0]
        let relay = try Started(["python3", relayScript, port])
        defer { relay.stop() }
        let client = try await connect(url: "\(scheme)://\(relay.line)/acp", name: "swift-remote-test")
        let session = try await client.newSession(cwd: "/tmp")
        try relay.command("cut-answer session/prompt", answer: "armed")
        let turn = try await session.prompt("first")
        try relay.command("answers-cut", answer: "cut 1")
        try relay.command("cut-answer session/inject", answer: "armed")
        let later = try await session.inject("second")
        try relay.command("answers-cut", answer: "cut 2")
        try await until(session) { $0.state == .idle && users($0).count >= 2 }
        let done = try session.snapshot()
        XCTAssertEqual(users(done), ["first", "second"])
        XCTAssertEqual(done.transcript.filter { $0.role == .user }.map(\.messageId), [turn.messageId, later].compactMap { $0 })
        // What the agent recorded: one copy of each, on a fresh connection's replay.
        let check = try await connect(url: agent.line, name: "swift-remote-check")
        let replayed = try await check.resume(session.id, cwd: "/tmp", replay: true).snapshot()
        XCTAssertEqual(users(replayed), ["first", "second"])
        try await check.close()
        try await client.close()
    }

    func testACutBetweenAcceptanceAndAnswerOverStreamableHttpLeavesOneCopy() async throws {
        try await aCutBetweenAcceptanceAndAnswerLeavesOneCopy("http")
    }

    func testACutBetweenAcceptanceAndAnswerOverWebSocketLeavesOneCopy() async throws {
        try await aCutBetweenAcceptanceAndAnswerLeavesOneCopy("ws")
    }

    func testAWrongSchemeOrTokenIsATypedError() async throws {
        // `env NAME=VALUE program …`: the token reaches the agent through its environment.
        let agent = try Started(["ACP_TOKEN=\(secret)", agentBinary(), "--listen", "127.0.0.1:0", "--token-env", "ACP_TOKEN"])
        defer { agent.stop() }
        let ws = agent.line.replacingOccurrences(of: "http://", with: "ws://")
        await assertAcpErrorAsync({ try await connect(url: "ftp://127.0.0.1:1/acp") }) {
            if case let .disconnected(detail) = $0 { return detail.contains("unsupported URL scheme") }
            return false
        }
        for url in [ws, agent.line] {
            await assertAcpErrorAsync({ try await connect(url: url, token: "wrong") }) {
                if case let .disconnected(detail) = $0 { return detail.contains("401") }
                return false
            }
            let client = try await connect(url: url, token: secret)
            _ = try await client.newSession(cwd: "/tmp")
            try await client.close()
        }
    }

    /// A token per principal: each client sees its own principal's sessions only; another
    /// principal's session is answered as one the agent never had (R-TENANT-1).
    func testPrincipalsSeeTheirOwnSessionsOnly() async throws {
        let alice = "alice-0123456789abcdef", bob = "bob-0123456789abcdef00"
        let listening = try await listen(agent: Quiet(), address: "127.0.0.1:0", tokens: ["alice": alice, "bob": bob])
        let ws = listening.url.replacingOccurrences(of: "http://", with: "ws://")
        let a = try await connect(url: ws, token: alice)
        let theirs = try await a.newSession(cwd: "/tmp")
        var bobs: [String] = []
        for url in [ws, listening.url] {
            let b = try await connect(url: url, token: bob)
            bobs.insert(try await b.newSession(cwd: "/tmp").id, at: 0)
            let listed = try await b.listSessions().sessions.map(\.sessionId)
            XCTAssertEqual(listed, bobs)
            var never = "", foreign = ""
            do { _ = try await b.resume("sess_never", cwd: "/tmp") } catch { never = "\(error)".replacingOccurrences(of: "sess_never", with: "ID") }
            do { _ = try await b.resume(theirs.id, cwd: "/tmp") } catch { foreign = "\(error)".replacingOccurrences(of: theirs.id, with: "ID") }
            XCTAssertFalse(never.isEmpty)
            XCTAssertEqual(foreign, never, url)
            try await b.close()
        }
        let alices = try await a.listSessions().sessions.map(\.sessionId)
        XCTAssertEqual(alices, [theirs.id])
        try await a.close()
        await listening.stop()
        for tokens in [["a": alice, "b": alice], ["a": "short"]] {
            await assertAcpErrorAsync({ _ = try await listen(agent: Quiet(), address: "127.0.0.1:0", tokens: tokens) }) {
                if case .config = $0 { return true }
                return false
            }
        }
    }
}

/// An agent whose turns end at once, saying nothing.
private struct Quiet: Agent {
    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? { nil }
}
