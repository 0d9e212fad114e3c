// The client: one connection to an agent (a process over stdio, or an endpoint over the
// network: `connect(url:)`), many sessions on it.
//
// The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust; each
// call here is one `await`, and a session's activity arrives in batches, one per read from the
// agent:
//
//     let agent = try await connect(["my-agent", "--flag"])
//     let session = try await agent.newSession(cwd: "/home/me/project")
//     let turn = try await session.prompt("fix the bug")
//     for try await update in turn.updates { … }        // or: for try await activity in session.events
//     print(try await turn.finished)                      // endTurn
//     try await agent.close()
import AcpInjectFFI
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Answers the agent's permission requests: given the request, the id of the option the user
/// chose, or `nil` to decline (the request is answered `cancelled`).
public typealias PermissionHandler = @Sendable (RequestPermissionRequest) async -> PermissionOptionId?

/// Starts `command` (program and arguments) and connects to it over its stdio; `initialize` is
/// exchanged before this returns. Throws `AcpError.disconnected` when the agent cannot be
/// started or exits (with its exit status and the end of its stderr).
///
/// - Parameters:
///   - name: this client's name, as `initialize` announces it.
///   - version: this client's version.
///   - pendingUpdates: opt into the agent's pending-list extension.
///   - forwardStderr: copy the agent's stderr to this process's stderr.
///   - handshakeTimeout: how long `initialize` may take, in seconds.
///   - steerFallback: what a steer does when the agent takes no injects (every ACP v1 agent:
///     queued messages are then held by this client and sent as prompts when the turn ends);
///     `nil` throws `AcpError.rejected(reason: .steerNotSupported, …)`.
///   - onPermission: answers the agent's permission requests (see ``Session/onPermission``).
public func connect(
    _ command: [String],
    name: String = "acp-inject-swift",
    version: String = libraryVersion(),
    pendingUpdates: Bool = true,
    forwardStderr: Bool = true,
    handshakeTimeout: TimeInterval = 30,
    steerFallback: SteerFallback? = nil,
    onPermission: PermissionHandler? = nil
) async throws -> Client {
    let options = connectOptions(name, version, pendingUpdates, handshakeTimeout, steerFallback, forwardStderr: forwardStderr)
    return try await connect(command, options: options, onPermission: onPermission)
}

/// The options of `connect` with this client's identity and the common choices.
private func connectOptions(
    _ name: String, _ version: String, _ pendingUpdates: Bool, _ handshakeTimeout: TimeInterval, _ steerFallback: SteerFallback?,
    forwardStderr: Bool = true
) -> ConnectOptions {
    ConnectOptions(
        client: Implementation(name: name, version: version),
        pendingUpdates: pendingUpdates,
        handshakeTimeoutMs: Int(max(0, handshakeTimeout) * 1000),
        forwardStderr: forwardStderr,
        steerFallback: steerFallback
    )
}

/// `connect` with every option.
public func connect(_ command: [String], options: ConnectOptions, onPermission: PermissionHandler? = nil) async throws -> Client {
    ignoreBrokenPipes()
    let connection = try await callAsync { try await AcpInjectFFI.connect(command: command, options: arg(options)) }
    return Client(connection, onPermission: onPermission)
}

/// Connects to an agent by `url` over the network: `ws://` or `wss://` over WebSocket, `http://`
/// or `https://` over Streamable HTTP (the upstream remote transport; the `/acp` path included).
/// With `token`, every request carries `Authorization: Bearer <token>`. `initialize` is
/// exchanged before this returns; the `Client` then works as one over stdio. A dropped network
/// fails calls with `AcpError.disconnected`: connect again and `resume` each session with replay
/// (its turns went on in the agent; the replay brings back the transcript and the pending list).
public func connect(
    url: String,
    token: String? = nil,
    name: String = "acp-inject-swift",
    version: String = libraryVersion(),
    pendingUpdates: Bool = true,
    handshakeTimeout: TimeInterval = 30,
    steerFallback: SteerFallback? = nil,
    onPermission: PermissionHandler? = nil
) async throws -> Client {
    let options = connectOptions(name, version, pendingUpdates, handshakeTimeout, steerFallback)
    ignoreBrokenPipes()
    let connection = try await callAsync { try await connectUrl(url: url, bearerToken: token, options: arg(options)) }
    return Client(connection, onPermission: onPermission)
}

/// Writing to an agent that has exited raises SIGPIPE, whose default action ends the process;
/// the write should fail instead (the connection then reports the agent's exit). Python and
/// the JVM ignore SIGPIPE from the start; a Swift program does not, so the first `connect`
/// ignores it when it still has its default action (a handler the program set is kept).
private func ignoreBrokenPipes() {
    #if canImport(Darwin) || canImport(Glibc)
    _ = sigpipeIgnored
    #endif
}

#if canImport(Darwin) || canImport(Glibc)
private let sigpipeIgnored: Bool = {
    var current = sigaction()
    guard sigaction(SIGPIPE, nil, &current) == 0 else { return false }
    #if canImport(Darwin)
    let isDefault = current.__sigaction_u.__sa_handler == nil
    #else
    let isDefault = current.__sigaction_handler.sa_handler == nil
    #endif
    guard isDefault else { return false }
    _ = signal(SIGPIPE, SIG_IGN)
    return true
}()
#endif

/// A connection to one agent (see ``connect(_:name:version:pendingUpdates:forwardStderr:handshakeTimeout:steerFallback:onPermission:)``).
///
/// Close it with ``close()``; a client nobody references any more (no ``Session`` of it
/// included: each holds its client) closes itself in the background.
public final class Client: Sendable, CustomStringConvertible {
    let connection: AcpInjectFFI.Connection
    private let closed = Locked(false)
    private let permissionHandler: Locked<PermissionHandler?>
    /// The notification being fetched, shared so that a cancelled wait loses nothing.
    private let fetchingNotification = Locked<Task<Notification?, Error>?>(nil)
    /// The agent's `initialize` answer: protocol version, identity, capabilities.
    public let agent: InitializeResponse

    init(_ connection: AcpInjectFFI.Connection, onPermission: PermissionHandler?) {
        self.connection = connection
        permissionHandler = Locked(onPermission)
        agent = (try? result(InitializeResponse.self, connection.agent()))
            ?? InitializeResponse(protocolVersion: 0, info: Implementation(name: "", version: ""))
    }

    deinit {
        if !closed.exchange(true) {
            let connection = connection
            Task.detached { try? await connection.close() }
        }
    }

    /// `Client(<agent name>)`.
    public var description: String { "Client(\(agent.info.name))" }

    /// What the agent offers for `session/inject` (`nil`: no inject).
    public var inject: InjectCapabilities? { agent.capabilities?.session?.inject }

    /// Given to every session this client opens from now on (see ``Session/onPermission``).
    public var onPermission: PermissionHandler? {
        get { permissionHandler.withLock { $0 } }
        set { permissionHandler.withLock { $0 = newValue } }
    }

    /// `session/new`, in `cwd` (an absolute path; the current directory by default).
    public func newSession(
        cwd: String = FileManager.default.currentDirectoryPath, additionalDirectories: [String] = [], mcpServers: [McpServer] = []
    ) async throws -> Session {
        let connection = connection
        let session = try await callAsync {
            try await connection.newSession(cwd: cwd, additionalDirectories: additionalDirectories, mcpServers: arg(mcpServers))
        }
        return Session(session, client: self)
    }

    /// `session/list`: one page (its sessions, and the cursor of the next: `nil` at the end).
    public func listSessions(cwd: String? = nil, cursor: String? = nil) async throws -> SessionPage {
        let connection = connection
        return try result(SessionPage.self, await callAsync { try await connection.listSessions(cwd: cwd, cursor: cursor) })
    }

    /// Every session the agent knows, newest first, page after page.
    public func sessions(cwd: String? = nil) -> AsyncThrowingStream<SessionInfo, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var cursor: String?
                    repeat {
                        let page = try await listSessions(cwd: cwd, cursor: cursor)
                        for info in page.sessions { continuation.yield(info) }
                        cursor = page.nextCursor
                    } while cursor != nil && !Task.isCancelled
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// `session/resume`; with `replay` the conversation is replayed into the session (its
    /// transcript and event stream) before this returns.
    public func resume(_ sessionId: SessionId, cwd: String = FileManager.default.currentDirectoryPath, replay: Bool = true) async throws -> Session {
        let connection = connection
        let session = try await callAsync { try await connection.resume(sessionId: sessionId, cwd: cwd, replay: replay) }
        return Session(session, client: self)
    }

    /// The agent's `authMethods` (`.agent`, `.terminal`, or `.other` of a type this version
    /// does not know); empty when it needs none.
    public var authMethods: [AuthMethod] { agent.authMethods ?? [] }

    /// `auth/login` with one of ``authMethods`` (`authenticate` to an ACP v1 agent). An agent
    /// that requires it answers the session methods with `AcpError.authRequired` until this
    /// succeeds; a login it refuses throws its error (`AcpError.authRequired` or
    /// `AcpError.protocol`), and may be tried again.
    ///
    /// - Throws: `AcpError.rejected` without sending for a method the agent does not advertise,
    ///   or a `terminal` one (the app runs the agent in a terminal for it instead).
    public func authenticate(methodId: String) async throws {
        let connection = connection
        try await callAsync { try await connection.authenticate(methodId: methodId) }
    }

    /// `auth/logout`.
    public func logout() async throws {
        let connection = connection
        try await callAsync { try await connection.logout() }
    }

    /// A request of an extension (`method` starts with `_`) with `params` (an object or an
    /// array): the agent's result. An error answer throws `AcpError.protocol` (-32601 from an
    /// agent that does not serve it).
    ///
    /// ```swift
    /// let usage = try await client.extRequest("_acme/usage", params: ["period": "day"])
    /// ```
    public func extRequest(_ method: String, params: JSONValue? = nil) async throws -> JSONValue {
        let connection = connection
        return try result(JSONValue.self, await callAsync { try await connection.extRequest(method: method, params: arg(params)) })
    }

    /// A notification of an extension (`method` starts with `_`) with `params`.
    public func extNotify(_ method: String, params: JSONValue? = nil) throws {
        try call { try connection.extNotify(method: method, params: arg(params)) }
    }

    /// The next notification of the agent's that this library does not handle itself (an
    /// extension's, such as `_auth/status_update`, or a method it does not know), in order.
    /// Throws `AcpError.disconnected` once the connection ended and none is left, and
    /// `CancellationError` when the calling task is cancelled: the notification it was waiting
    /// for is then kept for the next call.
    public func nextNotification() async throws -> Notification {
        while true {
            try Task.checkCancellation()
            let task = fetchingNotification.withLock { current -> Task<Notification?, Error> in
                if let current { return current }
                let connection = connection
                let task = Task { () throws -> Notification? in
                    let event = try result(Event.self, await callAsync { try await connection.nextNotification() })
                    if case let .notification(notification) = event { return notification }
                    return nil
                }
                current = task
                return task
            }
            let outcome = try await waitCancellably(for: task)
            // The first caller to come back takes the notification; any other waits for the next.
            let mine = fetchingNotification.withLock { current -> Bool in
                guard current == task else { return false }
                current = nil
                return true
            }
            if mine, let notification = try outcome.get() { return notification }
        }
    }

    /// Every notification ``nextNotification()`` returns, as it comes. The sequence ends when
    /// the connection ends or the iterating task is cancelled. One queue: read it from one
    /// place at a time.
    ///
    /// ```swift
    /// for try await notification in client.notifications where notification.method == "_auth/status_update" { … }
    /// ```
    public var notifications: Notifications { Notifications(client: self) }

    /// The agent's notifications as an `AsyncSequence` (see ``Client/notifications``).
    public struct Notifications: AsyncSequence, Sendable {
        public typealias Element = Notification
        let client: Client

        public func makeAsyncIterator() -> Iterator { Iterator(client: client) }

        public struct Iterator: AsyncIteratorProtocol {
            let client: Client
            var finished = false

            public mutating func next() async throws -> Notification? {
                if finished { return nil }
                do {
                    return try await client.nextNotification()
                } catch AcpError.disconnected {
                    finished = true
                } catch is CancellationError {
                    finished = true
                }
                return nil
            }
        }
    }

    /// Closes the connection: the agent's stdin closes, it may exit, else it is killed after a
    /// grace period. Every session's event stream then ends.
    public func close() async throws {
        closed.exchange(true)
        let connection = connection
        try await callAsync { try await connection.close() }
    }

    /// Agent lines the connection could not use, most recent last.
    public var ignored: [String] { connection.ignored() }
}

/// A session open on a ``Client``. Every call is safe from any task.
///
/// Its activity (``events``, ``nextEvents()``) is one flat stream of ``SessionActivity``: every
/// session update (`.update(.agentMessageChunk(…))`, `.update(.stateUpdate(.idle(…)))` when a
/// turn ends, …), this client's own items changing (`.item`), violations (`.violation`),
/// permission requests (`.permissionRequested`, when no ``onPermission`` handler answers them),
/// the session's end (`.closed`).
public final class Session: Sendable, CustomStringConvertible {
    let session: AcpInjectFFI.Session
    /// The client the session belongs to (kept open while the session is referenced).
    public let client: Client
    /// The session's id.
    public let id: SessionId
    /// The batch being fetched, shared so that a cancelled wait loses nothing.
    private let fetching = Locked<Task<[SessionActivity], Error>?>(nil)
    /// Activities read and handed back (what followed a turn's end in its batch): the next
    /// read returns them first.
    private let backlog = Locked<[SessionActivity]>([])
    private let permissionHandler: Locked<PermissionHandler?>

    init(_ session: AcpInjectFFI.Session, client: Client) {
        self.session = session
        self.client = client
        id = session.id()
        permissionHandler = Locked(client.onPermission)
    }

    /// `Session(<id>)`.
    public var description: String { "Session(\(id))" }

    /// Answers the agent's permission requests as they are read (by ``nextEvents()``,
    /// ``events`` or a ``PromptTurn``), which then leave them out. `nil` (the default, unless
    /// the client has one): they are handed out as `.permissionRequested` activities, to answer
    /// with ``allow(_:optionId:)`` or ``answerPermission(_:outcome:)``.
    public var onPermission: PermissionHandler? {
        get { permissionHandler.withLock { $0 } }
        set { permissionHandler.withLock { $0 = newValue } }
    }

    /// `session/prompt`: returns once the message is inserted, with a handle on the turn it
    /// opens (``PromptTurn``: its ``PromptTurn/messageId``, `nil` from an agent that answers
    /// `{}`; ``PromptTurn/updates`` and ``PromptTurn/finished``). During a turn an agent on
    /// this toolkit holds the prompt and inserts it when the turn ends (so this returns then;
    /// `AcpError.protocol` with code -32800 if it is never inserted).
    /// ``inject(_:mode:)`` says when a message mid-turn is delivered.
    @discardableResult
    public func prompt(_ content: some ContentConvertible) async throws -> PromptTurn {
        let session = session, blocks = content.contentBlocks
        let id = try result(MessageId?.self, await callAsync { try await session.prompt(content: arg(blocks)) })
        return PromptTurn(session: self, messageId: id)
    }

    /// `session/inject` (`queue` by default, or `steer`); returns the message's id. Throws
    /// `AcpError.rejected` without sending when the agent does not offer the mode.
    @discardableResult
    public func inject(_ content: some ContentConvertible, mode: InjectMode = .queue) async throws -> MessageId {
        let session = session, blocks = content.contentBlocks
        return try await callAsync { try await session.inject(mode: arg(mode), content: arg(blocks)) }
    }

    /// `session/revoke_inject` of one of this client's pending injects.
    public func revoke(_ messageId: MessageId) async throws {
        let session = session
        try await callAsync { try await session.revoke(messageId: messageId) }
    }

    /// `session/replace_inject`: new content, same id, mode and position.
    public func replace(_ messageId: MessageId, with content: some ContentConvertible) async throws {
        let session = session, blocks = content.contentBlocks
        try await callAsync { try await session.replace(messageId: messageId, content: arg(blocks)) }
    }

    /// `session/cancel`: the running turn ends `cancelled`; pending injects survive.
    public func cancel() throws {
        try call { try session.cancel() }
    }

    /// `session/status`: `.open` while the agent has the session in memory (with its foreground
    /// state, a snapshot) or `.saved` when it can resume it; `AcpError.protocol` (-32002) for a
    /// session the agent does not know.
    public func status() async throws -> SessionStatusResponse {
        let session = session
        return try result(SessionStatusResponse.self, await callAsync { try await session.status() })
    }

    /// `session/close`.
    public func close() async throws {
        let session = session
        try await callAsync { try await session.close() }
    }

    /// Everything a UI renders now: state, own pending items, transcript, violations.
    public func snapshot() throws -> MirrorSnapshot {
        guard let snapshot = try result(MirrorSnapshot?.self, session.snapshot()) else {
            throw AcpError.invalidInput(detail: "session \(id) is not open on this connection")
        }
        return snapshot
    }

    /// Answers a permission request with the chosen option.
    public func allow(_ request: RequestId, optionId: PermissionOptionId) throws {
        try answerPermission(request, outcome: .selected(SelectedPermissionOutcome(optionId: optionId)))
    }

    /// Answers a permission request.
    public func answerPermission(_ request: RequestId, outcome: RequestPermissionOutcome) throws {
        try call { try session.answerPermission(request: arg(request), outcome: arg(outcome)) }
    }

    /// Waits for activity and returns all of it (one batch per read from the agent). Throws
    /// `AcpError.disconnected` once the connection ended and nothing is left, and
    /// `CancellationError` when the calling task is cancelled: the batch it was waiting for is
    /// then kept for the next call. With ``onPermission`` set, permission requests are answered
    /// by it and left out.
    public func nextEvents() async throws -> [SessionActivity] {
        while true {
            let kept = backlog.exchange([])
            if !kept.isEmpty { return kept }
            let batch = answered(try await fetch())
            if !batch.isEmpty { return batch }
        }
    }

    /// One batch from the library, shared by concurrent callers so that a cancelled wait loses
    /// nothing.
    private func fetch() async throws -> [SessionActivity] {
        while true {
            try Task.checkCancellation()
            let task = fetching.withLock { current -> Task<[SessionActivity], Error> in
                if let current { return current }
                let session = session
                let task = Task { try result([SessionActivity].self, await callAsync { try await session.nextEvents() }) }
                current = task
                return task
            }
            let outcome = try await waitCancellably(for: task)
            // The first caller to come back takes the batch; any other waits for the next.
            let mine = fetching.withLock { current -> Bool in
                guard current == task else { return false }
                current = nil
                return true
            }
            if mine { return try outcome.get() }
        }
    }

    /// `batch` without the permission requests the handler answers (each answered on a task
    /// of its own).
    private func answered(_ batch: [SessionActivity]) -> [SessionActivity] {
        guard let handler = onPermission else { return batch }
        return batch.filter { activity in
            guard case let .permissionRequested(request) = activity else { return true }
            Task {
                let chosen = await handler(request.params)
                if let chosen {
                    try? self.allow(request.request, optionId: chosen)
                } else {
                    try? self.answerPermission(request.request, outcome: .cancelled(CancelledPermissionOutcome()))
                }
            }
            return false
        }
    }

    /// Hands `activities` back: the next read returns them first, in order.
    func unread(_ activities: some Collection<SessionActivity>) {
        guard !activities.isEmpty else { return }
        backlog.withLock { $0.insert(contentsOf: activities, at: 0) }
    }

    /// Whatever activity is queued now, without waiting.
    public func takeEvents() -> [SessionActivity] {
        let kept = backlog.exchange([])
        let taken = (try? result([SessionActivity].self, session.takeEvents())) ?? []
        return kept + answered(taken)
    }

    /// Every activity of the session, in order. The sequence ends after the session's
    /// `.closed` activity, when the connection ends, or when the iterating task is cancelled.
    /// One reader at a time: a ``PromptTurn`` being read takes from the same stream.
    public var events: Events { Events(session: self) }

    /// The session's activity as an `AsyncSequence` (see ``Session/events``).
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = SessionActivity
        let session: Session

        public func makeAsyncIterator() -> Iterator { Iterator(session: session) }

        public struct Iterator: AsyncIteratorProtocol {
            let session: Session
            var batch: [SessionActivity] = []
            var position = 0
            var finished = false

            public mutating func next() async throws -> SessionActivity? {
                while position == batch.count {
                    if finished { return nil }
                    do {
                        batch = try await session.nextEvents()
                        position = 0
                    } catch AcpError.disconnected {
                        finished = true
                    } catch is CancellationError {
                        finished = true
                    }
                }
                let activity = batch[position]
                position += 1
                if case .closed = activity { finished = true }
                return activity
            }
        }
    }
}

/// The turn a ``Session/prompt(_:)`` opened: ``messageId`` is the prompt's id;
/// `for try await update in turn.updates` reads the session's updates (chunks, tool calls, the
/// user messages delivered into the turn, state updates) until the turn ends, and
/// `try await turn.finished` waits for its end and returns its stop reason.
///
/// The turn starts when the agent delivers the prompt (its `user_message`, or on an ACP v1
/// agent the prompt's item turning `delivered`) and ends at the next `idle` state update after
/// it: steers delivered at its break-points belong to it, a queued message opens the next turn.
/// Reading a turn reads the session's event stream (as ``Session/events`` does: one reader at a
/// time); what follows the turn's end stays in the stream for the next reader. Permission
/// requests are answered by the session's ``Session/onPermission`` handler; without one, a
/// request in the turn throws `AcpError.invalidInput` (the request stays in the session's
/// stream, to answer from ``Session/events``).
///
/// ```swift
/// let turn = try await session.prompt("fix the bug")
/// for try await update in turn.updates {
///     if let text = update.agentText { print(text, terminator: "") }
/// }
/// print(try await turn.finished ?? .endTurn)
/// ```
public final class PromptTurn: Sendable, CustomStringConvertible {
    /// The session it runs in.
    public let session: Session
    /// The prompt's id (`nil` from an agent that answers `{}`).
    public let messageId: MessageId?
    private let state = Locked(State())

    private struct State {
        var delivered = false
        var ended = false
        var stopReason: StopReason?
        /// Updates read by ``finished`` that ``updates`` has not handed out yet.
        var buffered: [SessionUpdate] = []
    }

    init(session: Session, messageId: MessageId?) {
        self.session = session
        self.messageId = messageId
    }

    /// `PromptTurn(<id>, waiting|running|ended)`.
    public var description: String {
        let s = state.withLock { $0 }
        return "PromptTurn(\(messageId ?? "(no id)"), \(s.ended ? "ended" : s.delivered ? "running" : "waiting"))"
    }

    /// Whether its end was seen.
    public var ended: Bool { state.withLock { $0.ended } }

    /// Waits until the turn ends; its stop reason (`nil` if the agent gave none).
    public var finished: StopReason? {
        get async throws {
            while !ended {
                let updates = try await nextBatch()
                state.withLock { $0.buffered += updates }
            }
            return state.withLock { $0.stopReason }
        }
    }

    /// The turn's updates, until it ends (read it once).
    public var updates: Updates { Updates(turn: self) }

    /// The updates of a ``PromptTurn`` as an `AsyncSequence`.
    public struct Updates: AsyncSequence, Sendable {
        public typealias Element = SessionUpdate
        let turn: PromptTurn

        public func makeAsyncIterator() -> Iterator { Iterator(turn: turn) }

        public struct Iterator: AsyncIteratorProtocol {
            let turn: PromptTurn
            var batch: [SessionUpdate] = []
            var position = 0

            public mutating func next() async throws -> SessionUpdate? {
                while position == batch.count {
                    let buffered = turn.state.withLock { s -> [SessionUpdate] in
                        defer { s.buffered = [] }
                        return s.buffered
                    }
                    if !buffered.isEmpty {
                        batch = buffered
                    } else if turn.ended {
                        return nil
                    } else {
                        batch = try await turn.nextBatch()
                    }
                    position = 0
                }
                position += 1
                return batch[position - 1]
            }
        }
    }

    /// Follows the turn through one update; `true` when it belongs to the turn.
    private func see(_ update: SessionUpdate) -> Bool {
        state.withLock { s in
            if s.ended { return false }
            if case let .userMessage(m) = update, !s.delivered {
                s.delivered = messageId == nil || m.messageId == messageId
                return s.delivered
            }
            if !s.delivered { return false }
            if let idle = update.turnEnded {
                s.ended = true
                s.stopReason = idle.stopReason
            }
            return true
        }
    }

    /// Reads the session's next batch: the updates that belong to the turn. What follows the
    /// turn's end is handed back to the session.
    private func nextBatch() async throws -> [SessionUpdate] {
        let batch = try await session.nextEvents()
        var updates: [SessionUpdate] = []
        for (i, activity) in batch.enumerated() {
            switch activity {
            case let .permissionRequested(request):
                session.unread(batch[i...])
                throw AcpError.invalidInput(
                    detail: "the agent asks permission (\(String(reflecting: request.params.title))) and session \(session.id) has no onPermission handler"
                )
            case let .update(update):
                if see(update) { updates.append(update) }
            case let .item(item):
                // An agent that echoes no user_message (ACP v1: the prompt's delivery is its
                // sending) still delivers the item.
                state.withLock { s in
                    if !s.delivered, let messageId, item.messageId == messageId, item.status == .delivered { s.delivered = true }
                }
            default:
                break
            }
            if ended {
                session.unread(batch[(i + 1)...])
                break
            }
        }
        return updates
    }
}

/// Waits for `task`, or throws `CancellationError` as soon as the calling task is cancelled
/// (`task` itself goes on).
private func waitCancellably<T: Sendable>(for task: Task<T, Error>) async throws -> Result<T, Error> {
    let waiter = OnceContinuation<Result<T, Error>>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            waiter.set(continuation)
            Task { waiter.resume(with: .success(await task.result)) }
        }
    } onCancel: {
        waiter.resume(with: .failure(CancellationError()))
    }
}

/// A continuation resumed once, whichever comes first (a value or a cancellation), even when
/// the cancellation comes before the continuation exists.
private final class OnceContinuation<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, Error>?
        var early: Result<T, Error>?
        var done = false
    }

    private let state = Locked(State())

    func set(_ c: CheckedContinuation<T, Error>) {
        let early = state.withLock { s -> Result<T, Error>? in
            if let early = s.early {
                s.done = true
                return early
            }
            s.continuation = c
            return nil
        }
        if let early { c.resume(with: early) }
    }

    func resume(with result: Result<T, Error>) {
        let c = state.withLock { s -> CheckedContinuation<T, Error>? in
            guard !s.done else { return nil }
            guard let c = s.continuation else {
                if s.early == nil { s.early = result }
                return nil
            }
            s.done = true
            s.continuation = nil
            return c
        }
        c?.resume(with: result)
    }
}
