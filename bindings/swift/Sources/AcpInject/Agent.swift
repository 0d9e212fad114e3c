// Agents written in Swift: conform to `Agent`, implement `run(turn:messages:)`, then
// `serveStdio(agent:)` or `listen(agent:address:)`. The library serves the protocol
// (`initialize`, sessions: new, list, resume with replay, close, status; prompts, queue and
// steer injects, revoke, replace, cancel) and calls `run` once per turn with the messages that
// open it; `AgentTurn` streams the agent's output, asks permission and reports break-points,
// where steers the user sent mid-turn are delivered and handed back. A login (`auth/login`) and
// the extension methods the configuration declares go to the agent's `authenticate`,
// `extensionRequest` and `extensionNotification` hooks.
//
// This is the Swift counterpart of Python's `acp_inject.agent` and Kotlin's `Agent.kt`, over
// the same generated objects (the binding's `AgentServer`, its callback interface
// `AgentRuntime` and `TurnContext`, none of which users see). No protocol logic lives here.
import AcpInjectFFI
import Foundation

/// An agent: what the library calls for each turn, and (optionally) when sessions open,
/// resume and close, when a client logs in, and for the extension methods it serves.
///
/// Only ``run(turn:messages:)`` is required; the session hooks default to doing nothing,
/// ``authenticate(methodId:)`` and ``extensionRequest(method:params:)`` to refusing (they
/// matter to an agent whose configuration advertises auth methods or extensions). The library
/// calls these methods from its own threads, several sessions at once, hence `Sendable`: keep
/// per-session state behind an actor or a lock.
///
/// ```swift
/// import AcpInject
///
/// struct Echo: Agent {
///     func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
///         try turn.say("You said: " + messages.map(\.content.text).joined(separator: "; "))
///         for steer in try turn.breakPoint() {          // steers sent meanwhile, delivered now
///             try turn.say(" (noted: \(steer.content.text))")
///         }
///         if try await turn.permission("Push the branch?") == "allow" { try turn.say(" Pushed.") }
///         return nil                                    // endTurn (cancelled if cancelled)
///     }
/// }
///
/// try await serveStdio(agent: Echo())                   // or: listen(agent:address:)
/// ```
///
/// stdout carries the protocol over stdio: log to stderr.
public protocol Agent: Sendable {
    /// Runs one turn.
    ///
    /// Throwing ends the turn with stop reason `error` (the error stays in this process's log,
    /// the client sees a generic internal error); an `AcpError.host(error: .sessionClosed, …)` or
    /// `AcpError.disconnected` thrown by an ``AgentTurn`` call (the session closed, or the
    /// client went away, under the turn) ends it `cancelled`.
    ///
    /// - Parameters:
    ///   - turn: what the turn can do: stream text, report tool calls, ask permission, reach
    ///     break-points.
    ///   - messages: the user messages that open the turn (empty for a turn the agent started
    ///     itself with ``AgentServer/startTurn(sessionId:)``).
    /// - Returns: `nil` to end the turn normally (`endTurn`, or `cancelled` when the user
    ///   cancelled it), or a `TurnEnd` with another stop reason or usage.
    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd?

    /// A client created a session. The default does nothing. It may run after the client got
    /// its answer to `session/new`.
    ///
    /// - Parameters:
    ///   - sessionId: the new session's id.
    ///   - setup: its working directory, additional directories and MCP servers.
    func opened(sessionId: String, setup: SessionSetup) async throws

    /// A client resumed a session (its history was already replayed). The default does
    /// nothing.
    ///
    /// - Parameters:
    ///   - sessionId: the resumed session's id.
    ///   - setup: its working directory, additional directories and MCP servers.
    func resumed(sessionId: String, setup: SessionSetup) async throws

    /// A session closed. The default does nothing.
    ///
    /// - Parameters:
    ///   - sessionId: the closed session's id.
    ///   - dropped: the injects that were pending and will never be delivered.
    func closed(sessionId: String, dropped: [PendingInject]) async throws

    /// A client logs in (`auth/login`, ACP v1's `authenticate`) with `methodId`, one of the
    /// `agent` methods the configuration advertises (the `authMethods` of
    /// ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)``): check
    /// the credentials it stands for.
    ///
    /// Return to log the connection in (with `authRequired`, its session methods are served
    /// from then on, until it logs out); throw ``AcpError/refused(code:message:detail:)`` to
    /// answer the client with that error instead. Any other error reaches the client as a
    /// generic internal error (-32603). The default refuses: -32000, "Authentication
    /// required".
    ///
    /// - Parameter methodId: the method's id.
    func authenticate(methodId: String) async throws

    /// A request of an extension this agent serves (one of the configuration's
    /// `extensions`, a method starting with `_`): its result, any JSON.
    ///
    /// Throw ``AcpError/refused(code:message:detail:)`` to answer with that error (-32602 for
    /// params it cannot use, say); any other error reaches the client as -32603. The default
    /// refuses: -32601, "Method not found".
    ///
    /// - Parameters:
    ///   - method: the method, as the client sent it.
    ///   - params: its params as they came (an object or an array), `nil` when it had none.
    /// - Returns: the result the client gets.
    func extensionRequest(method: String, params: JSONValue?) async throws -> JSONValue

    /// A notification of an extension this agent serves. The default ignores it; what it
    /// throws stays in this process's log (a notification has no answer).
    ///
    /// - Parameters:
    ///   - method: the method, as the client sent it.
    ///   - params: its params as they came, `nil` when it had none.
    func extensionNotification(method: String, params: JSONValue?) async throws
}

extension Agent {
    /// Does nothing.
    public func opened(sessionId: String, setup: SessionSetup) async throws {}

    /// Does nothing.
    public func resumed(sessionId: String, setup: SessionSetup) async throws {}

    /// Does nothing.
    public func closed(sessionId: String, dropped: [PendingInject]) async throws {}

    /// Refuses: -32000, "Authentication required" (this agent checks no method).
    public func authenticate(methodId: String) async throws {
        let detail = "this agent cannot check the method \(String(reflecting: methodId))"
        throw AcpError.refused(code: -32000, message: "Authentication required", detail: detail)
    }

    /// Refuses: -32601, "Method not found".
    public func extensionRequest(method: String, params: JSONValue?) async throws -> JSONValue {
        throw AcpError.refused(code: -32601, message: "Method not found")
    }

    /// Ignores it.
    public func extensionNotification(method: String, params: JSONValue?) async throws {}
}

extension AcpError {
    /// The error an ``Agent`` throws from ``Agent/authenticate(methodId:)`` or
    /// ``Agent/extensionRequest(method:params:)`` to answer the client with this JSON-RPC
    /// error (`AcpError.protocol`; the client reads `detail` as its `data.detail`).
    ///
    /// ```swift
    /// func authenticate(methodId: String) async throws {
    ///     guard ProcessInfo.processInfo.environment["ACME_API_KEY"] != nil else {
    ///         throw AcpError.refused(code: -32000, message: "Authentication required", detail: "set ACME_API_KEY")
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - code: the JSON-RPC code (-32000 for credentials that do not check out, -32602 for
    ///     params an extension cannot use, …).
    ///   - message: the error's message.
    ///   - detail: more, for a person.
    public static func refused(code: Int, message: String, detail: String? = nil) -> AcpError {
        .protocol(error: ProtocolError(code: code, message: message, detail: detail))
    }
}

/// One running turn: what the agent says and does, and what the user sends meanwhile.
///
/// Named `AgentTurn` (as in Kotlin) because ``TurnPhase`` is the turn *state* an agent core
/// holds (`idle`, `running`, …). Every method may be called from any task; the calls that
/// throw fail with `AcpError.host(error: .sessionClosed, …)` once the session closed under the
/// turn.
///
/// ```swift
/// func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
///     try turn.think("The user wants the tests fixed.")
///     try turn.say("Running the tests. ")
///     try turn.toolCall("call_1", status: .inProgress, title: "Run the tests", kind: .execute)
///     guard await turn.sleep(for: .milliseconds(200)) else { return nil }   // cancelled
///     try turn.toolCall("call_1", status: .completed, output: "3 passed")
///     for steer in try turn.breakPoint(.toolResult) { try turn.say("(noted: \(steer.content.text)) ") }
///     return nil
/// }
/// ```
public final class AgentTurn: Sendable, CustomStringConvertible {
    let context: TurnContext
    /// The session this turn belongs to.
    public let sessionId: SessionId
    /// The agent message and the thought being streamed into.
    private let streams = Locked(Streams())

    private struct Streams {
        var message: MessageId?
        var thought: MessageId?
    }

    init(_ context: TurnContext) {
        self.context = context
        sessionId = context.sessionId()
    }

    /// `AgentTurn(<session id>)`.
    public var description: String { "AgentTurn(\(sessionId))" }

    /// The session's working directory.
    public var cwd: String { context.cwd() }

    /// Starts a new agent message; ``say(_:)`` then streams into it.
    ///
    /// - Returns: the new message's id.
    @discardableResult
    public func newMessage() -> MessageId {
        let id = context.newMessageId()
        streams.withLock { $0.message = id }
        return id
    }

    /// A fresh id for an agent message or thought, for updates sent with ``send(_:)``.
    public func newMessageId() -> MessageId {
        context.newMessageId()
    }

    /// Streams text into the current agent message, started on first use and after a
    /// ``think(_:)`` (so that a thought between two pieces of text splits them into two
    /// messages).
    ///
    /// - Parameter words: the text to append.
    public func say(_ words: String) throws {
        let id = streams.withLock { s -> MessageId in
            s.thought = nil
            if let id = s.message { return id }
            let id = context.newMessageId()
            s.message = id
            return id
        }
        try call { try context.sendText(messageId: id, text: words) }
    }

    /// Streams text into the current thought (`agent_thought_chunk`), started on first use and
    /// after a ``say(_:)``.
    ///
    /// - Parameter words: the text of the agent's reasoning to append.
    public func think(_ words: String) throws {
        let id = streams.withLock { s -> MessageId in
            s.message = nil
            if let id = s.thought { return id }
            let id = context.newMessageId()
            s.thought = id
            return id
        }
        try send(.agentThoughtChunk(AgentThoughtChunk(messageId: id, content: .text(words))))
    }

    /// Sends any of the agent's own updates (plans, usage, session info, a whole message, …).
    ///
    /// - Parameter update: the update.
    public func send(_ update: SessionUpdate) throws {
        try call { try context.send(update: arg(update)) }
    }

    /// Clears what was streamed so far for an agent message (the next ``say(_:)`` into it
    /// starts from empty).
    public func clearMessage(_ messageId: MessageId) throws {
        try call { try context.clearMessage(messageId: messageId) }
    }

    /// Reports a tool call, created or changed (the same id updates the same call).
    ///
    /// - Parameters:
    ///   - toolCallId: the call's id, unique in the session.
    ///   - status: `.pending`, `.inProgress`, `.completed`, `.failed`, …
    ///   - title: what the user sees (`nil` leaves it as it was).
    ///   - kind: `.read`, `.edit`, `.execute`, … (`nil` leaves it as it was).
    ///   - output: becomes the call's text content (`nil` leaves it as it was).
    public func toolCall(
        _ toolCallId: ToolCallId, status: ToolCallStatus, title: String? = nil, kind: ToolKind? = nil, output: String? = nil
    ) throws {
        let content = output.map { [ToolCallContent.content(ToolCallContentBlock(content: .text($0)))] }
        try send(.toolCallUpdate(ToolCallUpdate(toolCallId: toolCallId, title: title, kind: kind, status: status, content: content)))
    }

    /// A safe point (a tool result, between model steps): the steers the user sent meanwhile
    /// are delivered now (the client sees each as a user message) and returned, for the model
    /// to read.
    ///
    /// - Parameter kind: where the turn is: `.toolResult` (the default) or `.modelStep`.
    /// - Returns: the steers delivered here, in order (usually none).
    public func breakPoint(_ kind: BreakPoint = .toolResult) throws -> [UserInput] {
        try result([UserInput].self, call { try context.breakPoint(kind: arg(kind)) })
    }

    /// A model stream with no tool call pending began (a steer then finishes or interrupts it,
    /// as the configuration's `steerInStream` says).
    public func streamStarted() throws {
        try call { try context.streamStarted() }
    }

    /// The model stream ended.
    public func streamFinished() throws {
        try call { try context.streamFinished() }
    }

    /// A model-process pause began (a rate limit, a usage cap).
    public func paused() throws {
        try call { try context.paused() }
    }

    /// The pause cleared.
    public func resumed() throws {
        try call { try context.resumed() }
    }

    /// Whether the user cancelled the turn: stop and return.
    public var isCancelled: Bool { context.isCancelled() }

    /// Returns when the user cancels the turn.
    ///
    /// It does not return early when the calling task is cancelled (the binding's waits cannot
    /// be abandoned): to wait for a time *or* the cancel, use ``sleep(for:)``.
    public func cancelled() async {
        await context.cancelled()
    }

    /// Whether a steer asked to cut the current model stream (`steerInStream: interrupt`).
    public var interruptRequested: Bool { context.interruptRequested() }

    /// Returns when a steer asks to cut the current model stream.
    public func interrupted() async {
        await context.interrupted()
    }

    /// Waits, unless the user cancels the turn first (checked every 10 ms) or the calling task
    /// is cancelled (the library cancels it when it stops serving).
    ///
    /// - Parameter duration: how long to wait.
    /// - Returns: `true` after the full wait; `false` when the turn or the task was cancelled.
    public func sleep(for duration: Duration) async -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + duration
        while !isCancelled && !Task.isCancelled {
            let left = end - clock.now
            if left <= .zero { return true }
            do {
                try await Task.sleep(for: min(left, .milliseconds(10)))
            } catch {
                return false
            }
        }
        return false
    }

    /// Asks the user (`session/request_permission`); the turn shows `requires_action` until
    /// the client answers.
    ///
    /// - Parameters:
    ///   - title: the question.
    ///   - options: the choices; by default ``allowOrReject`` (`allow`, `reject`).
    ///   - description: more detail for the user, if any.
    ///   - toolCallId: the tool call the request is about, if any (an ACP v1 client gets it as
    ///     the request's `toolCall`).
    /// - Returns: the id of the option the user chose, or `nil` when the request was cancelled
    ///   (the user cancelled the turn, or the client declined it).
    public func permission(
        _ title: String, options: [PermissionOption] = AgentTurn.allowOrReject, description: String? = nil,
        toolCallId: ToolCallId? = nil
    ) async throws -> PermissionOptionId? {
        switch try await requestPermission(title, options: options, description: description, toolCallId: toolCallId) {
        case let .selected(selected): return selected.optionId
        default: return nil
        }
    }

    /// ``permission(_:options:description:toolCallId:)`` with the whole outcome.
    public func requestPermission(
        _ title: String, options: [PermissionOption] = AgentTurn.allowOrReject, description: String? = nil,
        toolCallId: ToolCallId? = nil
    ) async throws -> RequestPermissionOutcome {
        let context = context
        let answer = try await callAsync {
            try await context.requestPermission(title: title, description: description, options: arg(options), toolCallId: toolCallId)
        }
        return try result(RequestPermissionOutcome.self, answer)
    }

    /// `allow` (allow once) and `reject` (reject once): the default options of
    /// ``permission(_:options:description:toolCallId:)``.
    public static let allowOrReject: [PermissionOption] = [
        PermissionOption(optionId: "allow", name: "Allow", kind: .allowOnce),
        PermissionOption(optionId: "reject", name: "Reject", kind: .rejectOnce),
    ]
}

/// The callback object the library calls: the binding's callback interface `AgentRuntime` must
/// be a class (`AnyObject, Sendable`). This one is `Sendable` without `@unchecked`: it is final
/// and holds only an immutable `Sendable` value (the agent), so calls from the library's
/// threads, several at once, share nothing mutable here; the agent's own state is the agent's
/// (``Agent`` is `Sendable`). Values arrive and leave encoded; what the agent throws goes back
/// as the binding's error, an `AcpError` as it is and anything else as `.internal`.
final class AgentAdapter: AgentRuntime {
    let agent: any Agent

    init(_ agent: any Agent) {
        self.agent = agent
    }

    func runTurn(turn: TurnContext, input: Data) async throws -> Data {
        let messages = try AcpInject.input([UserInput].self, input)
        let t = AgentTurn(turn)
        do {
            let end = try await agent.run(turn: t, messages: messages) ?? TurnEnd(stopReason: t.isCancelled ? .cancelled : .endTurn)
            return Boundary.encode(end)
        } catch {
            throw AcpError.from(error).ffi
        }
    }

    func sessionOpened(sessionId: String, setup: Data) async throws {
        let setup = try AcpInject.input(SessionSetup.self, setup)
        do { try await agent.opened(sessionId: sessionId, setup: setup) } catch { throw AcpError.from(error).ffi }
    }

    func sessionResumed(sessionId: String, setup: Data) async throws {
        let setup = try AcpInject.input(SessionSetup.self, setup)
        do { try await agent.resumed(sessionId: sessionId, setup: setup) } catch { throw AcpError.from(error).ffi }
    }

    func sessionClosed(sessionId: String, dropped: Data) async throws {
        let dropped = try AcpInject.input([PendingInject].self, dropped)
        do { try await agent.closed(sessionId: sessionId, dropped: dropped) } catch { throw AcpError.from(error).ffi }
    }

    func authenticate(methodId: String) async throws {
        do { try await agent.authenticate(methodId: methodId) } catch { throw AcpError.from(error).ffi }
    }

    func extensionRequest(method: String, params: Data) async throws -> Data {
        let params = try AcpInject.input(JSONValue?.self, params)
        do {
            return Boundary.encode(try await agent.extensionRequest(method: method, params: params))
        } catch {
            throw AcpError.from(error).ffi
        }
    }

    func extensionNotification(method: String, params: Data) async throws {
        let params = try AcpInject.input(JSONValue?.self, params)
        do { try await agent.extensionNotification(method: method, params: params) } catch { throw AcpError.from(error).ffi }
    }
}

/// The default configuration (queue and steer, replace) under this agent's name.
///
/// ```swift
/// let apiKey = AuthMethod.agent(AuthMethodAgent(methodId: "api-key", name: "API key"))
/// let config = agentConfig(name: "acme", authMethods: [apiKey], authRequired: true, extensions: ["_acme/usage"])
/// ```
///
/// - Parameters:
///   - name: the agent's name, as `initialize` announces it.
///   - version: the agent's version.
///   - steerInStream: `.finish` (the default) lets the model stream finish before a steer is
///     delivered; `.interrupt` asks to cut it (see ``AgentTurn/interruptRequested``).
///   - authMethods: the `authMethods` `initialize` advertises: a client logging in with an
///     `.agent` one is checked by ``Agent/authenticate(methodId:)``; a `.terminal` one the
///     client runs itself.
///   - authRequired: every request of a connection but `initialize` and `auth/*` is answered
///     -32000 (Authentication required) until the connection logged in.
///   - extensions: the extension methods (starting with `_`) ``Agent/extensionRequest(method:params:)``
///     and ``Agent/extensionNotification(method:params:)`` serve; any other `_` method is
///     answered -32601.
/// - Returns: ``defaultAgentConfig()`` with that identity, steer behaviour, authentication and
///   extensions.
public func agentConfig(
    name: String, version: String = "0.1.0", steerInStream: SteerInStream = .finish, authMethods: [AuthMethod] = [],
    authRequired: Bool = false, extensions: [String] = []
) -> AgentConfig {
    let d: AgentConfig = defaultAgentConfig()
    let inject = d.inject.map { InjectCapabilities(modes: $0.modes, pending: $0.pending, steerInStream: [steerInStream], meta: $0.meta) }
    let p = d.policy
    let policy = Policy(
        queueDrain: p.queueDrain, steerInStream: steerInStream, revokeReplace: p.revokeReplace, rememberIds: p.rememberIds,
        clearStyle: p.clearStyle, maxLineBytes: p.maxLineBytes, listPageSize: p.listPageSize
    )
    return AgentConfig(
        inject: inject, policy: policy, info: AgentInfo(name: name, version: version), setup: d.setup,
        auth: AuthSupport(methods: authMethods, required: authRequired), extensions: extensions
    )
}

/// The configuration used when none is given:
/// ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)`` under the
/// agent's type name.
private func defaultConfig(for agent: any Agent) -> AgentConfig {
    agentConfig(name: String(describing: type(of: agent)))
}

/// An agent server around an ``Agent``: what ``serveStdio(agent:config:store:)``,
/// ``listen(agent:address:config:store:token:tokens:allowedOrigins:limits:)`` and ``runAgent(_:config:store:listen:token:allowedOrigins:limits:)``
/// build, for a host that also starts turns or closes sessions itself.
public final class AgentServer: Sendable {
    let server: AcpInjectFFI.AgentServer

    /// An agent server around `agent`.
    ///
    /// - Parameters:
    ///   - agent: the agent.
    ///   - config: what it advertises and how it behaves; by default
    ///     ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)`` under
    ///     the agent's type name.
    ///   - store: where sessions live so that they outlive the process: a SQLite file's path,
    ///     or a `postgres://` URL several agent hosts share
    ///     (`postgres://USER@HOST/DB?acp_host=NAME&acp_lease_ms=N`, each host its own `NAME`);
    ///     `nil` keeps them in memory.
    /// - Throws: `AcpError.config` for a configuration it refuses, `AcpError.store` when the
    ///   store cannot be opened.
    public init(agent: some Agent, config: AgentConfig? = nil, store: String? = nil) throws {
        let config = config ?? defaultConfig(for: agent)
        server = try call { try AcpInjectFFI.AgentServer(runtime: AgentAdapter(agent), config: arg(config), storePath: store) }
    }

    /// Serves over this process's stdin/stdout until the client closes stdin.
    public func runStdio() async throws {
        let server = server
        try await callAsync { try await server.runStdio() }
    }

    /// Serves over the network on `address` (`HOST:PORT`; port 0 picks a free one): the
    /// upstream Streamable HTTP & WebSocket transport on `/acp`. Returns the endpoint's URL
    /// (`http://HOST:PORT/acp`) once bound; serving goes on until ``shutdown()``. `tokens` maps
    /// each principal to a token of its own: a client sees the sessions its principal created
    /// and no other (`token`, beside them, sees the sessions created without a principal).
    /// `limits` bounds what clients may take (connections, message size, unread output, the
    /// listener's memory); a zero limit throws `AcpError.config`.
    public func listen(
        address: String, token: String? = nil, tokens: [String: String] = [:], allowedOrigins: [String] = [],
        limits: ListenLimits = ListenLimits()
    ) async throws -> String {
        let server = server
        let limits = arg(limits)
        return try await callAsync {
            try await server.listen(
                addr: address, bearerToken: token, principalTokens: tokens, allowedOrigins: allowedOrigins, limits: limits
            )
        }
    }

    /// Waits until serving stops because the store failed, then throws `AcpError.store` saying
    /// why.
    public func stopped() async throws {
        let server = server
        try await callAsync { try await server.stopped() }
    }

    /// Stops serving: the network listener (if any) closes its connections, every running
    /// turn is cancelled and given a moment to end.
    public func shutdown() async {
        await server.shutdown()
    }

    /// Starts a turn in a session with no user message (``Agent/run(turn:messages:)`` gets none).
    public func startTurn(sessionId: SessionId) throws {
        try call { try server.startTurn(sessionId: sessionId) }
    }

    /// Closes a session from the agent's side.
    public func closeSession(sessionId: SessionId) throws {
        try call { try server.closeSession(sessionId: sessionId) }
    }

    /// The live sessions.
    public var sessions: [SessionId] { server.sessions() }
}

/// Serves `agent` over this process's stdin/stdout until the client closes stdin.
///
/// - Parameters:
///   - agent: the agent.
///   - config: by default
///     ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)`` under
///     the agent's type name.
///   - store: sessions outlive the process in this store (see
///     ``AgentServer/init(agent:config:store:)``); `nil` keeps them in memory.
/// - Throws: `AcpError` when the server cannot be built or stdio fails.
public func serveStdio(agent: some Agent, config: AgentConfig? = nil, store: String? = nil) async throws {
    try await AgentServer(agent: agent, config: config, store: store).runStdio()
}

/// An agent serving over the network (see ``listen(agent:address:config:store:token:tokens:allowedOrigins:limits:)``):
/// its endpoint's ``url``; ``stop()`` ends it.
///
/// ```swift
/// let listening = try await listen(agent: MyAgent(), address: "127.0.0.1:0")
/// let client = try await connect(url: listening.webSocketURL)
/// …
/// await listening.stop()
/// ```
public final class Listening: Sendable, CustomStringConvertible {
    /// The server underneath (``AgentServer/startTurn(sessionId:)``, ``AgentServer/closeSession(sessionId:)``).
    public let server: AgentServer
    /// The endpoint: `http://HOST:PORT/acp` (Streamable HTTP).
    public let url: String

    init(server: AgentServer, url: String) {
        self.server = server
        self.url = url
    }

    /// The same endpoint for WebSocket clients: `ws://HOST:PORT/acp`.
    public var webSocketURL: String {
        url.hasPrefix("http://") ? "ws://" + url.dropFirst("http://".count) : url
    }

    /// `Listening(<url>)`.
    public var description: String { "Listening(\(url))" }

    /// The live sessions' ids.
    public var sessions: [SessionId] { server.sessions }

    /// Stops listening (every connection ends) and cancels the running turns, giving them a
    /// moment to end.
    public func stop() async {
        await server.shutdown()
    }

    /// Waits until serving stops because the store failed.
    ///
    /// - Throws: always, once that happens: `AcpError.store` saying why (a database error, or,
    ///   on a store several hosts share, a session another host took over while this one was
    ///   paused). Every connection was dropped by then: stop, and start the host again.
    public func stopped() async throws {
        try await server.stopped()
    }
}

/// Serves `agent` over the network: the upstream Streamable HTTP & WebSocket transport on
/// `/acp`. Returns once bound; serving goes on until ``Listening/stop()``. Every client is one
/// connection of the same agent: a session outlives the connection that opened it, and a
/// client that reconnects resumes it.
///
/// - Parameters:
///   - agent: the agent.
///   - address: `HOST:PORT` to bind; port 0 picks a free one (see ``Listening/url``).
///   - config: by default
///     ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)`` under
///     the agent's type name.
///   - store: sessions outlive the process in this store (see
///     ``AgentServer/init(agent:config:store:)``); `nil` keeps them in memory.
///   - token: clients must send `Authorization: Bearer <token>`; required on anything but a
///     loopback address (or `tokens`).
///   - tokens: a token of its own for each principal (a user, a tenant), by name: a client sees
///     the sessions its principal created and no other, and another principal's session is
///     answered as unknown (`token`, beside them, sees the sessions created without one).
///   - allowedOrigins: the browser origins that may call.
///   - limits: what clients may take (connections, message size, unread output, the
///     listener's memory); ``ListenLimits`` has the defaults.
/// - Returns: the running listener, with its URL.
/// - Throws: `AcpError.config` for a non-loopback address without a token, or a zero limit;
///   `AcpError` when the address cannot be bound or the server cannot be built.
public func listen(
    agent: some Agent, address: String, config: AgentConfig? = nil, store: String? = nil,
    token: String? = nil, tokens: [String: String] = [:], allowedOrigins: [String] = [],
    limits: ListenLimits = ListenLimits()
) async throws -> Listening {
    let server = try AgentServer(agent: agent, config: config, store: store)
    let url = try await server.listen(
        address: address, token: token, tokens: tokens, allowedOrigins: allowedOrigins, limits: limits
    )
    return Listening(server: server, url: url)
}

/// Runs `agent` as a program does: over stdio until the client goes away (see
/// ``serveStdio(agent:config:store:)``), or, with `listen`, over the network until the process
/// is stopped (see ``listen(agent:address:config:store:token:tokens:allowedOrigins:limits:)``; the endpoint's
/// URL is printed on stdout first).
///
/// - Parameters:
///   - agent: the agent.
///   - config: by default
///     ``agentConfig(name:version:steerInStream:authMethods:authRequired:extensions:)`` under
///     the agent's type name.
///   - store: sessions outlive the process in this store; `nil` keeps them in memory.
///   - address: (argument label `listen`) `HOST:PORT` to serve over the network instead of
///     stdio.
///   - token: over the network, the bearer token clients must send.
///   - allowedOrigins: over the network, the browser origins that may call.
///   - limits: over the network, what clients may take (``ListenLimits``).
/// - Throws: `AcpError` when serving cannot start; over the network, `AcpError.store` when
///   the store failed (on a store several hosts share: a session another host took over):
///   restart the process.
public func runAgent(
    _ agent: some Agent, config: AgentConfig? = nil, store: String? = nil, listen address: String? = nil,
    token: String? = nil, allowedOrigins: [String] = [], limits: ListenLimits = ListenLimits()
) async throws {
    guard let address else {
        return try await serveStdio(agent: agent, config: config, store: store)
    }
    let listening = try await listen(
        agent: agent, address: address, config: config, store: store, token: token, allowedOrigins: allowedOrigins,
        limits: limits
    )
    // Unbuffered, so that whoever started the process reads the URL at once.
    FileHandle.standardOutput.write(Data((listening.url + "\n").utf8))
    do {
        try await listening.stopped()
    } catch {
        await listening.stop()
        throw error
    }
}
