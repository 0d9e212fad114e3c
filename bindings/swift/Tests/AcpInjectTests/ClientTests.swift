@testable import AcpInject
import Foundation
import XCTest

/// The Swift layer's own behaviour: the event sequence, cancellation, lifetime, listing.
final class ClientTests: XCTestCase {
    func testAPromptStreamsItsTurnThroughTheEventSequence() async throws {
        let agent = try await connectReferenceAgent(delayMs: 10)
        XCTAssertEqual(agent.agent.info.name, "acp-inject-reference-agent")
        XCTAssertEqual(agent.inject?.modes, [.queue, .steer])
        let session = try await agent.newSession(cwd: "/tmp")
        XCTAssertEqual("\(session)", "Session(\(session.id))")
        let id = try await session.prompt([.text("fix"), .text(" the bug")]).messageId
        var updates: [String] = []
        var running = false
        for try await activity in session.events {
            guard case let .update(update) = activity else { continue }
            updates.append(update.description)
            if case .stateUpdate(.running) = update { running = true }
            if running, case .stateUpdate(.idle) = update { break }
        }
        XCTAssertEqual(updates.first, "userMessage \(id ?? "?") \"fix\" \" the bug\"")
        XCTAssertTrue(updates.contains { $0.hasPrefix("agentMessageChunk") }, "\(updates)")
        XCTAssertEqual(updates.last, "state idle (endTurn)")
        let snap = try session.snapshot()
        XCTAssertEqual(snap.state, .idle)
        XCTAssertEqual(snap.transcript.first?.content.text, "fix the bug")
        let open = try await session.status()
        XCTAssertEqual(open.status, .open)
        if case .idle? = open.state {} else { XCTFail("state \(String(describing: open.state))") }
        try await session.close()
        let saved = try await session.status()
        XCTAssertEqual(saved.status, .saved)
        XCTAssertNil(saved.state)
        try await agent.close()
    }

    /// A task waiting for events is cancelled at once, and the batch it waited for is not lost:
    /// the next call returns it.
    func testCancellingAWaitLosesNoEvents() async throws {
        let agent = try await connectReferenceAgent(delayMs: 300)
        let session = try await agent.newSession(cwd: "/tmp")
        _ = session.takeEvents()
        let waiting = Task { try await session.nextEvents() }
        try await Task.sleep(nanoseconds: 50_000_000)
        let started = Date()
        waiting.cancel()
        do {
            let batch = try await waiting.value
            XCTFail("the cancelled wait returned \(batch)")
        } catch is CancellationError {}
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.2, "cancellation did not wait for the agent")
        // The prompt's events reach the next caller, from the start.
        let id = try await session.prompt("hello").messageId
        var seen: [SessionActivity] = []
        while !seen.contains(where: { $0.update != nil }) { seen += try await session.nextEvents() }
        XCTAssertEqual(seen.first, .item(PendingItem(messageId: nil, mode: .prompt, status: .sending, content: "hello".contentBlocks)))
        guard case let .update(.userMessage(first))? = seen.first(where: { $0.update != nil }) else {
            return XCTFail("\(seen)")
        }
        XCTAssertEqual(first.messageId, id)

        // Iterating in a cancelled task ends the sequence instead of hanging.
        let iterating = Task { () -> Int in
            var n = 0
            for try await _ in session.events { n += 1 }
            return n
        }
        try await Task.sleep(nanoseconds: 50_000_000)
        iterating.cancel()
        _ = try await withDeadline(5) { try await iterating.value }
        try await agent.close()
    }

    /// A client nobody holds closes its connection: the agent's stdin closes and every
    /// session of it ends. (The binding's session object, reached with `@testable`, does not
    /// hold the client as a `Session` does.)
    func testAClientThatGoesAwayClosesItsConnection() async throws {
        var client: Client? = try await connectReferenceAgent()
        let connection = try XCTUnwrap(client?.connection)
        let raw = try await connection.newSession(cwd: "/tmp", additionalDirectories: [], mcpServers: Boundary.encode([McpServer]()))
        weak var gone = client
        client = nil
        XCTAssertNil(gone)
        await assertAcpErrorAsync({ try await withDeadline(10) { while true { _ = try await callAsync { try await raw.nextEvents() } } } }) {
            if case .disconnected = $0 { true } else { false }
        }
    }

    /// A session keeps its client alive.
    func testASessionKeepsItsClientOpen() async throws {
        weak var gone: Client?
        let session: Session
        do {
            let client = try await connectReferenceAgent(delayMs: 5)
            gone = client
            session = try await client.newSession(cwd: "/tmp")
        }
        XCTAssertNotNil(gone)
        try await session.prompt("still here")
        try await until(session) { $0.state == .idle && $0.transcript.count > 1 }
        try await session.client.close()
    }

    func testSessionsAreListedPageByPageAndResumed() async throws {
        let agent = try await connectReferenceAgent(delayMs: 5)
        var ids: [String] = []
        for _ in 0..<3 { ids.append(try await agent.newSession(cwd: "/tmp/listed").id) }
        var listed: [String] = []
        for try await info in agent.sessions(cwd: "/tmp/listed") { listed.append(info.sessionId) }
        XCTAssertEqual(Set(listed), Set(ids))
        let resumed = try await agent.resume(ids[0], cwd: "/tmp/listed")
        XCTAssertEqual(resumed.id, ids[0])
        try await resumed.prompt("after resume")
        try await until(resumed) { users($0) == ["after resume"] }
        try await agent.close()
    }
}
