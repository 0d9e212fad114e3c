import AcpInject
import Foundation
import RecordedStream
import XCTest

/// The client mirror fed with the recorded benchmark stream: in bulk (bytes or text) and per
/// line, the state it builds is the same, and it is what the stream describes.
final class ClientMirrorTests: XCTestCase {
    let turns = 100
    lazy var lines = RecordedStream.lines(turns * RecordedStream.linesPerTurn)

    func mirror() throws -> ClientCore {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.openSession(sessionId: "s1")
        return client
    }

    func testBulkTextBytesAndPerLineFeedingBuildTheSameState() throws {
        let bytes = try mirror(), text = try mirror(), perLine = try mirror()
        let fromBytes = try bytes.receive(bytes: RecordedStream.bytes(lines))
        let fromText = try text.receive(text: RecordedStream.text(lines))
        var fromLines: [Event] = []
        for line in lines { fromLines += try perLine.receive(line: line) }
        XCTAssertEqual(fromText, fromBytes)
        XCTAssertEqual(fromLines, fromBytes)
        XCTAssertEqual(fromBytes.count, lines.count, "one event per update")
        for client in [bytes, text, perLine] { XCTAssertEqual(try client.ignoredLines(), 0) }
        XCTAssertEqual(try text.mirrorJson(sessionId: "s1"), try bytes.mirrorJson(sessionId: "s1"))
        XCTAssertEqual(try perLine.mirrorJson(sessionId: "s1"), try bytes.mirrorJson(sessionId: "s1"))
    }

    func testTheMirrorHoldsWhatTheStreamSaid() throws {
        let client = try mirror()
        _ = try client.receive(text: RecordedStream.text(lines))
        let snap = try XCTUnwrap(client.snapshot(sessionId: "s1"))
        XCTAssertEqual(snap.state, .idle)
        XCTAssertEqual(snap.stopReason, .endTurn)
        XCTAssertEqual(snap.usage?.totalTokens, 1200)
        XCTAssertEqual(snap.transcript.count, 2 * turns)
        let user = snap.transcript[snap.transcript.count - 2], agent = snap.transcript[snap.transcript.count - 1]
        XCTAssertEqual([user.messageId, agent.messageId], ["u\(turns)", "a\(turns)"])
        XCTAssertEqual([user.role, agent.role], [.user, .agent])
        XCTAssertEqual(agent.content.count, 40) // one block per chunk, in order
        XCTAssertEqual(agent.content.last, .text("token \(40 * turns) of the answer "))
        XCTAssertEqual(snap.pending, [])
        XCTAssertEqual(snap.violations, [])
        // A mirror saved as JSON and reopened (an app restarting without resume) is the same.
        let reopened = ClientCore(maxLineBytes: 1 << 20)
        try reopened.openSession(sessionId: "s1", mirrorJson: client.mirrorJson(sessionId: "s1"))
        XCTAssertEqual(try reopened.snapshot(sessionId: "s1"), snap)
    }
}
