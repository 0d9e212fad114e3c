import AcpInject
import Foundation
import XCTest

/// The agent's notification (Foundation has a `Notification` too).
private typealias Notification = AcpInject.Notification

/// An error that is not an `AcpError`.
private struct Broken: Error {}

/// What the login agent holds and saw.
private final class Logins: Sendable {
    /// The key a client's login stands for (the agent's "environment"): `api-key` logs in when
    /// it is `sk-test`.
    let key = Locked<String?>(nil)
    /// The method ids the hook was asked to check, in order.
    let tried = Locked<[String]>([])
}

/// An agent that requires a login: `api-key` checks its key, `sso` is refused with a code of
/// its own, `broken` fails with an error that is not an `AcpError`.
private struct LoginAgent: Agent {
    let logins: Logins

    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
        try turn.say("ok: \(messages.map(\.content.text).joined(separator: "; "))")
        return nil
    }

    func authenticate(methodId: String) async throws {
        logins.tried.withLock { $0.append(methodId) }
        switch methodId {
        case "api-key":
            guard logins.key.withLock({ $0 }) == "sk-test" else {
                throw AcpError.refused(code: -32000, message: "Authentication required", detail: "the API key does not match")
            }
        case "sso":
            throw AcpError.refused(code: -32050, message: "SSO is down", detail: "use the API key")
        default:
            throw Broken()
        }
    }
}

/// What the extension agent heard.
private final class Heard: Sendable {
    let notifications = Locked<[Notification]>([])
}

/// Serves `_acme/usage` (and `_acme/fail`, which fails), hears `_acme/ping`.
private struct UsageAgent: Agent {
    let heard: Heard

    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? { nil }

    func extensionRequest(method: String, params: JSONValue?) async throws -> JSONValue {
        if method == "_acme/fail" { throw Broken() }
        guard let period = params?["period"] else {
            throw AcpError.refused(code: -32602, message: "Invalid params", detail: "a period is needed")
        }
        return ["method": .string(method), "period": period, "tokens": [1, 2.5, nil], "ok": true]
    }

    func extensionNotification(method: String, params: JSONValue?) async throws {
        heard.notifications.withLock { $0.append(Notification(method: method, params: params)) }
    }
}

/// An agent overriding none of the hooks: their defaults answer.
private struct PlainAgent: Agent {
    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? { nil }
}

/// The agent's error a call threw: `AcpError.protocol`'s or `.authRequired`'s (`nil` for any
/// other error, or none).
private func agentError(_ body: () async throws -> Void) async -> (kind: String, error: ProtocolError)? {
    do {
        try await body()
    } catch let AcpError.protocol(error) {
        return ("protocol", error)
    } catch let AcpError.authRequired(error) {
        return ("authRequired", error)
    } catch {
        XCTFail("not the agent's error: \(error)")
    }
    return nil
}

private let apiKey = AuthMethod.agent(AuthMethodAgent(methodId: "api-key", name: "API key", description: "the key the agent holds"))

/// Authentication (R-AUTH-*) and extension methods (R-EXT-2) served by an agent written with the
/// Swift runtime (`listen` on 127.0.0.1:0), driven by the Swift client over WebSocket; and the
/// client's side of both against a scripted agent.
final class AuthTests: XCTestCase {
    func testAnAgentRequiringALoginServesAClientOnlyWhileItIsLoggedIn() async throws {
        let logins = Logins()
        let methods: [AuthMethod] = [
            apiKey,
            .agent(AuthMethodAgent(methodId: "sso", name: "Single sign-on")),
            .agent(AuthMethodAgent(methodId: "broken", name: "Broken")),
            .terminal(AuthMethodTerminal(methodId: "tui", name: "Log in in a terminal", args: ["--login"])),
        ]
        let config = agentConfig(name: "login", authMethods: methods, authRequired: true)
        XCTAssertEqual(config.auth, AuthSupport(methods: methods, required: true))
        let listening = try await listen(agent: LoginAgent(logins: logins), address: "127.0.0.1:0", config: config)
        let client = try await connect(url: listening.webSocketURL, name: "swift-auth-test")

        XCTAssertEqual(client.authMethods, methods)
        let cwd = NSTemporaryDirectory()
        // Not logged in: refused with -32000.
        var refused = await agentError { _ = try await client.newSession(cwd: cwd) }
        XCTAssertEqual(refused?.kind, "authRequired")
        XCTAssertEqual(refused?.error.code, -32000)
        XCTAssertEqual(refused?.error.message, "Authentication required")

        // A wrong key: the hook refuses with its own detail.
        logins.key.withLock { $0 = "sk-wrong" }
        refused = await agentError { try await client.authenticate(methodId: "api-key") }
        XCTAssertEqual(refused?.kind, "authRequired")
        XCTAssertEqual(refused?.error.code, -32000)
        XCTAssertEqual(refused?.error.detail, "the API key does not match")
        // Another code and message, as the hook gave them.
        refused = await agentError { try await client.authenticate(methodId: "sso") }
        XCTAssertEqual(refused?.kind, "protocol")
        XCTAssertEqual(refused?.error.code, -32050)
        XCTAssertEqual(refused?.error.message, "SSO is down")
        XCTAssertEqual(refused?.error.detail, "use the API key")
        // Any other error of the hook's: an internal error.
        refused = await agentError { try await client.authenticate(methodId: "broken") }
        XCTAssertEqual(refused?.error.code, -32603)
        // A method the agent does not advertise, and a terminal one: refused here, never sent.
        await assertAcpErrorAsync({ try await client.authenticate(methodId: "password") }) { if case .rejected = $0 { true } else { false } }
        await assertAcpErrorAsync({ try await client.authenticate(methodId: "tui") }) { if case .rejected = $0 { true } else { false } }
        XCTAssertEqual(logins.tried.withLock { $0 }, ["api-key", "sso", "broken"])
        refused = await agentError { _ = try await client.newSession(cwd: cwd) }
        XCTAssertEqual(refused?.kind, "authRequired", "still not logged in")

        // The right key: logged in, served.
        logins.key.withLock { $0 = "sk-test" }
        try await client.authenticate(methodId: "api-key")
        XCTAssertEqual(logins.tried.withLock { $0 }, ["api-key", "sso", "broken", "api-key"])
        let session = try await client.newSession(cwd: cwd)
        try await session.prompt("hello")
        try await until(session) { $0.state == .idle && $0.stopReason != nil }
        let snap = try session.snapshot()
        XCTAssertEqual(snap.transcript.filter { $0.role == .agent }.map(\.content.text), ["ok: hello"])
        XCTAssertEqual(snap.violations, [])

        // Logged out: refused again, an open session included.
        try await client.logout()
        refused = await agentError { _ = try await client.newSession(cwd: cwd) }
        XCTAssertEqual(refused?.kind, "authRequired")
        XCTAssertEqual(refused?.error.code, -32000)
        refused = await agentError { _ = try await session.status() }
        XCTAssertEqual(refused?.kind, "authRequired")

        // Logging in is per connection: another client starts logged out.
        let other = try await connect(url: listening.url, name: "swift-auth-test-2")
        refused = await agentError { _ = try await other.newSession(cwd: cwd) }
        XCTAssertEqual(refused?.kind, "authRequired")
        try await other.close()
        try await client.close()
        await listening.stop()
    }

    func testAnAgentServesItsExtensionMethods() async throws {
        let heard = Heard()
        let config = agentConfig(name: "usage", extensions: ["_acme/usage", "_acme/fail", "_acme/ping"])
        XCTAssertEqual(config.extensions, ["_acme/usage", "_acme/fail", "_acme/ping"])
        let listening = try await listen(agent: UsageAgent(heard: heard), address: "127.0.0.1:0", config: config)
        let client = try await connect(url: listening.webSocketURL, name: "swift-ext-test")
        XCTAssertEqual(client.authMethods, [])

        let answer = try await client.extRequest("_acme/usage", params: ["period": "day"])
        XCTAssertEqual(answer, ["method": "_acme/usage", "period": "day", "tokens": [1, 2.5, nil], "ok": true])
        let listed = try await client.extRequest("_acme/usage", params: ["period": ["week", 2]])
        XCTAssertEqual(listed["period"], ["week", 2])
        // The hook's refusal, as it gave it.
        var refused = await agentError { _ = try await client.extRequest("_acme/usage", params: [:]) }
        XCTAssertEqual(refused?.kind, "protocol")
        XCTAssertEqual(refused?.error.code, -32602)
        XCTAssertEqual(refused?.error.message, "Invalid params")
        XCTAssertEqual(refused?.error.detail, "a period is needed")
        refused = await agentError { _ = try await client.extRequest("_acme/usage") }
        XCTAssertEqual(refused?.error.code, -32602, "no params: nil")
        // Any other error of the hook's: an internal error.
        refused = await agentError { _ = try await client.extRequest("_acme/fail", params: []) }
        XCTAssertEqual(refused?.error.code, -32603)
        // A method the agent does not serve: method not found, from the library.
        for method in ["_x", "_acme/other"] {
            refused = await agentError { _ = try await client.extRequest(method, params: ["a": 1]) }
            XCTAssertEqual(refused?.kind, "protocol", method)
            XCTAssertEqual(refused?.error.code, -32601, method)
        }
        // Not an extension method: refused here.
        await assertAcpErrorAsync({ try await client.extRequest("session/new", params: [:]) }) {
            if case .rejected = $0 { true } else { false }
        }

        // Notifications: the one it serves reaches the hook, one it does not is dropped.
        try client.extNotify("_x/ignored", params: ["n": 0])
        try client.extNotify("_acme/ping", params: ["at": 1])
        try client.extNotify("_acme/ping")
        try await withDeadline(10) {
            while heard.notifications.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
        }
        // Each on a task of its own: in any order.
        XCTAssertEqual(
            Set(heard.notifications.withLock { $0 }), [Notification(method: "_acme/ping", params: ["at": 1]), Notification(method: "_acme/ping")]
        )
        // The connection goes on.
        let session = try await client.newSession(cwd: NSTemporaryDirectory())
        XCTAssertFalse(session.id.isEmpty)
        try await client.close()
        await listening.stop()
    }

    /// The hooks' defaults: a login is refused (-32000), a request of a declared extension is
    /// -32601, a notification is ignored.
    func testTheHooksDefaultsRefuse() async throws {
        let config = agentConfig(name: "plain", authMethods: [apiKey], extensions: ["_acme/usage", "_acme/ping"])
        let listening = try await listen(agent: PlainAgent(), address: "127.0.0.1:0", config: config)
        let client = try await connect(url: listening.webSocketURL, name: "swift-defaults-test")
        var refused = await agentError { try await client.authenticate(methodId: "api-key") }
        XCTAssertEqual(refused?.error.code, -32000)
        XCTAssertEqual(refused?.error.message, "Authentication required")
        XCTAssertEqual(refused?.error.detail, #"this agent cannot check the method "api-key""#)
        refused = await agentError { _ = try await client.extRequest("_acme/usage", params: ["period": "day"]) }
        XCTAssertEqual(refused?.kind, "protocol")
        XCTAssertEqual(refused?.error.code, -32601)
        XCTAssertEqual(refused?.error.message, "Method not found")
        try client.extNotify("_acme/ping", params: ["at": 1])
        // Not required: served without a login.
        let session = try await client.newSession(cwd: NSTemporaryDirectory())
        XCTAssertFalse(session.id.isEmpty)
        try await client.close()
        await listening.stop()
    }

    /// Below the runtime: `AgentCore` hands a login and an extension request to the host as
    /// `.call` outputs, and `answerCall`/`refuseCall` answer them.
    func testTheAgentCoreHandsLoginsAndExtensionsToTheHost() throws {
        let config = agentConfig(name: "core", authMethods: [apiKey], authRequired: true, extensions: ["_acme/usage"])
        let core = try AgentCore(config: config)
        try core.attach(connection: "c1", role: .controller)
        try handshake(core, "c1")
        /// The one host call among `outputs`.
        func call(_ outputs: [Output]) throws -> HostCallMade {
            let calls = outputs.compactMap { if case let .call(c) = $0 { c } else { nil } }
            XCTAssertEqual(calls.count, 1, "\(outputs)")
            return try XCTUnwrap(calls.first)
        }
        /// The one line to c1 among `outputs`, as JSON.
        func answer(_ outputs: [Output]) throws -> JSONValue {
            let lines = outputs.compactMap { if case let .line(l) = $0, l.to == ["c1"] { l.line } else { nil } }
            XCTAssertEqual(lines.count, 1, "\(outputs)")
            return try JSONDecoder().decode(JSONValue.self, from: Data(XCTUnwrap(lines.first).utf8))
        }
        let login = #"{"jsonrpc":"2.0","id":1,"method":"auth/login","params":{"methodId":"api-key"}}"#
        let refused = try call(core.handleLine(connection: "c1", line: login))
        XCTAssertEqual(refused.call, .authenticate(Authenticate(methodId: "api-key")))
        XCTAssertEqual(refused.connection, "c1")
        let failure = TurnFailure(code: -32000, message: "Authentication required", data: ["detail": "no"])
        let refusal = try answer(core.refuseCall(id: refused.id, error: failure))
        XCTAssertEqual(refusal["id"], 1)
        XCTAssertEqual(refusal["error"]?["code"], -32000)
        XCTAssertEqual(refusal["error"]?["data"], ["detail": "no"])
        // Answered: no longer open.
        assertAcpError(try core.answerCall(id: refused.id)) { if case .host(.unknownRequest, _) = $0 { true } else { false } }
        assertAcpError(try core.answerCall(id: -1)) { if case .invalidInput = $0 { true } else { false } }

        let accepted = try call(core.handleLine(connection: "c1", line: login.replacingOccurrences(of: #""id":1"#, with: #""id":2"#)))
        XCTAssertEqual(try answer(core.answerCall(id: accepted.id))["result"], [:])
        let usage = #"{"jsonrpc":"2.0","id":3,"method":"_acme/usage","params":{"period":"day"}}"#
        let request = try call(core.handleLine(connection: "c1", line: usage))
        XCTAssertEqual(request.call, .extension(ExtensionRequest(method: "_acme/usage", params: ["period": "day"])))
        let result = try answer(core.answerCall(id: request.id, result: ["tokens": [1, 2.5]]))
        XCTAssertEqual(result["id"], 3)
        XCTAssertEqual(result["result"], ["tokens": [1, 2.5]])
    }

    /// The client's side against a scripted agent: the advertised methods, `auth/login`, an
    /// extension request's result, and the agent's own notifications (`_auth/status_update`
    /// after a login, `_echo/pong` for each `_echo/ping`) from `notifications`.
    func testTheClientLogsInAndReadsTheAgentsNotifications() async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("auth-agent-\(UUID().uuidString).py")
        try scriptedAuthAgent.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let client = try await connect(["python3", script.path], name: "swift-notifications-test", forwardStderr: false)
        guard case let .agent(method)? = client.authMethods.first else { return XCTFail("\(client.authMethods)") }
        XCTAssertEqual(method.methodId, "api-key")

        // A task waiting for a notification is cancelled at once, and loses nothing.
        let waiting = Task { try await client.nextNotification() }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        do {
            let notification = try await waiting.value
            XCTFail("the cancelled wait returned \(notification)")
        } catch is CancellationError {}

        try await client.authenticate(methodId: "api-key")
        let echoed = try await client.extRequest("_echo/request", params: ["a": [1, "b"]])
        XCTAssertEqual(echoed, ["echo": ["a": [1, "b"]]])
        try client.extNotify("_echo/ping", params: ["n": 1])
        try client.extNotify("_echo/ping", params: ["n": 2])
        let seen = try await withDeadline(10) { () -> [Notification] in
            var seen: [Notification] = []
            for try await notification in client.notifications {
                seen.append(notification)
                if seen.count == 3 { break }
            }
            return seen
        }
        XCTAssertEqual(
            seen,
            [
                Notification(method: "_auth/status_update", params: ["loggedIn": true]),
                Notification(method: "_echo/pong", params: ["n": 1]),
                Notification(method: "_echo/pong", params: ["n": 2]),
            ]
        )
        try await client.close()
        // The connection ended: the sequence ends.
        let after = try await withDeadline(10) { () -> Int in
            var n = 0
            for try await _ in client.notifications { n += 1 }
            return n
        }
        XCTAssertEqual(after, 0)
    }
}

/// A scripted agent (Python, standard library only) advertising one auth method: answers
/// `auth/login` (and v1's `authenticate`) `{}` then sends `_auth/status_update`, answers
/// `_echo/request` with its params, and sends `_echo/pong` for each `_echo/ping`.
private let scriptedAuthAgent = #"""
import json, sys

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    m = json.loads(line)
    method, rid, params = m.get("method"), m.get("id"), m.get("params")
    if method == "initialize":
        methods = [{"type": "agent", "methodId": "api-key", "name": "API key"}]
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "auth-script", "version": "1"}, "authMethods": methods}})
    elif method in ("auth/login", "authenticate"):
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
        send({"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"loggedIn": True}})
    elif method == "_echo/request":
        send({"jsonrpc": "2.0", "id": rid, "result": {"echo": params}})
    elif method == "_echo/ping":
        send({"jsonrpc": "2.0", "method": "_echo/pong", "params": params})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
"""#
