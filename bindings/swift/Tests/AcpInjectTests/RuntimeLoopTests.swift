import AcpInjectFFI
import Foundation
import RecordedStream
import XCTest

/// An agent runtime loop written in Swift (a fake model with tool calls) drives the agent side
/// through queue, steer, revoke, replace, cancel and a permission hold, over the binding; the
/// client side is a `ClientSession` fed with every line the agent sends.
final class FakeModel {
    let core: AgentCore
    let client: ClientSession
    let tools: Int
    let permissionOnTool: Int?
    var seenInputs: [String] = []
    var sent: [String] = [] // every line the agent sent: the recorded stream
    var turns = 0

    init(tools: Int = 2, permissionOnTool: Int? = 1) throws {
        core = try newAgent()
        client = try ClientSession(sessionId: "s1", inject: fullCaps)
        self.tools = tools
        self.permissionOnTool = permissionOnTool
    }

    @discardableResult
    func feed(_ outputs: [AgentOutput]) throws -> [RuntimeAction] {
        for line in outputs.lines(for: "c1") {
            sent.append(line)
            try client.receive(line: line)
        }
        let actions = outputs.actions(session: "s1")
        for action in actions {
            switch action {
            case let .startTurn(messages), let .deliver(messages): seenInputs += messages.map { textOf($0.content.first) ?? "" }
            default: break
            }
        }
        return actions
    }

    @discardableResult
    func send(_ line: String) throws -> [RuntimeAction] { try feed(core.handleLine(connection: "c1", line: line)) }

    @discardableResult
    func event(_ event: RuntimeEvent) throws -> [RuntimeAction] { try feed(core.runtimeEvent(sessionId: "s1", event: event)) }

    /// One turn: a chunk, `tools` tool calls (one may ask permission), then the turn ends.
    func runTurn(_ duringTool: (Int) throws -> Void = { _ in }) throws {
        turns += 1
        try event(.update(updateJson: #"{"sessionUpdate": "agent_message_chunk", "messageId": "a\#(turns)", "content": {"type": "text", "text": "working"}}"#))
        for tool in 0..<tools {
            try duringTool(tool)
            if permissionOnTool == tool {
                try event(.permissionRequested)
                XCTAssertEqual(try client.snapshot().state, .requiresAction)
                try duringTool(-1) // the user acts while the permission prompt is open
                try event(.permissionResolved)
            }
            try event(.breakPoint(kind: .toolResult))
        }
        try event(.turnEnded(stopReason: "end_turn", usageJson: #"{"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}"#))
    }

    func transcriptTexts() throws -> [String] { try client.snapshot().transcript.compactMap { textOf($0.content.first) } }
}

final class RuntimeLoopTests: XCTestCase {
    func testQueueSteerRevokeReplaceCancelAndAPermissionHold() throws {
        let m = try FakeModel()
        try m.send(m.client.prompt(content: [.text("fix the bug")]))
        var pendingIds: [String: String] = [:]

        try m.runTurn { tool in
            if tool == 0 {
                try m.send(m.client.inject(mode: .queue, content: [.text("then update the docs")]))
                try m.send(m.client.inject(mode: .queue, content: [.text("drop this one")]))
                try m.send(m.client.inject(mode: .queue, content: [.text("draft")]))
                for p in try m.client.snapshot().pending { pendingIds[textOf(p.content.first) ?? ""] = p.messageId }
                try m.send(m.client.revoke(messageId: XCTUnwrap(pendingIds["drop this one"])))
                try m.send(m.client.replace(messageId: XCTUnwrap(pendingIds["draft"]), content: [.text("final wording")]))
            }
            if tool == -1 {
                // A steer during the permission prompt is held, not dropped (R-PERM-1).
                try m.send(m.client.inject(mode: .steer, content: [.text("use auth_v2")]))
                let held = try XCTUnwrap(m.client.snapshot().pending.last?.messageId)
                XCTAssertEqual(try m.client.itemStatus(messageId: held), .pending)
            }
        }
        XCTAssertTrue(m.seenInputs.contains("use auth_v2"), "the held steer was delivered at the break-point after the decision")
        XCTAssertGreaterThan(try XCTUnwrap(m.seenInputs.firstIndex(of: "use auth_v2")), try XCTUnwrap(m.seenInputs.firstIndex(of: "fix the bug")))
        // The queued messages (not the revoked one; the replaced one with its new text) opened the next turn.
        XCTAssertEqual(Array(m.seenInputs.suffix(2)), ["then update the docs", "final wording"])
        XCTAssertFalse(try m.transcriptTexts().contains("drop this one"))
        XCTAssertEqual(try m.client.itemStatus(messageId: XCTUnwrap(pendingIds["drop this one"])), .revoked)
        XCTAssertEqual(try m.client.snapshot().state, .running)
        XCTAssertEqual(try m.client.snapshot().violations, [])

        // Cancel with a pending queue inject: the turn ends, the inject survives and opens the next one.
        try m.send(m.client.inject(mode: .queue, content: [.text("after the cancel")]))
        let actions = try m.send(m.client.cancel())
        XCTAssertTrue(actions.contains(.cancelTurn))
        try m.event(.turnEnded(stopReason: "cancelled", usageJson: nil))
        XCTAssertEqual(m.seenInputs.last, "after the cancel")
        let snap = try m.client.snapshot()
        XCTAssertEqual(snap.state, .running)
        XCTAssertEqual(snap.pending, [])
        let texts = try m.transcriptTexts()
        let order = ["fix the bug", "use auth_v2", "final wording", "after the cancel"].map { texts.firstIndex(of: $0) ?? -1 }
        XCTAssertEqual(order, order.sorted())
        XCTAssertFalse(order.contains(-1), "\(texts)")

        // Closing hands nothing back (nothing is pending) and a closed session refuses events.
        XCTAssertEqual(try m.event(.close), [])
        XCTAssertThrowsError(try m.event(.streamStarted)) { error in
            guard case AcpError.Host("session_closed", _) = error else { return XCTFail("\(error)") }
        }
    }

    func testARecordedStreamReplayedIntoAFreshMirrorRebuildsTheSameState() throws {
        let m = try FakeModel()
        try m.send(m.client.prompt(content: [.text("fix the bug")]))
        try m.runTurn { tool in if tool == 0 { try m.send(m.client.inject(mode: .queue, content: [.text("next")])) } }
        try m.runTurn()
        let live = try m.client.snapshot()

        // Another client (an observer UI) sees only the agent's lines, as bytes, in one crossing.
        let replay = try ClientSession(sessionId: "s1", inject: fullCaps)
        XCTAssertEqual(try replay.receiveBytes(bytes: RecordedStream.bytes(m.sent)), [])
        let got = try replay.snapshot()
        XCTAssertEqual(got.transcript, live.transcript)
        XCTAssertEqual(got.state, live.state)
        XCTAssertEqual(got.stopReason, live.stopReason)
        XCTAssertEqual(got.usageJson, live.usageJson)

        // The same stream pulled lazily from a sequence, three lines per crossing.
        let lazy = try ClientSession(sessionId: "s1", inject: fullCaps)
        XCTAssertEqual(try lazy.receiveAll(m.sent.lazy.map { $0 }, batchSize: 3), [])
        XCTAssertEqual(try lazy.snapshot().transcript, live.transcript)
    }
}
