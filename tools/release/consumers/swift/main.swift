// A small real session against the reference agent, through the distributed Swift package
// only (dist/swift/AcpInject, a `.package(path:)` dependency).
//
//   swift run Consumer PATH/TO/acp-inject-agent
//
// Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
// queued message opened has ended (the mirror idle, nothing pending). Exits 1 (with the
// reason) when anything is off.
import AcpInject
import Foundation

let expected = ["Fix the failing login test", "Use the auth_v2 module", "Then update the changelog"]

func fail(_ why: String) -> Never {
    FileHandle.standardError.write(Data("session failed: \(why)\n".utf8))
    exit(1)
}

func users(_ snap: MirrorSnapshot) -> [String] {
    snap.transcript.filter { $0.role == .user }.map(\.content.text)
}

func until(_ session: Session, _ done: (MirrorSnapshot) -> Bool) async throws -> MirrorSnapshot {
    while try !done(session.snapshot()) {
        _ = try await session.nextEvents()
    }
    return try session.snapshot()
}

// A watchdog: the session must be over within 60 s.
Task.detached {
    try await Task.sleep(nanoseconds: 60_000_000_000)
    fail("timed out")
}

do {
    let agent = try await connect([CommandLine.arguments[1], "--delay-ms", "20", "--tools", "2"], name: "consumer")
    let session = try await agent.newSession(cwd: "/tmp")
    try await session.prompt(expected[0])
    _ = try await until(session) { $0.state == .running }
    try await session.inject(expected[1], mode: .steer)
    try await session.inject(expected[2], mode: .queue)
    let snap = try await until(session) { $0.state == .idle && $0.pending.isEmpty && users($0).count == expected.count }
    try await session.close()
    try await agent.close()
    var problems: [String] = []
    if users(snap) != expected { problems.append("user messages \(users(snap)), expected \(expected)") }
    if !snap.violations.isEmpty { problems.append("violations \(snap.violations)") }
    if !problems.isEmpty { fail(problems.joined(separator: "; ")) }
    print("session ok: \(snap.transcript.count) transcript entries, user messages in order")
} catch {
    fail("\(error)")
}
