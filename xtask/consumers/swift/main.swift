// A small real session against the reference agent, through the distributed Swift package
// only (dist/swift/AcpInject, a `.package(path:)` dependency).
//
//   swift run Consumer PATH/TO/acp-inject-agent
//
// Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
// queued message opened has answered and ended (the mirror idle, nothing pending).
// Exits 1 (with the reason) when anything is off.
import AcpInjectFFI
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let expected = ["Fix the failing login test", "Use the auth_v2 module", "Then update the changelog"]

func fail(_ why: String) -> Never {
    FileHandle.standardError.write(Data("session failed: \(why)\n".utf8))
    exit(1)
}

let agent = Process()
agent.executableURL = URL(fileURLWithPath: CommandLine.arguments[1])
agent.arguments = ["--delay-ms", "20", "--tools", "2"]
let toAgent = Pipe(), fromAgent = Pipe()
agent.standardInput = toAgent
agent.standardOutput = fromAgent
try agent.run()
guard let reader = fdopen(fromAgent.fileHandleForReading.fileDescriptor, "r") else { fail("fdopen") }

func send(_ line: String) { toAgent.fileHandleForWriting.write(Data((line + "\n").utf8)) }

func readLine() -> String? {
    var buffer: UnsafeMutablePointer<CChar>? = nil
    var size = 0
    defer { free(buffer) }
    guard getline(&buffer, &size, reader) >= 0, let buffer else { return nil }
    return String(cString: buffer).trimmingCharacters(in: .newlines)
}

func call(_ id: Int, _ method: String, _ params: [String: Any]) throws -> [String: Any] {
    let request: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method, "params": params]
    send(String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self))
    while let line = readLine() {
        let message = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        if message?["id"] as? Int == id, let result = message?["result"] as? [String: Any] { return result }
    }
    fail("the agent exited before answering \(method)")
}

let initialize = try call(1, "initialize", ["protocolVersion": 2, "info": ["name": "consumer", "version": "1"]])
guard let sessionId = try call(2, "session/new", ["cwd": "/tmp"])["sessionId"] as? String else { fail("no sessionId") }
let initializeJson = String(decoding: try JSONSerialization.data(withJSONObject: initialize), as: UTF8.self)
let session = try ClientSession.fromInitializeResult(sessionId: sessionId, initializeResultJson: initializeJson)

send(try session.prompt(content: [.text(expected[0])]))
var sentMore = false
var snap = try session.snapshot()
var users: [String] = []
while let line = readLine() {
    try session.receive(line: line) // throws AcpError.Protocol on an error answer
    snap = try session.snapshot()
    if !sentMore && snap.state == .running {
        send(try session.inject(mode: .steer, content: [.text(expected[1])]))
        send(try session.inject(mode: .queue, content: [.text(expected[2])]))
        sentMore = true
    }
    users = snap.transcript.filter { $0.role == .user }.map { entry in
        if case let .text(text) = entry.content.first { return text } else { return "" }
    }
    // Done once the turn the queued message opened has answered and ended.
    let answered = snap.transcript.last?.role == .agent
    if sentMore && snap.state == .idle && snap.pending.isEmpty && users.count == expected.count && answered { break }
}

try toAgent.fileHandleForWriting.close()
agent.waitUntilExit()
var problems: [String] = []
if users != expected { problems.append("user messages \(users), expected \(expected)") }
if !snap.violations.isEmpty { problems.append("violations \(snap.violations)") }
if agent.terminationStatus != 0 { problems.append("the agent exited with \(agent.terminationStatus)") }
if !problems.isEmpty { fail(problems.joined(separator: "; ")) }
print("session ok: \(snap.transcript.count) transcript entries, user messages in order, agent exit 0")
