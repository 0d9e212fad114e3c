import AcpInjectFFI
import Foundation
import RecordedStream
import XCTest

/// The client mirror fed with the recorded benchmark stream: in bulk (bytes or text), per line and in
/// batches from a sequence, the state it builds is the same, and it is what the stream describes.
final class ClientMirrorTests: XCTestCase {
    let turns = 100
    lazy var lines = RecordedStream.lines(turns * RecordedStream.linesPerTurn)

    func testBulkTextPerLineAndSequenceFeedingBuildTheSameState() throws {
        let bulk = try ClientSession(sessionId: "s1", inject: fullCaps)
        XCTAssertEqual(try bulk.receiveBytes(bytes: RecordedStream.bytes(lines)), [])
        XCTAssertEqual(try bulk.ignoredLines(), 0)
        let text = try ClientSession(sessionId: "s1", inject: fullCaps)
        XCTAssertEqual(try text.receiveText(lines: RecordedStream.text(lines)), [])
        XCTAssertEqual(try text.ignoredLines(), 0)
        let perLine = try ClientSession(sessionId: "s1", inject: fullCaps)
        for line in lines { try perLine.receive(line: line) }
        let batched = try ClientSession(sessionId: "s1", inject: fullCaps)
        XCTAssertEqual(try batched.receiveAll(lines, batchSize: 1000), [])
        XCTAssertEqual(try text.snapshotJson(), try bulk.snapshotJson())
        XCTAssertEqual(try perLine.snapshotJson(), try bulk.snapshotJson())
        XCTAssertEqual(try batched.snapshotJson(), try bulk.snapshotJson())
    }

    func testTheMirrorHoldsWhatTheStreamSaid() throws {
        let s = try ClientSession(sessionId: "s1", inject: fullCaps)
        _ = try s.receiveBytes(bytes: RecordedStream.bytes(lines))
        let snap = try s.snapshot()
        XCTAssertEqual(snap.state, .idle)
        XCTAssertEqual(snap.stopReason, "end_turn")
        XCTAssertEqual(try snap.usageJson.map(JSON.parse)?["totalTokens"], .int(1200))
        XCTAssertEqual(snap.transcript.count, 2 * turns)
        let user = snap.transcript[snap.transcript.count - 2], agent = snap.transcript[snap.transcript.count - 1]
        XCTAssertEqual([user.messageId, agent.messageId], ["u\(turns)", "a\(turns)"])
        XCTAssertEqual([user.role, agent.role], [.user, .agent])
        XCTAssertEqual(agent.content.count, 40) // one block per chunk, in order
        XCTAssertEqual(agent.content.last, .text("token \(40 * turns) of the answer "))
        XCTAssertEqual(snap.pending, [])
        XCTAssertEqual(snap.violations, [])
    }
}
