import AcpInject
import Foundation
import XCTest

/// Bad input never crashes: what the caller passes wrongly throws a typed `AcpError`; what an
/// agent or a client writes wrongly is dropped and reported (`Event.ignored`, or a JSON-RPC
/// error answer), and the objects stay usable.
final class ErrorsTests: XCTestCase {
    func testMalformedJsonFromTheCallerIsInvalidInput() throws {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.openSession(sessionId: "s1")
        let before = try client.mirrorJson(sessionId: "s1")
        assertAcpError(try client.openSession(sessionId: "s2", mirrorJson: "{not json")) { if case .invalidInput = $0 { true } else { false } }
        assertAcpError(try client.openSession(sessionId: "s2", mirrorJson: #"{"version": 99}"#)) { if case .invalidInput = $0 { true } else { false } }
        assertAcpError(try AgentCore.restore(config: defaultAgentConfig(), snapshot: #"{"version": 99}"#)) { if case .invalidInput = $0 { true } else { false } }
        assertAcpError(try AgentCore.restore(config: defaultAgentConfig(), snapshot: "\u{0}")) { if case .invalidInput = $0 { true } else { false } }
        // A value the library cannot take: a count out of its range.
        assertAcpError(try client.assumeAgent(protocolVersion: 70_000, inject: nil)) { if case .invalidInput = $0 { true } else { false } }
        let hugePolicy = Policy(rememberIds: -1)
        assertAcpError(try AgentCore(config: AgentConfig(policy: hugePolicy, info: AgentInfo(name: "x", version: "1")))) {
            if case let .invalidInput(detail) = $0 { detail.contains("remember_ids") } else { false }
        }
        XCTAssertEqual(try client.mirrorJson(sessionId: "s1"), before, "nothing changed")
        XCTAssertEqual(try client.takeOutgoing(), [], "nothing was sent")
    }

    func testCallsTheClientCannotMakeAreRejectedLocally() throws {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.assumeCapabilities(inject: InjectCapabilities(modes: [.queue], pending: nil, steerInStream: [], meta: nil))
        try client.openSession(sessionId: "s1")
        assertAcpError(try client.inject(sessionId: "s1", mode: .steer, content: "x".contentBlocks), rejected(.modeNotSupported))
        assertAcpError(try client.replace(sessionId: "s1", messageId: "m_1", content: "x".contentBlocks), rejected(.replaceNotSupported))
        assertAcpError(try client.revoke(sessionId: "s1", messageId: "m_9"), rejected(.unknownMessageId))
        assertAcpError(try client.prompt(sessionId: "nope", content: "x".contentBlocks), rejected(.unknownSession))
        assertAcpError(try client.prompt(sessionId: "s1", content: [ContentBlock]()), rejected(.invalidArguments))
        XCTAssertEqual(try client.takeOutgoing(), [], "a rejected call sends nothing")
        // Capabilities are read as an `initialize` answer's are: steer without `steerInStream`
        // is accepted (ACP PR #2043).
        XCTAssertNoThrow(try client.assumeCapabilities(inject: InjectCapabilities(modes: [.steer], pending: nil, steerInStream: nil, meta: nil)))
    }

    func testBadAgentLinesAreDroppedAndReportedNeverThrown() throws {
        let client = ClientCore(maxLineBytes: 4096)
        try client.openSession(sessionId: "s1")
        var ignored: [String] = []
        func feed(_ events: [Event]) {
            for case let .ignored(i) in events { ignored.append(i.detail) }
        }
        // Malformed JSON, not an object, an answer to nothing, an update for a session not open.
        for line in ["{oops", "", "[]", "\u{0}", #"{"jsonrpc":"2.0","id":42,"result":{}}"#] { feed(try client.receive(line: line)) }
        // Invalid UTF-8 and an oversized line, through the byte path.
        var bytes = Data([0xff, 0xfe, 0x0a])
        bytes.append(Data(String(repeating: "x", count: 10_000).utf8))
        bytes.append(0x0a)
        feed(try client.receive(bytes: bytes))
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
        XCTAssertEqual(try client.ignoredLines(), ignored.count)
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
            if case let .line(l) = output, l.to == ["c1"] { return l.line }
            return nil
        }
        let codes = try lines.map { line -> Int? in
            let message = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (message?["error"] as? [String: Any])?["code"] as? Int
        }
        XCTAssertEqual(codes.prefix(3), [-32700, -32700, -32601])
        XCTAssertEqual(codes.count, 4, "the oversized line is answered too: \(lines)")
        // A runtime event for a session that does not exist is a typed host error.
        func sessionClosed(_ e: AcpError) -> Bool { if case .host(.sessionClosed, _) = e { true } else { false } }
        assertAcpError(try core.runtimeEvent(sessionId: "nope", event: .streamStarted), sessionClosed)
        assertAcpError(try core.runtimeEvent(sessionId: "nope", event: .turnEnded(TurnEnd(stopReason: .endTurn))), sessionClosed)
    }

    func testConnectionFailuresAreDisconnected() async throws {
        await assertAcpErrorAsync({ try await connect(["/nonexistent/acp-agent"]) }) { if case .disconnected = $0 { true } else { false } }
        // A program that is not an agent: it reads initialize, then exits without answering;
        // the error tells its exit status and the end of its stderr.
        await assertAcpErrorAsync({ try await connect(["/bin/sh", "-c", "read line; echo bye >&2; exit 3"], forwardStderr: false) }) {
            guard case let .disconnected(detail) = $0 else { return false }
            return detail.contains("bye") && detail.contains("3")
        }
        // One that exits at once: the write of initialize fails (a broken pipe, not a signal).
        await assertAcpErrorAsync({ try await connect(["/bin/sh", "-c", "exit 3"], forwardStderr: false) }) { if case .disconnected = $0 { true } else { false } }
        // One that never answers: the handshake times out.
        await assertAcpErrorAsync({ try await connect(["/bin/sleep", "30"], handshakeTimeout: 0.3) }) { if case .disconnected = $0 { true } else { false } }
    }

    func testAClosedConnectionEndsEveryCallAndStream() async throws {
        let agent = try await connectReferenceAgent()
        let session = try await agent.newSession(cwd: "/tmp")
        try await agent.close()
        await assertAcpErrorAsync({ try await session.prompt("too late") }) { if case .disconnected = $0 { true } else { false } }
        assertAcpError(try session.cancel()) { if case .disconnected = $0 { true } else { false } }
        var seen = 0
        for try await _ in session.events { seen += 1 }
        XCTAssertEqual(seen, 0, "the stream just ends")
    }

    func testErrorsReadWell() throws {
        let refused: AcpError = .protocol(error: ProtocolError(code: -32010, message: "Inject precondition failed", reason: .noRunningTurn))
        XCTAssertEqual(refused.description, "the agent refused: Inject precondition failed (-32010) reason=noRunningTurn")
        XCTAssertEqual(refused.localizedDescription, refused.description)
        // The library's own message, as it raised the error.
        let client = ClientCore()
        try client.openSession(sessionId: "s1")
        do {
            _ = try client.revoke(sessionId: "s1", messageId: "m_9")
            XCTFail("revoked an unknown message")
        } catch let error as AcpError {
            XCTAssertEqual(error, .rejected(reason: .unknownMessageId, detail: "unknown_message_id: not one of this client's pending items"))
            XCTAssertEqual(error.description, "refused locally: unknown_message_id: not one of this client's pending items")
        }
        XCTAssertEqual(ContentBlock.text("hi").description, #""hi""#)
        XCTAssertEqual("\(PendingItem(messageId: "m_1", mode: .queue, status: .pending, content: "hi".contentBlocks))", #"queue m_1 pending "hi""#)
        XCTAssertEqual("\(PendingItem(messageId: "local_1", mode: .queue, status: .pending, content: "hi".contentBlocks, held: true))", #"queue local_1 pending (held here) "hi""#)
    }
}
