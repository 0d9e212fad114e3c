import AcpInject
import Foundation
import XCTest

/// Two sessions on one connection never take each other's answers, items or updates: on the
/// sans-IO `ClientCore` (the regression), and on a live connection to the reference agent with
/// both sessions driven at once.
final class TwoSessionsTests: XCTestCase {
    /// The repro: a prompt on s1, then a steer on s2 while s2 is idle, every agent line fed back.
    /// s2's refusal must be answered to s2's request, s2 must not take s1's answer, and s2 must
    /// show no phantom pending item.
    func testASteerOnAnIdleSessionGetsItsOwnRefusalNotTheOtherSessionsAnswer() throws {
        let loop = try Loopback()
        _ = try loop.client.initialize(client: Implementation(name: "t", version: "1"), pendingUpdates: true)
        try loop.pump()
        let new1 = try loop.client.newSession(cwd: "/home/dev/a", additionalDirectories: [], mcpServers: [])
        let new2 = try loop.client.newSession(cwd: "/home/dev/b", additionalDirectories: [], mcpServers: [])
        try loop.pump()
        guard case let .sessionCreated(c1)? = loop.answer(new1)?.outcome, case let .sessionCreated(c2)? = loop.answer(new2)?.outcome else {
            return XCTFail("sessions not created: \(loop.events)")
        }
        let (s1, s2) = (c1.sessionId, c2.sessionId)
        XCTAssertNotEqual(s1, s2)

        // Both requests go out before either answer comes back: the answers interleave.
        let prompt = try loop.client.prompt(sessionId: s1, content: "fix the bug".contentBlocks)
        let steer = try loop.client.inject(sessionId: s2, mode: .steer, content: "too early".contentBlocks)
        XCTAssertEqual(try loop.client.snapshot(sessionId: s2)?.pending.map(\.status), [.sending])
        try loop.pump()

        let promptAnswer = try XCTUnwrap(loop.answer(prompt))
        XCTAssertEqual(promptAnswer.kind, .prompt)
        XCTAssertEqual(promptAnswer.sessionId, s1)
        guard case let .accepted(accepted) = promptAnswer.outcome, let promptId = accepted.messageId else {
            return XCTFail("s1's prompt: \(promptAnswer.outcome)")
        }

        let steerAnswer = try XCTUnwrap(loop.answer(steer))
        XCTAssertEqual(steerAnswer.kind, .inject)
        XCTAssertEqual(steerAnswer.sessionId, s2, "the refusal is answered to s2's call")
        guard case let .failed(error) = steerAnswer.outcome else { return XCTFail("s2's steer: \(steerAnswer.outcome)") }
        XCTAssertEqual(error.reason, .noRunningTurn)
        XCTAssertEqual(error.code, -32010)

        let snap2 = try XCTUnwrap(loop.client.snapshot(sessionId: s2))
        XCTAssertEqual(snap2.pending.filter { $0.status == .pending || $0.status == .sending }, [], "no phantom pending item on s2")
        XCTAssertEqual(snap2.transcript, [], "s2 did not take s1's message")
        XCTAssertEqual(snap2.state, .idle)
        XCTAssertFalse(snap2.pending.contains { $0.messageId == promptId })
        XCTAssertEqual(snap2.violations, [])

        let snap1 = try XCTUnwrap(loop.client.snapshot(sessionId: s1))
        XCTAssertEqual(snap1.state, .running)
        XCTAssertEqual(users(snap1), ["fix the bug"])
        XCTAssertEqual(snap1.transcript.first?.messageId, promptId)
        // Every session event was about the session it names.
        for case let .session(s) in loop.events {
            guard case let .item(item) = s.event, item.messageId == promptId else { continue }
            XCTAssertEqual(s.sessionId, s1, "\(item) reported on \(s.sessionId)")
        }
        XCTAssertEqual(try loop.client.ignoredLines(), 0)
        // The agent started exactly one turn, in s1.
        XCTAssertEqual(loop.actions.compactMap { if case .startTurn = $0.action { return $0.session } else { return nil } }, [s1])
    }

    /// The same on a live connection: the refusal surfaces as the thrown error of s2's own call.
    func testTheRefusalSurfacesOnTheLiveSessionsCall() async throws {
        let agent = try await connectReferenceAgent(delayMs: 200)
        let s1 = try await agent.newSession(cwd: "/tmp")
        let s2 = try await agent.newSession(cwd: "/tmp")
        try await s1.prompt("fix the bug")
        await assertAcpErrorAsync({ try await s2.inject("too early", mode: .steer) }) {
            guard case let .protocol(error) = $0 else { return false }
            return error.reason == .noRunningTurn
        }
        let snap2 = try s2.snapshot()
        XCTAssertEqual(snap2.pending.filter { $0.status != .failed }, [], "no phantom pending item on s2: \(snap2.pending)")
        XCTAssertEqual(snap2.transcript, [])
        XCTAssertEqual(users(try s1.snapshot()), ["fix the bug"])
        try await agent.close()
    }

    /// A prompt in one session while the other injects, revokes and replaces, all at once on the
    /// one connection: every answer reaches its caller and every delivery its session.
    func testTwoSessionsDrivenConcurrentlyAreNeverMisrouted() async throws {
        let agent = try await connectReferenceAgent(delayMs: 60, ["--chunks", "4", "--tools", "2"])
        let a = try await agent.newSession(cwd: "/tmp")
        let b = try await agent.newSession(cwd: "/tmp")
        XCTAssertNotEqual(a.id, b.id)

        // b runs a turn, so its queued injects stay pending while a's prompt runs alongside.
        try await b.prompt("B: write the docs")
        try await until(b) { $0.state == .running }
        // b's three injects go out one after another (their queue order is what the test checks
        // later), while a's prompt runs alongside them on the same connection.
        @Sendable func queueOnB() async throws -> (keep: MessageId, drop: MessageId, draft: MessageId) {
            let keep = try await b.inject("B: then lint", mode: .queue)
            let drop = try await b.inject("B: revoke me", mode: .queue)
            let draft = try await b.inject("B: draft", mode: .queue)
            return (keep, drop, draft)
        }
        async let promptA = a.prompt("A: fix the bug")
        async let queuedB = queueOnB()
        let (turnA, (keep, drop, draft)) = try await (promptA, queuedB)
        let idA = turnA.messageId
        async let revoked: Void = b.revoke(drop)
        async let replaced: Void = b.replace(draft, with: "B: final wording")
        async let steerA = a.inject("A: use auth_v2", mode: .steer)
        let (_, _, steer) = try await (revoked, replaced, steerA)

        let pendingB = try b.snapshot().pending.filter { $0.status == .pending }
        XCTAssertEqual(Set(pendingB.compactMap(\.messageId)), [keep, draft], "b holds its own pending items only")
        XCTAssertFalse(try a.snapshot().pending.contains { [keep, drop, draft].contains($0.messageId) }, "none of b's items on a")

        async let followA = until(a) { s in s.state == .idle && users(s).contains("A: use auth_v2") }
        async let followB = until(b) { s in s.state == .idle && s.pending.allSatisfy { $0.status != .pending } && users(s).count == 3 }
        let (seenA, seenB) = try await (followA, followB)

        let snapA = try a.snapshot(), snapB = try b.snapshot()
        XCTAssertEqual(users(snapA), ["A: fix the bug", "A: use auth_v2"])
        XCTAssertEqual(snapA.transcript.first?.messageId, idA)
        XCTAssertTrue(snapA.transcript.contains { $0.messageId == steer })
        XCTAssertEqual(users(snapB), ["B: write the docs", "B: then lint", "B: final wording"], "the revoked one never arrives, the replaced one with its new text")
        XCTAssertTrue(snapB.transcript.contains { $0.messageId == draft })
        XCTAssertEqual(snapA.violations + snapB.violations, [])
        // Each stream carried only its own session's items.
        for case let .item(item) in seenA { XCTAssertFalse([keep, drop, draft].contains(item.messageId), "b's \(item) on a's stream") }
        for case let .item(item) in seenB { XCTAssertFalse([idA, steer].contains(item.messageId), "a's \(item) on b's stream") }
        try await agent.close()
    }
}
