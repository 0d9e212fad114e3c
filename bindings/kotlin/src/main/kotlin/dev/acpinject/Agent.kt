/**
 * Agents written in Kotlin: extend [Agent], implement [Agent.run], call [runAgent]. The library
 * serves the protocol over stdio (`initialize`, sessions: new, list, resume with replay, close,
 * status; prompts, queue and steer injects, revoke, replace, cancel), or over the network with
 * [listen] (`runAgent(agent, listen = "127.0.0.1:8080")`), and calls [Agent.run] for each turn
 * with the messages that open it.
 *
 * Inside a turn, [AgentTurn] streams the agent's output, asks permission, and reports
 * break-points, where steers the user sent mid-turn are delivered and handed back:
 *
 * ```kotlin
 * class Echo : Agent() {
 *     override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
 *         turn.say("You said: " + textOf(messages.flatMap { it.content }))
 *         return null
 *     }
 * }
 *
 * fun main() = runAgent(Echo())
 * ```
 *
 * An agent that requires a login advertises its methods and checks them in
 * [Agent.authenticate]; one serving extension methods lists them and answers in
 * [Agent.extension]:
 *
 * ```kotlin
 * class Guarded : Agent() {
 *     override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
 *         turn.say("Logged in, you said: " + textOf(messages.flatMap { it.content }))
 *         return null
 *     }
 *
 *     override suspend fun authenticate(methodId: String) {
 *         if (System.getenv("ACME_API_KEY") == null) throw refused(-32000, "Authentication required", "set ACME_API_KEY")
 *     }
 *
 *     override suspend fun extension(method: String, params: JsonElement?): JsonElement? =
 *         buildJsonObject { put("method", method) }
 * }
 *
 * val apiKey = AuthMethodAgent("api-key", "API key")
 * fun main() = runAgent(Guarded(), agentConfig("guarded", authMethods = listOf(apiKey), authRequired = true, extensions = listOf("_acme/whoami")))
 * ```
 *
 * stdout carries the protocol: log to stderr.
 */
package dev.acpinject

import dev.acpinject.ffi.AgentRuntime as FfiAgentRuntime
import dev.acpinject.ffi.AgentServer as FfiAgentServer
import dev.acpinject.ffi.TurnContext as FfiTurnContext
import dev.acpinject.ffi.shutdownRuntime
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.JsonElement
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.TimeSource

/** One running turn: what the agent says and does, and what the user sends meanwhile. An
 *  `AgentTurn` belongs to its turn; its calls after the turn ended throw [AcpException]. */
class AgentTurn internal constructor(private val context: FfiTurnContext) {
    private var message: MessageId? = null

    /** The session. */
    val sessionId: String = context.sessionId()

    /** The session's working directory. */
    val cwd: String get() = context.cwd()

    /** Starts a new agent message; [say] then streams into it. */
    fun newMessage(): MessageId = context.newMessageId().also { message = it }

    /** Streams text into the current agent message (started on first use). */
    fun say(words: String): Unit = ffi { context.sendText(message ?: newMessage(), words) }

    /** Clears what was streamed so far into the current agent message. */
    fun clearMessage() {
        message?.let { ffi { context.clearMessage(it) } }
    }

    /** Sends any of the agent's own updates (thoughts, plans, usage, session info, …). */
    fun send(update: SessionUpdate): Unit = ffi { context.send(SessionUpdateCodec.encode(update)) }

    /** Reports a tool call (created or changed); [output] becomes its text content. */
    fun toolCall(
        toolCallId: String,
        status: ToolCallStatus,
        title: String? = null,
        kind: ToolKind? = null,
        output: String? = null,
    ) {
        val content = output?.let { listOf<ToolCallContent>(ToolCallContentBlock(text(it))) }
        send(ToolCallUpdate(toolCallId = toolCallId, title = title, kind = kind, status = status, content = content))
    }

    /** A safe point (a tool result, between model steps): steers sent meanwhile are delivered
     *  now and returned, for the model to read. */
    fun breakPoint(kind: BreakPoint = BreakPoint.TOOL_RESULT): List<UserInput> =
        UserInputCodec.list.result(ffi { context.breakPoint(BreakPointCodec.encode(kind)) }, "steers")

    /** A model stream with no tool call pending began. */
    fun streamStarted(): Unit = ffi { context.streamStarted() }

    /** That stream ended. */
    fun streamFinished(): Unit = ffi { context.streamFinished() }

    /** A model-process pause began. */
    fun paused(): Unit = ffi { context.paused() }

    /** The pause cleared. */
    fun resumed(): Unit = ffi { context.resumed() }

    /** The user cancelled the turn: stop and return. */
    val cancelled: Boolean get() = context.isCancelled()

    /** Returns when the user cancels the turn. */
    suspend fun awaitCancelled(): Unit = context.cancelled()

    /** A steer asked to cut the current model stream (`steerInStream: interrupt`). */
    val interruptRequested: Boolean get() = context.interruptRequested()

    /** Returns when a steer asks to cut the current model stream. */
    suspend fun awaitInterrupted(): Unit = context.interrupted()

    /** Waits [duration] unless the user cancels first; `false` when cancelled. */
    suspend fun sleep(duration: Duration): Boolean {
        val end = TimeSource.Monotonic.markNow() + duration
        while (!cancelled) {
            val left = -end.elapsedNow()
            if (left <= Duration.ZERO) return true
            delay(minOf(left, 10.milliseconds))
        }
        return false
    }

    /** Asks the user (`session/request_permission`); `requires_action` until answered, and a
     *  cancel answers it [CancelledPermissionOutcome]. [toolCallId] names the tool call the
     *  request is about (an ACP v1 client gets it as the request's `toolCall`). */
    suspend fun requestPermission(
        title: String,
        options: List<PermissionOption> = ALLOW_OR_REJECT,
        description: String? = null,
        toolCallId: String? = null,
    ): RequestPermissionOutcome = RequestPermissionOutcomeCodec.result(
        ffi { context.requestPermission(title, description, PermissionOptionCodec.list.encode(options), toolCallId) },
        "permission outcome",
    )

    /** [requestPermission], answered: the chosen option's id, or `null` when the request was
     *  cancelled. The default options are allow once / reject once. */
    suspend fun permission(
        title: String,
        options: List<PermissionOption> = ALLOW_OR_REJECT,
        description: String? = null,
        toolCallId: String? = null,
    ): String? = (requestPermission(title, options, description, toolCallId) as? SelectedPermissionOutcome)?.optionId

    override fun toString(): String = "AgentTurn($sessionId)"

    companion object {
        /** `allow` (allow once) and `reject` (reject once). */
        val ALLOW_OR_REJECT: List<PermissionOption> = listOf(
            PermissionOption("allow", "Allow", PermissionOptionKind.ALLOW_ONCE),
            PermissionOption("reject", "Reject", PermissionOptionKind.REJECT_ONCE),
        )
    }
}

/** Extend and implement [run]; the other hooks are optional. */
abstract class Agent {
    /** One turn, opened by [messages] (empty for a turn the agent started itself). Return
     *  `null` to end it normally (or `cancelled` when the user cancelled), or a [TurnEnd] with
     *  another stop reason or usage. */
    abstract suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd?

    /** A client created a session. */
    open suspend fun opened(sessionId: String, setup: SessionSetup) {}

    /** A client resumed a session (its history was already replayed). */
    open suspend fun resumed(sessionId: String, setup: SessionSetup) {}

    /** A session closed; [dropped] were pending and will never be delivered. */
    open suspend fun closed(sessionId: String, dropped: List<PendingInject>) {}

    /** A client logs in with [methodId], one of the `agent` methods the configuration
     *  advertises (`agentConfig(authMethods = …)`): check the credentials it stands for. Return
     *  to log the connection in; throw `refused(-32000, "Authentication required", "why")` to
     *  refuse with that error. The default refuses. */
    open suspend fun authenticate(methodId: String) {
        throw refused(-32000, "Authentication required", "this agent cannot check the method '$methodId'")
    }

    /** A request of an extension this agent serves (`agentConfig(extensions = …)`), its
     *  [params] as they came (`null` when it had none): return its result (`null` is JSON
     *  `null`), or throw `refused(code, message)`. The default answers -32601. */
    open suspend fun extension(method: String, params: JsonElement?): JsonElement? {
        throw refused(-32601, "Method not found")
    }

    /** A notification of an extension this agent serves. The default ignores it. */
    open suspend fun extensionNotification(method: String, params: JsonElement?) {}
}

/**
 * The error to throw from [Agent.authenticate] or [Agent.extension] to answer the client with
 * this JSON-RPC error (an [AcpException.Protocol]; [detail] goes in its `data.detail`):
 * `throw refused(-32000, "Authentication required", "set ACME_API_KEY")`. Anything else thrown
 * from them reaches the client as -32603 (Internal error), what it said only in this process's
 * stderr.
 */
fun refused(code: Long, message: String, detail: String? = null): AcpException =
    AcpException.Protocol(ProtocolError(code = code, message = message, detail = detail))

/** What a callback of the library hands back: a value, or the error it raised, encoded. */
private suspend inline fun <T> callback(body: () -> T): T = try {
    body()
} catch (e: CancellationException) {
    throw e
} catch (e: AcpException) {
    throw e.toFfi()
} catch (e: Throwable) {
    // Errors too (`TODO()`, an assertion): UniFFI passes on only Exceptions, and anything else
    // would leave the client's request without an answer.
    throw AcpException.Internal("${e.javaClass.name}: ${e.message}").toFfi()
}

/** The runtime interface the library calls, over an [Agent]. */
private class Runtime(private val agent: Agent) : FfiAgentRuntime {
    override suspend fun runTurn(turn: FfiTurnContext, input: ByteArray): ByteArray = callback {
        val t = AgentTurn(turn)
        val end = agent.run(t, UserInputCodec.list.decode(input))
            ?: TurnEnd(if (t.cancelled) StopReason.CANCELLED else StopReason.END_TURN)
        TurnEndCodec.encode(end)
    }

    override suspend fun sessionOpened(sessionId: String, setup: ByteArray) = callback { agent.opened(sessionId, SessionSetupCodec.decode(setup)) }

    override suspend fun sessionResumed(sessionId: String, setup: ByteArray) = callback { agent.resumed(sessionId, SessionSetupCodec.decode(setup)) }

    override suspend fun sessionClosed(sessionId: String, dropped: ByteArray) =
        callback { agent.closed(sessionId, PendingInjectCodec.list.decode(dropped)) }

    override suspend fun authenticate(methodId: String) = callback { agent.authenticate(methodId) }

    override suspend fun extension(method: String, params: ByteArray): ByteArray =
        callback { OPTIONAL_JSON.encode(agent.extension(method, OPTIONAL_JSON.decode(params))) }

    override suspend fun extensionNotification(method: String, params: ByteArray) =
        callback { agent.extensionNotification(method, OPTIONAL_JSON.decode(params)) }
}

private fun server(agent: Agent, config: AgentConfig, store: String?): FfiAgentServer =
    ffi { FfiAgentServer(Runtime(agent), AgentConfigCodec.encode(config), store) }

/**
 * The default configuration (queue and steer, replace) under this agent's name;
 * [steerInStream] `INTERRUPT` cuts the model stream for a steer instead of finishing it.
 * [authMethods] are advertised in `initialize` (an [AuthMethodAgent] is checked by
 * [Agent.authenticate] when a client logs in with it; an [AuthMethodTerminal] is the client's
 * to run); with [authRequired] a connection's requests are answered -32000 (Authentication
 * required) until it logged in. [extensions] are the `_`-methods [Agent.extension] and
 * [Agent.extensionNotification] serve (any other `_` request is -32601).
 */
fun agentConfig(
    name: String,
    version: String = "0.1.0",
    steerInStream: SteerInStream = SteerInStream.FINISH,
    authMethods: List<AuthMethod> = emptyList(),
    authRequired: Boolean = false,
    extensions: List<String> = emptyList(),
): AgentConfig {
    val default = defaultAgentConfig()
    return default.copy(
        info = AgentInfo(name = name, version = version),
        inject = default.inject?.copy(steerInStream = listOf(steerInStream)),
        policy = default.policy.copy(steerInStream = steerInStream),
        auth = AuthSupport(methods = authMethods, required = authRequired),
        extensions = extensions,
    )
}

/** Serves [agent] over this process's stdin/stdout until the client closes stdin. With
 *  [store], sessions outlive the process: a file path is SQLite; a `postgres://` URL is a
 *  PostgreSQL database several agent hosts share
 *  (`postgres://USER@HOST/DB?acp_host=NAME&acp_lease_ms=N`, each host its own `NAME`). */
suspend fun serveStdio(agent: Agent, config: AgentConfig = agentConfig(agent.javaClass.simpleName), store: String? = null) {
    val server = server(agent, config, store)
    try {
        ffi { server.runStdio() }
    } finally {
        server.destroy()
    }
}

/**
 * An agent serving over the network (see [listen]): its endpoint's [url]. [close] stops it
 * ([use] at the end of a block); like [Client], it suspends rather than blocking a thread.
 */
class Listening internal constructor(
    private val server: FfiAgentServer,
    /** The endpoint: `http://HOST:PORT/acp` (WebSocket clients use `ws://` on the same path). */
    val url: String,
) {
    private val closed = AtomicBoolean(false)

    /** The live sessions. */
    val sessions: List<String> get() = server.sessions()

    /** Starts a turn in a session with no user message. */
    fun startTurn(sessionId: String): Unit = ffi { server.startTurn(sessionId) }

    /** Closes a session from the agent's side. */
    fun closeSession(sessionId: String): Unit = ffi { server.closeSession(sessionId) }

    /** Waits until the server stops because its store failed, then throws [AcpException.Store]
     *  saying why (on a store several hosts share: a session another host took over while this
     *  one was paused or cut off). Every connection was dropped by then: stop and start again. */
    suspend fun stopped(): Nothing {
        ffi { server.stopped() }
        throw AcpException.Store("the server stopped")
    }

    /** Stops listening (every connection ends) and cancels the running turns. Idempotent. */
    suspend fun close() {
        if (!closed.compareAndSet(false, true)) return
        try {
            withContext(NonCancellable) { server.shutdown() }
        } finally {
            server.destroy()
        }
    }

    override fun toString(): String = "Listening($url)"
}

/** Runs [block] with this server, then [closes][Listening.close] it, also when [block] throws. */
suspend inline fun <R> Listening.use(block: (Listening) -> R): R {
    try {
        return block(this)
    } finally {
        withContext(NonCancellable) { close() }
    }
}

/**
 * Serves [agent] over the network on [addr] (`HOST:PORT`; port 0 picks a free one): the
 * upstream Streamable HTTP & WebSocket transport on `/acp`. Returns once bound; serving goes on
 * until [Listening.close]. Every client is one connection of the same agent: a session outlives
 * the connection that opened it, and a client that reconnects resumes it. Anything but a
 * loopback address needs [token] (clients send `Authorization: Bearer <token>`) or [tokens], or
 * [AcpException.Config] is thrown. [tokens] maps each principal (a user, a tenant) to a token of
 * its own: a client sees the sessions its principal created and no other, and another
 * principal's session is answered as unknown ([token], beside them, sees the sessions created
 * without a principal). [allowedOrigins] lists the browser origins that may call. [limits]
 * bounds what clients may take (connections, message size, unread output, the listener's
 * memory: see [ListenLimits]); a zero limit throws [AcpException.Config].
 */
suspend fun listen(
    agent: Agent,
    addr: String,
    config: AgentConfig = agentConfig(agent.javaClass.simpleName),
    store: String? = null,
    token: String? = null,
    allowedOrigins: List<String> = emptyList(),
    tokens: Map<String, String> = emptyMap(),
    limits: ListenLimits = ListenLimits(),
): Listening {
    val server = server(agent, config, store)
    val url = try {
        ffi { server.listen(addr, token, tokens, allowedOrigins, ListenLimitsCodec.encode(limits)) }
    } catch (e: Throwable) {
        server.destroy()
        throw e
    }
    return Listening(server, url)
}

/**
 * Runs [agent] over stdio until the client goes away (see [serveStdio]), or, with [listen]
 * (`HOST:PORT`), over the network until the process is stopped (see [listen]; the endpoint's
 * URL is printed on stdout; [token], [allowedOrigins] and [limits] as there). Then stops the library's threads. Over the network, a store
 * failure ends it with [AcpException.Store] (on a `postgres://` store several hosts share: a
 * session another host took over while this one was paused); restart the process. Blocks the
 * calling thread: it is a program's `main`.
 */
fun runAgent(
    agent: Agent,
    config: AgentConfig = agentConfig(agent.javaClass.simpleName),
    store: String? = null,
    listen: String? = null,
    token: String? = null,
    allowedOrigins: List<String> = emptyList(),
    limits: ListenLimits = ListenLimits(),
) {
    try {
        runBlocking {
            if (listen == null) {
                serveStdio(agent, config, store)
            } else {
                listen(agent, listen, config, store, token, allowedOrigins, limits = limits).use { listening ->
                    println(listening.url)
                    System.out.flush()
                    listening.stopped()
                }
            }
        }
    } finally {
        shutdownRuntime(1000uL)
    }
}
