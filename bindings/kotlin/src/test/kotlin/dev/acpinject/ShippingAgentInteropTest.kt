package dev.acpinject

import kotlinx.coroutines.flow.first
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.security.SecureRandom
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds

/**
 * This client against a shipping agent, `@agentclientprotocol/claude-agent-acp` (the ACP agent
 * around Claude Code), offline: the agent talks to `interop/claude-agent-acp/mock-anthropic.mjs`,
 * a mock of the Anthropic Messages API that answers every request with a streamed reply quoting
 * the last user turn and logs every request, so the test sees what reached the model. The Kotlin
 * port of `interop/claude-agent-acp/drive.py`, with the same checks.
 *
 * Runs in the `interop` stage of `cargo xtask test`, which installs the agent, starts the mock
 * and sets, for each protocol version: `ACP_INJECT_CLAUDE_AGENT` (the agent's command, one
 * argument per line), `ACP_INJECT_CLAUDE_MOCK_LOG` (the mock's log), `ACP_INJECT_CLAUDE_WORKDIR`
 * (the sessions' cwd) and `ACP_INJECT_CLAUDE_PROTOCOL` (`v1` or `v2`: the version the agent is
 * forced to by `CLAUDE_AGENT_ACP_PROTOCOL`, in the environment it inherits with the mock's
 * `ANTHROPIC_BASE_URL`); skipped without them (the `kotlin` stage).
 */
class ShippingAgentInteropTest {
    private class Setup(val command: List<String>, val log: File, val workdir: String, val protocol: Int)

    private fun setup(): Setup {
        val command = System.getenv("ACP_INJECT_CLAUDE_AGENT")
        assumeTrue(!command.isNullOrEmpty(), "ACP_INJECT_CLAUDE_AGENT names claude-agent-acp (the interop stage sets it)")
        fun required(name: String): String = System.getenv(name)?.takeIf { it.isNotEmpty() } ?: error("$name is not set")
        val protocol = when (val p = required("ACP_INJECT_CLAUDE_PROTOCOL")) {
            "v1" -> 1
            "v2" -> 2
            else -> error("ACP_INJECT_CLAUDE_PROTOCOL is v1 or v2, not $p")
        }
        val argv = command!!.split("\n").filter { it.isNotEmpty() }
        return Setup(argv, File(required("ACP_INJECT_CLAUDE_MOCK_LOG")), required("ACP_INJECT_CLAUDE_WORKDIR"), protocol)
    }

    /** Markers unique to the run, so that the mock's log, which may hold earlier runs, cannot
     *  answer for this one. */
    private val run = ByteArray(4).also { SecureRandom().nextBytes(it) }.joinToString("") { "%02x".format(it) }

    private fun mark(name: String) = "$name-$run"

    /** Whether any request the mock received carried [marker] in a user message. */
    private fun Setup.modelSaw(marker: String): Boolean {
        if (!log.exists()) return false
        return log.readLines().filter { it.isNotBlank() }.any { line ->
            val body = (Json.parseToJsonElement(line) as? JsonObject)?.get("body") as? JsonObject
            (body?.get("messages") as? JsonArray).orEmpty().any { message ->
                message is JsonObject && (message["role"] as? JsonPrimitive)?.content == "user" && marker in message["content"].toString()
            }
        }
    }

    private fun MirrorSnapshot.said(role: MessageRole, marker: String): Boolean =
        transcript.any { it.role == role && marker in textOf(it.content) }

    /** Idle, nothing of ours pending, and [marker] answered: the user message carrying it is
     *  followed by an agent message. */
    private fun settled(marker: String): (MirrorSnapshot) -> Boolean = { s ->
        val at = s.transcript.indexOfLast { it.role == MessageRole.USER && marker in textOf(it.content) }
        s.state == TurnState.IDLE && s.pending.isEmpty() && at >= 0 &&
            s.transcript.drop(at + 1).any { it.role == MessageRole.AGENT }
    }

    /** Reads the session's activity until [done] holds for its snapshot. */
    private suspend fun ClientSession.until(what: String, done: (MirrorSnapshot) -> Boolean): MirrorSnapshot =
        within(what, TIMEOUT) {
            while (!done(snapshot())) {
                check(nextEvents().isNotEmpty()) { "the connection ended while waiting for $what: ${snapshot()}" }
            }
            snapshot()
        }

    /** Reads the turn until the agent has started answering. */
    private suspend fun PromptTurn.firstChunk() {
        within("the agent's first chunk", TIMEOUT) { updates().first { it is AgentMessageChunk } }
    }

    private suspend fun PromptTurn.end(what: String): StopReason? = within(what, TIMEOUT) { finished() }

    @Test
    fun `our client against claude-agent-acp, offline, on the protocol version the stage forces`() = coTest(8.minutes) {
        val setup = setup()
        val sessionId = firstConnection(setup)
        secondConnection(setup, sessionId)
    }

    private suspend fun firstConnection(setup: Setup): String = with(setup) {
        connect(command, name = "kotlin-tests", handshakeTimeout = 90.seconds, steerFallback = SteerFallback.CANCEL_AND_RESEND).use { client ->
            val agent = client.agent
            assertEquals(protocol, agent.protocolVersion, "initialize: ${agent.info.name} ${agent.info.version}")
            val steering = ((agent.meta?.get("steering") as? JsonObject)?.get("supported") as? JsonPrimitive)?.content == "true"
            // The agent serves the steering extension on v1 and does not advertise it on v2.
            assertEquals(protocol == 1, steering, "the steering extension is advertised: ${agent.meta}")
            val session = client.newSession(workdir)

            // A prompt, its turn to the end.
            var turn = session.prompt("${mark("PROMPT-ONE")} first question")
            var stop = turn.end("the first prompt's turn")
            assertEquals(StopReason.END_TURN, stop, "the prompt's turn ended $stop")
            assertTrue(modelSaw(mark("PROMPT-ONE")), "the model saw the prompt")
            assertTrue(session.snapshot().said(MessageRole.AGENT, mark("PROMPT-ONE")), "the agent's reply quotes it: ${session.snapshot()}")

            // A steer mid-turn: the extension on v1, the client's cancel_and_resend on v2.
            turn = session.prompt("${mark("PROMPT-TWO")} a long task")
            turn.firstChunk()
            val steer = session.inject("${mark("STEER-MARK")} use the v2 API", InjectMode.STEER)
            stop = turn.end("the steered turn")
            var snap = session.until("the steer's turn to end", settled(mark("STEER-MARK")))
            assertTrue(modelSaw(mark("STEER-MARK")), "the steer reached the model (id $steer)")
            assertTrue(snap.said(MessageRole.USER, mark("STEER-MARK")), "the steer is in the transcript: $snap")
            assertTrue(snap.said(MessageRole.AGENT, mark("STEER-MARK")), "the model's reply quotes the steer: $snap")
            if (protocol == 1) {
                assertEquals(StopReason.END_TURN, stop, "steered through the extension, the turn goes on to its end")
            } else {
                assertEquals(StopReason.CANCELLED, stop, "steered by cancel_and_resend, the turn is cancelled and the steer opens the next")
            }

            // Two queued messages held by this client: one revoked, one replaced.
            turn = session.prompt("${mark("PROMPT-THREE")} another long task")
            turn.firstChunk()
            val alpha = session.inject("${mark("QUEUED-ALPHA")} first", InjectMode.QUEUE)
            val beta = session.inject("${mark("QUEUED-BETA")} second", InjectMode.QUEUE)
            session.revoke(beta)
            session.replace(alpha, "${mark("QUEUED-GAMMA")} edited")
            val held = session.snapshot().pending.filter { it.held }.map { textOf(it.content) }
            assertEquals(listOf("${mark("QUEUED-GAMMA")} edited"), held, "held while the turn runs")
            stop = turn.end("the turn the messages were queued in")
            assertEquals(StopReason.END_TURN, stop, "the turn the messages were queued in")
            session.until("the queued message's turn to end", settled(mark("QUEUED-GAMMA")))
            assertTrue(modelSaw(mark("QUEUED-GAMMA")), "the replaced message reached the model after the turn")
            assertFalse(modelSaw(mark("QUEUED-ALPHA")), "the content it replaced never did")
            assertFalse(modelSaw(mark("QUEUED-BETA")), "the revoked message never did")

            // A prompt cancelled mid-stream.
            turn = session.prompt("${mark("PROMPT-FOUR")} cancel me")
            turn.firstChunk()
            session.cancel()
            stop = turn.end("the cancelled turn")
            assertEquals(StopReason.CANCELLED, stop, "the cancelled turn")
            snap = session.snapshot()
            assertTrue(snap.violations.isEmpty(), "violations: ${snap.violations}")
            session.id
        }
    }

    /** A second agent process resumes the session with replay, then takes a prompt. */
    private suspend fun secondConnection(setup: Setup, sessionId: String) = with(setup) {
        connect(command, name = "kotlin-tests", handshakeTimeout = 90.seconds).use { client ->
            val session = client.resume(sessionId, workdir, replay = true)
            val snap = session.snapshot()
            assertTrue(snap.said(MessageRole.USER, mark("PROMPT-ONE")), "resumed on a new agent process: ${snap.transcript.size} messages replayed")
            val turn = session.prompt("${mark("PROMPT-FIVE")} after resume")
            val stop = turn.end("the prompt after the resume")
            assertEquals(StopReason.END_TURN, stop, "prompted after the resume")
            assertTrue(modelSaw(mark("PROMPT-FIVE")), "the prompt after the resume reached the model")
        }
    }

    private companion object {
        val TIMEOUT = 120.seconds
    }
}
