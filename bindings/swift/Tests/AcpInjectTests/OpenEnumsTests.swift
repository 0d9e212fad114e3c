import AcpInject
import XCTest

/// The open string enums (generated OpenEnums.swift): known values are cases, others are kept
/// in the catch-all case, equality is by wire string, and they cross the FFI both ways;
/// `Usage` needs only its total.
final class OpenEnumsTests: XCTestCase {
    func testKnownValuesAreCasesAndUnknownOnesAreKept() {
        XCTAssertEqual(StopReason(rawValue: "end_turn"), .endTurn)
        XCTAssertEqual(StopReason.endTurn.rawValue, "end_turn")
        XCTAssertEqual(StopReason(rawValue: "_vendor_stop"), .other("_vendor_stop"))
        XCTAssertEqual(StopReason.other("end_turn"), .endTurn, "equal by wire string")
        XCTAssertEqual(Set([StopReason.other("end_turn"), .endTurn]).count, 1)
        // ToolKind knows `other`: its catch-all is `unknown`.
        XCTAssertEqual(ToolKind(rawValue: "other"), .other)
        XCTAssertEqual(ToolKind(rawValue: "_x"), .unknown("_x"))
        XCTAssertEqual("\(ToolCallStatus.inProgress)", "inProgress")
        XCTAssertEqual(ToolCallStatus.inProgress.rawValue, "in_progress")
    }

    func testUsageNeedsOnlyItsTotal() {
        let usage = Usage(totalTokens: 150)
        XCTAssertEqual([usage.totalTokens, usage.inputTokens, usage.outputTokens], [150, 0, 0])
        XCTAssertNil(usage.thoughtTokens)
    }

    func testAKnownOrUnknownStopReasonIsReceivedAsItself() throws {
        for reason in ["cancelled", "_vendor_stop"] {
            let client = ClientCore(maxLineBytes: 1 << 20)
            try client.openSession(sessionId: "s1", mirrorJson: nil)
            let line = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"\#(reason)"}}}"#
            _ = try client.receive(line: line)
            XCTAssertEqual(try client.snapshot(sessionId: "s1")?.stopReason, StopReason(rawValue: reason))
        }
    }

    func testAnUnknownStopReasonCrossesIntoTheAgentCoreAndBackToTheClient() throws {
        let agent = try AgentCore(config: defaultAgentConfig())
        try agent.attach(connection: "c1", role: .controller)
        XCTAssertTrue(try agent.createSession(sessionId: "s1", cwd: "/tmp"))
        XCTAssertTrue(try agent.attachToSession(connection: "c1", sessionId: "s1"))
        let client = ClientCore(maxLineBytes: 1 << 20)
        func deliver(_ outputs: [Output]) throws {
            for case let .line(to, line) in outputs where to.contains("c1") { _ = try client.receive(line: line) }
        }
        func exchange() throws {
            for line in try client.takeOutgoing() { try deliver(try agent.handleLine(connection: "c1", line: line)) }
        }
        _ = try client.initialize(client: Implementation(name: "test", title: nil, version: "1", meta: nil), pendingUpdates: true)
        try exchange()
        try client.openSession(sessionId: "s1", mirrorJson: nil)
        _ = try client.prompt(sessionId: "s1", content: "one".contentBlocks)
        try exchange()
        let ended = RuntimeEvent.turnEnded(stopReason: .other("_vendor_stop"), usage: Usage(totalTokens: 7))
        try deliver(try agent.runtimeEvent(sessionId: "s1", event: ended))
        let snap = try XCTUnwrap(try client.snapshot(sessionId: "s1"))
        XCTAssertEqual(snap.stopReason, StopReason(rawValue: "_vendor_stop"))
        XCTAssertEqual(snap.usage?.totalTokens, 7)
        XCTAssertEqual(snap.violations, [])
    }
}
