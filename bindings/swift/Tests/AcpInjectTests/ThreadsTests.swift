import AcpInjectFFI
import Foundation
import XCTest

/// One AgentCore, and one ClientSession, shared by many threads: every call is atomic.
final class ThreadsTests: XCTestCase {
    let threads = 8
    let perThread = 200

    func testOneAgentDrivenFromEightThreads() throws {
        let core = try newAgent()
        XCTAssertFalse(try core.handleLine(connection: "c1", line: request(0, "session/prompt", promptParams("go"))).actions().isEmpty)
        let lock = NSLock()
        var accepted = Set<String>(), revoked = Set<String>(), delivered: [String] = [], failures: [String] = []

        func record(_ outputs: [AgentOutput]) {
            lock.lock(); defer { lock.unlock() }
            for action in outputs.actions() {
                switch action {
                case let .deliver(messages), let .startTurn(messages): delivered += messages.map(\.messageId)
                default: break
                }
            }
        }
        func answer(_ conn: String, _ outputs: [AgentOutput]) throws -> JSON {
            let line = outputs.compactMap { o -> String? in if case let .line(to, line) = o, to == conn { return line } else { return nil } }.first
            return try JSON.parse(line ?? "null")
        }

        DispatchQueue.concurrentPerform(iterations: threads) { index in
            let n = Int64(index + 1)
            let conn = "c\(n)"
            do {
                for i in 0..<perThread {
                    let req = n * 100_000 + Int64(i) * 2
                    let outs = try core.handleLine(connection: conn, line: request(req, "session/inject", injectParams(i % 2 == 1 ? "steer" : "queue", "\(n)-\(i)")))
                    record(outs)
                    let a = try answer(conn, outs)
                    if let error = a["error"] {
                        // A steer that raced a turn end meets an idle session (R-STEER-2).
                        if error["data"]?["reason"] != .string("no_running_turn") {
                            lock.lock(); failures.append("\(a)"); lock.unlock()
                        }
                        continue
                    }
                    guard let mid = a["result"]?["messageId"]?.string else {
                        lock.lock(); failures.append("\(a)"); lock.unlock()
                        continue
                    }
                    lock.lock(); accepted.insert(mid); lock.unlock()
                    if i % 3 == 0 {
                        let rev = try core.handleLine(connection: conn, line: request(req + 1, "session/revoke_inject", revokeParams(mid)))
                        record(rev)
                        if try answer(conn, rev)["result"] == .object([:]) { lock.lock(); revoked.insert(mid); lock.unlock() }
                    }
                    if i % 5 == 0 {
                        do { record(try core.runtimeEvent(sessionId: "s1", event: .breakPoint(kind: .toolResult))) } catch AcpError.Host {}
                    }
                    if i % 17 == 0 {
                        do { record(try core.runtimeEvent(sessionId: "s1", event: .turnEnded(stopReason: "end_turn", usageJson: nil))) } catch AcpError.Host {}
                    }
                }
            } catch {
                lock.lock(); failures.append("\(error)"); lock.unlock()
            }
        }

        XCTAssertEqual(failures, [])
        let pending = Set(try core.pending(sessionId: "s1").map(\.messageId))
        let deliveredSet = Set(delivered)
        XCTAssertEqual(delivered.count, deliveredSet.count, "a message was delivered twice")
        XCTAssertTrue(deliveredSet.isDisjoint(with: revoked), "a revoked message was delivered")
        XCTAssertGreaterThan(accepted.count, threads * perThread / 2)
        // Every accepted inject is exactly one of: delivered, revoked, still pending.
        for mid in accepted {
            XCTAssertEqual([deliveredSet.contains(mid), revoked.contains(mid), pending.contains(mid)].filter { $0 }.count, 1, mid)
        }
    }

    func testOneClientMirrorFedAndReadFromEightThreads() throws {
        let chunks = 300
        let session = try ClientSession(sessionId: "s1", inject: fullCaps)
        let lock = NSLock()
        var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: threads) { index in
            let n = index + 1
            do {
                for k in 0..<chunks {
                    let update = JSON.object([
                        "sessionUpdate": .string("agent_message_chunk"), "messageId": .string("a\(n)"),
                        "content": .object(["type": .string("text"), "text": .string("\(n)-\(k)")]),
                    ])
                    let line = JSON.object(["jsonrpc": .string("2.0"), "method": .string("session/update"),
                                            "params": .object(["sessionId": .string("s1"), "update": update])])
                    try session.receive(line: line.description)
                    if k % 50 == 0 { _ = try session.snapshot() } // readers interleave with writers
                }
            } catch {
                lock.lock(); failures.append("\(error)"); lock.unlock()
            }
        }
        XCTAssertEqual(failures, [])
        let transcript = try session.snapshot().transcript
        XCTAssertEqual(Set(transcript.map(\.messageId)), Set((1...threads).map { "a\($0)" }))
        for entry in transcript {
            let n = entry.messageId.dropFirst()
            // Each thread's chunks arrive whole and in that thread's order.
            XCTAssertEqual(entry.content, (0..<chunks).map { .text("\(n)-\($0)") }, entry.messageId)
        }
    }
}
