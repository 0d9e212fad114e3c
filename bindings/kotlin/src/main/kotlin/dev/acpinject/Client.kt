/**
 * The coroutine client: one connection to an agent (a process over stdio, or an endpoint over
 * the network), many sessions on it.
 *
 * The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust on
 * the library's own threads; each call here is one `suspend` call, and a session's events
 * arrive in batches, one per read from the agent, as a [Flow]:
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

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/**
 * Starts [command] (program and arguments) and connects to it over its stdio; `initialize` is
 * exchanged before this returns. [configure] adjusts the rest of [ConnectOptions] (opt out of
 * pending updates, stop forwarding the agent's stderr, …). Throws [AcpException.Disconnected]
 * when the agent cannot be started or exits (with its exit status and the end of its stderr).
 */
suspend fun connect(
    command: List<String>,
    name: String = "acp-inject-kotlin",
    version: String = "0",
    handshakeTimeout: Duration = 30.seconds,
    onPermission: PermissionHandler? = null,
    configure: ConnectOptions.() -> Unit = {},
): Client = Client(connect(command, connectOptions(name, version, handshakeTimeout, configure)), onPermission)

/** Answers the agent's permission requests: given the request, the id of the option the user
 *  chose, or `null` to decline (the request is answered `cancelled`). */
typealias PermissionHandler = suspend (RequestPermissionRequest) -> String?

/** The defaults with this client's identity and handshake timeout, then [configure]. */
private fun connectOptions(name: String, version: String, handshakeTimeout: Duration, configure: ConnectOptions.() -> Unit) =
    defaultConnectOptions().apply {
        client = Implementation(name = name, version = version)
        handshakeTimeoutMs = handshakeTimeout.inWholeMilliseconds.toULong()
        configure()
    }

/**
 * Connects to an agent by [url] over the network: `ws://` or `wss://` over WebSocket, `http://`
 * or `https://` over Streamable HTTP (the upstream remote transport; the `/acp` path included).
 * With [token], every request carries `Authorization: Bearer <token>`. `initialize` is
 * exchanged before this returns; the [Client] then works as one over stdio. A dropped network
 * fails calls with [AcpException.Disconnected]: connect again and [Client.resume] each session
 * with replay (its turns went on in the agent; the replay brings back the transcript and the
 * pending list).
 */
suspend fun connect(
    url: String,
    token: String? = null,
    name: String = "acp-inject-kotlin",
    version: String = "0",
    handshakeTimeout: Duration = 30.seconds,
    onPermission: PermissionHandler? = null,
    configure: ConnectOptions.() -> Unit = {},
): Client = Client(connectUrl(url, token, connectOptions(name, version, handshakeTimeout, configure)), onPermission)

/**
 * A connection to one agent, a process or an endpoint (see [connect]). [close] (and so `use {}`)
 * ends it: a process's stdin closes, it may exit, and after the close grace it is killed; a
 * network connection is ended with the agent. [onPermission] is given to every session it opens.
 */
class Client(
    /** The generated object underneath, for anything this class does not wrap. */
    val connection: Connection,
    /** Answers the agent's permission requests in every session this client opens (see
     *  [ClientSession.onPermission]). */
    val onPermission: PermissionHandler? = null,
) : AutoCloseable {
    private val closed = AtomicBoolean(false)

    /** The agent's `initialize` answer: protocol version, identity, capabilities. */
    val agent: InitializeResponse get() = connection.agent()

    /** What the agent offers for `session/inject` (`null`: no inject). */
    val inject: InjectCapabilities? get() = agent.capabilities?.session?.inject

    /** `session/new`. */
    suspend fun newSession(
        cwd: String,
        additionalDirectories: List<String> = emptyList(),
        mcpServers: List<McpServer> = emptyList(),
    ): ClientSession = ClientSession(connection.newSession(cwd, additionalDirectories, mcpServers), onPermission)

    /** `session/list`: one page, and the cursor of the next (`null` at the end). */
    suspend fun listSessions(cwd: String? = null, cursor: String? = null): SessionPage = connection.listSessions(cwd, cursor)

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
     *  transcript and event stream) before this returns. */
    suspend fun resume(sessionId: String, cwd: String, replay: Boolean = true): ClientSession =
        ClientSession(connection.resume(sessionId, cwd, replay), onPermission)

    /** Agent lines the connection could not use, most recent last. */
    val ignored: List<String> get() = connection.ignored()

    /** Ends the connection without blocking a thread: the agent's stdin closes, it may exit,
     *  else it is killed after the close grace. Idempotent. */
    suspend fun shutdown() {
        if (closed.compareAndSet(false, true)) {
            try {
                connection.shutdown()
            } finally {
                connection.destroy()
            }
        }
    }

    /** [shutdown], waiting for it on this thread (at most the close grace, 2 s by default). */
    override fun close() {
        if (!closed.get()) runBlocking { shutdown() }
    }

    private val label = agent.info.let { "Client(agent=${it.name} ${it.version})" }

    override fun toString(): String = label
}

/** A session open on a [Client]. Safe to call from any thread or coroutine. */
class ClientSession(
    /** The generated object underneath, for anything this class does not wrap. */
    val session: Session,
    /** Answers the agent's permission requests as they arrive (`null`: they arrive as
     *  [SessionActivity.PermissionRequested] activities, to answer with [allow]). */
    @Volatile var onPermission: PermissionHandler? = null,
) {
    /** The session's id. */
    val id: String = session.id()

    /** `session/prompt`: returns once the message is inserted, with a handle on the turn it
     *  opens ([PromptTurn]: its [PromptTurn.messageId], `null` from an agent that answers `{}`;
     *  [PromptTurn.updates] and [PromptTurn.finished]). During a turn an agent on this toolkit
     *  holds it and inserts it when the turn ends (so this returns then; [AcpException.Protocol]
     *  with code -32800 if it is never inserted); an agent of an older draft may refuse it with
     *  reason [ErrorReason.TurnInProgress]. [inject] says when a message mid-turn is delivered. */
    suspend fun prompt(content: List<ContentBlock>): PromptTurn = PromptTurn(this, session.prompt(content))

    /** [prompt] with one text block. */
    suspend fun prompt(text: String): PromptTurn = prompt(listOf(text(text)))

    /** `session/inject` (`queue` by default, or `steer`); returns the message's id. Throws
     *  [AcpException.Rejected] without sending when the agent does not offer the mode. */
    suspend fun inject(content: List<ContentBlock>, mode: InjectMode = InjectMode.QUEUE): MessageId = session.inject(mode, content)

    /** [inject] with one text block. */
    suspend fun inject(text: String, mode: InjectMode = InjectMode.QUEUE): MessageId = inject(listOf(text(text)), mode)

    /** `session/revoke_inject` of one of this client's pending injects. */
    suspend fun revoke(messageId: MessageId) = session.revoke(messageId)

    /** `session/replace_inject`: new content, same id, mode and position. */
    suspend fun replace(messageId: MessageId, content: List<ContentBlock>) = session.replace(messageId, content)

    /** [replace] with one text block. */
    suspend fun replace(messageId: MessageId, text: String) = replace(messageId, listOf(text(text)))

    /** `session/cancel`: the running turn ends `cancelled`; pending injects survive. */
    fun cancel() = session.cancel()

    /** `session/status`: [SessionStatus.Open] while the agent has the session in memory (with its
     *  foreground state, a snapshot) or [SessionStatus.Saved] when it can resume it;
     *  [AcpException.Protocol] (-32002) for a session the agent does not know. */
    suspend fun status(): SessionStatusResponse = session.status()

    /** `session/close`. */
    suspend fun close() = session.closeSession()

    /** Everything a UI renders now: state, own pending items, transcript, violations. */
    fun snapshot(): MirrorSnapshot =
        session.snapshot() ?: throw AcpException.InvalidInput("session $id is not open on this connection")

    /** Answers a permission request with the chosen option. */
    fun allow(request: RequestId, optionId: String) =
        session.answerPermission(request, RequestPermissionOutcome.Selected(SelectedPermissionOutcome(optionId)))

    /** Answers a permission request. */
    fun answerPermission(request: RequestId, outcome: RequestPermissionOutcome) = session.answerPermission(request, outcome)

    // One reader takes the session's batches (one FFI call per read from the agent) into a
    // channel, started by the first [events] or [nextEvents] and ended by the connection's end.
    // A collector that stops early (`first { … }`) leaves the rest for the next one: nothing is
    // lost between collectors, as it would be if each took batches itself.
    // With [onPermission] set, permission requests are answered by it (each in a coroutine of
    // its own, so the reader goes on) instead of being handed out.
    private val activities = Channel<SessionActivity>(Channel.UNLIMITED)
    private val reader = lazy {
        val scope = CoroutineScope(Dispatchers.Default)
        scope.launch {
            try {
                while (true) {
                    session.nextEvents().forEach { activity ->
                        val handler = onPermission
                        if (handler != null && activity is SessionActivity.PermissionRequested) {
                            scope.launch { answer(activity, handler) }
                        } else {
                            activities.send(activity)
                        }
                    }
                }
            } catch (_: AcpException.Disconnected) {
                activities.close()
            } catch (e: Throwable) {
                activities.close(e)
            }
        }
    }

    /** Waits for activity and returns all that is there (at least one; empty once the
     *  connection has ended). */
    suspend fun nextEvents(): List<SessionActivity> {
        reader.value
        val received = activities.receiveCatching()
        received.exceptionOrNull()?.let { throw it }
        val first = received.getOrNull() ?: return emptyList()
        return buildList {
            add(first)
            while (true) add(activities.tryReceive().getOrNull() ?: break)
        }
    }

    /** Every activity of the session, in order, until the connection ends. Collect it once at
     *  a time: each activity goes to one collector. */
    fun events(): Flow<SessionActivity> = flow {
        reader.value
        for (activity in activities) emit(activity)
    }

    private suspend fun answer(request: SessionActivity.PermissionRequested, handler: PermissionHandler) {
        val chosen = handler(request.params)
        val outcome = if (chosen == null) {
            RequestPermissionOutcome.Cancelled(CancelledPermissionOutcome())
        } else {
            RequestPermissionOutcome.Selected(SelectedPermissionOutcome(chosen))
        }
        session.answerPermission(request.request, outcome)
    }

    override fun toString(): String = "ClientSession($id)"
}

/**
 * The turn a [ClientSession.prompt] opened: [updates] emits the session's updates (chunks, tool
 * calls, the user messages delivered into the turn, state updates) until the turn ends, and
 * [finished] waits for its end and returns its [StopReason].
 *
 * The turn starts when the agent delivers the prompt (its `user_message`) and ends at the next
 * `idle` state after it: steers delivered at its break-points belong to it, a queued message
 * opens the next turn. Reading a turn takes activities from the session's stream (as
 * [ClientSession.events] does): read one or the other at a time. Permission requests are
 * answered by [ClientSession.onPermission]; without one a request in the turn throws
 * [AcpException.InvalidInput].
 */
class PromptTurn internal constructor(
    /** The session it runs in. */
    val session: ClientSession,
    /** The prompt's id (`null` from an agent that answers `{}`). */
    val messageId: MessageId?,
) {
    private val lock = Mutex()
    private var delivered = false
    private var stopReason: StopReason? = null
    private val buffered = ArrayDeque<SessionUpdate>()

    /** Whether its end was seen. */
    @Volatile var ended = false
        private set

    /** Follows the turn through one update; `true` when it belongs to the turn. */
    private fun see(update: SessionUpdate): Boolean {
        if (ended) return false
        if (update is SessionUpdate.UserMessage && !delivered) {
            delivered = messageId == null || update.v1.messageId == messageId
            return delivered
        }
        if (!delivered) return false
        val idle = (update as? SessionUpdate.StateUpdate)?.v1 as? StateUpdate.Idle
        if (idle != null) {
            ended = true
            stopReason = idle.v1.stopReason
        }
        return true
    }

    private suspend fun nextBatch(): List<SessionUpdate> {
        val batch = session.nextEvents()
        if (batch.isEmpty()) throw AcpException.Disconnected("the connection ended before the turn did")
        return batch.mapNotNull { activity ->
            when (activity) {
                is SessionActivity.PermissionRequested -> throw AcpException.InvalidInput(
                    "the agent asks permission (${activity.params.title}) and session ${session.id} has no onPermission handler",
                )
                is SessionActivity.Event -> when (val event = activity.v1) {
                    is SessionEvent.Update -> event.v1.takeIf { see(it) }
                    is SessionEvent.Item -> {
                        // An agent that echoes no user_message (ACP v1: the prompt's delivery
                        // is its sending) still delivers the item.
                        val item = event.v1
                        if (!delivered && messageId != null && item.messageId == messageId && item.status == ItemStatus.DELIVERED) {
                            delivered = true
                        }
                        null
                    }
                    else -> null
                }
            }
        }
    }

    /** The turn's updates, until it ends (collect it once). */
    fun updates(): Flow<SessionUpdate> = flow {
        while (true) {
            val next = lock.withLock {
                when {
                    buffered.isNotEmpty() -> listOf(buffered.removeFirst())
                    ended -> null
                    else -> nextBatch()
                }
            } ?: break
            next.forEach { emit(it) }
        }
    }

    /** Waits until the turn ends; its stop reason (`null` if the agent gave none). */
    suspend fun finished(): StopReason? = lock.withLock {
        while (!ended) buffered.addAll(nextBatch())
        stopReason
    }

    override fun toString(): String = "PromptTurn($messageId, ${if (ended) "ended" else if (delivered) "running" else "waiting"})"
}

/** The session update this activity carries, if it is one. */
val SessionActivity.update: SessionUpdate?
    get() = ((this as? SessionActivity.Event)?.v1 as? SessionEvent.Update)?.v1

/** One of this client's own messages (a prompt or an inject) changing status, if this activity is that. */
val SessionActivity.item: PendingItem?
    get() = ((this as? SessionActivity.Event)?.v1 as? SessionEvent.Item)?.v1

/** How the turn ended, when this activity is the `idle` state update that ends one. */
val SessionActivity.turnEnded: StopReason?
    get() = ((update as? SessionUpdate.StateUpdate)?.v1 as? StateUpdate.Idle)?.v1?.stopReason
