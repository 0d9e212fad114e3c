// The client: one connection to an agent (a process over stdio, or an endpoint over the
// network: `connect(url:)`), many sessions on it.
//
// The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust; each
// call here is one `await`, and a session's events arrive in batches, one per read from the
// agent:
//
//     let agent = try await connect(["my-agent", "--flag"])
//     let session = try await agent.newSession(cwd: "/home/me/project")
//     try await session.prompt("fix the bug")
//     for try await activity in session.events { … }
//     try await agent.close()
@_exported import AcpInjectFFI
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts `command` (program and arguments) and connects to it over its stdio; `initialize` is
/// exchanged before this returns. Throws `AcpError.Disconnected` when the agent cannot be
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
///     `nil` throws `AcpError.Rejected(reason: .steerNotSupported)`.
public func connect(
    _ command: [String],
    name: String = "acp-inject-swift",
    version: String = libraryVersion(),
    pendingUpdates: Bool = true,
    forwardStderr: Bool = true,
    handshakeTimeout: TimeInterval = 30,
    steerFallback: SteerFallback? = nil
) async throws -> Client {
    var options = connectOptions(name, version, pendingUpdates, handshakeTimeout, steerFallback)
    options.forwardStderr = forwardStderr
    return try await connect(command, options: options)
}

/// The defaults with this client's identity and the common choices.
private func connectOptions(
    _ name: String, _ version: String, _ pendingUpdates: Bool, _ handshakeTimeout: TimeInterval, _ steerFallback: SteerFallback?
) -> ConnectOptions {
    var options = defaultConnectOptions()
    options.steerFallback = steerFallback
    options.client = Implementation(name: name, title: nil, version: version, meta: nil)
    options.pendingUpdates = pendingUpdates
    options.handshakeTimeoutMs = UInt64(max(0, handshakeTimeout) * 1000)
    return options
}

/// `connect` with every option of the binding.
public func connect(_ command: [String], options: ConnectOptions) async throws -> Client {
    ignoreBrokenPipes()
    return Client(try await AcpInjectFFI.connect(command: command, options: options))
}

/// Connects to an agent by `url` over the network: `ws://` or `wss://` over WebSocket, `http://`
/// or `https://` over Streamable HTTP (the upstream remote transport; the `/acp` path included).
/// With `token`, every request carries `Authorization: Bearer <token>`. `initialize` is
/// exchanged before this returns; the `Client` then works as one over stdio. A dropped network
/// fails calls with `AcpError.Disconnected`: connect again and `resume` each session with replay
/// (its turns went on in the agent; the replay brings back the transcript and the pending list).
public func connect(
    url: String,
    token: String? = nil,
    name: String = "acp-inject-swift",
    version: String = libraryVersion(),
    pendingUpdates: Bool = true,
    handshakeTimeout: TimeInterval = 30,
    steerFallback: SteerFallback? = nil
) async throws -> Client {
    let options = connectOptions(name, version, pendingUpdates, handshakeTimeout, steerFallback)
    ignoreBrokenPipes()
    return Client(try await connectUrl(url: url, bearerToken: token, options: options))
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

/// A connection to one agent process (see ``connect(_:name:version:pendingUpdates:forwardStderr:handshakeTimeout:)``).
///
/// Close it with ``close()``; a client nobody references any more (no ``Session`` of it
/// included: each holds its client) closes itself in the background.
public final class Client: Sendable {
    /// The generated object, for what this layer does not wrap.
    public let connection: Connection
    private let closed = Locked(false)

    init(_ connection: Connection) {
        self.connection = connection
    }

    deinit {
        if !closed.exchange(true) {
            let connection = connection
            Task.detached { try? await connection.close() }
        }
    }

    /// The agent's `initialize` answer: protocol version, identity, capabilities.
    public var agent: InitializeResponse { connection.agent() }

    /// What the agent offers for `session/inject` (`nil`: no inject).
    public var inject: InjectCapabilities? { agent.capabilities?.session?.inject }

    /// `session/new`.
    public func newSession(cwd: String, additionalDirectories: [String] = [], mcpServers: [McpServer] = []) async throws -> Session {
        Session(try await connection.newSession(cwd: cwd, additionalDirectories: additionalDirectories, mcpServers: mcpServers), client: self)
    }

    /// `session/list`: one page, and the cursor of the next (`nil` at the end).
    public func listSessions(cwd: String? = nil, cursor: String? = nil) async throws -> SessionPage {
        try await connection.listSessions(cwd: cwd, cursor: cursor)
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
    public func resume(_ sessionId: String, cwd: String, replay: Bool = true) async throws -> Session {
        Session(try await connection.resume(sessionId: sessionId, cwd: cwd, replay: replay), client: self)
    }

    /// Closes the connection: the agent's stdin closes, it may exit, else it is killed after a
    /// grace period. Every session's event stream then ends.
    public func close() async throws {
        closed.exchange(true)
        try await connection.close()
    }

    /// Agent lines the connection could not use, most recent last.
    public var ignored: [String] { connection.ignored() }
}

/// A session open on a ``Client``. Every call is safe from any task.
public final class Session: Sendable, CustomStringConvertible {
    /// The generated object, for what this layer does not wrap.
    public let session: AcpInjectFFI.Session
    /// The client the session belongs to (kept open while the session is referenced).
    public let client: Client
    /// The session's id.
    public let id: String
    /// The batch being fetched, shared so that a cancelled wait loses nothing.
    private let fetching = Locked<Task<[SessionActivity], Error>?>(nil)

    init(_ session: AcpInjectFFI.Session, client: Client) {
        self.session = session
        self.client = client
        id = session.id()
    }

    public var description: String { "Session(\(id))" }

    /// `session/prompt`: returns once the message is inserted, with its id (`nil` from an agent
    /// that answers `{}`). During a turn an agent on this toolkit holds it and inserts it when
    /// the turn ends (so this returns then; `AcpError.Protocol` with code -32800 if it is never
    /// inserted); an agent of an older draft may refuse it with reason `turnInProgress`.
    /// ``inject(_:mode:)`` says when a message mid-turn is delivered.
    @discardableResult
    public func prompt(_ content: some ContentConvertible) async throws -> MessageId? {
        try await session.prompt(content: content.contentBlocks)
    }

    /// `session/inject` (`queue` by default, or `steer`); returns the message's id. Throws
    /// `AcpError.Rejected` without sending when the agent does not offer the mode.
    @discardableResult
    public func inject(_ content: some ContentConvertible, mode: InjectMode = .queue) async throws -> MessageId {
        try await session.inject(mode: mode, content: content.contentBlocks)
    }

    /// `session/revoke_inject` of one of this client's pending injects.
    public func revoke(_ messageId: MessageId) async throws {
        try await session.revoke(messageId: messageId)
    }

    /// `session/replace_inject`: new content, same id, mode and position.
    public func replace(_ messageId: MessageId, with content: some ContentConvertible) async throws {
        try await session.replace(messageId: messageId, content: content.contentBlocks)
    }

    /// `session/cancel`: the running turn ends `cancelled`; pending injects survive.
    public func cancel() throws {
        try session.cancel()
    }

    /// `session/status`: `.open` while the agent has the session in memory (with its foreground
    /// state, a snapshot) or `.saved` when it can resume it; `AcpError.Protocol` (-32002) for a
    /// session the agent does not know.
    public func status() async throws -> SessionStatusResponse {
        try await session.status()
    }

    /// `session/close`.
    public func close() async throws {
        try await session.close()
    }

    /// Everything a UI renders now: state, own pending items, transcript, violations.
    public func snapshot() throws -> MirrorSnapshot {
        guard let snapshot = session.snapshot() else {
            throw AcpError.InvalidInput(detail: "session \(id) is not open on this connection")
        }
        return snapshot
    }

    /// Answers a permission request with the chosen option.
    public func allow(_ request: RequestId, optionId: PermissionOptionId) throws {
        try answerPermission(request, outcome: .selected(SelectedPermissionOutcome(optionId: optionId, meta: nil)))
    }

    /// Answers a permission request.
    public func answerPermission(_ request: RequestId, outcome: RequestPermissionOutcome) throws {
        try session.answerPermission(request: request, outcome: outcome)
    }

    /// Waits for activity and returns all of it (one batch per read from the agent). Throws
    /// `AcpError.Disconnected` once the connection ended and nothing is left, and
    /// `CancellationError` when the calling task is cancelled: the batch it was waiting for is
    /// then kept for the next call.
    public func nextEvents() async throws -> [SessionActivity] {
        while true {
            try Task.checkCancellation()
            let task = fetching.withLock { current -> Task<[SessionActivity], Error> in
                if let current { return current }
                let session = session
                let task = Task { try await session.nextEvents() }
                current = task
                return task
            }
            let result = try await waitCancellably(for: task)
            // The first caller to come back takes the batch; any other waits for the next.
            let mine = fetching.withLock { current -> Bool in
                guard current == task else { return false }
                current = nil
                return true
            }
            if mine { return try result.get() }
        }
    }

    /// Whatever activity is queued now, without waiting.
    public func takeEvents() -> [SessionActivity] {
        session.takeEvents()
    }

    /// Every activity of the session, in order. The sequence ends after the session's
    /// `closed` event, when the connection ends, or when the iterating task is cancelled.
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
                    } catch AcpError.Disconnected {
                        finished = true
                    } catch is CancellationError {
                        finished = true
                    }
                }
                let activity = batch[position]
                position += 1
                if case .event(.closed) = activity { finished = true }
                return activity
            }
        }
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
private final class OnceContinuation<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Error>?
    private var early: Result<T, Error>?
    private var done = false

    func set(_ c: CheckedContinuation<T, Error>) {
        lock.lock()
        if let early {
            done = true
            lock.unlock()
            c.resume(with: early)
            return
        }
        continuation = c
        lock.unlock()
    }

    func resume(with result: Result<T, Error>) {
        lock.lock()
        guard !done else { return lock.unlock() }
        guard let c = continuation else {
            if early == nil { early = result }
            return lock.unlock()
        }
        done = true
        continuation = nil
        lock.unlock()
        c.resume(with: result)
    }
}

/// A value behind a lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Sets the value and returns the old one.
    @discardableResult
    func exchange(_ new: Value) -> Value { withLock { v in defer { v = new }; return v } }
}
