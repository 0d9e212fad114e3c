// The sans-IO cores, for hosts that run their own I/O: `ClientCore` (one client connection:
// calls queue lines to send, received lines produce events) and `AgentCore` (an agent's
// sessions: lines in, outputs out). Every call is synchronous and atomic, safe from any thread.
import AcpInjectFFI
import AcpInjectLines
import Foundation

/// One client connection to an agent, without I/O: calls queue lines to send
/// (``takeOutgoing()``), lines the agent wrote produce ``Event``s (``receive(line:)``).
///
/// ```swift
/// let core = ClientCore()
/// let request = try core.initialize(client: Implementation(name: "my-app", version: "1.0"))
/// for line in try core.takeOutgoing() { write(line) }
/// for event in try core.receive(line: readLine()) { … }   // .answered(Answered(request: request, …))
/// ```
public final class ClientCore: Sendable {
    let core: AcpInjectFFI.ClientCore
    /// The connection's handle for the per-line C functions (crates/ffi/src/lines.rs), freed
    /// with the object.
    private let port: UInt64

    /// A connection refusing agent lines longer than `maxLineBytes`.
    public init(maxLineBytes: Int = 16 << 20) {
        core = AcpInjectFFI.ClientCore(maxLineBytes: UInt64(max(0, maxLineBytes)))
        port = core.linePort()
    }

    deinit {
        acp_inject_line_port_free(port)
    }

    /// `initialize` as `client`; `pendingUpdates` opts into the pending-list extension. The
    /// request's id (its answer is an ``Event/answered(_:)`` with this id).
    public func initialize(client: Implementation, pendingUpdates: Bool = true) throws -> RequestId {
        try result(RequestId.self, call { try core.initialize(client: arg(client), pendingUpdates: pendingUpdates) })
    }

    /// Takes the agent's whole `initialize` answer as known, without an `initialize` exchange (a
    /// restored app): its version, its `session.inject`, and the extensions its `_meta`
    /// advertises (steering, C-STEERING-1).
    public func assumeInitialized(agent: InitializeResponse) throws {
        try call { try core.assumeInitialized(agent: arg(agent)) }
    }

    /// Takes the agent's inject capabilities as known, without `initialize` (read tolerantly,
    /// as an `initialize` answer's are: a `steer` without `steerInStream` is accepted).
    public func assumeCapabilities(inject: InjectCapabilities?) throws {
        try call { try core.assumeCapabilities(inject: arg(inject)) }
    }

    /// Takes the agent's protocol version (1 or 2) and inject capabilities as known, without
    /// `initialize`. A version 1 agent takes no injects: this client holds queued messages for
    /// it (C-HELD-1).
    public func assumeAgent(protocolVersion: Int, inject: InjectCapabilities?) throws {
        guard let version = UInt16(exactly: protocolVersion) else {
            throw AcpError.invalidInput(detail: "protocol version \(protocolVersion) is out of range")
        }
        try call { try core.assumeAgent(protocolVersion: version, inject: arg(inject)) }
    }

    /// What to do with a steer when the agent takes no injects (C-HELD-3); `nil` refuses it
    /// with `CallRejected.steerNotSupported`.
    public func setSteerFallback(_ fallback: SteerFallback?) throws {
        try call { try core.setSteerFallback(fallback: arg(fallback)) }
    }

    /// The protocol version `initialize` settled (2 until an agent answers 1).
    public var protocolVersion: Int { Int(core.protocolVersion()) }

    /// Opens a session without `session/new` (restoring a mirror from `mirrorJson`, or fresh).
    public func openSession(sessionId: SessionId, mirrorJson: String? = nil) throws {
        try call { try core.openSession(sessionId: sessionId, mirrorJson: mirrorJson) }
    }

    /// A session's mirror as JSON, for an app that restarts without resuming.
    public func mirrorJson(sessionId: SessionId) throws -> String? {
        try call { try core.mirrorJson(sessionId: sessionId) }
    }

    /// `session/new`; the request's id.
    public func newSession(cwd: String, additionalDirectories: [String] = [], mcpServers: [McpServer] = []) throws -> RequestId {
        try result(RequestId.self, call { try core.newSession(cwd: cwd, additionalDirectories: additionalDirectories, mcpServers: arg(mcpServers)) })
    }

    /// `session/list`; the request's id.
    public func listSessions(cwd: String? = nil, cursor: String? = nil) throws -> RequestId {
        try result(RequestId.self, call { try core.listSessions(cwd: cwd, cursor: cursor) })
    }

    /// `session/resume`; the request's id.
    public func resume(sessionId: SessionId, cwd: String, replay: Bool = true) throws -> RequestId {
        try result(RequestId.self, call { try core.resume(sessionId: sessionId, cwd: cwd, replay: replay) })
    }

    /// `session/prompt`; the request's id.
    public func prompt(sessionId: SessionId, content: some ContentConvertible) throws -> RequestId {
        try result(RequestId.self, call { try core.prompt(sessionId: sessionId, content: arg(content.contentBlocks)) })
    }

    /// `session/inject` in `mode`; the request's id.
    public func inject(sessionId: SessionId, mode: InjectMode = .queue, content: some ContentConvertible) throws -> RequestId {
        try result(RequestId.self, call { try core.inject(sessionId: sessionId, mode: arg(mode), content: arg(content.contentBlocks)) })
    }

    /// `session/revoke_inject`; the request's id.
    public func revoke(sessionId: SessionId, messageId: MessageId) throws -> RequestId {
        try result(RequestId.self, call { try core.revoke(sessionId: sessionId, messageId: messageId) })
    }

    /// `session/replace_inject`; the request's id.
    public func replace(sessionId: SessionId, messageId: MessageId, content: some ContentConvertible) throws -> RequestId {
        try result(RequestId.self, call { try core.replace(sessionId: sessionId, messageId: messageId, content: arg(content.contentBlocks)) })
    }

    /// `session/cancel`.
    public func cancel(sessionId: SessionId) throws {
        try call { try core.cancel(sessionId: sessionId) }
    }

    /// `session/close`; the request's id.
    public func close(sessionId: SessionId) throws -> RequestId {
        try result(RequestId.self, call { try core.close(sessionId: sessionId) })
    }

    /// `session/status`; the request's id.
    public func status(sessionId: SessionId) throws -> RequestId {
        try result(RequestId.self, call { try core.status(sessionId: sessionId) })
    }

    /// Answers the agent's open `session/request_permission` `request`.
    public func answerPermission(request: RequestId, outcome: RequestPermissionOutcome) throws {
        try call { try core.answerPermission(request: arg(request), outcome: arg(outcome)) }
    }

    /// Applies one line from the agent (a trailing `\n` or `\r\n` is dropped); the events it
    /// caused.
    ///
    /// The per-line path: one plain C call with the line's bytes in place, the events written
    /// into a buffer on the stack and decoded from there.
    public func receive(line: String) throws -> [Event] {
        var line = line
        return try line.withUTF8 { utf8 in
            try lineCall { out in
                acp_inject_line_port_receive_into(port, utf8.baseAddress, UInt64(utf8.count), out.baseAddress, UInt64(out.count))
            }
        }
    }

    /// Applies bytes the agent wrote, in any chunking (a line's end may come in a later call);
    /// the events they caused.
    public func receive(bytes: Data) throws -> [Event] {
        try bytes.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return try lineCall { out in
                acp_inject_line_port_feed_into(port, bytes.baseAddress, UInt64(bytes.count), out.baseAddress, UInt64(out.count))
            }
        }
    }

    /// Runs a per-line C call writing into a stack buffer (or, when its events do not fit, a
    /// buffer of their size, from the library's spill) and decodes the events.
    private func lineCall(_ body: (UnsafeMutableBufferPointer<UInt8>) -> Int64) throws -> [Event] {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 << 10) { out in
            let n = body(out)
            if n >= 0 { return try events(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[..<Int(n)])) }
            // lines.rs's PANICKED and NOT_UTF8.
            if n == Int64.min { throw AcpError.internal(detail: "a panic in the library while receiving a line") }
            if n == Int64.min + 1 { throw AcpError.invalidInput(detail: "the line is not UTF-8") }
            var spilled = [UInt8](repeating: 0, count: Int(-n))
            let taken = spilled.withUnsafeMutableBufferPointer { acp_inject_take_spilled($0.baseAddress, UInt64($0.count)) }
            guard taken == -n else { throw AcpError.internal(detail: "the library's spilled events are gone") }
            return try spilled.withUnsafeBytes { try events($0) }
        }
    }

    private func events(_ bytes: UnsafeRawBufferPointer) throws -> [Event] {
        do {
            return try Boundary.decode([Event].self, from: bytes)
        } catch {
            throw AcpError.internal(detail: "the library's answer is not a [Event]: \(error)")
        }
    }

    /// Applies text the agent wrote, in any chunking, like ``receive(bytes:)``.
    public func receive(text: String) throws -> [Event] {
        var text = text
        return try text.withUTF8 { utf8 in
            try lineCall { out in
                acp_inject_line_port_feed_into(port, utf8.baseAddress, UInt64(utf8.count), out.baseAddress, UInt64(out.count))
            }
        }
    }

    /// The agent's output ended: a last line without a newline is still read. The events.
    public func finish() throws -> [Event] {
        try result([Event].self, call { try core.finish() })
    }

    /// Every line to send to the agent, in order.
    public func takeOutgoing() throws -> [String] {
        try call { try core.takeOutgoing() }
    }

    /// Every event not yet returned (calls queue events too: an item is `sending`).
    public func takeEvents() throws -> [Event] {
        try result([Event].self, call { try core.takeEvents() })
    }

    /// Everything a UI renders for a session (`nil` for a session not open here).
    public func snapshot(sessionId: SessionId) throws -> MirrorSnapshot? {
        try result(MirrorSnapshot?.self, call { try core.snapshot(sessionId: sessionId) })
    }

    /// The status of one of this client's items (`nil` for an id it does not know).
    public func itemStatus(sessionId: SessionId, messageId: MessageId) throws -> ItemStatus? {
        try result(ItemStatus?.self, call { try core.itemStatus(sessionId: sessionId, messageId: messageId) })
    }

    /// Lines dropped (malformed, oversized, answers to no request), counted.
    public func ignoredLines() throws -> Int {
        Int(clamping: try call { try core.ignoredLines() })
    }
}

/// The agent side of the protocol for one agent process (all its sessions), without I/O: a
/// host moves each connection's bytes in (``handleLine(connection:line:)``, ``handleBytes(connection:bytes:)``)
/// and delivers every ``Output`` out (lines to connections, actions to the runtime of a session,
/// calls for the host itself: a login or an extension method, answered with
/// ``answerCall(id:result:)`` or ``refuseCall(id:error:)``).
public final class AgentCore: Sendable {
    let core: AcpInjectFFI.AgentCore

    private init(_ core: AcpInjectFFI.AgentCore) { self.core = core }

    /// An agent keeping sessions in memory, configured by `config`.
    ///
    /// - Throws: `AcpError.config` for a configuration it refuses.
    public convenience init(config: AgentConfig = defaultAgentConfig()) throws {
        self.init(try call { try AcpInjectFFI.AgentCore(config: arg(config)) })
    }

    /// An agent on a store at `path`: a SQLite file (created if missing), or a `postgres://`
    /// URL several agent hosts share. Its sessions outlive the process.
    public static func open(config: AgentConfig, path: String) throws -> AgentCore {
        AgentCore(try call { try AcpInjectFFI.AgentCore.open(config: arg(config), path: path) })
    }

    /// An agent continuing from ``snapshot()`` (history starts empty).
    public static func restore(config: AgentConfig, snapshot: String) throws -> AgentCore {
        AgentCore(try call { try AcpInjectFFI.AgentCore.restore(config: arg(config), snapshot: snapshot) })
    }

    /// Registers a connection with a role, speaking for `principal` when given: it sees the
    /// sessions that principal created and no other (another principal's session is answered
    /// as one the agent does not know).
    public func attach(connection: String, role: ConnectionRole, principal: String? = nil) throws {
        try call { try core.attachAs(connection: connection, role: arg(role), principal: principal) }
    }

    /// A connection went away: it is detached from every session (drain what it caused with
    /// the next call, or use ``detachAndDrain(connection:)``).
    public func detach(connection: String) throws {
        try call { try core.detach(connection: connection) }
    }

    /// Like ``detach(connection:)``, returning the outputs it caused.
    public func detachAndDrain(connection: String) throws -> [Output] {
        try result([Output].self, call { try core.detachAndDrain(connection: connection) })
    }

    /// Attaches a connection to a live session; `false` when the session is not live.
    public func attachToSession(connection: String, sessionId: SessionId) throws -> Bool {
        try call { try core.attachToSession(connection: connection, sessionId: sessionId) }
    }

    /// The connections attached to a session.
    public func attached(sessionId: SessionId) throws -> [String] {
        try call { try core.attached(sessionId: sessionId) }
    }

    /// Creates an idle session with a chosen id; `false` when the id is taken.
    public func createSession(sessionId: SessionId, cwd: String) throws -> Bool {
        try call { try core.createSession(sessionId: sessionId, cwd: cwd) }
    }

    /// Forgets a session and its history.
    public func forgetSession(sessionId: SessionId) throws {
        try call { try core.forgetSession(sessionId: sessionId) }
    }

    /// Whether the agent holds the session live (R-STATUS-1).
    public func isLive(sessionId: SessionId) throws -> Bool {
        try call { try core.isLive(sessionId: sessionId) }
    }

    /// On a store several hosts share: how often to call ``renewLeases()``, in milliseconds.
    public func renewEveryMs() throws -> Int? {
        try call { try core.renewEveryMs() }.map { Int(clamping: $0) }
    }

    /// On a store several hosts share: extends this host's leases.
    public func renewLeases() throws {
        try call { try core.renewLeases() }
    }

    /// The live sessions.
    public func sessionIds() throws -> [SessionId] {
        try call { try core.sessionIds() }
    }

    /// A live session's turn state (`nil` for a session that is not live).
    public func turn(sessionId: SessionId) throws -> TurnPhase? {
        try result(TurnPhase?.self, call { try core.turn(sessionId: sessionId) })
    }

    /// Applies one line from `connection`; every output it caused, in order.
    public func handleLine(connection: String, line: String) throws -> [Output] {
        try result([Output].self, call { try core.handleLine(connection: connection, line: line) })
    }

    /// Applies newline-separated lines; every output, in order.
    public func handleText(connection: String, lines: String) throws -> [Output] {
        try result([Output].self, call { try core.handleText(connection: connection, lines: lines) })
    }

    /// Feeds bytes from `connection` in any chunking; every output, in order.
    public func handleBytes(connection: String, bytes: Data) throws -> [Output] {
        try result([Output].self, call { try core.handleBytes(connection: connection, bytes: bytes) })
    }

    /// `connection`'s stream ended: a last line without a newline is applied. Every output.
    public func handleEnd(connection: String) throws -> [Output] {
        try result([Output].self, call { try core.handleEnd(connection: connection) })
    }

    /// Asks the session's controllers for permission (R-PERM-2): the request's id and the
    /// outputs; the answer arrives later as a `RuntimeAction.permissionAnswered` with that id.
    public func requestPermission(sessionId: SessionId, ask: PermissionAsk) throws -> PermissionRequestSent {
        try result(PermissionRequestSent.self, call { try core.requestPermission(sessionId: sessionId, ask: arg(ask)) })
    }

    /// Applies a runtime event of a session; every output it caused.
    ///
    /// - Throws: `AcpError.host` when the core cannot apply it (nothing was emitted).
    public func runtimeEvent(sessionId: SessionId, event: RuntimeEvent) throws -> [Output] {
        try result([Output].self, call { try core.runtimeEvent(sessionId: sessionId, event: arg(event)) })
    }

    /// Answers the host call `id` (an ``Output/call(_:)``'s ``HostCallMade/id``) with `result`,
    /// any JSON (for an `.authenticate` call any value: the connection is logged in); every
    /// output it caused (the answer's line, to the connection that asked).
    ///
    /// - Throws: `AcpError.host` (`.unknownRequest`) when the call is not open.
    public func answerCall(id: Int, result: JSONValue = .null) throws -> [Output] {
        let id = try callId(id)
        return try AcpInject.result([Output].self, call { try core.answerCall(id: id, result: arg(result)) })
    }

    /// Refuses the host call `id` with `error`, the JSON-RPC error the client gets
    /// (`TurnFailure(code: -32000, message: "Authentication required")` for credentials that do
    /// not check out, say); every output it caused.
    ///
    /// - Throws: `AcpError.host` (`.unknownRequest`) when the call is not open.
    public func refuseCall(id: Int, error: TurnFailure) throws -> [Output] {
        let id = try callId(id)
        return try result([Output].self, call { try core.refuseCall(id: id, error: arg(error)) })
    }

    private func callId(_ id: Int) throws -> UInt64 {
        guard let id = UInt64(exactly: id) else { throw AcpError.invalidInput(detail: "call id \(id) is out of range") }
        return id
    }

    /// A fresh id for an agent message or thought.
    public func mintAgentMessageId() throws -> MessageId {
        try call { try core.mintAgentMessageId() }
    }

    /// The session's history (R-REPLAY-1), as stored.
    public func history(sessionId: SessionId) throws -> [HistoryEntry] {
        try result([HistoryEntry].self, call { try core.history(sessionId: sessionId) })
    }

    /// The session's pending injects, in delivery order.
    public func pending(sessionId: SessionId) throws -> [PendingInject] {
        try result([PendingInject].self, call { try core.pending(sessionId: sessionId) })
    }

    /// The live state as JSON, for ``restore(config:snapshot:)``.
    public func snapshot() throws -> String {
        try call { try core.snapshot() }
    }
}
