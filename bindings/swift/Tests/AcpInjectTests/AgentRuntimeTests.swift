import AcpInject
import Foundation
import XCTest

/// What the probe agent saw, for the tests to check.
final class Probe: Sendable {
    /// Each turn's opening messages, in order.
    let turns = Locked<[[String]]>([])
    /// The steers read at break-points.
    let steers = Locked<[String]>([])
    /// The permission answers (`nil`: the request was cancelled).
    let choices = Locked<[String?]>([])
    /// For each "wait" turn that ended: whether the turn saw a cancel.
    let waits = Locked<[Bool]>([])
    /// The sessions opened.
    let opened = Locked<[String]>([])
    /// "hold" turns wait until this is set.
    let gate = Locked(false)
}

/// An agent written with the Swift runtime, scripted by the first word of the turn's opening
/// message, recording what it sees in its `Probe`.
struct ProbeAgent: Agent {
    let probe: Probe

    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
        let texts = messages.map(\.content.text)
        probe.turns.withLock { $0.append(texts) }
        switch texts.first ?? "" {
        case "hello":
            try turn.say("Hello, ")
            try turn.say("world.")
            try turn.think("That was easy.")
            try turn.say(" Bye.")
            return TurnEnd(stopReason: .endTurn, usage: Usage(totalTokens: 3, inputTokens: 1, outputTokens: 2))
        case "hold":
            try turn.say("step 1. ")
            while !probe.gate.withLock({ $0 }) {
                guard await turn.sleep(for: .milliseconds(10)) else { return nil }
            }
            let call = "call_\(turn.sessionId)"
            try turn.toolCall(call, status: .inProgress, title: "Run step 1", kind: .execute)
            try turn.toolCall(call, status: .completed, output: "step 1 done")
            let steers = try turn.breakPoint(.toolResult).map(\.content.text)
            probe.steers.withLock { $0 += steers }
            turn.newMessage()
            for steer in steers { try turn.say("(noted: \(steer)) ") }
            try turn.say("done.")
            return nil
        case "ask":
            let choice = try await turn.permission("Allow step 2?")
            probe.choices.withLock { $0.append(choice) }
            try turn.say("chose \(choice ?? "nothing").")
            return nil
        case "wait":
            while await turn.sleep(for: .seconds(60)) {}
            probe.waits.withLock { $0.append(turn.isCancelled) }
            return nil
        default:
            try turn.say("ok: \(texts.joined(separator: "; "))")
            return nil
        }
    }

    func opened(sessionId: String, setup: SessionSetup) async throws {
        probe.opened.withLock { $0.append(sessionId) }
    }
}

/// The texts of a snapshot's transcript entries of `role`.
private func said(_ snapshot: MirrorSnapshot, _ role: MessageRole = .agent) -> [String] {
    snapshot.transcript.filter { $0.role == role }.map(\.content.text)
}

/// The Swift agent runtime in this process (`listen` on 127.0.0.1:0), driven by the Swift
/// client over WebSocket.
final class AgentRuntimeTests: XCTestCase {
    private var probe = Probe()
    private var listening: Listening!
    private var client: Client!

    override func setUp() async throws {
        probe = Probe()
        listening = try await listen(agent: ProbeAgent(probe: probe), address: "127.0.0.1:0", config: agentConfig(name: "probe", version: "1.2.3"))
        XCTAssertTrue(listening.url.hasPrefix("http://127.0.0.1:") && listening.url.hasSuffix("/acp"), listening.url)
        XCTAssertTrue(listening.webSocketURL.hasPrefix("ws://127.0.0.1:"), listening.webSocketURL)
        client = try await connect(url: listening.webSocketURL, name: "swift-agent-runtime-test")
    }

    override func tearDown() async throws {
        try? await client?.close()
        await listening?.stop()
    }

    func testATurnStreamsTextAndThoughts() async throws {
        XCTAssertEqual(client.agent.info.name, "probe")
        XCTAssertEqual(client.agent.info.version, "1.2.3")
        XCTAssertEqual(Set(client.inject?.modes ?? []), [.queue, .steer])
        let session = try await client.newSession(cwd: "/tmp")
        // The hook runs on its own task, not necessarily before `session/new` is answered.
        let probe = probe, id = session.id
        try await withDeadline(10) {
            while probe.opened.withLock({ $0 }) != [id] { try await Task.sleep(for: .milliseconds(5)) }
        }
        XCTAssertEqual(listening.sessions, [session.id])
        try await session.prompt("hello")
        try await until(session) { $0.state == .idle && $0.stopReason != nil }
        let snap = try session.snapshot()
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertEqual(snap.usage?.totalTokens, 3)
        XCTAssertEqual(snap.transcript.map(\.role), [.user, .agent, .thought, .agent])
        XCTAssertEqual(said(snap), ["Hello, world.", " Bye."])
        XCTAssertEqual(said(snap, .thought), ["That was easy."])
        XCTAssertEqual(snap.violations, [])
        XCTAssertEqual(probe.turns.withLock { $0 }, [["hello"]])
    }

    func testASteerIsDeliveredAtTheBreakPointAndAQueuedMessageOpensTheNextTurn() async throws {
        let session = try await client.newSession(cwd: "/tmp")
        try await session.prompt("hold")
        try await until(session) { $0.state == .running }
        let steer = try await session.inject("use auth_v2", mode: .steer)
        let queued = try await session.inject("then the changelog")
        try await until(session) { ($0.agentPending ?? []).count == 2 }
        XCTAssertEqual(probe.steers.withLock { $0 }, [], "a steer waits for a break-point")
        probe.gate.withLock { $0 = true }
        // Until turn 2 answered (between the turns the session is idle too, the queued message
        // already delivered). The snapshot can be ahead of the batches handed out so far: what
        // it already shows is queued, so take that too.
        let seen = try await until(session) { $0.state == .idle && said($0).count == 3 && $0.stopReason != nil } + session.takeEvents()
        let snap = try session.snapshot()

        // The agent read the steer at its break-point; the queued message opened turn 2.
        XCTAssertEqual(probe.steers.withLock { $0 }, ["use auth_v2"])
        XCTAssertEqual(probe.turns.withLock { $0 }, [["hold"], ["then the changelog"]])
        // The client saw the steer as a user message within turn 1, before the agent's answer to it.
        XCTAssertEqual(users(snap), ["hold", "use auth_v2", "then the changelog"])
        XCTAssertEqual(snap.transcript.filter { $0.role == .user }.map(\.messageId).suffix(2), [steer, queued])
        let steerAt = seen.firstIndex {
            if case let .update(.userMessage(m)) = $0 { return m.messageId == steer }
            return false
        }
        let firstIdle = seen.firstIndex {
            $0.turnEnded != nil
        }
        XCTAssertNotNil(steerAt, "\(seen)")
        XCTAssertNotNil(firstIdle, "\(seen)")
        if let steerAt, let firstIdle { XCTAssertLessThan(steerAt, firstIdle) }
        XCTAssertEqual(said(snap), ["step 1. ", "(noted: use auth_v2) done.", "ok: then the changelog"])
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertEqual(snap.agentPending ?? [], [])
        XCTAssertEqual(snap.violations, [])
    }

    func testAPermissionRequestIsAnsweredByTheClient() async throws {
        let session = try await client.newSession(cwd: "/tmp")
        // Answered with the second option: the agent gets that one.
        try await session.prompt("ask")
        let request = try await withDeadline(30) { () -> RequestPermissionRequest in
            for try await activity in session.events {
                if case let .permissionRequested(p) = activity {
                    try session.allow(p.request, optionId: "reject")
                    return p.params
                }
            }
            throw Timeout(description: "the events ended without a permission request")
        }
        XCTAssertEqual(request.title, "Allow step 2?")
        XCTAssertEqual(request.options.map(\.optionId), ["allow", "reject"])
        XCTAssertEqual(request.options.map(\.kind), [.allowOnce, .rejectOnce])
        try await until(session) { $0.state == .idle && $0.stopReason != nil }
        XCTAssertEqual(probe.choices.withLock { $0 }, ["reject"])
        XCTAssertEqual(said(try session.snapshot()), ["chose reject."])

        // Cancelled while it is open: the agent gets nil, the turn ends cancelled.
        try await session.prompt("ask")
        try await until(session) { $0.state == .requiresAction }
        try session.cancel()
        try await until(session) { $0.state == .idle && $0.stopReason == .cancelled }
        XCTAssertEqual(probe.choices.withLock { $0 }, ["reject", nil])
        XCTAssertEqual(try session.snapshot().violations, [])
    }

    func testACancelEndsTheTurnAndStopEndsServing() async throws {
        let session = try await client.newSession(cwd: "/tmp")
        try await session.prompt("wait")
        try await until(session) { $0.state == .running }
        try session.cancel()
        try await until(session) { $0.state == .idle && $0.stopReason == .cancelled }
        XCTAssertEqual(probe.waits.withLock { $0 }, [true])

        // A turn running when the server stops ends; the connection ends; nobody can connect.
        try await session.prompt("wait")
        try await until(session) { $0.state == .running }
        await listening.stop()
        let probe = probe
        try await withDeadline(10) {
            while probe.waits.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        }
        // (The client tries to connect again for about 12 s first: a server going away may be
        // restarting.)
        await assertAcpErrorAsync({ try await withDeadline(25) { while true { _ = try await session.nextEvents() } } }) {
            if case .disconnected = $0 { return true }
            return false
        }
        let url = listening.webSocketURL
        await assertAcpErrorAsync({ try await connect(url: url) }) {
            if case .disconnected = $0 { return true }
            return false
        }
    }

    func testANonLoopbackAddressNeedsAToken() async throws {
        await assertAcpErrorAsync({ try await listen(agent: ProbeAgent(probe: probe), address: "0.0.0.0:0") }) {
            if case .config = $0 { return true }
            return false
        }
        // A token too short to be a secret is refused too.
        await assertAcpErrorAsync({ try await listen(agent: ProbeAgent(probe: probe), address: "127.0.0.1:0", token: "s3cret") }) {
            if case let .config(detail) = $0 { return detail.contains("too short") }
            return false
        }
    }

    /// The listener's limits from Swift: a zero one is refused naming it; one client at a time
    /// turns a second away with 503 until the first has gone.
    func testListenLimitsAreInForce() async throws {
        let agent = ProbeAgent(probe: probe)
        await assertAcpErrorAsync({ try await listen(agent: agent, address: "127.0.0.1:0", limits: ListenLimits(maxConnections: 0)) }) {
            if case let .config(detail) = $0 { return detail.contains("max_connections must be more than zero") }
            return false
        }
        let one = try await listen(agent: agent, address: "127.0.0.1:0", limits: ListenLimits(maxConnections: 1))
        let first = try await connect(url: one.url)
        _ = try await first.newSession(cwd: "/tmp")
        for url in [one.webSocketURL, one.url] {
            await assertAcpErrorAsync({ try await connect(url: url) }) {
                if case let .disconnected(detail) = $0 { return detail.contains("503") }
                return false
            }
        }
        try await first.close()
        // Its place is free again once it has gone (its close may take a moment to land).
        var attempt = 0
        while true {
            do {
                let again = try await connect(url: one.webSocketURL)
                _ = try await again.newSession(cwd: "/tmp")
                try await again.close()
                break
            } catch {
                attempt += 1
                if attempt == 50 { throw error }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        await one.stop()
    }
}
