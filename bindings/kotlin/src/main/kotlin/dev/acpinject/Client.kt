/**
 * The coroutine client: one connection to an agent (a process over stdio, or an endpoint over
 * the network), many sessions on it.
 *
 * The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust on the
 * library's own threads; each call here is one `suspend` call. Each session's activity is read
 * by one coroutine in the connection's scope, which hands every activity to the session's
 * stream ([ClientSession.events]) and to each of its turns ([PromptTurn.updates]): each sees all
 * of it. Closing the connection cancels that scope.
 *
 * ```kotlin
 * connect(listOf("my-agent", "--flag"), onPermission = { request -> request.options.first().optionId }).use { agent ->
 *     val session = agent.newSession("/home/me/project")
 *     val turn = session.prompt("fix the bug")
 *     session.inject("and add a test", InjectMode.STEER)
 *     turn.updates().collect { update -> println(update) }   // the turn's updates, until it ends
 *     println(turn.finished())                               // its stop reason
 * }
 * ```
 */
package dev.acpinject

import dev.acpinject.ffi.Connection as FfiConnection
import dev.acpinject.ffi.Session as FfiSession
import dev.acpinject.ffi.connect as ffiConnect
import dev.acpinject.ffi.connectUrl as ffiConnectUrl
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.JsonElement
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** Answers the agent's permission requests: given the request, the id of the option the user
 *  chose, or `null` to decline (the request is answered `cancelled`). */
typealias PermissionHandler = suspend (RequestPermissionRequest) -> String?

private fun options(
    name: String,
    version: String,
    handshakeTimeout: Duration,
    closeGrace: Duration,
    pendingUpdates: Boolean,
    maxLineBytes: Long,
    forwardStderr: Boolean,
    steerFallback: SteerFallback?,
): ByteArray = ConnectOptionsCodec.encode(
    ConnectOptions(
        client = Implementation(name = name, version = version),
        pendingUpdates = pendingUpdates,
        maxLineBytes = maxLineBytes,
        handshakeTimeoutMs = handshakeTimeout.inWholeMilliseconds,
        closeGraceMs = closeGrace.inWholeMilliseconds,
        forwardStderr = forwardStderr,
        steerFallback = steerFallback,
    ),
)

/**
 * Starts [command] (program and arguments) and connects to it over its stdio; `initialize` is
 * exchanged before this returns, announcing this client as [name] [version]. Throws
 * [AcpException.Disconnected] when the agent cannot be started or exits (with its exit status
 * and the end of its stderr).
 *
 * [handshakeTimeout] bounds `initialize`; [closeGrace] is how long [Client.close] waits for the
 * agent to exit before killing it; [pendingUpdates] opts into the agent's pending-list
 * extension; agent lines longer than [maxLineBytes] are refused; [forwardStderr] copies the
 * agent's stderr to this process's; [steerFallback] is what to do with a steer when the agent
 * takes no injects (`null` refuses it with [CallRejected.STEER_NOT_SUPPORTED]);
 * [onPermission] answers the agent's permission requests in every session.
 */
suspend fun connect(
    command: List<String>,
    name: String = "acp-inject-kotlin",
    version: String = "0",
    handshakeTimeout: Duration = 30.seconds,
    closeGrace: Duration = 2.seconds,
    pendingUpdates: Boolean = true,
    maxLineBytes: Long = 16L shl 20,
    forwardStderr: Boolean = true,
    steerFallback: SteerFallback? = null,
    onPermission: PermissionHandler? = null,
): Client {
    val options = options(name, version, handshakeTimeout, closeGrace, pendingUpdates, maxLineBytes, forwardStderr, steerFallback)
    return Client(ffi { ffiConnect(command, options) }, onPermission)
}

/**
 * Connects to an agent by [url] over the network: `ws://` or `wss://` over WebSocket, `http://`
 * or `https://` over Streamable HTTP (the upstream remote transport; the `/acp` path included).
 * With [token], every request carries `Authorization: Bearer <token>`. `initialize` is exchanged
 * before this returns; the [Client] then works as one over stdio (the other arguments as for
 * [connect] by command). Over Streamable HTTP a session's stream that dies is reopened by the
 * client from the last event it read. Over WebSocket a dropped network fails calls with
 * [AcpException.Disconnected]: connect again and [Client.resume] each session with replay (its
 * turns went on in the agent; the replay brings back the transcript and the pending list).
 */
suspend fun connect(
    url: String,
    token: String? = null,
    name: String = "acp-inject-kotlin",
    version: String = "0",
    handshakeTimeout: Duration = 30.seconds,
    pendingUpdates: Boolean = true,
    maxLineBytes: Long = 16L shl 20,
    steerFallback: SteerFallback? = null,
    onPermission: PermissionHandler? = null,
): Client {
    val options = options(name, version, handshakeTimeout, 2.seconds, pendingUpdates, maxLineBytes, true, steerFallback)
    return Client(ffi { ffiConnectUrl(url, token, options) }, onPermission)
}

/**
 * A connection to one agent, a process or an endpoint (see [connect]). [close] ends it (a
 * process's stdin closes, it may exit, and after the close grace it is killed; a network
 * connection is ended with the agent) and cancels the coroutines reading its sessions; [use]
 * closes it at the end of a block. It is not `AutoCloseable`: closing waits for the agent,
 * which a coroutine does by suspending, never by blocking its thread.
 */
class Client internal constructor(
    private val connection: FfiConnection,
    /** Answers the agent's permission requests in every session this client opens (see
     *  [ClientSession.onPermission]). */
    @Volatile var onPermission: PermissionHandler? = null,
) {
    /** The scope of this connection's coroutines (the sessions' readers, the permission
     *  handlers' calls): cancelled by [close]. */
    internal val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default + CoroutineName("acp-inject connection"))

    private val closed = AtomicBoolean(false)

    /** The agent's `initialize` answer: protocol version, identity, capabilities. */
    val agent: InitializeResponse = InitializeResponseCodec.result(connection.agent(), "initialize answer")

    /** What the agent offers for `session/inject` (`null`: no inject). */
    val inject: InjectCapabilities? get() = agent.capabilities?.session?.inject

    /** The agent's `authMethods` ([AuthMethodAgent], [AuthMethodTerminal], or an
     *  [OtherAuthMethod] of a type this version does not know); empty when it needs none. */
    val authMethods: List<AuthMethod> get() = agent.authMethods.orEmpty()

    /** `session/new`. */
    suspend fun newSession(
        cwd: String,
        additionalDirectories: List<String> = emptyList(),
        mcpServers: List<McpServer> = emptyList(),
    ): ClientSession = ClientSession(ffi { connection.newSession(cwd, additionalDirectories, McpServerCodec.list.encode(mcpServers)) }, this)

    /** `session/list`: one page, and the cursor of the next (`null` at the end). */
    suspend fun listSessions(cwd: String? = null, cursor: String? = null): SessionPage =
        SessionPageCodec.result(ffi { connection.listSessions(cwd, cursor) }, "session page")

    /** Every session the agent knows, newest first, page after page. */
    fun sessions(cwd: String? = null): Flow<SessionInfo> = flow {
        var cursor: String? = null
        do {
            val page = listSessions(cwd, cursor)
            page.sessions.forEach { emit(it) }
            cursor = page.nextCursor
        } while (cursor != null)
    }

    /** `session/resume`; with [replay] the conversation is replayed into the session (its
     *  transcript and its stream of activity) before this returns. */
    suspend fun resume(sessionId: String, cwd: String, replay: Boolean = true): ClientSession =
        ClientSession(ffi { connection.resume(sessionId, cwd, replay) }, this)

    /** `auth/login` with one of [authMethods] (`authenticate` to a version 1 agent);
     *  [AcpException.Rejected] without sending for a method the agent does not advertise. What
     *  the agent refused with [AcpException.AuthRequired] may be called again afterwards. */
    suspend fun authenticate(methodId: String): Unit = ffi { connection.authenticate(methodId) }

    /** `auth/logout`. */
    suspend fun logout(): Unit = ffi { connection.logout() }

    /** A request of an extension ([method] starts with `_`) with [params] (an object or an
     *  array); the agent's result. */
    suspend fun extRequest(method: String, params: JsonElement? = null): JsonElement =
        JSON.result(ffi { connection.extRequest(method, OPTIONAL_JSON.encode(params)) }, "extension result")

    /** A notification of an extension ([method] starts with `_`) with [params]. */
    fun extNotify(method: String, params: JsonElement? = null): Unit = ffi { connection.extNotify(method, OPTIONAL_JSON.encode(params)) }

    /** The agent's notifications this library does not handle itself (an extension's, or a
     *  method this version does not know), in order, until the connection ends. One queue:
     *  collect it from one place at a time. */
    fun notifications(): Flow<Notification> = flow {
        while (true) {
            val next = try {
                EventCodec.result(ffi { connection.nextNotification() }, "notification")
            } catch (e: AcpException.Disconnected) {
                break
            }
            if (next is Notification) emit(next)
        }
    }

    /** Agent lines the connection could not use, most recent last. */
    val ignored: List<String> get() = connection.ignored()

    /** Whether [close] was called. */
    val isClosed: Boolean get() = closed.get()

    /**
     * Ends the connection, suspending until it has: the agent's stdin closes, it may exit, else
     * it is killed after the close grace; the sessions' streams end and the coroutines of this
     * connection are cancelled. Idempotent; a session's calls afterwards throw
     * [AcpException.Disconnected], the client's own [IllegalStateException].
     */
    suspend fun close() {
        if (!closed.compareAndSet(false, true)) return
        try {
            withContext(NonCancellable) { ffi { connection.shutdown() } }
        } finally {
            scope.cancel()
            connection.destroy()
        }
    }

    private val label = agent.info.let { "Client(agent=${it.name} ${it.version})" }

    override fun toString(): String = label

    private companion object {
        val JSON: ValueCodec<JsonElement> = Values.codec<JsonElement>()
    }
}

/** Runs [block] with this client, then [closes][Client.close] it, also when [block] throws. */
suspend inline fun <R> Client.use(block: (Client) -> R): R {
    try {
        return block(this)
    } finally {
        withContext(NonCancellable) { close() }
    }
}

/**
 * A session open on a [Client]. Safe to call from any thread or coroutine.
 *
 * Its activity ([SessionActivity]: the agent's updates, this client's items changing status,
 * violations, permission requests) is read by one coroutine of the connection, from the
 * session's start until the connection ends, and handed to two kinds of reader, each of which
 * sees all of it:
 *
 * - the session's stream, [events] and [nextEvents]: one queue, in order; a collector takes
 *   what it collects, and what it leaves (a `first { … }` that stopped) stays for the next one,
 *   so read it from one place at a time;
 * - each [PromptTurn] ([prompt]), which keeps its own copy of the turn's updates.
 *
 * With [onPermission] set, permission requests are answered by it and do not enter the stream.
 */
class ClientSession internal constructor(
    private val inner: FfiSession,
    private val client: Client,
) {
    /** The session's id. */
    val id: String = inner.id()

    /** Answers the agent's permission requests as they arrive (`null`: they arrive as
     *  [PermissionRequested] activities in [events], to answer with [allow]). */
    @Volatile var onPermission: PermissionHandler? = client.onPermission

    private val stream = Channel<SessionActivity>(Channel.UNLIMITED)
    private val turns = CopyOnWriteArrayList<PromptTurn>()

    /** Why the reader stopped, once it has (turns registered later fail with it). */
    @Volatile private var over: Throwable? = null

    init {
        client.scope.launch { read() }
    }

    private suspend fun read() {
        var failure: Throwable? = null
        try {
            while (true) {
                val batch = try {
                    SessionActivityCodec.list.result(ffi { inner.nextEvents() }, "session activity")
                } catch (e: AcpException.Disconnected) {
                    break
                }
                for (activity in batch) {
                    for (turn in turns) turn.see(activity)
                    val handler = onPermission
                    if (activity is PermissionRequested && handler != null) {
                        client.scope.launch { answer(activity, handler) }
                    } else {
                        stream.trySend(activity)
                    }
                }
            }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Throwable) {
            failure = e
        } finally {
            val ended = failure ?: AcpException.Disconnected("the connection ended before the turn did")
            over = ended
            stream.close(failure)
            for (turn in turns) turn.fail(ended)
        }
    }

    internal fun forget(turn: PromptTurn) {
        turns.remove(turn)
    }

    /** `session/prompt`: returns once the message is inserted, with a handle on the turn it
     *  opens ([PromptTurn]: its [PromptTurn.messageId], `null` from an agent that answers `{}`;
     *  [PromptTurn.updates] and [PromptTurn.finished]). During a turn an agent on this toolkit
     *  holds it and inserts it when the turn ends (so this returns then; [AcpException.Protocol]
     *  with code -32800 if it is never inserted); an agent of an older draft may refuse it with
     *  reason [ErrorReason.TURN_IN_PROGRESS]. [inject] says when a message mid-turn is delivered. */
    suspend fun prompt(content: List<ContentBlock>): PromptTurn {
        // Registered before the prompt goes out: the turn sees its own start whenever it comes.
        val turn = PromptTurn(this)
        turns += turn
        over?.let { turn.fail(it) }
        try {
            turn.started(OPTIONAL_ID.result(ffi { inner.prompt(ContentBlockCodec.list.encode(content)) }, "message id"))
        } catch (e: Throwable) {
            turns.remove(turn)
            throw e
        }
        return turn
    }

    /** [prompt] with one text block. */
    suspend fun prompt(text: String): PromptTurn = prompt(listOf(text(text)))

    /** `session/inject` (`queue` by default, or `steer`); returns the message's id. Throws
     *  [AcpException.Rejected] without sending when the agent does not offer the mode. */
    suspend fun inject(content: List<ContentBlock>, mode: InjectMode = InjectMode.QUEUE): MessageId =
        ffi { inner.inject(InjectModeCodec.encode(mode), ContentBlockCodec.list.encode(content)) }

    /** [inject] with one text block. */
    suspend fun inject(text: String, mode: InjectMode = InjectMode.QUEUE): MessageId = inject(listOf(text(text)), mode)

    /** `session/revoke_inject` of one of this client's pending injects. */
    suspend fun revoke(messageId: MessageId): Unit = ffi { inner.revoke(messageId) }

    /** `session/replace_inject`: new content, same id, mode and position. */
    suspend fun replace(messageId: MessageId, content: List<ContentBlock>): Unit =
        ffi { inner.replace(messageId, ContentBlockCodec.list.encode(content)) }

    /** [replace] with one text block. */
    suspend fun replace(messageId: MessageId, text: String): Unit = replace(messageId, listOf(text(text)))

    /** `session/cancel`: the running turn ends `cancelled`; pending injects survive. */
    fun cancel(): Unit = ffi { inner.cancel() }

    /** `session/status`: [SessionStatus.OPEN] while the agent has the session in memory (with
     *  its foreground state) or [SessionStatus.SAVED] when it can resume it;
     *  [AcpException.Protocol] (-32002) for a session the agent does not know. */
    suspend fun status(): SessionStatusResponse = SessionStatusResponseCodec.result(ffi { inner.status() }, "status")

    /** `session/close`. */
    suspend fun close(): Unit = ffi { inner.closeSession() }

    /** Everything a UI renders now: state, own pending items, transcript, violations. */
    fun snapshot(): MirrorSnapshot = MirrorSnapshotCodec.optional.result(ffi { inner.snapshot() }, "snapshot")
        ?: throw AcpException.InvalidInput("session $id is not open on this connection")

    /** Answers a permission request with the chosen option. */
    fun allow(request: RequestId, optionId: String): Unit = answerPermission(request, SelectedPermissionOutcome(optionId))

    /** Answers a permission request. */
    fun answerPermission(request: RequestId, outcome: RequestPermissionOutcome): Unit =
        ffi { inner.answerPermission(RequestIdCodec.encode(request), RequestPermissionOutcomeCodec.encode(outcome)) }

    /** Waits for activity and returns all that is there (at least one; empty once the
     *  connection has ended). Takes it from the session's stream, like [events]. */
    suspend fun nextEvents(): List<SessionActivity> {
        val received = stream.receiveCatching()
        received.exceptionOrNull()?.let { throw it }
        val first = received.getOrNull() ?: return emptyList()
        return buildList {
            add(first)
            while (true) add(stream.tryReceive().getOrNull() ?: break)
        }
    }

    /** Whatever activity is queued in the session's stream now, without waiting (empty when
     *  there is none). Takes it from the stream, like [events]. */
    fun takeEvents(): List<SessionActivity> = buildList {
        while (true) add(stream.tryReceive().getOrNull() ?: break)
    }

    /** The session's activity, in order, until the connection ends: what no earlier collector
     *  took. Collect it from one place at a time (each activity goes to one collector of it;
     *  [PromptTurn]s have their own). */
    fun events(): Flow<SessionActivity> = flow {
        for (activity in stream) emit(activity)
    }

    private suspend fun answer(request: PermissionRequested, handler: PermissionHandler) {
        val outcome: RequestPermissionOutcome = try {
            handler(request.params)?.let { SelectedPermissionOutcome(it) } ?: CancelledPermissionOutcome()
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            // A handler that fails declines.
            CancelledPermissionOutcome()
        }
        try {
            answerPermission(request.request, outcome)
        } catch (e: AcpException) {
            // Answered meanwhile (a cancel answers open requests `cancelled`).
        }
    }

    override fun toString(): String = "ClientSession($id)"

    private companion object {
        val OPTIONAL_ID: ValueCodec<String?> = Values.codec<String?>()
    }
}

/**
 * The turn a [ClientSession.prompt] opened: [updates] emits the session's updates (chunks, tool
 * calls, the user messages delivered into the turn, state updates) from the turn's start until
 * it ends, and [finished] waits for its end and returns its [StopReason].
 *
 * The turn starts when the agent delivers the prompt (its [UserMessage]; for an agent that
 * echoes none, the prompt's item turning [ItemStatus.DELIVERED]) and ends at the next
 * [IdleStateUpdate] after it: steers delivered at its break-points belong to it, a queued
 * message opens the next turn. The turn keeps its own copy of these updates, so [updates] may be
 * collected any number of times, each from the start, and reading it takes nothing from the
 * session's [stream][ClientSession.events]. Permission requests are answered by
 * [ClientSession.onPermission], or arrive in the session's stream.
 */
class PromptTurn internal constructor(
    /** The session it runs in. */
    val session: ClientSession,
) {
    private val lock = Any()
    private var known = false
    private val early = ArrayList<SessionActivity>()
    private var delivered = false
    private val seen = ArrayList<SessionUpdate>()
    private var failure: Throwable? = null
    private val version = MutableStateFlow(0L)
    private val end = CompletableDeferred<StopReason?>()

    /** The prompt's id (`null` from an agent that answers `{}`). */
    @Volatile var messageId: MessageId? = null
        private set

    /** Whether its end was seen. */
    @Volatile var ended = false
        private set

    /** One activity of the session (from its reader). */
    internal fun see(activity: SessionActivity) = synchronized(lock) {
        if (known) follow(activity) else early += activity
    }

    /** The prompt was inserted, as [id]: what came meanwhile is followed now. */
    internal fun started(id: MessageId?) = synchronized(lock) {
        messageId = id
        known = true
        for (activity in early) follow(activity)
        early.clear()
    }

    private fun follow(activity: SessionActivity) {
        if (ended || failure != null) return
        when {
            activity is UserMessage && !delivered -> if (messageId == null || activity.messageId == messageId) {
                delivered = true
                add(activity)
            }
            // An agent that echoes no user_message (ACP v1: the prompt's delivery is its
            // sending) still delivers the item.
            activity is PendingItem -> if (!delivered && messageId != null && activity.messageId == messageId && activity.status == ItemStatus.DELIVERED) {
                delivered = true
            }
            activity is SessionUpdate && delivered -> {
                if (activity is IdleStateUpdate) {
                    ended = true
                    end.complete(activity.stopReason)
                    session.forget(this)
                }
                add(activity)
            }
        }
    }

    private fun add(update: SessionUpdate) {
        seen += update
        version.value += 1
    }

    /** The session's reader stopped before the turn ended. */
    internal fun fail(cause: Throwable) = synchronized(lock) {
        if (ended || failure != null) return@synchronized
        failure = cause
        end.completeExceptionally(cause)
        version.value += 1
    }

    /** The turn's updates, from its start until it ends (the ending [IdleStateUpdate] last).
     *  Throws [AcpException.Disconnected] when the connection ends first. */
    fun updates(): Flow<SessionUpdate> = flow {
        var next = 0
        while (true) {
            val at = version.value
            var batch: List<SessionUpdate>
            var over: Boolean
            var failed: Throwable?
            synchronized(lock) {
                batch = seen.subList(next, seen.size).toList()
                over = ended
                failed = failure
            }
            for (update in batch) emit(update)
            next += batch.size
            if (over) return@flow
            failed?.let { throw it }
            version.first { it != at }
        }
    }

    /** Waits until the turn ends; its stop reason (`null` if the agent gave none). Throws
     *  [AcpException.Disconnected] when the connection ends first. */
    suspend fun finished(): StopReason? = end.await()

    override fun toString(): String = "PromptTurn($messageId, ${if (ended) "ended" else if (delivered) "running" else "waiting"})"
}
