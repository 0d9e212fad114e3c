import AcpInject
import Foundation
import XCTest

/// The workspace root: this file is bindings/swift/Tests/AcpInjectTests/Support.swift.
let workspace = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let projectVectors = workspace.appendingPathComponent("spec/vectors")

/// Both modes, replace, `finish`: what `defaultAgentConfig()` advertises.
let fullCaps = defaultAgentConfig().inject

/// The reference agent binary: `$ACP_INJECT_AGENT` (swiftw builds it on the host and passes it
/// into the chroot; `cargo xtask test` builds it once for every stage), else `cargo build` it
/// in this checkout (where cargo exists: not inside swiftw's chroot).
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
            throw NSError(domain: "AcpInjectTests", code: 1, userInfo: [NSLocalizedDescriptionKey: "`\(args.joined(separator: " "))` failed; set ACP_INJECT_AGENT"])
        }
        return data
    }
    _ = try run(["cargo", "build", "--quiet", "-p", "acp-inject-reference-agent"])
    let meta = try JSONSerialization.jsonObject(with: run(["cargo", "metadata", "--format-version", "1", "--no-deps"])) as? [String: Any]
    guard let target = meta?["target_directory"] as? String else { throw NSError(domain: "AcpInjectTests", code: 2) }
    return target + "/debug/acp-inject-agent"
}

/// An executable target of this package (`ExampleAgent`, `OursAgent`, …), which `swift test`
/// builds beside the test bundle: next to the test runner, else in `.build/debug`.
func builtExecutable(_ name: String) throws -> String {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path,
        workspace.appendingPathComponent("bindings/swift/.build/debug/\(name)").path,
    ]
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw Timeout(description: "no \(name) executable in \(candidates) (swift test builds it)")
    }
    return found
}

/// Connects to the reference agent (`--delay-ms`, then `extra` arguments).
func connectReferenceAgent(delayMs: Int = 30, _ extra: [String] = [], onPermission: PermissionHandler? = nil) async throws -> Client {
    try await connect(
        [agentBinary(), "--delay-ms", String(delayMs)] + extra, name: "acp-inject-swift-tests", forwardStderr: false, onPermission: onPermission
    )
}

struct Timeout: Error, CustomStringConvertible {
    let description: String
}

/// Follows a session's events until `done` holds for its snapshot; returns every activity seen.
/// Throws `Timeout` (with the snapshot) after `seconds`.
@discardableResult
func until(_ session: Session, seconds: Double = 30, _ done: @escaping @Sendable (MirrorSnapshot) -> Bool) async throws -> [SessionActivity] {
    try await withThrowingTaskGroup(of: [SessionActivity]?.self) { group in
        group.addTask {
            var seen: [SessionActivity] = []
            while try !done(session.snapshot()) {
                seen += try await session.nextEvents()
            }
            return seen
        }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        defer { group.cancelAll() }
        guard let seen = try await group.next() ?? nil else {
            throw Timeout(description: "timed out after \(seconds) s; \(session): \(String(describing: try? session.snapshot()))")
        }
        return seen
    }
}

/// The texts of the user messages of a snapshot's transcript.
func users(_ snapshot: MirrorSnapshot) -> [String] {
    snapshot.transcript.filter { $0.role == .user }.map(\.content.text)
}

/// Asserts that `body` throws an `AcpError` matching `matches`.
func assertAcpError<T>(
    _ body: @autoclosure () throws -> T, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ matches: (AcpError) -> Bool
) {
    do {
        let value = try body()
        XCTFail("no error, got \(value) \(message)", file: file, line: line)
    } catch let error as AcpError {
        XCTAssertTrue(matches(error), "unexpected \(error) \(message)", file: file, line: line)
    } catch {
        XCTFail("not an AcpError: \(error) \(message)", file: file, line: line)
    }
}

/// ``assertAcpError(_:_:file:line:_:)`` with the matcher as the second argument.
func assertAcpError<T>(
    _ body: @autoclosure () throws -> T, _ matches: (AcpError) -> Bool, file: StaticString = #filePath, line: UInt = #line
) {
    assertAcpError(try body(), "", file: file, line: line, matches)
}

/// The async form of ``assertAcpError(_:_:file:line:_:)``.
func assertAcpErrorAsync<T>(
    _ body: () async throws -> T, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ matches: (AcpError) -> Bool
) async {
    do {
        let value = try await body()
        XCTFail("no error, got \(value) \(message)", file: file, line: line)
    } catch let error as AcpError {
        XCTAssertTrue(matches(error), "unexpected \(error) \(message)", file: file, line: line)
    } catch {
        XCTFail("not an AcpError: \(error) \(message)", file: file, line: line)
    }
}

/// `connection`'s `initialize`, its answer checked and dropped: an agent serves nothing else
/// before it (R-INIT-2).
func handshake(_ core: AgentCore, _ connection: String) throws {
    let line = #"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"tests","version":"0"}}}"#
    let answers = try core.handleLine(connection: connection, line: line).compactMap { output -> String? in
        if case let .line(l) = output { return l.line }
        return nil
    }
    XCTAssertEqual(answers.count, 1)
    XCTAssertTrue(answers.first?.contains(#""result""#) ?? false, "\(answers)")
}

/// A `ClientCore` and an `AgentCore` wired together in memory: every line the client queues is
/// handled by the agent as connection `c1`, and every line the agent sends to `c1` is fed back.
final class Loopback {
    let client = ClientCore(maxLineBytes: 1 << 20)
    let agent: AgentCore
    /// Every client event, in order.
    private(set) var events: [Event] = []
    /// Every runtime action, in order.
    private(set) var actions: [(session: String, action: RuntimeAction)] = []

    init(config: AgentConfig = defaultAgentConfig()) throws {
        agent = try AgentCore(config: config)
        try agent.attach(connection: "c1", role: .controller)
    }

    /// Moves lines both ways until neither side has anything to send.
    func pump() throws {
        while true {
            events += try client.takeEvents()
            let outgoing = try client.takeOutgoing()
            if outgoing.isEmpty { return }
            for line in outgoing { try apply(agent.handleLine(connection: "c1", line: line)) }
        }
    }

    /// Applies agent outputs: lines for `c1` go to the client, actions are recorded.
    func apply(_ outputs: [Output]) throws {
        for output in outputs {
            switch output {
            case let .line(l) where l.to.contains("c1"): events += try client.receive(line: l.line)
            case .line: break
            case let .action(a): actions.append((a.session, a.action))
            case .call: break
            }
        }
    }

    /// Sends a runtime event of `session` and feeds what it caused.
    func runtime(_ session: String, _ event: RuntimeEvent) throws {
        try apply(agent.runtimeEvent(sessionId: session, event: event))
        try pump()
    }

    /// The answer to `request`, if it came.
    func answer(_ request: RequestId) -> Answered? {
        for case let .answered(a) in events where a.request == request { return a }
        return nil
    }
}

/// Whether `error` is a refusal for `reason` (`AcpError.rejected`).
func rejected(_ reason: CallRejected) -> (AcpError) -> Bool {
    { if case let .rejected(r, _) = $0 { return r == reason } else { return false } }
}

/// Runs `body`, throwing `Timeout` if it takes more than `seconds`.
func withDeadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        defer { group.cancelAll() }
        guard let value = try await group.next() ?? nil else { throw Timeout(description: "timed out after \(seconds) s") }
        return value
    }
}
