import AcpInject
import Foundation
import XCTest

/// The side-by-side examples (`side-by-side/swift`: an agent and a client written with this
/// package; there is no official Swift ACP SDK), built by `swift test` beside the test bundle
/// as the targets `OursAgent` and `OursClient`: our client against our agent, each in a process
/// of its own, the client's output checked; our client against the official Python SDK's agent
/// (`side-by-side/python/official_agent.py`, ACP v1) when the chroot has that SDK; then our agent
/// driven by this package's client through a rejected permission and a cancel.
final class SideBySideTests: XCTestCase {
    func testOurClientAgainstOurAgentWithQueueSteerRevokeAndReplace() async throws {
        let out = try await runClient(agent: [builtExecutable("OursAgent")])
        commonPart(out, agent: "ours-echo-agent", protocol: 2, title: "Echo the message")
        // The steer is delivered at the tool result of the first turn and read there, before
        // that turn ends; the two queued messages are delivered after it and open the second
        // turn together; the revoked one is never delivered, the replaced one only with its new
        // text.
        let firstTurn = String(out[..<(out.range(of: "[stop] endTurn")?.lowerBound ?? out.endIndex)])
        assertInOrder(firstTurn, "[steer delivered] keep it short", "(steered: keep it short)")
        XCTAssertTrue(out.contains("[queue revoked] never mind"), out)
        assertInOrder(out, "[stop] endTurn", "[queue delivered] and a follow-up", "[queue delivered] the final question")
        assertInOrder(replies(out), "[stop] endTurn", "you said: and a follow-up the final question", "[stop] endTurn")
        XCTAssertEqual(out.components(separatedBy: "[stop] endTurn").count - 1, 2, out)
        for never in ["delivered] never mind", "delivered] a draft", "said: never mind", "a draft the final"] {
            XCTAssertFalse(out.contains(never), "\(never) in:\n\(out)")
        }
    }

    func testOurClientAgainstTheOfficialPythonSdksAgentHoldingTheQueueItself() async throws {
        // The official SDK's venv inside swiftw's chroot, which the interop stage installs.
        let python = "/opt/acp-inject-python-sdk/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw XCTSkip("no official Python SDK at \(python) (the interop stage installs it in the Swift chroot)")
        }
        let out = try await runClient(agent: [python, workspace.appendingPathComponent("side-by-side/python/official_agent.py").path])
        commonPart(out, agent: "side-by-side-official-agent", protocol: 1, title: "Run the tests")
        // No steer (a v1 agent offers none); the client holds the queue and sends each message
        // as a prompt of its own when a turn ends: the revoked one never, the replaced one with
        // its new text.
        XCTAssertFalse(out.contains("steer"), out)
        XCTAssertTrue(out.contains("[queue revoked] never mind"), out)
        assertInOrder(
            replies(out), "[stop] endTurn", "you said: and a follow-up", "[stop] endTurn", "you said: the final question", "[stop] endTurn"
        )
        XCTAssertEqual(out.components(separatedBy: "[stop] endTurn").count - 1, 3, out)
        XCTAssertFalse(out.contains("said: a draft") || out.contains("said: never mind"), out)
    }

    func testOurAgentFailsTheToolCallWhenRejectedAndEndsACancelledTurnCancelled() async throws {
        let agent = try builtExecutable("OursAgent")
        try await withDeadline(60) {
            let client = try await connect([agent], name: "side-by-side-tests", forwardStderr: false)
            let session = try await client.newSession(cwd: "/tmp/side-by-side")
            // One iterator for the whole test: a new `for try await` loop would start after the
            // batch the previous one stopped in.
            var events = session.events.makeAsyncIterator()
            func next(_ what: String, _ matches: (SessionActivity) -> Bool) async throws -> SessionActivity {
                while let activity = try await events.next() {
                    if matches(activity) { return activity }
                }
                throw Timeout(description: "the events ended before \(what)")
            }

            try await session.prompt("reject this")
            guard case let .permissionRequested(p) = try await next("the permission request", isPermissionRequest) else { return }
            try session.allow(p.request, optionId: "reject")
            _ = try await next("the tool call failed") {
                if case let .update(.toolCallUpdate(call)) = $0 { return call.status == .failed }
                return false
            }
            let first = try await next("the first turn's end") { stopReason(of: $0) != nil }
            XCTAssertEqual(stopReason(of: first), .endTurn)

            try await session.prompt("cancel this")
            _ = try await next("the second permission request", isPermissionRequest)
            try session.cancel()
            let second = try await next("the second turn's end") { stopReason(of: $0) != nil }
            XCTAssertEqual(stopReason(of: second), .cancelled)
            XCTAssertEqual(try session.snapshot().violations, [])
            try await client.close()
        }
    }

    /// Runs `OursClient` with `agent` as its agent's command; its stdout, once it exited 0
    /// (the agent's stderr comes through the client's, and both are in the failure's message).
    private func runClient(agent: [String], seconds: Double = 60) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("side-by-side-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stdout = directory.appendingPathComponent("stdout"), stderr = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)

        let client = Process()
        client.executableURL = URL(fileURLWithPath: try builtExecutable("OursClient"))
        client.arguments = agent
        client.standardInput = FileHandle.nullDevice
        client.standardOutput = try FileHandle(forWritingTo: stdout)
        client.standardError = try FileHandle(forWritingTo: stderr)
        try client.run()
        let deadline = ContinuousClock.now + .seconds(seconds)
        while client.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let timedOut = client.isRunning
        if timedOut { client.terminate() }
        client.waitUntilExit()

        let out = try String(contentsOf: stdout, encoding: .utf8), err = try String(contentsOf: stderr, encoding: .utf8)
        let name = agent.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: " ")
        print("--- our client against \(name):\n\(out)")
        if timedOut {
            XCTFail("our client against \(name): no exit within \(seconds) s\n\(out)\n\(err)")
        } else {
            XCTAssertEqual(client.terminationStatus, 0, "our client against \(name):\n\(out)\n\(err)")
        }
        return out
    }
}

/// What every pairing shows: the agent and protocol, the reply, the permission allowed, the
/// tool call completed, the turn's end.
private func commonPart(_ out: String, agent: String, protocol version: Int, title: String, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(out.contains("[agent] \(agent), protocol \(version)"), out, file: file, line: line)
    assertInOrder(replies(out), "you said: hello", "[permission] \(title): Allow", ": completed", "[stop] endTurn", file: file, line: line)
}

/// `out` without our client's lines about its messages (`[queue delivered] text`), which may
/// arrive in the middle of the agent's streamed text.
private func replies(_ out: String) -> String {
    out.replacingOccurrences(of: #"\[(prompt|queue|steer) [a-z]+\] [^\n]*\n"#, with: "", options: .regularExpression)
}

/// The `parts` occur in `out` in this order.
private func assertInOrder(_ out: String, _ parts: String..., file: StaticString = #filePath, line: UInt = #line) {
    var from = out.startIndex
    for part in parts {
        guard let found = out.range(of: part, range: from..<out.endIndex) else {
            return XCTFail("\"\(part)\" after offset \(out.distance(from: out.startIndex, to: from)) in:\n\(out)", file: file, line: line)
        }
        from = found.upperBound
    }
}

private func isPermissionRequest(_ activity: SessionActivity) -> Bool {
    if case .permissionRequested = activity { return true }
    return false
}

/// The stop reason of a turn's end (an `idle` state update that says why), else `nil`.
private func stopReason(of activity: SessionActivity) -> StopReason? {
    activity.turnEnded?.stopReason
}
