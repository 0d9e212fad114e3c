// End to end over real stdio: the reference agent (`acp-inject-agent`, a subprocess speaking
// newline-delimited JSON-RPC) driven from a `ClientSession`, playing the scenario of
// bindings/python/examples/live_demo.py, and checking that every behaviour really happened.
//
// The agent binary is `$ACP_INJECT_AGENT` (swiftw builds it on the host and passes it into the
// chroot; `cargo xtask test` builds it once for every stage), else built here with cargo.
import AcpInjectFFI
import Foundation
import XCTest

final class LiveAgentTests: XCTestCase {
    func testALiveSessionOverStdioShowsEveryBehaviour() throws {
        let demo = try LiveDemo(agent: try agentBinary(), delayMs: 40)
        let finished = try demo.run(deadline: Date().addingTimeInterval(60))
        demo.check(finished: finished)
        print("live agent: \(demo.summary())")
    }
}

/// The reference agent binary: `$ACP_INJECT_AGENT`, else `cargo build` it in this checkout
/// (where cargo exists: not inside swiftw's chroot, which passes the variable instead).
func agentBinary() throws -> String {
    if let path = ProcessInfo.processInfo.environment["ACP_INJECT_AGENT"], !path.isEmpty { return path }
    func run(_ args: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = args
        p.currentDirectoryURL = workspace
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NSError(domain: "LiveAgentTests", code: 1, userInfo: [NSLocalizedDescriptionKey: "`\(args.joined(separator: " "))` failed; set ACP_INJECT_AGENT"])
        }
        return data
    }
    _ = try run(["cargo", "build", "--quiet", "-p", "acp-inject-reference-agent"])
    let meta = try JSON.parse(String(decoding: try run(["cargo", "metadata", "--format-version", "1", "--no-deps"]), as: UTF8.self))
    guard let target = meta["target_directory"]?.string else { throw NSError(domain: "LiveAgentTests", code: 2) }
    return target + "/debug/acp-inject-agent"
}

/// A blocking queue of the agent's lines.
final class LineQueue: @unchecked Sendable {
    enum Item { case line(String), timeout, eof }
    private let cond = NSCondition()
    private var items: [String] = []
    private var closed = false

    func put(_ line: String) {
        cond.lock()
        items.append(line)
        cond.signal()
        cond.unlock()
    }

    func close() {
        cond.lock()
        closed = true
        cond.broadcast()
        cond.unlock()
    }

    func poll(until limit: Date) -> Item {
        cond.lock()
        defer { cond.unlock() }
        while items.isEmpty && !closed {
            if !cond.wait(until: limit) { break }
        }
        if !items.isEmpty { return .line(items.removeFirst()) }
        return closed ? .eof : .timeout
    }
}

private func str(_ v: JSON?) -> String? { v?.string }

/// A user who prompts, steers on the first agent chunk, queues three messages on the first tool
/// call and revokes one and replaces another, steers while a permission prompt is open, answers
/// it, revokes a queued message too late, and cancels with a message still queued. The
/// `ClientSession` tracks everything; this class decides when to act and records what happened.
final class LiveDemo {
    static let prompt = "Fix the failing login test"
    static let steer = "Use the auth_v2 module"
    static let changelog = "Then update the changelog"
    static let bump = "Also bump the version"
    static let draft = "Draft: add a test"
    static let regression = "Add a regression test for the login bug"
    static let held = "Skip the slow integration tests"
    static let summaryText = "Finally, summarize the changes"

    private let proc = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let lines = LineQueue()
    private let t0 = Date()
    private var nextId: Int64 = 1000
    private var session: ClientSession!
    private var narrative = ""

    // What the user meant (ids → words, ids → how they were sent), and open requests.
    private var label: [(id: String, words: String)] = []
    private var kind: [String: String] = [:]
    private var requests: [String: (op: String, words: String)] = [:]

    private var linesRead = 0
    private var turn = 0
    private var state = "idle"
    private var permissionOpen = false
    private var permissionId: JSON = .null
    private var permissionAt = Date()
    private var plan: Set<String> = []

    /// Every `user_message` the mirror read.
    struct Delivery {
        let messageId: String
        let text: String
        let how: String
        let turn: Int
        let state: String
        let line: Int
        /// The update just before it (a break-point shows as a completed tool call).
        let after: String
    }

    private(set) var deliveries: [Delivery] = []
    private(set) var seen: [String: Int] = [
        "steer_at_break_point": 0, "steer_held_in_permission": 0, "queued_after_idle": 0,
        "cancel_kept_pending": 0, "revoke_ok": 0, "revoke_too_late": 0, "replaced": 0,
    ]
    private var lastUpdate = "nothing"
    private var heldSteer: String?
    private var heldSteerSentIn: TurnState?
    private var permissionAnsweredAtLine: Int? // turn 1's answer
    private var completionAfterAnswer: (line: Int, call: String)?
    private var revoked: String?
    private var replaced: String?
    private var replacedEcho: String?
    private var lateRevoke: (id: String, status: ItemStatus?)?
    private var lateRevokeError: (reason: String?, messageId: String?)?
    private var cancelledWith: String?
    private var idles: [(turn: Int, stopReason: String?, line: Int)] = []
    private var protocolErrors: [String?] = []
    private var exitCode: Int32?

    init(agent: String, delayMs: Int) throws {
        signal(SIGPIPE, SIG_IGN) // a dead agent must fail the test, not kill the runner
        proc.executableURL = URL(fileURLWithPath: agent)
        proc.arguments = ["--delay-ms", String(delayMs), "--tools", "3", "--permission-on-tool", "1"]
        proc.standardInput = stdinPipe
        proc.standardOutput = stdoutPipe
        proc.standardError = FileHandle.standardError
        try proc.run()
        let reader = stdoutPipe.fileHandleForReading
        let queue = lines
        Thread {
            var buffer = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let nl = buffer.firstIndex(of: 0x0A) {
                    queue.put(String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...nl)
                }
            }
            queue.close()
        }.start()
    }

    // ----- plumbing -----

    private func say(_ who: String, _ what: String) {
        let t = String(format: "%7.2fs", Date().timeIntervalSince(t0))
        narrative += "\(t)  \(who.padding(toLength: 10, withPad: " ", startingAt: 0)) \(what)\n"
    }

    private func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    private func idKey(_ msg: JSON) -> String? { msg["id"]?.description }

    private func fail(_ why: String) -> Error {
        NSError(domain: "LiveAgentTests", code: 3, userInfo: [NSLocalizedDescriptionKey: why + "\n" + narrative])
    }

    /// A request outside the mirror (initialize, session/new): waits for its answer.
    private func request(_ method: String, _ params: String, _ deadline: Date) throws -> JSON {
        nextId += 1
        send("{\"jsonrpc\":\"2.0\",\"id\":\(nextId),\"method\":\"\(method)\",\"params\":\(params)}")
        while true {
            switch lines.poll(until: deadline) {
            case .timeout: throw fail("no answer to \(method) before the deadline")
            case .eof: throw fail("the agent exited during \(method)")
            case let .line(line):
                let msg = try JSON.parse(line)
                if msg["id"] == .int(nextId) {
                    if let error = msg["error"] { throw fail("\(method) failed: \(error)") }
                    guard let result = msg["result"] else { throw fail("\(method): no result") }
                    return result
                }
            }
        }
    }

    /// Sends one of the mirror's request lines and remembers what it was for.
    private func user(_ op: String, _ words: String, _ line: String, _ shown: String? = nil) throws {
        send(line)
        if let id = idKey(try JSON.parse(line)) { requests[id] = (op, words) }
        say("you", op.padding(toLength: 8, withPad: " ", startingAt: 0) + " " + (shown ?? "\"\(words)\""))
    }

    private func pendingId(_ words: String) -> String? { label.first { $0.words == words }?.id }
    private func words(of id: String) -> String? { label.last { $0.id == id }?.words }

    private func inject(_ mode: InjectMode, _ words: String) throws {
        try user(mode == .steer ? "steer" : "queue", words, try session.inject(mode: mode, content: [.text(words)]))
    }

    // ----- the scenario -----

    /// Plays the scenario; true when turn 3 ended before the deadline.
    func run(deadline: Date) throws -> Bool {
        var done = false
        defer {
            try? stdinPipe.fileHandleForWriting.close() // the agent exits at end of input
            let limit = Date().addingTimeInterval(10)
            while proc.isRunning && Date() < limit { Thread.sleep(forTimeInterval: 0.02) }
            if proc.isRunning { proc.terminate() } else { exitCode = proc.terminationStatus }
        }
        let initResult = try request("initialize", "{\"protocolVersion\":2,\"info\":{\"name\":\"live-test\",\"version\":\"1\"}}", deadline)
        say("agent", "initialized: \(initResult["capabilities"]?.description ?? "?")")
        guard let sessionId = try request("session/new", "{\"cwd\":\"/tmp\"}", deadline)["sessionId"]?.string else {
            throw fail("session/new gave no sessionId")
        }
        session = try ClientSession.fromInitializeResult(sessionId: sessionId, initializeResultJson: initResult.description)
        say("agent", "session \(sessionId) created")
        try user("prompt", Self.prompt, try session.prompt(content: [.text(Self.prompt)]))
        loop: while Date() < deadline && !done {
            switch lines.poll(until: min(deadline, Date().addingTimeInterval(0.05))) {
            case .eof: break loop
            case .timeout: break
            case let .line(line): done = try handle(line)
            }
            try tick()
        }
        return done
    }

    /// Actions that wait for answers rather than for agent events.
    private func tick() throws {
        if plan.contains("queued") && !plan.contains("edited"), let q2 = pendingId(Self.bump), let q3 = pendingId(Self.draft) {
            plan.insert("edited")
            revoked = q2
            replaced = q3
            try user("revoke", Self.bump, try session.revoke(messageId: q2), "\"\(Self.bump)\" (\(q2))")
            try user("replace", Self.regression, try session.replace(messageId: q3, content: [.text(Self.regression)]),
                     "\"\(Self.draft)\" (\(q3)) → \"\(Self.regression)\"")
            label.append((q3, Self.regression))
            label.removeAll { $0.id == q3 && $0.words == Self.draft }
        }
        if plan.contains("cancel_after") && !plan.contains("cancelled"), let id = pendingId(Self.summaryText) {
            plan.insert("cancelled")
            cancelledWith = id
            send(try session.cancel())
            say("you", "cancel   (the queued summary should survive)")
        }
        // Answer after 0.3 s, and in turn 1 only once the steer sent meanwhile was accepted.
        let steerSettled = turn != 1 || heldSteer != nil
        if permissionOpen && steerSettled && Date().timeIntervalSince(permissionAt) > 0.3 {
            permissionOpen = false
            if turn == 1 { permissionAnsweredAtLine = linesRead }
            send("{\"jsonrpc\":\"2.0\",\"id\":\(permissionId.description),\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}")
            say("you", "allow    (permission answered)")
        }
    }

    /// Applies one agent line; true once turn 3 is over.
    private func handle(_ line: String) throws -> Bool {
        linesRead += 1
        let msg = try JSON.parse(line)
        if str(msg["method"]) == "session/request_permission" {
            permissionOpen = true
            permissionId = msg["id"] ?? .null
            permissionAt = Date()
            say("agent", "asks permission: \(str(msg["params"]?["title"]) ?? "?")")
            return false
        }
        do {
            try session.receive(line: line)
        } catch let AcpError.Protocol(_, _, reason, messageId) {
            if let id = idKey(msg) { requests[id] = nil }
            protocolErrors.append(reason)
            say("agent", "error    \(reason ?? "?") for \"\(messageId.flatMap(words(of:)) ?? "")\" (\(messageId ?? "?"))")
            if reason == "already_delivered" {
                seen["revoke_too_late", default: 0] += 1
                lateRevokeError = (reason, messageId)
            }
        }
        if let id = idKey(msg), let result = msg["result"], let (op, words) = requests.removeValue(forKey: id) {
            switch op {
            case "prompt", "queue", "steer":
                guard let mid = str(result["messageId"]) else { throw fail("accept without messageId: \(line)") }
                label.append((mid, words))
                kind[mid] = op
                say("agent", "accepted \"\(words)\" as \(mid)")
                if op == "steer" && permissionOpen { heldSteer = mid }
            case "revoke":
                seen["revoke_ok", default: 0] += 1
                say("agent", "revoked  (it will never be delivered)")
            case "replace":
                seen["replaced", default: 0] += 1
                replacedEcho = str(result["messageId"])
                say("agent", "replaced (same id \(replacedEcho ?? "?"), same place in the queue)")
            default: break
            }
        }
        guard let update = msg["params"]?["update"] else { return false }
        switch str(update["sessionUpdate"]) ?? "?" {
        case "agent_message_chunk":
            say("agent", "says \"\((str(update["content"]?["text"]) ?? "").trimmingCharacters(in: .whitespaces))\"")
            lastUpdate = "agent_message_chunk"
            try onAgentChunk()
        case "user_message":
            guard let mid = str(update["messageId"]) else { throw fail("user_message without messageId") }
            let text = (update["content"]?.array ?? []).map { str($0["text"]) ?? "" }.joined(separator: " ")
            let how = kind[mid] ?? "?"
            deliveries.append(Delivery(messageId: mid, text: text, how: how, turn: turn, state: state, line: linesRead, after: lastUpdate))
            var place = "starting the turn"
            if state == "running" && how == "steer" {
                place = "at a break-point"
                seen["steer_at_break_point", default: 0] += 1
                if mid == heldSteer {
                    seen["steer_held_in_permission", default: 0] += 1
                    place += ", after the permission decision (it was held, not dropped)"
                }
            } else if (how == "queue" || how == "prompt") && state == "idle" && turn > 0 {
                place = "after idle, opening the next turn"
                seen["queued_after_idle", default: 0] += 1
                if mid == cancelledWith {
                    seen["cancel_kept_pending", default: 0] += 1
                    place += " (survived the cancel)"
                }
            }
            say("delivered", "\(how) \"\(text)\" (\(mid)) \(place) (after \(lastUpdate))")
        case "state_update":
            let next = str(update["state"]) ?? "?"
            var extra = ""
            if next == "running" && state == "idle" {
                turn += 1
                extra = " (turn \(turn))"
            }
            if next == "idle" {
                idles.append((turn, str(update["stopReason"]), linesRead))
                extra = " (\(str(update["stopReason"]) ?? "?"))"
            }
            say("state", next + extra)
            state = next
            lastUpdate = "state_update \(next)"
            if next == "requires_action" && turn == 1 && !plan.contains("held") {
                plan.insert("held")
                heldSteerSentIn = try session.snapshot().state
                try inject(.steer, Self.held)
            }
            if next == "idle" && turn == 1 && !plan.contains("late_revoke") {
                // The agent emitted this idle and the queued user_messages together; the
                // mirror has not read them yet, so it still thinks the changelog is pending.
                plan.insert("late_revoke")
                if let q1 = pendingId(Self.changelog) {
                    let status = try session.itemStatus(messageId: q1)
                    lateRevoke = (q1, status)
                    if status == .pending {
                        try user("revoke", Self.changelog, try session.revoke(messageId: q1), "\"\(Self.changelog)\" (\(q1)), racing its delivery")
                    }
                }
            }
            if next == "idle" && turn >= 3 { return true }
        case "tool_call_update":
            let call = str(update["toolCallId"]) ?? "?"
            let status = str(update["status"]) ?? "?"
            lastUpdate = "tool_call_update \(call) \(status)"
            if status == "completed" && permissionAnsweredAtLine != nil && completionAfterAnswer == nil {
                completionAfterAnswer = (linesRead, call)
            }
            if let title = str(update["title"]) {
                say("agent", "tool     \(title) (\(status))")
                if turn == 1 && !plan.contains("queued") {
                    plan.insert("queued")
                    try inject(.queue, Self.changelog)
                    try inject(.queue, Self.bump)
                    try inject(.queue, Self.draft)
                }
            }
        case let other:
            lastUpdate = other
        }
        return false
    }

    private func onAgentChunk() throws {
        if turn == 1 && !plan.contains("steered") {
            plan.insert("steered")
            try inject(.steer, Self.steer)
        }
        if turn == 2 && !plan.contains("summary_queued") {
            plan.insert("summary_queued")
            try inject(.queue, Self.summaryText)
            plan.insert("cancel_after")
        }
    }

    // ----- the checks -----

    func summary() -> String {
        let counts = seen.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        return "\(turn) turns; \(counts); delivered in order: " + deliveries.map { "\($0.messageId)(\($0.how))" }.joined(separator: ", ")
    }

    /// Asserts that every behaviour of the scenario really happened, in the right place.
    func check(finished: Bool, file: StaticString = #filePath, line: UInt = #line) {
        let why = "\n\(summary())\n\(narrative)"
        XCTAssertTrue(finished, "turn 3 did not end before the deadline\(why)", file: file, line: line)
        XCTAssertEqual(exitCode, 0, "the agent exits cleanly at end of input\(why)", file: file, line: line)
        XCTAssertEqual(seen, [
            "steer_at_break_point": 2, "steer_held_in_permission": 1, "queued_after_idle": 3,
            "cancel_kept_pending": 1, "revoke_ok": 1, "revoke_too_late": 1, "replaced": 1,
        ], "every behaviour, exactly once\(why)", file: file, line: line)
        func delivered(_ words: String) -> Delivery? {
            let d = deliveries.first { self.words(of: $0.messageId) == words }
            XCTAssertNotNil(d, "\"\(words)\" was delivered\(why)", file: file, line: line)
            return d
        }

        // The steer sent on the first chunk: delivered mid-turn, at a break-point (a tool result).
        if let steer = delivered(Self.steer) {
            XCTAssertEqual([String(steer.turn), steer.state, steer.how], ["1", "running", "steer"], "steer delivered mid-turn 1\(why)")
            XCTAssertTrue(steer.after.hasPrefix("tool_call_update call_1_") && steer.after.hasSuffix(" completed"),
                          "steer delivered at a tool-result break-point, got after \(steer.after)\(why)")
        }

        // The steer sent during the permission prompt: held, delivered at the first break-point
        // after the decision (the completion of the tool that asked), not at the decision.
        XCTAssertEqual(heldSteerSentIn, .requiresAction, "the second steer was sent while requires_action\(why)")
        if let held = delivered(Self.held), let answeredAt = permissionAnsweredAtLine, let completion = completionAfterAnswer {
            XCTAssertEqual(held.messageId, heldSteer, "the held steer was accepted while the prompt was open\(why)")
            XCTAssertEqual(completion.call, "call_1_1", "the first completion after the answer is the permission's tool\(why)")
            XCTAssertTrue(held.line > completion.line && completion.line > answeredAt,
                          "held steer delivered after the decision AND after the next break-point (answer@\(answeredAt), completion@\(completion.line), steer@\(held.line))\(why)")
            XCTAssertEqual([String(held.turn), held.state, held.after], ["1", "running", "tool_call_update call_1_1 completed"], "held steer delivered at the tool result\(why)")
        } else {
            XCTFail("no held steer delivery, permission answer or completion after it\(why)")
        }

        // Queue, revoke, replace: the revoked one never arrives, the replaced one arrives with
        // its new content under the same id, both remaining queued messages open turn 2.
        guard let snap = try? session.snapshot(), let revokedId = revoked, let replacedId = replaced else {
            return XCTFail("no snapshot, revoke or replace\(why)")
        }
        XCTAssertFalse(deliveries.contains { $0.messageId == revokedId }, "the revoked message was never delivered\(why)")
        XCTAssertEqual(try? session.itemStatus(messageId: revokedId), .revoked, "the mirror shows it revoked\(why)")
        let regression = delivered(Self.regression)
        XCTAssertEqual(regression?.messageId, replacedId, "replace keeps the id\(why)")
        XCTAssertEqual(replacedEcho, replacedId, "the replace answer names the same id\(why)")
        XCTAssertEqual(regression?.text, Self.regression, "the replaced content is what was delivered\(why)")

        // The late revoke: the mirror still showed it pending, the agent had delivered it.
        if let late = lateRevoke {
            XCTAssertEqual(late.status, .pending, "the mirror had not read the delivery yet\(why)")
            XCTAssertEqual(lateRevokeError?.reason, "already_delivered", why)
            XCTAssertEqual(lateRevokeError?.messageId, late.id, why)
            XCTAssertEqual(try? session.itemStatus(messageId: late.id), .delivered, "and it was delivered\(why)")
        } else {
            XCTFail("no revoke was attempted at turn 1's idle\(why)")
        }
        for d in [delivered(Self.changelog), regression].compactMap({ $0 }) {
            XCTAssertEqual([String(d.turn), d.state, d.how], ["1", "idle", "queue"], "queued messages open turn 2 after idle\(why)")
        }
        XCTAssertEqual(idles.first.map { "\($0.turn) \($0.stopReason ?? "-")" }, "1 end_turn", "turn 1 ended normally\(why)")

        // The cancel: turn 2 ends cancelled and the queued summary survives it, opening turn 3.
        let cancelled = idles.first { $0.turn == 2 }
        XCTAssertEqual(cancelled?.stopReason, "cancelled", "turn 2 ended cancelled\(why)")
        if let summary = delivered(Self.summaryText), let cancelled {
            XCTAssertEqual(summary.messageId, cancelledWith, why)
            XCTAssertTrue(summary.line > cancelled.line && summary.turn == 2 && summary.state == "idle",
                          "the summary was delivered after the cancel, opening turn 3\(why)")
        }
        XCTAssertEqual(turn, 3, why)

        // The mirror agrees: no violations, nothing left pending, the user transcript in order.
        XCTAssertEqual(snap.violations, [], why)
        XCTAssertEqual(snap.pending.map(\.messageId), [], "nothing left pending\(why)")
        XCTAssertEqual(snap.state, .idle, why)
        let users = snap.transcript.filter { $0.role == .user }.map(\.messageId)
        let expected = [Self.prompt, Self.steer, Self.held, Self.changelog, Self.regression, Self.summaryText].map { pendingId($0) ?? "?" }
        XCTAssertEqual(users, expected, "the user transcript\(why)")
        XCTAssertEqual(protocolErrors, ["already_delivered"], "no other error answer\(why)")
    }
}
