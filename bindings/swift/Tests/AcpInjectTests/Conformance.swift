// Replays conformance vectors through the Swift binding.
//
// This is a driver, not an engine: it performs each step on `AgentCore` or `ClientCore` exactly
// as a Swift host would, and hands what came out to the shared Rust engine (`VectorRun`), which
// owns the vector format and the comparison. A passing vector proves the behaviour survives the
// FFI boundary.
//
// Test code, never in the distributed package: the engine is the test-only UniFFI component of
// crates/ffi-conformance, whose binding (generated/conformance/swift) this development package
// compiles into its AcpInjectFFI module beside the shipped one, linked to that crate's library.
import AcpInject
import Foundation

/// The conformance vectors, replayed through this binding.
public enum Conformance {
    /// One vector's outcome.
    public struct Outcome: Sendable {
        /// The vector's name (`(unreadable)` when it could not be parsed).
        public let name: String
        /// The file it came from.
        public let file: String
        /// The first mismatch, `nil` when the vector passed.
        public let mismatch: String?
    }

    /// Replays one vector (its JSON text); returns its name and the first mismatch (`nil` when it
    /// passed). Never throws: an unreadable vector is a mismatch.
    public static func run(vector text: String) -> (name: String, mismatch: String?) {
        let run: VectorRun
        do {
            run = try VectorRun(vectorJson: text)
        } catch {
            return ("(unreadable)", "\(error)")
        }
        do {
            switch run.side() {
            case .agent: try driveAgent(run)
            case .client: try driveClient(run)
            }
        } catch {
            return (run.name(), "\(error)")
        }
        return (run.name(), nil)
    }

    /// Every `*.json` file below `paths` (a file is taken as it is), sorted.
    public static func vectorFiles(_ paths: [URL]) -> [URL] {
        var files: [URL] = []
        for path in paths {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path.path, isDirectory: &isDir) else { continue }
            guard isDir.boolValue else {
                files.append(path)
                continue
            }
            let walk = FileManager.default.enumerator(at: path, includingPropertiesForKeys: nil)
            while let url = walk?.nextObject() as? URL {
                if url.pathExtension == "json" { files.append(url) }
            }
        }
        return files.sorted { $0.path < $1.path }
    }

    /// Replays every vector below `paths`.
    public static func run(paths: [URL]) -> [Outcome] {
        vectorFiles(paths).map { file in
            guard let text = try? String(contentsOf: file, encoding: .utf8) else {
                return Outcome(name: "(unreadable)", file: file.path, mismatch: "cannot read \(file.path)")
            }
            let (name, mismatch) = run(vector: text)
            return Outcome(name: name, file: file.path, mismatch: mismatch)
        }
    }

    /// Each failure with its first mismatch, then `N passed, N failed`.
    public static func report(_ outcomes: [Outcome]) -> String {
        let failed = outcomes.filter { $0.mismatch != nil }
        var text = ""
        for f in failed { text += "FAILED \(f.name) (\(f.file))\n  \(f.mismatch ?? "")\n" }
        return text + "\(outcomes.count - failed.count) passed, \(failed.count) failed\n"
    }

    private static func attached(_ core: AgentCore) throws -> [String: [String]] {
        var attached: [String: [String]] = [:]
        for session in try core.sessionIds() { attached[session] = try core.attached(sessionId: session) }
        return attached
    }

    private static func driveAgent(_ run: VectorRun) throws {
        guard let setup = run.agentSetup() else { throw AcpError.Mismatch(detail: "an agent-side vector without its setup") }
        let core = try AgentCore(config: setup.config)
        _ = try core.createSession(sessionId: setup.session, cwd: setup.cwd)
        for c in setup.connections {
            try core.attach(connection: c.id, role: c.role)
            _ = try core.attachToSession(connection: c.id, sessionId: setup.session)
        }
        var outputs: [Output] = []
        while let step = try run.next() {
            switch step {
            case let .clientLine(connection, line):
                outputs += try core.handleLine(connection: connection, line: line)
            case let .runtime(session, event):
                do {
                    outputs += try core.runtimeEvent(sessionId: session, event: event)
                    try run.recordRuntimeResult(hostError: nil)
                } catch let AcpError.Host(error) {
                    try run.recordRuntimeResult(hostError: error)
                }
            case .expect:
                try run.checkOutputs(outputs: outputs, attached: attached(core))
                outputs = []
            case let .expectHistory(session):
                try run.checkHistory(history: core.history(sessionId: session))
            default:
                throw AcpError.Mismatch(detail: "an agent-side vector has a client-side step: \(step)")
            }
        }
        try run.checkOutputs(outputs: outputs, attached: attached(core))
    }

    private static func call(_ client: ClientCore, _ call: ClientCall) throws {
        switch call {
        case let .prompt(session, content): _ = try client.prompt(sessionId: session, content: content)
        case let .inject(session, mode, content): _ = try client.inject(sessionId: session, mode: mode, content: content)
        case let .revoke(session, messageId): _ = try client.revoke(sessionId: session, messageId: messageId)
        case let .replace(session, messageId, content): _ = try client.replace(sessionId: session, messageId: messageId, content: content)
        case let .cancel(session): try client.cancel(sessionId: session)
        case let .status(session): _ = try client.status(sessionId: session)
        case let .close(session): _ = try client.close(sessionId: session)
        case let .resume(session, cwd, replay): _ = try client.resume(sessionId: session, cwd: cwd, replay: replay)
        }
    }

    private static func driveClient(_ run: VectorRun) throws {
        guard let setup = run.clientSetup() else { throw AcpError.Mismatch(detail: "a client-side vector without its setup") }
        let client = ClientCore(maxLineBytes: 16 << 20)
        try client.assumeAgent(protocolVersion: setup.protocolVersion, inject: setup.capabilities)
        try client.setSteerFallback(fallback: setup.steerFallback)
        try client.openSession(sessionId: setup.session, mirrorJson: nil)
        while let step = try run.next() {
            switch step {
            case let .call(c):
                var rejected: CallRejected?
                do {
                    try call(client, c)
                } catch let AcpError.Rejected(reason) {
                    rejected = reason
                }
                let sent = try client.takeOutgoing()
                _ = try client.takeEvents()
                try run.checkCall(rejected: rejected, sent: sent)
            case let .receive(line):
                try run.recordEvents(events: client.receive(line: line))
            case let .expectState(session):
                try run.checkState(snapshot: client.snapshot(sessionId: session))
            case .expectSent:
                try run.checkSent(sent: client.takeOutgoing())
            case let .expectItem(session, messageId):
                try run.checkItem(status: client.itemStatus(sessionId: session, messageId: messageId))
            default:
                throw AcpError.Mismatch(detail: "a client-side vector has an agent-side step: \(step)")
            }
        }
    }
}
