import AcpInjectFFI
import Foundation
import XCTest

/// Errors cross the boundary as a thrown `AcpError` carrying code, reason and messageId.
final class ErrorsTests: XCTestCase {
    func testAgentErrorAnswersSurfaceAsProtocolErrors() throws {
        let core = try newAgent()
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        // A steer while idle: the agent answers -32010 no_running_turn.
        let answers = try core.handleLine(connection: "c1", line: session.inject(mode: .steer, content: [.text("use auth_v2")])).lines(for: "c1")
        XCTAssertEqual(answers.count, 1)
        XCTAssertThrowsError(try session.receive(line: answers[0])) { error in
            guard case let AcpError.Protocol(code, message, reason, messageId) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(code, -32010)
            XCTAssertEqual(message, "Inject precondition failed")
            XCTAssertEqual(reason, "no_running_turn")
            XCTAssertNil(messageId)
        }
        XCTAssertEqual(try session.snapshot().pending, [])
        // The bulk path reports the same answer as a record instead of throwing.
        let again = try core.handleLine(connection: "c1", line: session.inject(mode: .steer, content: [.text("again")])).lines(for: "c1")
        let errors = try session.receiveLines(lines: again)
        XCTAssertEqual(errors.map(\.reason), ["no_running_turn"])
        XCTAssertEqual(errors[0].asError, .Protocol(code: -32010, message: "Inject precondition failed", reason: "no_running_turn", messageId: nil))
    }

    func testAlreadyDeliveredCarriesTheMessageId() throws {
        let core = try newAgent()
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        func exchange(_ line: String) throws {
            for answer in try core.handleLine(connection: "c1", line: line).lines(for: "c1") { try session.receive(line: answer) }
        }
        try exchange(session.prompt(content: [.text("fix the bug")]))
        try exchange(session.inject(mode: .steer, content: [.text("and the docs")]))
        let steerId = try XCTUnwrap(session.snapshot().pending.first?.messageId)
        for answer in try core.runtimeEvent(sessionId: "s1", event: .breakPoint(kind: .toolResult)).lines(for: "c1") {
            try session.receive(line: answer)
        }
        // The mirror knows it is delivered, so it refuses locally…
        XCTAssertThrowsError(try session.revoke(messageId: steerId)) { error in
            XCTAssertEqual(error as? AcpError, .Rejected(reason: "unknown_message_id"))
        }
        // …and the agent, asked directly, answers already_delivered with the id.
        let raw = request(99, "session/revoke_inject", revokeParams(steerId))
        let answer = try JSON.parse(XCTUnwrap(core.handleLine(connection: "c1", line: raw).lines(for: "c1").first))
        XCTAssertEqual(answer["error"], .object([
            "code": .int(-32010), "message": .string("Inject precondition failed"),
            "data": .object(["reason": .string("already_delivered"), "messageId": .string(steerId)]),
        ]))
    }

    func testLocalRejectionsAreTyped() throws {
        let session = try ClientSession(sessionId: "s1", inject: InjectCapabilities(modes: [.queue], replace: false, steerInStream: []))
        XCTAssertThrowsError(try session.inject(mode: .steer, content: [.text("x")])) {
            XCTAssertEqual($0 as? AcpError, .Rejected(reason: "mode_not_supported"))
        }
        XCTAssertThrowsError(try session.replace(messageId: "m_1", content: [.text("x")])) {
            XCTAssertEqual($0 as? AcpError, .Rejected(reason: "replace_not_supported"))
        }
        XCTAssertFalse(try session.snapshot().affordances.steer)
        // `AcpError` is a plain Swift error: do/catch with patterns, and a description.
        do {
            _ = try session.revoke(messageId: "m_9")
            XCTFail("revoking an unknown id was accepted")
        } catch let AcpError.Rejected(reason) {
            XCTAssertEqual(reason, "unknown_message_id")
        }
    }

    func testBadInputThrowsInvalidInputAndChangesNothing() throws {
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        let before = try session.snapshotJson()
        func assertInvalid(_ body: @autoclosure () throws -> Any, line: UInt = #line) {
            XCTAssertThrowsError(try body(), line: line) { error in
                guard case AcpError.InvalidInput = error else { return XCTFail("\(error)", line: line) }
            }
        }
        assertInvalid(try session.prompt(content: [.other(json: "{not json")]))
        assertInvalid(try session.prompt(content: [.other(json: #"{"type": 5}"#)]))
        assertInvalid(try session.prompt(content: [.resource(uri: "file:///a", mimeType: nil, text: nil, blob: nil)]))
        assertInvalid(try ClientSession(sessionId: "s1", inject: InjectCapabilities(modes: [.steer], replace: false, steerInStream: [])))
        assertInvalid(try ClientSession.fromInitializeResult(sessionId: "s1", initializeResultJson: #"{"protocolVersion": "two"}"#))
        XCTAssertEqual(try session.snapshotJson(), before)
        // Garbage from the agent is counted, never thrown.
        for line in ["{oops", "", "[]", "\u{0}", #"{"jsonrpc":"2.0","id":42,"result":{}}"#] { try session.receive(line: line) }
        XCTAssertGreaterThanOrEqual(try session.ignoredLines(), 4)
        XCTAssertEqual(try session.snapshotJson(), before)
    }

    func testHostErrorsNameTheirKind() throws {
        let core = try newAgent()
        XCTAssertThrowsError(try core.runtimeEvent(sessionId: "s1", event: .turnEnded(stopReason: "end_turn", usageJson: nil))) { error in
            guard case let AcpError.Host(kind, message) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(kind, "no_turn_in_progress")
            XCTAssertFalse(message.isEmpty)
        }
        XCTAssertThrowsError(try core.runtimeEvent(sessionId: "nope", event: .streamStarted)) { error in
            guard case AcpError.Host("session_closed", _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try core.runtimeEvent(sessionId: "s1", event: .turnEnded(stopReason: "end_turn", usageJson: "{bad"))) { error in
            guard case AcpError.InvalidInput = error else { return XCTFail("\(error)") }
        }
    }

    func testMalformedLinesGetJsonRpcErrorsNotThrows() throws {
        let core = try newAgent()
        var bytes = Data("{oops\n".utf8)
        bytes.append(contentsOf: [0xff, 0xfe, 0x0a])
        bytes.append(Data(#"{"jsonrpc": "2.0", "id": 1, "method": "nope"}"#.utf8))
        let codes = try core.handleBytes(connection: "c1", bytes: bytes).lines(for: "c1").map { try JSON.parse($0)["error"]?["code"] }
        XCTAssertEqual(codes, [.int(-32700), .int(-32700), .int(-32601)])
    }

    func testSnapshotAndRestoreRoundTripThroughTheBinding() throws {
        let core = try newAgent()
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        _ = try core.handleLine(connection: "c1", line: session.prompt(content: [.text("a")]))
        _ = try core.handleLine(connection: "c1", line: session.inject(mode: .queue, content: [.text("b")]))
        let restored = try AgentCore.restore(snapshot: core.snapshot())
        XCTAssertEqual(try restored.pending(sessionId: "s1").map(\.content), [[.text("b")]])
        XCTAssertThrowsError(try AgentCore.restore(snapshot: #"{"version": 99}"#)) { error in
            guard case AcpError.InvalidInput = error else { return XCTFail("\(error)") }
        }
    }

    func testContentBlocksKeepTheirShapeAcrossTheBoundary() throws {
        let core = try newAgent()
        let blocks: [ContentBlock] = [
            .text("hi"),
            .image(data: "aGk=", mimeType: "image/png"),
            .resourceLink(name: "spec", uri: "file:///spec.md"),
            .resource(uri: "file:///a", mimeType: "text/plain", text: "x", blob: nil),
        ]
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        let actions = try core.handleLine(connection: "c1", line: session.prompt(content: blocks)).actions(session: "s1")
        guard case let .startTurn(messages)? = actions.first, let input = messages.first else { return XCTFail("\(actions)") }
        XCTAssertEqual(input.content, blocks)
        XCTAssertTrue(input.contentJson.contains("\"resource_link\""))
        XCTAssertEqual(try core.history(sessionId: "s1").map(\.messageId), [input.messageId])
    }

    func testObjectsAreFreedWhenTheLastReferenceGoes() throws {
        weak var weakCore: AgentCore?
        do {
            let core = try newAgent()
            weakCore = core
            XCTAssertTrue(try core.isLive(sessionId: "s1"))
        }
        XCTAssertNil(weakCore, "the Swift object (and with it the Rust one) is released")
    }
}
