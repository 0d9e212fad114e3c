// Replays conformance vectors through the Swift package.
//
// This is a driver, not an engine: it performs each step on `AgentCore` or `ClientCore` (the
// package's public sans-IO cores) exactly as a Swift host would, and hands what came out to the
// shared Rust engine (`VectorRun`), which owns the vector format and the comparison. The engine
// hands over values in the boundary encoding: the driver decodes them with the package's
// generated decoders, and hands back what the public API returned encoded again with its
// generated encoders, so every value goes through both directions of the Swift codec. A passing
// vector proves the behaviour survives the FFI boundary and the codec.
//
// Test code, never in the distributed package: the engine is the test-only UniFFI component of
// crates/ffi-conformance, whose binding (generated/conformance/swift) this development package
// compiles into its AcpInjectFFI module beside the shipped one, linked to that crate's library.
// Only the engine's declarations are imported from there (the rest of that module is the
// binding the package wraps); `@testable` reaches the binding's own `receive(line:)` under
// `ClientCore`, for the twin connection below.
@testable import AcpInject
import class AcpInjectFFI.VectorRun
import enum AcpInjectFFI.ClientCall
import enum AcpInjectFFI.FfiError
import enum AcpInjectFFI.Instruction
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
            run = try engine { try VectorRun(vectorJson: text) }
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

    /// Runs a call of the engine, its error (the binding's) rethrown as the `AcpError` it carries.
    public static func engine<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let FfiError.Failed(message, error) {
            throw (try? Boundary.decode(AcpError.self, from: error)) ?? AcpError.internal(detail: message)
        }
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
        guard let setup = run.agentSetup() else { throw AcpError.mismatch(detail: "an agent-side vector without its setup") }
        let core = try AgentCore(config: Boundary.decode(AgentConfig.self, from: setup.config))
        _ = try core.createSession(sessionId: setup.session, cwd: setup.cwd)
        for c in setup.connections {
            try core.attach(connection: c.id, role: Boundary.decode(ConnectionRole.self, from: c.role), principal: c.principal)
            if c.joined { _ = try core.attachToSession(connection: c.id, sessionId: setup.session) }
        }
        var outputs: [Output] = []
        while let step = try engine({ try run.next() }) {
            switch step {
            case let .clientLine(connection, line):
                outputs += try core.handleLine(connection: connection, line: line)
            case let .runtime(session, event):
                let event = try Boundary.decode(RuntimeEvent.self, from: event)
                var refused: HostError?
                do {
                    outputs += try core.runtimeEvent(sessionId: session, event: event)
                } catch let AcpError.host(error, _) {
                    refused = error
                }
                try engine { try run.recordRuntimeResult(hostError: Boundary.encode(refused)) }
            case .expect:
                try engine { try run.checkOutputs(outputs: Boundary.encode(outputs), attached: attached(core)) }
                outputs = []
            case let .expectHistory(session):
                try engine { try run.checkHistory(history: Boundary.encode(core.history(sessionId: session))) }
            case let .answerCall(id, result, error):
                var refused: HostError?
                do {
                    if !error.isEmpty {
                        outputs += try core.refuseCall(id: Int(id), error: Boundary.decode(TurnFailure.self, from: error))
                    } else {
                        outputs += try core.answerCall(id: Int(id), result: Boundary.decode(JSONValue.self, from: result))
                    }
                } catch let AcpError.host(error, _) {
                    refused = error
                }
                try engine { try run.recordRuntimeResult(hostError: Boundary.encode(refused)) }
            default:
                throw AcpError.mismatch(detail: "an agent-side vector has a client-side step: \(step)")
            }
        }
        try engine { try run.checkOutputs(outputs: Boundary.encode(outputs), attached: attached(core)) }
    }

    private static func content(_ data: Data) throws -> [ContentBlock] {
        try Boundary.decode([ContentBlock].self, from: data)
    }

    private static func call(_ client: ClientCore, _ call: ClientCall) throws {
        switch call {
        case let .prompt(session, c): _ = try client.prompt(sessionId: session, content: content(c))
        case let .inject(session, mode, c):
            _ = try client.inject(sessionId: session, mode: Boundary.decode(InjectMode.self, from: mode), content: content(c))
        case let .revoke(session, messageId): _ = try client.revoke(sessionId: session, messageId: messageId)
        case let .replace(session, messageId, c): _ = try client.replace(sessionId: session, messageId: messageId, content: content(c))
        case let .cancel(session): try client.cancel(sessionId: session)
        case let .status(session): _ = try client.status(sessionId: session)
        case let .close(session): _ = try client.close(sessionId: session)
        case let .resume(session, cwd, replay): _ = try client.resume(sessionId: session, cwd: cwd, replay: replay)
        }
    }

    private static func driveClient(_ run: VectorRun) throws {
        guard let setup = run.clientSetup() else { throw AcpError.mismatch(detail: "a client-side vector without its setup") }
        // Two connections fed the same lines, one through `receive(line:)` (the per-line C path
        // of lines.rs), one through the binding's generated `receive(line:)` (UniFFI's
        // convention): they must agree on every event, every line sent and every state.
        let client = ClientCore(maxLineBytes: 16 << 20)
        let twin = ClientCore(maxLineBytes: 16 << 20)
        for c in [client, twin] {
            try c.assumeInitialized(agent: Boundary.decode(InitializeResponse.self, from: setup.agent))
            try c.setSteerFallback(Boundary.decode(SteerFallback?.self, from: setup.steerFallback))
            try c.openSession(sessionId: setup.session)
        }
        func sent() throws -> [String] {
            let sent = try client.takeOutgoing(), twins = try twin.takeOutgoing()
            // Each client draws fresh random idempotency keys (C-IDEM-1): the twins agree on the rest.
            let masked = { (lines: [String]) in
                lines.map { $0.replacingOccurrences(of: #""idempotencyKey":"[^"]*""#, with: #""idempotencyKey":"…""#, options: .regularExpression) }
            }
            guard masked(sent) == masked(twins) else { throw AcpError.mismatch(detail: "the UniFFI twin sent \(twins), the per-line path \(sent)") }
            return sent
        }
        func same<T: Equatable>(_ what: String, _ body: (ClientCore) throws -> T) throws -> T {
            let value = try body(client), twins = try body(twin)
            guard value == twins else { throw AcpError.mismatch(detail: "\(what): the UniFFI twin has \(twins), the per-line path \(value)") }
            return value
        }
        while let step = try engine({ try run.next() }) {
            switch step {
            case let .call(c):
                let refused = try same("the call's refusal") { core -> CallRejected? in
                    do {
                        try call(core, c)
                        return nil
                    } catch let AcpError.rejected(reason, _) {
                        return reason
                    }
                }
                let lines = try sent()
                _ = try same("the call's events") { try $0.takeEvents() }
                try engine { try run.checkCall(rejected: Boundary.encode(refused), sent: lines) }
            case let .receive(line):
                let events = try client.receive(line: line)
                let twins = try Boundary.decode([Event].self, from: AcpInject.call { try twin.core.receive(line: line) })
                guard events == twins else { throw AcpError.mismatch(detail: "the UniFFI twin's events \(twins), the per-line path's \(events)") }
                try engine { try run.recordEvents(events: Boundary.encode(events)) }
            case let .expectState(session):
                let snapshot = try same("the snapshot") { try $0.snapshot(sessionId: session) }
                try engine { try run.checkState(snapshot: Boundary.encode(snapshot)) }
            case .expectSent:
                let lines = try sent()
                try engine { try run.checkSent(sent: lines) }
            case let .expectItem(session, messageId):
                let status = try same("the item's status") { try $0.itemStatus(sessionId: session, messageId: messageId) }
                try engine { try run.checkItem(status: Boundary.encode(status)) }
            default:
                throw AcpError.mismatch(detail: "a client-side vector has an agent-side step: \(step)")
            }
        }
    }
}
