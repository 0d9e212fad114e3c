import AcpInject
import Foundation
import XCTest

/// A map in the boundary encoding with its pairs in this order (a union's tag must come first).
func orderedMap(_ pairs: [(String, JSONValue)]) -> Data {
    encodedMap(pairs.map { ($0.0, Boundary.encode($0.1)) })
}

/// A map of values already encoded, in this order.
func encodedMap(_ pairs: [(String, Data)]) -> Data {
    precondition(pairs.count < 16)
    var data = Data([0x80 | UInt8(pairs.count)])
    for (key, value) in pairs {
        data += Boundary.encode(key)
        data += value
    }
    return data
}

/// The value types (generated Values.swift): equality and hashing by value, open enums that keep
/// what they do not know, the model's defaults, the `Codable` forms (ACP's JSON for the wire
/// types), the boundary encoding both ways (its errors say where), and values crossing the FFI.
final class ValuesTests: XCTestCase {
    func testValuesCompareAndHashByValue() {
        let a = AgentMessageChunk(messageId: "a1", content: .text("hi"))
        XCTAssertEqual(a, AgentMessageChunk(messageId: "a1", content: .text("hi")))
        XCTAssertNotEqual(a, AgentMessageChunk(messageId: "a2", content: .text("hi")))
        XCTAssertEqual(Set([SessionUpdate.agentMessageChunk(a), .agentMessageChunk(a), .stateUpdate(.running(RunningStateUpdate()))]).count, 2)
        XCTAssertEqual(SessionActivity.update(.agentMessageChunk(a)).update?.agentText, "hi")
        XCTAssertEqual(SessionActivity.closed, .closed)
    }

    func testOpenEnumsKeepValuesTheyDoNotKnow() {
        XCTAssertEqual(StopReason(rawValue: "end_turn"), .endTurn)
        XCTAssertEqual(StopReason.endTurn.rawValue, "end_turn")
        let vendor = StopReason(rawValue: "_vendor_stop")
        XCTAssertFalse(vendor.isKnown)
        XCTAssertTrue(StopReason.cancelled.isKnown)
        XCTAssertEqual(vendor.rawValue, "_vendor_stop")
        XCTAssertEqual(Set([StopReason(rawValue: "end_turn"), .endTurn]).count, 1, "equal by wire string")
        XCTAssertEqual("\(StopReason.endTurn)", "endTurn")
        XCTAssertEqual("\(vendor)", "_vendor_stop")
        // ToolKind knows `other` as a value of its own.
        XCTAssertEqual(ToolKind(rawValue: "other"), .other)
        XCTAssertEqual(ToolKind.knownValues.count, 10)
        // Closed enums are String enums.
        XCTAssertEqual(ToolCallStatus.inProgress.rawValue, "in_progress")
        XCTAssertEqual(InjectMode.allCases, [.queue, .steer])
        XCTAssertNil(InjectMode(rawValue: "shout"))
        XCTAssertEqual("\(ItemStatus.delivered)", "delivered")
    }

    func testConstructorsTakeTheModelsDefaults() {
        let usage = Usage(totalTokens: 150)
        XCTAssertEqual([usage.totalTokens, usage.inputTokens, usage.outputTokens], [150, 0, 0])
        XCTAssertNil(usage.thoughtTokens)
        let policy = Policy()
        XCTAssertEqual(policy.queueDrain, .batch)
        XCTAssertEqual(policy.steerInStream, .finish)
        XCTAssertEqual(policy.rememberIds, 4096)
        let config = AgentConfig(info: AgentInfo(name: "a", version: "1"))
        XCTAssertNil(config.inject)
        XCTAssertEqual(config.policy, Policy())
        XCTAssertEqual(config.setup, SetupSupport(mcpStdio: false, mcpHttp: false, additionalDirectories: false))
        let options = ConnectOptions(client: Implementation(name: "c", version: "1"))
        XCTAssertTrue(options.pendingUpdates)
        XCTAssertEqual(options.handshakeTimeoutMs, 30_000)
        XCTAssertNil(options.steerFallback)
        let item = PendingItem(mode: .queue, status: .pending, content: "x".contentBlocks)
        XCTAssertNil(item.messageId)
        XCTAssertEqual(item.superseded, [])
        XCTAssertFalse(item.held)
        XCTAssertEqual(UserMessage(messageId: "u1").content, .absent)
    }

    /// The wire types' `Codable` form is ACP's JSON: a line's update decodes with JSONDecoder and
    /// encodes back to the same members.
    func testWireTypesAreCodableAsAcpJson() throws {
        let json = #"{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "usage": {"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200}}"#
        let update = try JSONDecoder().decode(SessionUpdate.self, from: Data(json.utf8))
        guard case let .stateUpdate(.idle(idle)) = update else { return XCTFail("\(update)") }
        XCTAssertEqual(idle.stopReason, .endTurn)
        XCTAssertEqual(idle.usage, Usage(totalTokens: 1200, inputTokens: 1000, outputTokens: 200))
        XCTAssertEqual(update.turnEnded, idle)
        let back = try JSONSerialization.jsonObject(with: JSONEncoder().encode(update)) as? NSDictionary
        XCTAssertEqual(back, try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)

        let chunk = #"{"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "hello", "_meta": {"k": [1, 2.5, null, true]}}}"#
        let decoded = try JSONDecoder().decode(SessionUpdate.self, from: Data(chunk.utf8))
        XCTAssertEqual(decoded, .agentMessageChunk(AgentMessageChunk(
            messageId: "a1", content: .text(TextContent(text: "hello", meta: ["k": [1, 2.5, nil, true]]))
        )))
        // A variant this version does not know is kept whole, and written back as it came.
        let vendor = #"{"sessionUpdate": "_vendor_update", "x": {"y": 1}}"#
        let kept = try JSONDecoder().decode(SessionUpdate.self, from: Data(vendor.utf8))
        XCTAssertEqual(kept, .other(tag: "_vendor_update", raw: ["sessionUpdate": "_vendor_update", "x": ["y": 1]]))
        let rewritten = try JSONSerialization.jsonObject(with: JSONEncoder().encode(kept)) as? NSDictionary
        XCTAssertEqual(rewritten, try JSONSerialization.jsonObject(with: Data(vendor.utf8)) as? NSDictionary)
        // A patch member: absent, null and a value stay apart.
        for (line, content) in [
            (#"{"messageId": "u1"}"#, Patch<[ContentBlock]>.absent),
            (#"{"messageId": "u1", "content": null}"#, .null),
            (#"{"messageId": "u1", "content": [{"type": "text", "text": "x"}]}"#, .value(["x" as String].flatMap(\.contentBlocks))),
        ] {
            let message = try JSONDecoder().decode(UserMessage.self, from: Data(line.utf8))
            XCTAssertEqual(message.content, content, line)
            XCTAssertEqual(try JSONDecoder().decode(UserMessage.self, from: JSONEncoder().encode(message)), message, line)
        }
    }

    /// Every event of the recorded stream, and the library's own values, round-trip through
    /// JSON (the library's types in their keyed form) and through the boundary encoding.
    func testEveryValueRoundTripsThroughJsonAndTheBoundaryEncoding() throws {
        let client = ClientCore()
        try client.openSession(sessionId: "s1")
        let events = try client.receive(text: RecordedStreamLines.sample)
        XCTAssertFalse(events.isEmpty)
        XCTAssertEqual(try JSONDecoder().decode([Event].self, from: JSONEncoder().encode(events)), events)
        XCTAssertEqual(try Boundary.decode([Event].self, from: Boundary.encode(events)), events)
        let snap = try XCTUnwrap(client.snapshot(sessionId: "s1"))
        XCTAssertEqual(try JSONDecoder().decode(MirrorSnapshot.self, from: JSONEncoder().encode(snap)), snap)
        XCTAssertEqual(try Boundary.decode(MirrorSnapshot.self, from: Boundary.encode(snap)), snap)

        let errors: [AcpError] = [
            .disconnected(detail: "gone"), .rejected(reason: .steerNotSupported, detail: "no"),
            .protocol(error: ProtocolError(code: -32010, message: "m", reason: ErrorReason(rawValue: "_vendor"))),
        ]
        XCTAssertEqual(try JSONDecoder().decode([AcpError].self, from: JSONEncoder().encode(errors)), errors)
        XCTAssertEqual(try Boundary.decode([AcpError].self, from: Boundary.encode(errors)), errors)
        let keyed = try XCTUnwrap(String(data: JSONEncoder().encode(AcpError.disconnected(detail: "gone")), encoding: .utf8))
        XCTAssertEqual(keyed, #"{"disconnected":{"detail":"gone"}}"#)
        let activity = String(data: try JSONEncoder().encode(SessionActivity.closed), encoding: .utf8)
        XCTAssertEqual(activity, #"{"closed":{}}"#)
        let actions: [RuntimeAction] = [.startTurn([UserInput(messageId: "u1", content: "x".contentBlocks)]), .cancelTurn]
        XCTAssertEqual(try Boundary.decode([RuntimeAction].self, from: Boundary.encode(actions)), actions)
        XCTAssertEqual(try JSONDecoder().decode([RuntimeAction].self, from: JSONEncoder().encode(actions)), actions)
    }

    /// docs/encoding.md, read by the generated decoders: maps keyed by field name, the class
    /// first under "$", defaults filled in, optional fields as absent or nil; anything else is an
    /// error naming where.
    func testTheBoundaryEncodingIsReadAsDocumented() throws {
        XCTAssertEqual(try Boundary.decode(Usage.self, from: orderedMap([("total_tokens", 150)])), Usage(totalTokens: 150))
        XCTAssertEqual(
            try Boundary.decode(Usage.self, from: orderedMap([("thought_tokens", nil), ("total_tokens", 2)])), Usage(totalTokens: 2)
        )
        let idle = orderedMap([("$", "IdleStateUpdate"), ("stop_reason", "end_turn")])
        XCTAssertEqual(try Boundary.decode(SessionUpdate.self, from: idle), .stateUpdate(.idle(IdleStateUpdate(stopReason: .endTurn))))
        XCTAssertEqual(try Boundary.decode(SessionActivity.self, from: idle).turnEnded?.stopReason, .endTurn)
        XCTAssertEqual(try Boundary.decode(SessionActivity.self, from: orderedMap([("$", "SessionClosed")])), .closed)
        // Encoding leaves out absent optional fields and writes the class first.
        XCTAssertEqual(Boundary.encode(SessionUpdate.stateUpdate(.idle(IdleStateUpdate(stopReason: .endTurn)))), idle)

        func error<T: BoundaryCodable>(_ type: T.Type, _ data: Data) -> String {
            do {
                _ = try Boundary.decode(type, from: data)
                return "no error"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(error(Usage.self, orderedMap([("total_tokens", "many")])), "total_tokens: expected an integer, found a string")
        XCTAssertEqual(error(Usage.self, orderedMap([("input_tokens", 1)])), "Usage needs `total_tokens`")
        XCTAssertEqual(error(Usage.self, orderedMap([("total_tokens", 1), ("speed", 2)])), "Usage has no field `speed`")
        XCTAssertEqual(error(SessionUpdate.self, orderedMap([("$", "PendingItem")])), "`PendingItem` is not a kind of SessionUpdate")
        XCTAssertEqual(error(SessionUpdate.self, orderedMap([("stop_reason", "end_turn")])), "a union's value names its class first, under \"$\"")
        let text = orderedMap([("$", "TextContent"), ("text", 7)])
        let chunk = encodedMap([("$", Boundary.encode("AgentMessageChunk")), ("message_id", Boundary.encode("a1")), ("content", text)])
        XCTAssertEqual(error(SessionUpdate.self, chunk), "content.text: expected a string, found an integer")
        XCTAssertEqual(error(InjectMode.self, Boundary.encode("shout")), "\"shout\" is not a value of InjectMode")
        XCTAssertEqual(error(String.self, Boundary.encode("x") + Data([0xc0])), "1 bytes follow the value")
        XCTAssertEqual(error([Int].self, Data([0xdd, 0xff, 0xff, 0xff, 0xff])), "0: the value ends early", "a hostile length reserves nothing")
    }

    func testAKnownOrUnknownStopReasonIsReceivedAsItself() throws {
        for reason in ["cancelled", "_vendor_stop"] {
            let client = ClientCore(maxLineBytes: 1 << 20)
            try client.openSession(sessionId: "s1")
            let line = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"\#(reason)"}}}"#
            let events = try client.receive(line: line)
            XCTAssertEqual(try client.snapshot(sessionId: "s1")?.stopReason, StopReason(rawValue: reason))
            guard case let .session(s)? = events.first, case let .update(update) = s.event else { return XCTFail("\(events)") }
            XCTAssertEqual(update.turnEnded?.stopReason, StopReason(rawValue: reason))
        }
    }

    /// Values the caller builds cross into the library and back: an unknown stop reason through
    /// the agent core to the client, an unknown content block through a prompt, unchanged.
    func testValuesCrossTheFfiBothWays() throws {
        let agent = try AgentCore(config: defaultAgentConfig())
        try agent.attach(connection: "c1", role: .controller)
        XCTAssertTrue(try agent.createSession(sessionId: "s1", cwd: "/tmp"))
        XCTAssertTrue(try agent.attachToSession(connection: "c1", sessionId: "s1"))
        let client = ClientCore(maxLineBytes: 1 << 20)
        var sent: [String] = []
        func deliver(_ outputs: [Output]) throws {
            for case let .line(l) in outputs where l.to.contains("c1") { _ = try client.receive(line: l.line) }
        }
        func exchange() throws {
            for line in try client.takeOutgoing() {
                sent.append(line)
                try deliver(try agent.handleLine(connection: "c1", line: line))
            }
        }
        _ = try client.initialize(client: Implementation(name: "test", version: "1"), pendingUpdates: true)
        try exchange()
        try client.openSession(sessionId: "s1")
        let vendor = ContentBlock.other(tag: "_vendor", raw: ["type": "_vendor", "payload": ["n": 1, "f": 0.5]])
        _ = try client.prompt(sessionId: "s1", content: ["one".contentBlocks[0], vendor])
        try exchange()
        let prompt = try XCTUnwrap(sent.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        let blocks = try XCTUnwrap((prompt["params"] as? [String: Any])?["prompt"] as? [[String: Any]])
        XCTAssertEqual(blocks.count, 2)
        XCTAssertEqual(blocks[1] as NSDictionary, ["type": "_vendor", "payload": ["n": 1, "f": 0.5]] as NSDictionary)
        XCTAssertEqual(try agent.turn(sessionId: "s1").map { if case .running = $0 { true } else { false } }, true)
        let ended = RuntimeEvent.turnEnded(TurnEnd(stopReason: StopReason(rawValue: "_vendor_stop"), usage: Usage(totalTokens: 7)))
        try deliver(try agent.runtimeEvent(sessionId: "s1", event: ended))
        let snap = try XCTUnwrap(try client.snapshot(sessionId: "s1"))
        XCTAssertEqual(snap.stopReason, StopReason(rawValue: "_vendor_stop"))
        XCTAssertEqual(snap.usage?.totalTokens, 7)
        XCTAssertEqual(snap.transcript.first?.content.last, vendor, "the unknown block, kept whole")
        XCTAssertEqual(snap.violations, [])
    }
}

/// A few lines of the recorded stream (as one text), for the round trips.
enum RecordedStreamLines {
    static let sample: String = {
        var lines: [String] = []
        func update(_ u: String) {
            lines.append(#"{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": \#(u)}}"#)
        }
        update(#"{"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "fix it"}]}"#)
        update(#"{"sessionUpdate": "state_update", "state": "running"}"#)
        update(#"{"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "ok "}}"#)
        update(#"{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Run", "kind": "execute", "status": "in_progress", "rawInput": {"cmd": ["ls", 1]}}"#)
        update(#"{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "done"}}]}"#)
        update(#"{"sessionUpdate": "agent_message", "messageId": "a1", "content": null}"#)
        update(#"{"sessionUpdate": "_vendor_update", "x": 1}"#)
        update(#"{"sessionUpdate": "state_update", "state": "idle", "stopReason": "_vendor_stop", "usage": {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}}"#)
        return lines.joined(separator: "\n") + "\n"
    }()
}
