import AcpInject
import Foundation
import XCTest

/// The objects are shared by many tasks at once: every call is atomic, nothing is lost,
/// duplicated or misrouted.
final class ConcurrencyTests: XCTestCase {
    let tasks = 8

    /// Many tasks inject into one live session during one turn, revoking some of their own:
    /// every accepted inject is delivered exactly once or revoked, never both.
    func testManyTasksInjectIntoOneLiveSession() async throws {
        let agent = try await connectReferenceAgent(delayMs: 150, ["--chunks", "6"])
        let session = try await agent.newSession(cwd: "/tmp")
        try await session.prompt("start")
        let perTask = 6
        let results = try await withThrowingTaskGroup(of: (kept: [String], revoked: [String]).self) { group in
            for n in 0..<tasks {
                group.addTask {
                    var kept: [String] = [], revoked: [String] = []
                    for i in 0..<perTask {
                        let id = try await session.inject("task \(n) message \(i)")
                        guard i % 3 == 0 else {
                            kept.append(id)
                            continue
                        }
                        do {
                            try await session.revoke(id)
                            revoked.append(id)
                        } catch let AcpError.protocol(error) where error.reason == .alreadyDelivered {
                            kept.append(id) // the turn ended in between and took it
                        }
                    }
                    return (kept, revoked)
                }
            }
            return try await group.reduce(into: [(kept: [String], revoked: [String])]()) { $0.append($1) }
        }
        let kept = results.flatMap(\.kept), revoked = results.flatMap(\.revoked)
        XCTAssertEqual(Set(kept + revoked).count, tasks * perTask, "every inject got its own id")
        try await until(session, seconds: 60) { s in s.state == .idle && s.pending.allSatisfy { $0.status != .pending } && users(s).count > 1 }
        let snap = try session.snapshot()
        let delivered = snap.transcript.filter { $0.role == .user }.map(\.messageId)
        XCTAssertEqual(delivered.count, Set(delivered).count, "a message was delivered twice")
        XCTAssertEqual(Set(delivered).intersection(revoked), [], "a revoked message was delivered")
        XCTAssertEqual(Set(delivered).intersection(kept), Set(kept), "a kept message was not delivered")
        // Each task's messages arrive in the order it sent them.
        let texts = users(snap)
        for n in 0..<tasks {
            let mine = texts.filter { $0.hasPrefix("task \(n) ") }
            XCTAssertEqual(mine, mine.sorted(), "task \(n)'s messages out of order")
        }
        XCTAssertEqual(snap.violations, [])
        try await agent.close()
    }

    /// One `AgentCore` serves one `ClientCore` per task (each its own connection to the same
    /// session): injects, revokes and break-points race, and every accepted inject ends exactly
    /// one of delivered, revoked or still pending.
    func testOneAgentCoreDrivenFromManyTasks() async throws {
        let core = try AgentCore(config: defaultAgentConfig())
        XCTAssertTrue(try core.createSession(sessionId: "s1", cwd: "/tmp"))
        let starter = ClientCore(maxLineBytes: 1 << 20)
        try starter.assumeCapabilities(inject: fullCaps)
        try starter.openSession(sessionId: "s1")
        try core.attach(connection: "c0", role: .controller)
        XCTAssertTrue(try core.attachToSession(connection: "c0", sessionId: "s1"))
        try handshake(core, "c0")
        _ = try starter.prompt(sessionId: "s1", content: "go".contentBlocks)
        for line in try starter.takeOutgoing() { _ = try core.handleLine(connection: "c0", line: line) }

        let delivered = Locked<[String]>([])
        func record(_ outputs: [Output]) {
            for case let .action(a) in outputs {
                switch a.action {
                case let .startTurn(inputs), let .deliver(inputs): delivered.withLock { $0 += inputs.map(\.messageId) }
                default: break
                }
            }
        }
        let perTask = 100
        let outcomes = try await withThrowingTaskGroup(of: (accepted: [String], revoked: [String], refused: Int).self) { group in
            for n in 1...tasks {
                group.addTask {
                    let conn = "c\(n)"
                    let client = ClientCore(maxLineBytes: 1 << 20)
                    try client.assumeCapabilities(inject: fullCaps)
                    try client.openSession(sessionId: "s1")
                    try core.attach(connection: conn, role: .controller)
                    _ = try core.attachToSession(connection: conn, sessionId: "s1")
                    try handshake(core, conn)
                    var accepted: [String] = [], revoked: [String] = [], refused = 0
                    func exchange() throws -> [Event] {
                        var events: [Event] = []
                        for line in try client.takeOutgoing() {
                            let outputs = try core.handleLine(connection: conn, line: line)
                            record(outputs)
                            for case let .line(l) in outputs where l.to.contains(conn) { events += try client.receive(line: l.line) }
                        }
                        return events
                    }
                    for i in 0..<perTask {
                        let request = try client.inject(sessionId: "s1", mode: i % 2 == 1 ? .steer : .queue, content: "\(n)-\(i)".contentBlocks)
                        for case let .answered(answer) in try exchange() where answer.request == request {
                            switch answer.outcome {
                            case let .accepted(a) where a.messageId != nil: accepted.append(a.messageId!)
                            // A steer that raced a turn end meets an idle session (R-STEER-2).
                            case let .failed(error) where error.reason == .noRunningTurn: refused += 1
                            default: XCTFail("\(n)-\(i): \(answer.outcome)")
                            }
                        }
                        if i % 3 == 0, let last = accepted.last, try client.itemStatus(sessionId: "s1", messageId: last) == .pending {
                            let revoke = try client.revoke(sessionId: "s1", messageId: last)
                            for case let .answered(a) in try exchange() where a.request == revoke && a.outcome == .revoked { revoked.append(last) }
                        }
                        if i % 5 == 0 { if let out = try? core.runtimeEvent(sessionId: "s1", event: .breakPoint(.toolResult)) { record(out) } }
                        if i % 17 == 0, let out = try? core.runtimeEvent(sessionId: "s1", event: .turnEnded(TurnEnd(stopReason: .endTurn))) {
                            record(out)
                        }
                    }
                    return (accepted, revoked, refused)
                }
            }
            return try await group.reduce(into: [(accepted: [String], revoked: [String], refused: Int)]()) { $0.append($1) }
        }
        let accepted = outcomes.flatMap(\.accepted), revoked = Set(outcomes.flatMap(\.revoked))
        let pending = Set(try core.pending(sessionId: "s1").map(\.messageId))
        let deliveredList = delivered.withLock { $0 }, deliveredSet = Set(deliveredList)
        XCTAssertEqual(deliveredList.count, deliveredSet.count, "a message was delivered twice")
        XCTAssertEqual(accepted.count, Set(accepted).count, "an id was issued twice")
        XCTAssertGreaterThan(accepted.count, tasks * perTask / 2)
        for id in accepted {
            XCTAssertEqual([deliveredSet.contains(id), revoked.contains(id), pending.contains(id)].filter { $0 }.count, 1, id)
        }
    }

    /// One `ClientCore` fed and read from many tasks: each task's chunks arrive whole and in
    /// that task's order.
    func testOneClientCoreFedAndReadFromManyTasks() async throws {
        let client = ClientCore(maxLineBytes: 1 << 20)
        try client.openSession(sessionId: "s1")
        let chunks = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 1...tasks {
                group.addTask {
                    for k in 0..<chunks {
                        let update = #"{"sessionUpdate": "agent_message_chunk", "messageId": "a\#(n)", "content": {"type": "text", "text": "\#(n)-\#(k) "}}"#
                        _ = try client.receive(line: #"{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": \#(update)}}"#)
                        if k % 50 == 0 { _ = try client.snapshot(sessionId: "s1") } // readers interleave with writers
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(try client.ignoredLines(), 0)
        let transcript = try XCTUnwrap(client.snapshot(sessionId: "s1")).transcript
        XCTAssertEqual(Set(transcript.map(\.messageId)), Set((1...tasks).map { "a\($0)" }))
        for entry in transcript {
            let n = entry.messageId.dropFirst()
            XCTAssertEqual(entry.content.text, (0..<chunks).map { "\(n)-\($0) " }.joined(), entry.messageId)
        }
    }
}

/// A value behind a lock, for the tests' shared tallies.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
