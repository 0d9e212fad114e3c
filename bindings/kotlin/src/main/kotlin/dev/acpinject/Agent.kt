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
 * stdout carries the protocol: log to stderr.
 */
package dev.acpinject

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.TimeSource

/** One running turn: what the agent says and does, and what the user sends meanwhile. */
class AgentTurn(
    /** The generated object underneath, for anything this class does not wrap. */
    val context: TurnContext,
) {
    private var message: MessageId? = null

    /** The session. */
    val sessionId: String = context.sessionId()

    /** The session's working directory. */
    val cwd: String get() = context.cwd()

    /** Starts a new agent message; [say] then streams into it. */
    fun newMessage(): MessageId = context.newMessageId().also { message = it }

    /** Streams text into the current agent message (started on first use). */
    fun say(words: String) = context.sendText(message ?: newMessage(), words)

    /** Sends any of the agent's own updates (thoughts, plans, usage, session info, …). */
    fun send(update: SessionUpdate) = context.send(update)

    /** Reports a tool call (created or changed); [output] becomes its text content. */
    fun toolCall(
        toolCallId: String,
        status: ToolCallStatus,
        title: String? = null,
        kind: ToolKind? = null,
        output: String? = null,
    ) {
        val content = output?.let { listOf<ToolCallContent>(ToolCallContent.Content(ToolCallContentBlock(text(it), null))) }
        send(SessionUpdate.ToolCallUpdate(ToolCallUpdate(toolCallId, title = title, kind = kind, status = status, content = content)))
    }

    /** A safe point (a tool result, between model steps): steers sent meanwhile are delivered
     *  now and returned, for the model to read. */
    fun breakPoint(kind: BreakPoint = BreakPoint.TOOL_RESULT): List<UserInput> = context.breakPoint(kind)

    /** A model stream with no tool call pending began. */
    fun streamStarted() = context.streamStarted()

    /** That stream ended. */
    fun streamFinished() = context.streamFinished()

    /** The user cancelled the turn: stop and return. */
    val cancelled: Boolean get() = context.isCancelled()

    /** Returns when the user cancels the turn. */
    suspend fun awaitCancelled() = context.cancelled()

    /** A steer asked to cut the current model stream (`steerInStream: interrupt`). */
    val interruptRequested: Boolean get() = context.interruptRequested()

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

    /** Asks the user (`session/request_permission`); returns the chosen option id, or `null`
     *  when the request was cancelled. The default options are allow once / reject once.
     *  [toolCallId] names the tool call the request is about (an ACP v1 client gets it as the
     *  request's `toolCall`). */
    suspend fun permission(
        title: String,
        options: List<PermissionOption> = ALLOW_OR_REJECT,
        description: String? = null,
        toolCallId: String? = null,
    ): String? =
        when (val outcome = context.requestPermission(title, description, options, toolCallId)) {
            is RequestPermissionOutcome.Selected -> outcome.v1.optionId
            else -> null
        }

    override fun toString(): String = "AgentTurn($sessionId)"

    companion object {
        /** `allow` (allow once) and `reject` (reject once). */
        val ALLOW_OR_REJECT: List<PermissionOption> = listOf(
            PermissionOption("allow", "Allow", PermissionOptionKind.AllowOnce, null),
            PermissionOption("reject", "Reject", PermissionOptionKind.RejectOnce, null),
        )
    }
}

/** Extend and implement [run]; the other hooks are optional. */
abstract class Agent : AgentRuntime {
    /** One turn, opened by [messages] (empty for a turn the agent started itself). Return
     *  `null` to end it normally (or `cancelled` when the user cancelled), or a [TurnEnd] with
     *  another stop reason or usage. */
    abstract suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd?

    /** A client created a session. */
    open suspend fun opened(sessionId: String, setup: SessionSetup) {}

    /** A client resumed a session. */
    open suspend fun resumed(sessionId: String, setup: SessionSetup) {}

    /** A session closed; [dropped] were pending and will never be delivered. */
    open suspend fun closed(sessionId: String, dropped: List<PendingInject>) {}

    // The runtime interface the library calls.
    final override suspend fun runTurn(turn: TurnContext, input: List<UserInput>): TurnEnd {
        val t = AgentTurn(turn)
        return try {
            run(t, input) ?: TurnEnd(if (t.cancelled) StopReason.Cancelled else StopReason.EndTurn, null)
        } catch (e: AcpException.Host) {
            // The session was closed under the turn: nothing more can reach the client.
            if (e.error != HostError.SessionClosed) throw e
            TurnEnd(StopReason.Cancelled, null)
        }
    }

    final override suspend fun sessionOpened(sessionId: String, setup: SessionSetup) = opened(sessionId, setup)

    final override suspend fun sessionResumed(sessionId: String, setup: SessionSetup) = resumed(sessionId, setup)

    final override suspend fun sessionClosed(sessionId: String, dropped: List<PendingInject>) = closed(sessionId, dropped)
}

/** The default configuration (queue and steer, replace) under this agent's name;
 *  [steerInStream] `INTERRUPT` cuts the model stream for a steer instead of finishing it. */
fun agentConfig(name: String, version: String = "0.1.0", steerInStream: SteerInStream = SteerInStream.FINISH): AgentConfig =
    defaultAgentConfig().apply {
        info = AgentInfo(name, version)
        inject?.steerInStream = listOf(steerInStream)
        policy.steerInStream = steerInStream
    }

/** Serves [agent] over this process's stdin/stdout until the client closes stdin. With
 *  [store], sessions outlive the process: a file path is SQLite; a `postgres://` URL is a
 *  PostgreSQL database several agent hosts share
 *  (`postgres://USER@HOST/DB?acp_host=NAME&acp_lease_ms=N`, each host its own `NAME`). */
suspend fun serveStdio(agent: Agent, config: AgentConfig = agentConfig(agent.javaClass.simpleName), store: String? = null) {
    AgentServer(agent, config, store).use { it.runStdio() }
}

/**
 * An agent serving over the network (see [listen]): its endpoint's [url]; [close] stops it.
 */
class Listening(
    /** The generated object underneath. */
    val server: AgentServer,
    /** The endpoint: `http://HOST:PORT/acp` (WebSocket clients use `ws://` on the same path). */
    val url: String,
) : AutoCloseable {
    /** The live sessions. */
    val sessions: List<String> get() = server.sessions()

    /** Stops listening (every connection ends) and cancels the running turns. */
    suspend fun stop() = server.shutdown()

    /** [stop], blocking the calling thread. */
    override fun close() = runBlocking { stop() }
}

/**
 * Serves [agent] over the network on [addr] (`HOST:PORT`; port 0 picks a free one): the
 * upstream Streamable HTTP & WebSocket transport on `/acp`. Returns once bound; serving goes on
 * until [Listening.stop]. Every client is one connection of the same agent: a session outlives
 * the connection that opened it, and a client that reconnects resumes it. Anything but a
 * loopback address needs [token] (clients send `Authorization: Bearer <token>`), or
 * [AcpException.Config] is thrown; [allowedOrigins] lists the browser origins that may call.
 */
suspend fun listen(
    agent: Agent,
    addr: String,
    config: AgentConfig = agentConfig(agent.javaClass.simpleName),
    store: String? = null,
    token: String? = null,
    allowedOrigins: List<String> = emptyList(),
): Listening {
    val server = AgentServer(agent, config, store)
    return Listening(server, server.listen(addr, token, allowedOrigins))
}

/**
 * Runs [agent] over stdio until the client goes away (see [serveStdio]), or, with [listen]
 * (`HOST:PORT`), over the network until the process is stopped (see [listen]; the endpoint's
 * URL is printed on stdout). Then stops the library's threads. Over the network, a store
 * failure ends it with [AcpException.Store] (on a `postgres://` store several hosts share: a
 * session another host took over while this one was paused); restart the process.
 */
fun runAgent(
    agent: Agent,
    config: AgentConfig = agentConfig(agent.javaClass.simpleName),
    store: String? = null,
    listen: String? = null,
    token: String? = null,
    allowedOrigins: List<String> = emptyList(),
) {
    try {
        runBlocking {
            if (listen == null) {
                serveStdio(agent, config, store)
            } else {
                val listening = listen(agent, listen, config, store, token, allowedOrigins)
                println(listening.url)
                System.out.flush()
                try {
                    listening.server.stopped()
                } finally {
                    kotlinx.coroutines.withContext(kotlinx.coroutines.NonCancellable) { listening.stop() }
                }
            }
        }
    } finally {
        shutdownRuntime(1000uL)
    }
}
