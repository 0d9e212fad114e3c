package dev.acpinject

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertNotNull
import kotlin.test.assertTrue

/**
 * The sans-IO client connection ([ClientCore]) wired to the sans-IO agent core ([AgentCore]) in
 * this process: every line the client queues goes to the agent, every line the agent writes to
 * the client's connection comes back, and every event is kept.
 */
class Wire(config: AgentConfig = defaultAgentConfig()) : AutoCloseable {
    val agent = AgentCore(config)
    val client = ClientCore(16L shl 20)
    val events = mutableListOf<Event>()
    val actions = mutableListOf<Action>()

    /** What the client asked of the host itself (a login, an extension), left open. */
    val calls = mutableListOf<HostCallMade>()

    init {
        agent.attach(CONNECTION, ConnectionRole.CONTROLLER)
        client.initialize(Implementation(name = "wire", version = "1"))
        pump()
    }

    /** Moves lines both ways until neither side has anything left to say. */
    fun pump() {
        events += client.takeEvents()
        while (true) {
            val lines = client.takeOutgoing()
            if (lines.isEmpty()) break
            for (line in lines) for (out in agent.handleLine(CONNECTION, line)) deliver(out)
        }
    }

    /** Applies a runtime event of the agent (as its model loop would) and delivers its output. */
    fun runtime(session: String, event: RuntimeEvent) {
        agent.runtimeEvent(session, event).forEach(::deliver)
        pump()
    }

    private fun deliver(out: Output) {
        when (out) {
            is Line -> if (CONNECTION in out.to) events += client.receive(out.line)
            is Action -> actions += out
            is HostCallMade -> calls += out
        }
    }

    /** A new session through `session/new`, its id as the agent minted it. */
    fun newSession(cwd: String): String {
        val request = client.newSession(cwd, emptyList(), emptyList())
        pump()
        val answer = answerTo(request)
        return assertIs<SessionCreated>(answer.outcome).sessionId
    }

    fun answerTo(request: RequestId): Answered = events.filterIsInstance<Answered>().single { it.request == request }

    override fun close() {
        agent.close()
        client.close()
    }

    companion object {
        const val CONNECTION = "c1"
    }
}

class ClientCoreTest {
    /**
     * The repro: two sessions on one connection, a prompt on s1 and a steer on s2 while s2 is
     * idle, every agent line fed back. s2 must not take s1's answer, must keep no phantom
     * pending item, and the agent's real `no_running_turn` must be s2's answer.
     */
    @Test
    fun `a steer on an idle session next to a prompt on another gets its own answer`() = Wire().use { w ->
        val s1 = w.newSession("/tmp/a")
        val s2 = w.newSession("/tmp/b")
        val prompt = w.client.prompt(s1, listOf(text("fix the bug")))
        val steer = w.client.inject(s2, InjectMode.STEER, listOf(text("use auth_v2")))
        w.pump()

        val promptAnswer = w.answerTo(prompt)
        assertEquals(s1, promptAnswer.sessionId)
        assertEquals(RequestKind.PROMPT, promptAnswer.kind)
        val promptId = assertNotNull(assertIs<Accepted>(promptAnswer.outcome).messageId)

        val steerAnswer = w.answerTo(steer)
        assertEquals(s2, steerAnswer.sessionId)
        assertEquals(RequestKind.INJECT, steerAnswer.kind)
        val refused = assertIs<ProtocolError>(steerAnswer.outcome)
        assertEquals(ErrorReason.NO_RUNNING_TURN, refused.reason)
        assertEquals(-32010L, refused.code, "$refused")

        val snap2 = assertNotNull(w.client.snapshot(s2))
        assertTrue(snap2.pending.none { it.status == ItemStatus.SENDING || it.status == ItemStatus.PENDING }, "phantom item on s2: ${snap2.pending}")
        assertTrue(snap2.pending.none { it.messageId == promptId }, "s2 took s1's message: ${snap2.pending}")
        assertTrue(snap2.transcript.none { it.messageId == promptId }, "s1's message in s2's transcript: ${snap2.transcript}")
        assertEquals(TurnState.IDLE, snap2.state)

        val snap1 = assertNotNull(w.client.snapshot(s1))
        assertEquals(promptId, snap1.transcript.single { it.role == MessageRole.USER }.messageId)
        assertEquals(ItemStatus.DELIVERED, w.client.itemStatus(s1, promptId))
        // Nothing of either session's traffic landed on the other.
        for (e in w.events.filterIsInstance<InSession>()) {
            val update = e.event as? UserMessage ?: continue
            assertEquals(s1, e.sessionId, "a user message of s1 reported on ${e.sessionId}: $update")
        }
        assertTrue(w.events.none { it is Ignored }, "ignored: ${w.events.filterIsInstance<Ignored>()}")
    }

    @Test
    fun `the same steer is accepted once s2 runs, and routed to s2 only`() = Wire().use { w ->
        val s1 = w.newSession("/tmp/a")
        val s2 = w.newSession("/tmp/b")
        w.client.prompt(s1, listOf(text("one")))
        w.client.prompt(s2, listOf(text("two")))
        w.pump()
        assertTrue(w.actions.any { it.session == s2 && it.action is StartTurn })
        val steer = w.client.inject(s2, InjectMode.STEER, listOf(text("use auth_v2")))
        w.pump()
        val id = assertNotNull(assertIs<Accepted>(w.answerTo(steer).outcome).messageId)
        assertEquals(ItemStatus.PENDING, w.client.itemStatus(s2, id))
        w.runtime(s2, BreakPointReached(BreakPoint.TOOL_RESULT))
        assertEquals(ItemStatus.DELIVERED, w.client.itemStatus(s2, id))
        assertEquals(null, w.client.itemStatus(s1, id))
        val delivered = w.actions.filter { it.action is Deliver }
        assertEquals(listOf(s2), delivered.map { it.session })
    }
}
