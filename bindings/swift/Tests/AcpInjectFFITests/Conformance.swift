// Replays conformance vectors through the Swift binding: `AgentCore` and `ClientSession` are
// driven exactly as a Swift host would drive them, so a passing vector proves the behaviour
// survives the FFI boundary. This file implements only the vector format (VECTORS.md,
// spec/vectors/README.md: captures and comparison), never the protocol; it is a port of the
// Python replay (bindings/python/python/acp_inject/conformance.py). Directories: the
// project's spec/vectors plus those of `ACP_INJECT_VECTORS` (`:`-separated).
import AcpInjectFFI
import Foundation

/// The first difference between a vector and what the binding did.
struct Mismatch: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

struct VectorResult {
    let name: String
    let file: String
    var mismatch: String?
}

struct Report {
    var results: [VectorResult]
    var passed: Int { results.filter { $0.mismatch == nil }.count }
    var failed: Int { results.count - passed }

    func render() -> String {
        var out = ""
        for r in results { if let m = r.mismatch { out += "FAILED \(r.name) (\(r.file))\n  \(m)\n" } }
        return out + "\(passed) passed, \(failed) failed\n"
    }
}

private func isCapture(_ v: JSON) -> Bool {
    guard case let .string(s) = v, s.count >= 2, s.first == "$" else { return false }
    let rest = s.dropFirst()
    guard let first = rest.unicodeScalars.first, first == "_" || (first.isASCII && CharacterSet.letters.contains(first)) else { return false }
    return rest.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && CharacterSet.alphanumerics.contains($0)) }
}

/// `"$$x"` is the literal text `$x`.
private func unescape(_ v: JSON) -> JSON {
    if case let .string(s) = v, s.hasPrefix("$$") { return .string(String(s.dropFirst())) }
    return v
}

/// `$name` captures: bound at first sight, compared afterwards, substituted into inputs.
final class Captures {
    private var bound: [(String, JSON)] = []

    private func value(_ name: String) -> JSON? { bound.first { $0.0 == name }?.1 }

    func match(_ expected: JSON, _ actual: JSON, _ at: String) throws {
        if isCapture(expected), let name = expected.string.map({ String($0.dropFirst()) }) {
            if let v = value(name) {
                if v != actual || v.kind != actual.kind { throw Mismatch("\(at): $\(name) is bound to \(v), got \(actual)") }
                return
            }
            guard actual.kind == "string" || actual.kind == "number" else {
                throw Mismatch("\(at): $\(name) must capture a string or number, got \(actual)")
            }
            if let other = bound.first(where: { $0.1 == actual && $0.1.kind == actual.kind }) {
                throw Mismatch("\(at): $\(name) would bind \(actual), already bound to $\(other.0)")
            }
            bound.append((name, actual))
            return
        }
        let exp = unescape(expected)
        switch (exp, actual) {
        case let (.object(e), .object(a)):
            for (k, v) in e.sorted(by: { $0.key < $1.key }) {
                guard let av = a[k] else { throw Mismatch("\(at): missing member `\(k)` (expected \(v))") }
                try match(v, av, "\(at).\(k)")
            }
            for (k, v) in a.sorted(by: { $0.key < $1.key }) where e[k] == nil {
                throw Mismatch("\(at): unexpected member `\(k)`: \(v)")
            }
        case let (.array(e), .array(a)):
            guard e.count == a.count else { throw Mismatch("\(at): expected \(e.count) items, got \(a.count): \(actual)") }
            for (i, (ev, av)) in zip(e, a).enumerated() { try match(ev, av, "\(at)[\(i)]") }
        default:
            if exp != actual { throw Mismatch("\(at): expected \(exp), got \(actual)") }
        }
    }

    func substitute(_ v: JSON) throws -> JSON {
        if isCapture(v), let name = v.string.map({ String($0.dropFirst()) }) {
            guard let bound = value(name) else { throw Mismatch("capture $\(name) is used before it is bound") }
            return bound
        }
        switch v {
        case let .array(a): return .array(try a.map(substitute))
        case let .object(o): return .object(try o.mapValues(substitute))
        default: return unescape(v)
        }
    }
}

private func wire<T>(_ value: String?, _ table: [String: T], _ what: String) throws -> T {
    guard let value, let v = table[value] else { throw Mismatch("unknown \(what) \(value.map { "\"\($0)\"" } ?? "null")") }
    return v
}

private let injectModes: [String: InjectMode] = ["queue": .queue, "steer": .steer]
private let steerModes: [String: SteerInStream] = ["finish": .finish, "interrupt": .interrupt]
private let queueDrains: [String: QueueDrain] = ["batch": .batch, "one_per_turn": .onePerTurn]
private let revokeReplaces: [String: RevokeReplace] = ["any_controller": .anyController, "creator_only": .creatorOnly]
private let clearStyles: [String: ClearStyle] = ["upsert": .upsert, "agent_message_clear": .agentMessageClear]
private let breakPoints: [String: BreakPoint] = ["tool_result": .toolResult, "model_step": .modelStep]

private func name(_ mode: InjectMode) -> String { mode == .queue ? "queue" : "steer" }

private func name(_ status: ItemStatus) -> String {
    switch status {
    case .sending: return "sending"
    case .pending: return "pending"
    case .delivered: return "delivered"
    case .revoked: return "revoked"
    case .failed: return "failed"
    }
}

private func capabilities(_ vector: JSON) throws -> InjectCapabilities? {
    guard let inject = vector["capabilities"]?["inject"], inject != .null else { return nil }
    return InjectCapabilities(
        modes: try (inject["modes"]?.array ?? []).map { try wire($0.string, injectModes, "inject mode") },
        replace: inject["pending"]?["replace"] == .bool(true),
        steerInStream: try (inject["steerInStream"]?.array ?? []).map { try wire($0.string, steerModes, "steerInStream") }
    )
}

private func actionJSON(_ action: RuntimeAction) throws -> JSON {
    switch action {
    case let .startTurn(messages):
        return .object(["action": .string("start_turn"), "messageIds": .array(messages.map { .string($0.messageId) })])
    case let .deliver(messages):
        return .object([
            "action": .string("deliver"),
            "messageIds": .array(messages.map { .string($0.messageId) }),
            "content": .array(try messages.map { try JSON.parse($0.contentJson) }),
        ])
    case .interruptStream: return .object(["action": .string("interrupt_stream")])
    case .cancelTurn: return .object(["action": .string("cancel_turn")])
    case let .dropped(injects):
        return .object([
            "action": .string("dropped"),
            "injects": .array(try injects.map {
                .object(["messageId": .string($0.messageId), "mode": .string(name($0.mode)), "content": try JSON.parse($0.contentJson)])
            }),
        ])
    }
}

private func runtimeEvent(_ rt: JSON) throws -> RuntimeEvent {
    switch rt["event"]?.string {
    case "stream_started": return .streamStarted
    case "stream_finished": return .streamFinished
    case "permission_requested": return .permissionRequested
    case "permission_resolved": return .permissionResolved
    case "paused": return .paused
    case "resumed": return .resumed
    case "close": return .close
    case "break_point": return .breakPoint(kind: try wire(rt["kind"]?.string ?? "tool_result", breakPoints, "break-point kind"))
    case "turn_ended":
        let usage = rt["usage"].flatMap { $0 == .null ? nil : $0.description }
        return .turnEnded(stopReason: rt["stopReason"]?.string ?? "end_turn", usageJson: usage)
    case "update": return .update(updateJson: (rt["update"] ?? .null).description)
    case "clear_agent_message":
        guard let id = rt["messageId"]?.string else { throw Mismatch("clear_agent_message needs messageId") }
        return .clearAgentMessage(messageId: id)
    case let other: throw Mismatch("unknown runtime event \(other ?? "null")")
    }
}

/// Runs `body`, prefixing a mismatch with where it happened.
private func at<T>(_ place: String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let m as Mismatch { throw Mismatch("\(place): \(m)") }
}

private func replayAgent(_ vector: JSON) throws {
    var options = defaultAgentOptions()
    options.inject = try capabilities(vector)
    let policy = vector["policy"] ?? .object([:])
    if let v = policy["queueDrain"] { options.queueDrain = try wire(v.string, queueDrains, "queueDrain") }
    if let v = policy["steerInStream"] { options.steerInStream = try wire(v.string, steerModes, "steerInStream") }
    if let v = policy["revokeReplace"] { options.revokeReplace = try wire(v.string, revokeReplaces, "revokeReplace") }
    if case let .int(n)? = policy["rememberIds"] { options.rememberIds = UInt32(n) }
    if let v = policy["clearStyle"] { options.clearStyle = try wire(v.string, clearStyles, "clearStyle") }

    let core = try AgentCore(options: options)
    try core.createSession(sessionId: "s1")
    try core.attach(connection: "c1", role: .controller)
    for o in vector["observers"]?.array ?? [] { try core.attach(connection: o.string ?? "", role: .observer) }
    let captures = Captures()
    var outputs: [AgentOutput] = []

    func expect(_ expected: [JSON]) throws {
        let msgs = expected.filter { $0["action"] == nil }
        let acts = expected.filter { $0["action"] != nil }
        let lines: [(to: String?, line: String)] = outputs.compactMap { if case let .line(to, line) = $0 { return (to, line) } else { return nil } }
        let gotActs = try outputs.compactMap { o -> JSON? in if case let .action(_, a) = o { return try actionJSON(a) } else { return nil } }
        outputs.removeAll()
        guard msgs.count == lines.count else {
            throw Mismatch("expected \(msgs.count) messages, got \(lines.count): \(lines.map(\.line).joined(separator: " | "))")
        }
        for (i, (e, o)) in zip(msgs, lines).enumerated() {
            var want = e.object ?? [:]
            let wantTo = want.removeValue(forKey: "to")?.string
            guard var actual = try JSON.parse(o.line).object else { throw Mismatch("message \(i): not an object: \(o.line)") }
            if let wantTo, o.to != wantTo { throw Mismatch("message \(i): expected to \(wantTo), sent to \(o.to ?? "everyone")") }
            if wantTo == nil, let to = o.to, want["id"] == nil {
                throw Mismatch("message \(i): a notification must go to every connection, sent to \(to)")
            }
            // An expected error without `data.detail` ignores an actual `detail`.
            if var err = actual["error"]?.object, var data = err["data"]?.object {
                let expData = want["error"]?["data"]
                if expData?["detail"] == nil {
                    data.removeValue(forKey: "detail")
                    if data.isEmpty && (expData == nil || expData == .null) { err.removeValue(forKey: "data") } else { err["data"] = .object(data) }
                    actual["error"] = .object(err)
                }
            }
            try captures.match(.object(want), .object(actual), "message \(i)")
        }
        guard acts.count == gotActs.count else { throw Mismatch("expected \(acts.count) actions, got \(gotActs.count): \(gotActs)") }
        for (i, (e, a)) in zip(acts, gotActs).enumerated() { try captures.match(e, a, "action \(i)") }
    }

    for (i, step) in (vector["steps"]?.array ?? []).enumerated() {
        try at("step \(i)") {
            if let client = step["client"] {
                let line = try captures.substitute(client).description
                outputs += try core.handleLine(connection: step["from"]?.string ?? "c1", line: line)
            } else if let rt = step["runtime"] {
                let want = step["hostError"]?.string
                do {
                    outputs += try core.runtimeEvent(sessionId: rt["sessionId"]?.string ?? "s1", event: try runtimeEvent(rt))
                    if let want { throw Mismatch("expected host error \(want), the event was accepted") }
                } catch let AcpError.Host(kind, _) {
                    if want != kind { throw Mismatch("expected host error \(want ?? "none"), got \(kind)") }
                }
            } else if let e = step["expect"] {
                try expect(e.array ?? [])
            } else if let e = step["expectHistory"] {
                let history = JSON.array(try core.history(sessionId: "s1").map {
                    .object(["messageId": .string($0.messageId), "content": try JSON.parse($0.contentJson)])
                })
                try captures.match(e, history, "history")
            } else {
                throw Mismatch("unknown step \(step)")
            }
        }
    }
    try at("end of vector") { try expect([]) }
}

private func call(_ session: ClientSession, _ call: JSON) throws -> String {
    let blocks = (call["content"]?.array ?? []).map { ContentBlock.other(json: $0.description) }
    switch call["op"]?.string {
    case "prompt": return try session.prompt(content: blocks)
    case "inject": return try session.inject(mode: try wire(call["mode"]?.string, injectModes, "inject mode"), content: blocks)
    case "revoke": return try session.revoke(messageId: call["messageId"]?.string ?? "")
    case "replace": return try session.replace(messageId: call["messageId"]?.string ?? "", content: blocks)
    case "cancel": return try session.cancel()
    case "status": return try session.status()
    case let op: throw Mismatch("unknown op \(op ?? "null")")
    }
}

private func replayClient(_ vector: JSON) throws {
    let session = try ClientSession(sessionId: vector["sessionId"]?.string ?? "s1", inject: try capabilities(vector))
    let captures = Captures()
    var lastError: [String: JSON]?
    for (i, step) in (vector["steps"]?.array ?? []).enumerated() {
        try at("step \(i)") {
            if let c = step["call"] {
                let line: String
                do {
                    line = try call(session, try captures.substitute(c))
                } catch let AcpError.Rejected(reason) {
                    if step["rejects"]?.string != reason { throw Mismatch("the call was rejected (\(reason))") }
                    return
                }
                if let r = step["rejects"] { throw Mismatch("expected rejection \(r), it sent \(line)") }
                try captures.match(step["sends"] ?? .null, try JSON.parse(line), "sends")
            } else if let r = step["receive"] {
                lastError = nil
                do {
                    try session.receive(line: try captures.substitute(r).description)
                } catch let AcpError.Protocol(code, _, reason, messageId) {
                    var e: [String: JSON] = ["code": .int(code), "reason": reason.map(JSON.string) ?? .null]
                    if let messageId { e["messageId"] = .string(messageId) }
                    lastError = e
                }
            } else if let state = step["expectState"] {
                let snap = try JSON.parse(try session.snapshotJson())
                for (k, v) in (state.object ?? [:]).sorted(by: { $0.key < $1.key }) {
                    try captures.match(v, snap[k] ?? .null, "state.\(k)")
                }
            } else if let expected = step["expectError"]?.object {
                guard let last = lastError else { throw Mismatch("expected an error, the last receive surfaced none") }
                var actual = last.filter { expected[$0.key] != nil || $0.key == "reason" }
                if expected["reason"] == nil && actual["reason"] == .null { actual.removeValue(forKey: "reason") }
                try captures.match(.object(expected), .object(actual), "expectError")
            } else if let e = step["expectItem"] {
                let item = try captures.substitute(e)
                guard let id = item["messageId"]?.string else { throw Mismatch("expectItem needs messageId") }
                let got = try session.itemStatus(messageId: id).map(name)
                let want = item["status"]?.string
                if got != want { throw Mismatch("item \(id) has status \(got ?? "null"), expected \(want ?? "null")") }
            } else {
                throw Mismatch("unknown step \(step)")
            }
        }
    }
}

func runFile(_ url: URL) -> VectorResult {
    let path = url.path
    let vector: JSON
    do {
        vector = try JSON.parse(String(contentsOf: url, encoding: .utf8))
    } catch {
        return VectorResult(name: path, file: path, mismatch: "unreadable: \(error)")
    }
    var result = VectorResult(name: vector["name"]?.string ?? "(unnamed)", file: path)
    do {
        switch vector["side"]?.string {
        case "agent": try replayAgent(vector)
        case "client": try replayClient(vector)
        case let side: throw Mismatch("unknown side \(side ?? "null")")
        }
    } catch let m as Mismatch {
        result.mismatch = m.description
    } catch {
        result.mismatch = "unexpected \(error)"
    }
    return result
}

/// Every `*.json` below each directory (or the file itself), sorted by path.
func vectorFiles(_ dirs: [String]) -> [URL] {
    var files: [URL] = []
    for d in dirs {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: d, isDirectory: &isDir) else { continue }
        if !isDir.boolValue { files.append(URL(fileURLWithPath: d)); continue }
        let e = FileManager.default.enumerator(at: URL(fileURLWithPath: d), includingPropertiesForKeys: nil)
        while let u = e?.nextObject() as? URL {
            if u.pathExtension == "json" { files.append(u) }
        }
    }
    return files.sorted { $0.path < $1.path }
}

func runDirs(_ dirs: [String]) -> Report { Report(results: vectorFiles(dirs).map(runFile)) }

/// The directories of `ACP_INJECT_VECTORS` (`:`-separated).
func envVectorDirs() -> [String] {
    (ProcessInfo.processInfo.environment["ACP_INJECT_VECTORS"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
}
