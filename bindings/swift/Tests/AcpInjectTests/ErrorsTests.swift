import AcpInject
import Foundation
import XCTest

/// Bad input never crashes: what the caller passes wrongly throws a typed `AcpError`; what an
/// agent or a client writes wrongly is dropped and reported (`Event.ignored`, or a JSON-RPC
/// error answer), and the objects stay usable.
final class ErrorsTests: XCTestCase {
    func testMalformedJsonFromTheCallerIsInvalidInput() throws {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.openSession(sessionId: "s1", mirrorJson: nil)
        let before = try client.mirrorJson(sessionId: "s1")
        assertAcpError(try client.openSession(sessionId: "s2", mirrorJson: "{not json")) { if case .InvalidInput = $0 { true } else { false } }
        assertAcpError(try client.openSession(sessionId: "s2", mirrorJson: #"{"version": 99}"#)) { if case .InvalidInput = $0 { true } else { false } }
        // JSON-valued members (an unknown content block, `_meta`) are checked when they cross.
        assertAcpError(try client.prompt(sessionId: "s1", content: [.other("{not json")])) { if case .InvalidInput = $0 { true } else { false } }
        let badMeta = ContentBlock.text(TextContent(text: "x", annotations: nil, meta: "[1, 2"))
        assertAcpError(try client.inject(sessionId: "s1", mode: .queue, content: [badMeta])) { if case .InvalidInput = $0 { true } else { false } }
        assertAcpError(try AgentCore.restore(config: defaultAgentConfig(), snapshot: #"{"version": 99}"#)) { if case .InvalidInput = $0 { true } else { false } }
        assertAcpError(try AgentCore.restore(config: defaultAgentConfig(), snapshot: "\u{0}")) { if case .InvalidInput = $0 { true } else { false } }
        XCTAssertEqual(try client.mirrorJson(sessionId: "s1"), before, "nothing changed")
        XCTAssertEqual(try client.takeOutgoing(), [], "nothing was sent")
    }

    func testCallsTheClientCannotMakeAreRejectedLocally() throws {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.assumeCapabilities(inject: InjectCapabilities(modes: [.queue], pending: nil, steerInStream: [], meta: nil))
        try client.openSession(sessionId: "s1", mirrorJson: nil)
        assertAcpError(try client.inject(sessionId: "s1", mode: .steer, content: "x".contentBlocks)) { $0 == .Rejected(reason: .modeNotSupported) }
        assertAcpError(try client.replace(sessionId: "s1", messageId: "m_1", content: "x".contentBlocks)) { $0 == .Rejected(reason: .replaceNotSupported) }
        assertAcpError(try client.revoke(sessionId: "s1", messageId: "m_9")) { $0 == .Rejected(reason: .unknownMessageId) }
        assertAcpError(try client.prompt(sessionId: "nope", content: "x".contentBlocks)) { $0 == .Rejected(reason: .unknownSession) }
        assertAcpError(try client.prompt(sessionId: "s1", content: [])) { if case .Rejected(.invalidArguments) = $0 { true } else { false } }
        XCTAssertEqual(try client.takeOutgoing(), [], "a rejected call sends nothing")
        // Capabilities are read as an `initialize` answer's are: steer without `steerInStream`
        // is accepted (ACP PR #2043).
        XCTAssertNoThrow(try client.assumeCapabilities(inject: InjectCapabilities(modes: [.steer], pending: nil, steerInStream: nil, meta: nil)))
    }

    func testBadAgentLinesAreDroppedAndReportedNeverThrown() throws {
        let client = ClientCore(maxLineBytes: 4096)
        try client.openSession(sessionId: "s1", mirrorJson: nil)
        var ignored: [String] = []
        func feed(_ events: [Event]) {
            for case let .ignored(detail) in events { ignored.append(detail) }
        }
        // Malformed JSON, not an object, an answer to nothing, an update for a session not open.
        for line in ["{oops", "", "[]", "\u{0}", #"{"jsonrpc":"2.0","id":42,"result":{}}"#] { feed(try client.receive(line: line)) }
        // Invalid UTF-8 and an oversized line, through the byte path.
        var bytes = Data([0xff, 0xfe, 0x0a])
        bytes.append(Data(String(repeating: "x", count: 10_000).utf8))
        bytes.append(0x0a)
        feed(try client.receiveBytes(bytes: bytes))
        feed(try client.receive(line: String(repeating: "y", count: 1 << 20)))
        // A request this client does not serve is answered -32601 and reported.
        feed(try client.receive(line: #"{"jsonrpc":"2.0","id":7,"method":"fs/delete_everything","params":{}}"#))
        let answer = try XCTUnwrap(client.takeOutgoing().first)
        let error = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["error"] as? [String: Any])
        XCTAssertEqual(error["code"] as? Int, -32601)
        feed(try client.finish())

        XCTAssertGreaterThanOrEqual(ignored.count, 8, "\(ignored)")
        XCTAssertTrue(ignored.contains { $0.contains("UTF-8") }, "\(ignored)")
        XCTAssertTrue(ignored.contains { $0.contains("4096") }, "\(ignored)")
        XCTAssertEqual(try client.ignoredLines(), UInt64(ignored.count))
        XCTAssertEqual(try client.snapshot(sessionId: "s1")?.transcript, [], "nothing reached the mirror")
    }

    func testBadClientLinesGetJsonRpcErrorAnswers() throws {
        let core = try AgentCore(config: defaultAgentConfig())
        try core.attach(connection: "c1", role: .controller)
        var bytes = Data("{oops\n".utf8)
        bytes.append(contentsOf: [0xff, 0xfe, 0x0a])
        bytes.append(Data(#"{"jsonrpc": "2.0", "id": 1, "method": "nope"}"#.utf8))
        bytes.append(0x0a)
        bytes.append(Data(String(repeating: "z", count: 20 << 20).utf8))
        bytes.append(0x0a)
        let lines = try core.handleBytes(connection: "c1", bytes: bytes).compactMap { output -> String? in
            if case let .line(to, line) = output, to == ["c1"] { return line }
            return nil
        }
        let codes = try lines.map { line -> Int? in
            let message = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (message?["error"] as? [String: Any])?["code"] as? Int
        }
        XCTAssertEqual(codes.prefix(3), [-32700, -32700, -32601])
        XCTAssertEqual(codes.count, 4, "the oversized line is answered too: \(lines)")
        // A runtime event for a session that does not exist is a typed host error.
        assertAcpError(try core.runtimeEvent(sessionId: "nope", event: .streamStarted)) { $0 == .Host(error: .sessionClosed) }
        assertAcpError(try core.runtimeEvent(sessionId: "nope", event: .turnEnded(stopReason: .endTurn, usage: nil))) { $0 == .Host(error: .sessionClosed) }
    }

    func testConnectionFailuresAreDisconnected() async throws {
        await assertAcpErrorAsync({ try await connect(["/nonexistent/acp-agent"]) }) { if case .Disconnected = $0 { true } else { false } }
        // A program that is not an agent: it reads initialize, then exits without answering;
        // the error tells its exit status and the end of its stderr.
        await assertAcpErrorAsync({ try await connect(["/bin/sh", "-c", "read line; echo bye >&2; exit 3"], forwardStderr: false) }) {
            guard case let .Disconnected(detail) = $0 else { return false }
            return detail.contains("bye") && detail.contains("3")
        }
        // One that exits at once: the write of initialize fails (a broken pipe, not a signal).
        await assertAcpErrorAsync({ try await connect(["/bin/sh", "-c", "exit 3"], forwardStderr: false) }) { if case .Disconnected = $0 { true } else { false } }
        // One that never answers: the handshake times out.
        await assertAcpErrorAsync({ try await connect(["/bin/sleep", "30"], handshakeTimeout: 0.3) }) { if case .Disconnected = $0 { true } else { false } }
    }

    func testAClosedConnectionEndsEveryCallAndStream() async throws {
        let agent = try await connectReferenceAgent()
        let session = try await agent.newSession(cwd: "/tmp")
        try await agent.close()
        await assertAcpErrorAsync({ try await session.prompt("too late") }) { if case .Disconnected = $0 { true } else { false } }
        assertAcpError(try session.cancel()) { if case .Disconnected = $0 { true } else { false } }
        var seen = 0
        for try await _ in session.events { seen += 1 }
        XCTAssertEqual(seen, 0, "the stream just ends")
    }

    func testErrorsReadWell() {
        let refused: AcpError = .Protocol(error: ProtocolError(code: -32010, message: "Inject precondition failed", reason: .noRunningTurn, messageId: nil, detail: nil))
        XCTAssertEqual(refused.description, "the agent refused: Inject precondition failed (-32010) reason=noRunningTurn")
        XCTAssertEqual(refused.localizedDescription, refused.description)
        XCTAssertEqual(AcpError.Rejected(reason: .modeNotSupported).description, "refused locally: modeNotSupported")
        XCTAssertEqual(ContentBlock.text("hi").description, #""hi""#)
        XCTAssertEqual("\(PendingItem(messageId: "m_1", mode: .queue, status: .pending, content: "hi".contentBlocks, superseded: [], held: false))", #"queue m_1 pending "hi""#)
        XCTAssertEqual("\(PendingItem(messageId: "local_1", mode: .queue, status: .pending, content: "hi".contentBlocks, superseded: [], held: true))", #"queue local_1 pending (held here) "hi""#)
    }
}
