/**
 * The sans-IO cores, for hosts that run their own I/O: [ClientCore] (one client connection,
 * many sessions) and [AgentCore] (the agent side of one agent process). Every call takes and
 * returns this package's values: each is encoded for the library and each result decoded back
 * (docs/encoding.md), and the library's errors are thrown as [AcpException]s. Both are
 * `AutoCloseable`: `use {}` frees the Rust object at once (closing never blocks), else it is
 * freed when the object is collected; a call after [ClientCore.close] throws
 * [IllegalStateException]. Both may be shared between threads.
 */
package dev.acpinject

import dev.acpinject.ffi.AgentCore as FfiAgentCore
import dev.acpinject.ffi.ClientCore as FfiClientCore
import dev.acpinject.ffi.defaultAgentConfig as ffiDefaultAgentConfig
import kotlinx.serialization.json.JsonElement
import java.nio.ByteBuffer
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds

/** [bytes] in a direct buffer (what the library's by-reference byte arguments need). */
internal fun direct(bytes: ByteArray): ByteBuffer = ByteBuffer.allocateDirect(bytes.size).put(bytes).flip()

/** The codec of optional JSON (`nil` for `null`), as host calls' params and results cross. */
internal val OPTIONAL_JSON: ValueCodec<JsonElement?> = Values.codec<JsonElement?>()

/**
 * One client connection to an agent, without I/O: calls queue lines to send ([takeOutgoing])
 * and return their request's id; what the agent writes goes in with [receive] (a line),
 * [receiveBytes] (any chunking) or [receiveText], and comes back as [Event]s. [receiveLine] is
 * the per-line fast path (Lines.kt). Agent lines longer than [maxLineBytes] are refused.
 */
class ClientCore(maxLineBytes: Long = 16L shl 20) : AutoCloseable {
    internal val inner = FfiClientCore(maxLineBytes.coerceAtLeast(0).toULong())

    /** This object's line port for the per-line path, taken on first use (Lines.kt). */
    internal val port: Long by lazy { LinePorts.open(this) }

    @Volatile
    internal var closed = false
        private set

    private fun events(bytes: ByteArray): List<Event> = EventCodec.list.result(bytes, "events")

    private fun id(bytes: ByteArray): RequestId = RequestIdCodec.result(bytes, "request id")

    /** `initialize` as [client]; [pendingUpdates] opts into the pending-list extension. */
    fun initialize(client: Implementation, pendingUpdates: Boolean = true): RequestId =
        id(ffi { inner.initialize(ImplementationCodec.encode(client), pendingUpdates) })

    /** Takes the agent's inject capabilities as known, without `initialize`. */
    fun assumeCapabilities(inject: InjectCapabilities?) = ffi { inner.assumeCapabilities(InjectCapabilitiesCodec.optional.encode(inject)) }

    /** Takes the agent's protocol version (1 or 2) and inject capabilities as known, without
     *  `initialize`. A version 1 agent takes no injects: this client holds queued messages for it. */
    fun assumeAgent(protocolVersion: Int, inject: InjectCapabilities?) =
        ffi { inner.assumeAgent(protocolVersion.toUShort(), InjectCapabilitiesCodec.optional.encode(inject)) }

    /** Takes the agent's whole `initialize` answer as known, without an `initialize` exchange
     *  (a restored app): its version, its `session.inject`, and the extensions its `_meta`
     *  advertises. */
    fun assumeInitialized(agent: InitializeResponse) = ffi { inner.assumeInitialized(InitializeResponseCodec.encode(agent)) }

    /** What to do with a steer when the agent takes no injects; `null` refuses it with
     *  [CallRejected.STEER_NOT_SUPPORTED]. */
    fun setSteerFallback(fallback: SteerFallback?) = ffi { inner.setSteerFallback(SteerFallbackCodec.optional.encode(fallback)) }

    /** The protocol version `initialize` settled (2 until an agent answers 1). */
    val protocolVersion: Int get() = ffi { inner.protocolVersion().toInt() }

    /** Opens a session without `session/new`, restoring its mirror from [mirrorJson] (see [mirrorJson]) or fresh. */
    fun openSession(sessionId: String, mirrorJson: String? = null) = ffi { inner.openSession(sessionId, mirrorJson) }

    /** A session's mirror as JSON, for an app that restarts without resuming. */
    fun mirrorJson(sessionId: String): String? = ffi { inner.mirrorJson(sessionId) }

    /** `session/new`. */
    fun newSession(cwd: String, additionalDirectories: List<String> = emptyList(), mcpServers: List<McpServer> = emptyList()): RequestId =
        id(ffi { inner.newSession(cwd, additionalDirectories, McpServerCodec.list.encode(mcpServers)) })

    /** `session/list`. */
    fun listSessions(cwd: String? = null, cursor: String? = null): RequestId = id(ffi { inner.listSessions(cwd, cursor) })

    /** `session/resume`, with the conversation replayed when [replay]. */
    fun resume(sessionId: String, cwd: String, replay: Boolean = true): RequestId = id(ffi { inner.resume(sessionId, cwd, replay) })

    /** `session/prompt`. */
    fun prompt(sessionId: String, content: List<ContentBlock>): RequestId = id(ffi { inner.prompt(sessionId, ContentBlockCodec.list.encode(content)) })

    /** `session/inject` in [mode]. */
    fun inject(sessionId: String, mode: InjectMode, content: List<ContentBlock>): RequestId =
        id(ffi { inner.inject(sessionId, InjectModeCodec.encode(mode), ContentBlockCodec.list.encode(content)) })

    /** `session/revoke_inject`. */
    fun revoke(sessionId: String, messageId: MessageId): RequestId = id(ffi { inner.revoke(sessionId, messageId) })

    /** `session/replace_inject`. */
    fun replace(sessionId: String, messageId: MessageId, content: List<ContentBlock>): RequestId =
        id(ffi { inner.replace(sessionId, messageId, ContentBlockCodec.list.encode(content)) })

    /** `session/cancel`. */
    fun cancel(sessionId: String) = ffi { inner.cancel(sessionId) }

    /** `session/close`. */
    fun closeSession(sessionId: String): RequestId = id(ffi { inner.close(sessionId) })

    /** `session/status`. */
    fun status(sessionId: String): RequestId = id(ffi { inner.status(sessionId) })

    /** Answers the open `session/request_permission` [request] with [outcome]. */
    fun answerPermission(request: RequestId, outcome: RequestPermissionOutcome) =
        ffi { inner.answerPermission(RequestIdCodec.encode(request), RequestPermissionOutcomeCodec.encode(outcome)) }

    /** Applies one line from the agent; the events it caused. */
    fun receive(line: String): List<Event> = events(ffi { inner.receive(line) })

    /** Applies bytes the agent wrote, in any chunking (a line's end may come in a later call). */
    fun receiveBytes(bytes: ByteArray): List<Event> = events(ffi { inner.feed(direct(bytes)) })

    /** Applies text the agent wrote (one or many lines, in any chunking). */
    fun receiveText(text: String): List<Event> = events(ffi { inner.receiveText(text) })

    /**
     * Applies one line from the agent: exactly what [receive] returns, in one plain call with
     * primitive arguments instead of UniFFI's convention (see Lines.kt). For a client that reads
     * the agent's output line by line and acts on each line at once. A string that is not valid
     * Unicode (a lone surrogate) is [AcpException.InvalidInput], with nothing applied.
     */
    fun receiveLine(line: String): List<Event> = Lines.receive(this, line)

    /** The agent's output ended: a last line without a newline is still read. */
    fun finish(): List<Event> = events(ffi { inner.finish() })

    /** Every line to send to the agent, in order. */
    fun takeOutgoing(): List<String> = ffi { inner.takeOutgoing() }

    /** Every event not yet returned (calls queue events too: an item is `sending`). */
    fun takeEvents(): List<Event> = events(ffi { inner.takeEvents() })

    /** Everything a UI renders for a session (`null` for a session not open here). */
    fun snapshot(sessionId: String): MirrorSnapshot? = MirrorSnapshotCodec.optional.result(ffi { inner.snapshot(sessionId) }, "snapshot")

    /** The status of one of this client's items (`null` for an id that is not one). */
    fun itemStatus(sessionId: String, messageId: MessageId): ItemStatus? =
        ItemStatusCodec.optional.result(ffi { inner.itemStatus(sessionId, messageId) }, "item status")

    /** Lines dropped (malformed, oversized, answers to no request), counted. */
    fun ignoredLines(): Long = ffi { inner.ignoredLines().toLong() }

    /** Frees the Rust object (at once, never blocking); later calls throw [IllegalStateException]. */
    override fun close() {
        closed = true
        inner.close()
    }

    override fun toString(): String = "ClientCore(protocol ${if (closed) "-" else protocolVersion})"
}

/** The default agent configuration: queue and steer, replace, `finish`, batch drain. */
fun defaultAgentConfig(): AgentConfig = AgentConfigCodec.result(ffiDefaultAgentConfig(), "default configuration")

/**
 * The agent side of one agent process (all its sessions), without I/O: a host moves bytes and
 * runs the turns; the core speaks the protocol. Client lines go in with [handleLine] (or
 * [handleText], [handleBytes]), the model loop reports with [runtimeEvent], and both return
 * what to do as [Output]s: [Line]s to write to connections, [Action]s for the model loop, and
 * [HostCallMade]s, what a connection asks of the host itself (a login with one of
 * [AgentConfig.auth]'s methods, an extension of [AgentConfig.extensions]), for the host to
 * answer with [answerCall] or [refuseCall].
 */
class AgentCore private constructor(internal val inner: FfiAgentCore) : AutoCloseable {
    /** An agent keeping sessions in memory. */
    constructor(config: AgentConfig = defaultAgentConfig()) : this(ffi { FfiAgentCore(AgentConfigCodec.encode(config)) })

    companion object {
        /** An agent on a store at [path]: a SQLite file (created if missing), or a `postgres://`
         *  URL several agent hosts share. Its sessions outlive the process. */
        fun open(config: AgentConfig, path: String): AgentCore = AgentCore(ffi { FfiAgentCore.open(AgentConfigCodec.encode(config), path) })

        /** An agent continuing from [AgentCore.snapshot] (history starts empty). */
        fun restore(config: AgentConfig, snapshot: String): AgentCore =
            AgentCore(ffi { FfiAgentCore.restore(AgentConfigCodec.encode(config), snapshot) })
    }

    private fun outputs(bytes: ByteArray): List<Output> = OutputCodec.list.result(bytes, "outputs")

    /** Registers a connection with a role, speaking for [principal] when given: it sees the
     *  sessions that principal created and no other (another principal's session is answered
     *  as one the agent does not know). */
    fun attach(connection: String, role: ConnectionRole, principal: String? = null) =
        ffi { inner.attachAs(connection, ConnectionRoleCodec.encode(role), principal) }

    /** A connection went away: detached from every session; its open requests are answered
     *  `cancelled` with the next call's outputs (or use [detachAndDrain]). */
    fun detach(connection: String) = ffi { inner.detach(connection) }

    /** Like [detach], returning the outputs it caused. */
    fun detachAndDrain(connection: String): List<Output> = outputs(ffi { inner.detachAndDrain(connection) })

    /** Attaches a connection to a live session; `false` when the session is not live. */
    fun attachToSession(connection: String, sessionId: String): Boolean = ffi { inner.attachToSession(connection, sessionId) }

    /** The connections attached to a session. */
    fun attached(sessionId: String): List<String> = ffi { inner.attached(sessionId) }

    /** Creates an idle session with a chosen id; `false` when the id is taken. */
    fun createSession(sessionId: String, cwd: String): Boolean = ffi { inner.createSession(sessionId, cwd) }

    /** Forgets a session and its history. */
    fun forgetSession(sessionId: String) = ffi { inner.forgetSession(sessionId) }

    /** Whether the agent holds the session live. */
    fun isLive(sessionId: String): Boolean = ffi { inner.isLive(sessionId) }

    /** On a store several hosts share: how often to call [renewLeases]; `null` otherwise. */
    fun renewEvery(): Duration? = ffi { inner.renewEveryMs()?.toLong()?.milliseconds }

    /** On a store several hosts share: extends this host's leases. An error means another host
     *  took one of its sessions over: stop serving. */
    fun renewLeases() = ffi { inner.renewLeases() }

    /** The live sessions. */
    fun sessionIds(): List<String> = ffi { inner.sessionIds() }

    /** A live session's turn (`null` for a session that is not live). */
    fun turn(sessionId: String): TurnPhase? = TurnPhaseCodec.optional.result(ffi { inner.turn(sessionId) }, "turn")

    /** Applies one line from [connection]; every output it caused, in order. */
    fun handleLine(connection: String, line: String): List<Output> = outputs(ffi { inner.handleLine(connection, line) })

    /** Applies newline-separated lines given as one string. */
    fun handleText(connection: String, lines: String): List<Output> = outputs(ffi { inner.handleText(connection, lines) })

    /** Feeds raw bytes from [connection] in any chunking (a partial line waits for the next call). */
    fun handleBytes(connection: String, bytes: ByteArray): List<Output> = outputs(ffi { inner.handleBytes(connection, direct(bytes)) })

    /** [connection]'s stream ended: a last line without a newline is applied. */
    fun handleEnd(connection: String): List<Output> = outputs(ffi { inner.handleEnd(connection) })

    /** Asks the session's controllers for permission: the core sends `session/request_permission`
     *  and returns its id with the outputs; the answer arrives later as a
     *  [PermissionAnswered] action with that id. */
    fun requestPermission(sessionId: String, ask: PermissionAsk): PermissionRequestSent =
        PermissionRequestSentCodec.result(ffi { inner.requestPermission(sessionId, PermissionAskCodec.encode(ask)) }, "permission request")

    /** Applies a runtime event of a session; every output it caused. [AcpException.Host] when
     *  the core cannot apply it. */
    fun runtimeEvent(sessionId: String, event: RuntimeEvent): List<Output> =
        outputs(ffi { inner.runtimeEvent(sessionId, RuntimeEventCodec.encode(event)) })

    /** Answers the host call [id] (a [HostCallMade] output) with [result], JSON (for an
     *  [Authenticate] call any value, `null` too: the connection is logged in); every output it
     *  caused. [AcpException.Host] ([HostError.UNKNOWN_REQUEST]) when the call is not open (a
     *  notification's call never is: it wants no answer). */
    fun answerCall(id: Long, result: JsonElement? = null): List<Output> =
        outputs(ffi { inner.answerCall(id.toULong(), OPTIONAL_JSON.encode(result)) })

    /** Refuses the host call [id] with [error], the JSON-RPC error the client gets
     *  (`TurnFailure(-32000, "Authentication required")` for credentials that do not check
     *  out, say); every output it caused. [AcpException.Host] as for [answerCall]. */
    fun refuseCall(id: Long, error: TurnFailure): List<Output> =
        outputs(ffi { inner.refuseCall(id.toULong(), TurnFailureCodec.encode(error)) })

    /** A fresh id for an agent message or thought. */
    fun mintAgentMessageId(): MessageId = ffi { inner.mintAgentMessageId() }

    /** The session's history, as stored. */
    fun history(sessionId: String): List<HistoryEntry> = HistoryEntryCodec.list.result(ffi { inner.history(sessionId) }, "history")

    /** The session's pending injects in delivery order. */
    fun pending(sessionId: String): List<PendingInject> = PendingInjectCodec.list.result(ffi { inner.pending(sessionId) }, "pending injects")

    /** The live state as JSON, for [restore]. */
    fun snapshot(): String = ffi { inner.snapshot() }

    /** Frees the Rust object (at once); later calls throw [IllegalStateException]. */
    override fun close() = inner.close()

    override fun toString(): String = "AgentCore"
}
