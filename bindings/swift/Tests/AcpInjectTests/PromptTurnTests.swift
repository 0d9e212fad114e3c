import AcpInject
import Foundation
import XCTest

/// A scripted agent (Python, standard library only: the chroot has python3) that answers a prompt
/// with two whole turns in one write, so that the second turn arrives in the batch that ends the
/// first: the prompt's answer, its `user_message`, a chunk, `idle`; then another user message, a
/// chunk and `idle` (`max_tokens`).
private let twoTurnsInOneWrite = #"""
import json, sys

def send(*messages):
    sys.stdout.write("".join(json.dumps(m) + "\n" for m in messages))
    sys.stdout.flush()

def update(u):
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": u}}

def text(t):
    return {"type": "text", "text": t}

for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        caps = {"session": {"inject": {"modes": ["queue", "steer"]}}}
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "two-turns", "version": "1"}, "capabilities": caps}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send(
            {"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}},
            update({"sessionUpdate": "user_message", "messageId": "u1", "content": m["params"]["prompt"]}),
            update({"sessionUpdate": "state_update", "state": "running"}),
            update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("first turn")}),
            update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
            update({"sessionUpdate": "user_message", "messageId": "u2", "content": [text("queued")]}),
            update({"sessionUpdate": "state_update", "state": "running"}),
            update({"sessionUpdate": "agent_message_chunk", "messageId": "a2", "content": text("second turn")}),
            update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "max_tokens"}),
        )
"""#

/// `session.prompt(…)` returns a `PromptTurn`: its message id, its updates until its idle state,
/// its stop reason; what follows its end stays in the session's stream; permission requests in
/// it go to the session's handler.
final class PromptTurnTests: XCTestCase {
    func testATurnStreamsItsUpdatesFromItsUserMessageToItsIdleState() async throws {
        let agent = try await connectReferenceAgent(delayMs: 5, ["--chunks", "3", "--tools", "1"])
        let session = try await agent.newSession(cwd: "/tmp")
        let turn = try await session.prompt("fix the bug")
        XCTAssertNotNil(turn.messageId)
        XCTAssertTrue("\(turn)".hasPrefix("PromptTurn(\(turn.messageId ?? "")"), "\(turn)")
        let updates = try await withDeadline(30) {
            var seen: [SessionUpdate] = []
            for try await update in turn.updates { seen.append(update) }
            return seen
        }
        XCTAssertTrue(turn.ended)
        guard case let .userMessage(first)? = updates.first else { return XCTFail("\(updates)") }
        XCTAssertEqual(first.messageId, turn.messageId)
        XCTAssertEqual(updates.last?.turnEnded?.stopReason, .endTurn)
        XCTAssertEqual(updates.filter { $0.turnEnded != nil }.count, 1, "one end")
        XCTAssertFalse(updates.compactMap(\.agentText).isEmpty, "\(updates)")
        XCTAssertTrue(updates.contains { if case .toolCallUpdate = $0 { true } else { false } }, "\(updates)")
        let stop = try await turn.finished
        XCTAssertEqual(stop, .endTurn, "finished after the end: the same stop reason")
        try await agent.close()
    }

    /// `finished` first: the updates it read on the way are still handed out by `updates`.
    func testFinishedFirstThenTheUpdates() async throws {
        let agent = try await connectReferenceAgent(delayMs: 5, ["--chunks", "2"])
        let session = try await agent.newSession(cwd: "/tmp")
        let turn = try await session.prompt("hello")
        let stop = try await withDeadline(30) { try await turn.finished }
        XCTAssertEqual(stop, .endTurn)
        var updates: [SessionUpdate] = []
        for try await update in turn.updates { updates.append(update) }
        XCTAssertEqual(updates.first?.messageId, turn.messageId)
        XCTAssertEqual(updates.last?.turnEnded?.stopReason, .endTurn)
        try await agent.close()
    }

    /// The next turn came in the batch that ended this one: it is not the turn's, and it is not
    /// dropped either: the session's stream hands it out next.
    func testWhatFollowsATurnsEndStaysInTheSessionsStream() async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("two-turns-\(UUID().uuidString).py")
        try twoTurnsInOneWrite.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let client = try await connect(["python3", script.path], name: "prompt-turn-test", forwardStderr: false)
        let session = try await client.newSession(cwd: "/tmp")
        let turn = try await session.prompt("first")
        XCTAssertEqual(turn.messageId, "u1")
        let stop = try await withDeadline(30) { try await turn.finished }
        XCTAssertEqual(stop, .endTurn)
        var updates: [String] = []
        for try await update in turn.updates { updates.append(update.description) }
        XCTAssertEqual(updates, ["userMessage u1 \"first\"", "state running", "agentMessageChunk a1 \"first turn\"", "state idle (endTurn)"])

        // The rest: the second turn, in order, from the session's stream.
        let rest = try await withDeadline(30) { () -> [SessionUpdate] in
            var rest: [SessionUpdate] = []
            while rest.last?.turnEnded == nil { rest += try await session.nextEvents().compactMap(\.update) }
            return rest
        }
        XCTAssertEqual(rest.map(\.description), ["userMessage u2 \"queued\"", "state running", "agentMessageChunk a2 \"second turn\"", "state idle (maxTokens)"])
        try await client.close()
    }

    func testPermissionRequestsInATurnGoToTheSessionsHandler() async throws {
        let asked = Locked<[String]>([])
        let agent = try await connectReferenceAgent(delayMs: 5, ["--tools", "2", "--permission-on-tool", "1"]) { request in
            asked.withLock { $0.append(request.title) }
            return request.options.first { $0.kind == .allowOnce }?.optionId
        }
        let session = try await agent.newSession(cwd: "/tmp")
        let turn = try await session.prompt("go")
        let stop = try await withDeadline(30) { try await turn.finished }
        XCTAssertEqual(stop, .endTurn)
        XCTAssertEqual(asked.withLock { $0.count }, 1)
        XCTAssertEqual(try session.snapshot().violations, [])
        try await agent.close()
    }

    /// Without a handler a permission request ends the reading of the turn with
    /// `AcpError.invalidInput`, and stays in the session's stream to be answered there.
    func testWithoutAHandlerAPermissionRequestThrowsAndStaysInTheStream() async throws {
        let agent = try await connectReferenceAgent(delayMs: 5, ["--tools", "2", "--permission-on-tool", "1"])
        let session = try await agent.newSession(cwd: "/tmp")
        let turn = try await session.prompt("go")
        await assertAcpErrorAsync({ try await withDeadline(30) { try await turn.finished } }) {
            if case let .invalidInput(detail) = $0 { detail.contains("onPermission") } else { false }
        }
        let end = try await withDeadline(30) { () -> StopReason? in
            for try await activity in session.events {
                if let request = activity.permissionRequested {
                    let allow = request.params.options.first { $0.kind == .allowOnce } ?? request.params.options[0]
                    try session.allow(request.request, optionId: allow.optionId)
                }
                if let idle = activity.turnEnded { return idle.stopReason }
            }
            return nil
        }
        XCTAssertEqual(end, .endTurn)
        try await agent.close()
    }
}
