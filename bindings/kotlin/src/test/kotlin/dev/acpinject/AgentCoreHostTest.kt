package dev.acpinject

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertTrue

/**
 * A host that drives [AgentCore] with its own I/O: bytes in whatever chunks its reads give,
 * no transport. The core frames them, answers the client, and sends and routes the agent's own
 * permission request (R-PERM-2); the host only runs the turn from the core's actions.
 */
class AgentCoreHostTest {
    private class Host : AutoCloseable {
        val agent = AgentCore(defaultAgentConfig())
        val client = ClientCore(1L shl 20)
        val events = mutableListOf<Event>()
        val answered = mutableListOf<PermissionAnswered>()
        var waitingOn: RequestId? = null

        init {
            agent.attach(CONNECTION, ConnectionRole.CONTROLLER)
            client.initialize(Implementation(name = "host-test", version = "1"))
            pump()
        }

        /** Moves the client's bytes to the agent in 7-byte reads, and back, until both are quiet. */
        fun pump() {
            events += client.takeEvents()
            while (true) {
                val bytes = client.takeOutgoing().joinToString("") { it + "\n" }.toByteArray()
                if (bytes.isEmpty()) break
                for (chunk in bytes.asList().chunked(7)) carry(agent.handleBytes(CONNECTION, chunk.toByteArray()))
            }
        }

        /** The agent's lines go to the client in 5-byte reads; its actions run the turn. */
        fun carry(outputs: List<Output>) {
            val bytes = outputs.filterIsInstance<Line>().filter { CONNECTION in it.to }.joinToString("") { it.line + "\n" }.toByteArray()
            for (chunk in bytes.asList().chunked(5)) events += client.receiveBytes(chunk.toByteArray())
            for (action in outputs.filterIsInstance<Action>()) act(action.session, action.action)
        }

        fun act(session: String, action: RuntimeAction) {
            when (action) {
                is StartTurn -> {
                    val options = listOf(
                        PermissionOption("allow", "Allow", PermissionOptionKind.ALLOW_ONCE),
                        PermissionOption("reject", "Reject", PermissionOptionKind.REJECT_ONCE),
                    )
                    val sent = agent.requestPermission(session, PermissionAsk(title = "Run the tests?", options = options))
                    waitingOn = sent.requestId
                    carry(sent.outputs)
                }
                is PermissionAnswered -> {
                    answered += action
                    if (action.requestId == waitingOn) {
                        waitingOn = null
                        carry(agent.runtimeEvent(session, TurnEnd(StopReason.END_TURN)))
                    }
                }
                else -> {}
            }
        }

        override fun close() {
            agent.close()
            client.close()
        }

        companion object {
            const val CONNECTION = "stdio"
        }
    }

    @Test
    fun `a host with its own I-O serves a turn with a permission request answered`() = Host().use { h ->
        val request = h.client.newSession("/tmp", emptyList(), emptyList())
        h.pump()
        val created = h.events.filterIsInstance<Answered>().single { it.request == request }
        val session = assertIs<SessionCreated>(created.outcome).sessionId

        h.client.prompt(session, listOf(text("please run the tests")))
        h.pump()
        val asked = h.events.filterIsInstance<PermissionRequested>().single()
        assertEquals("Run the tests?", asked.params.title)
        assertEquals(TurnState.REQUIRES_ACTION, h.client.snapshot(session)!!.state)

        h.client.answerPermission(asked.request, SelectedPermissionOutcome("allow"))
        h.pump()
        val answer = h.answered.single()
        assertEquals(asked.request, answer.requestId, "the answer is routed to the request the core sent")
        assertEquals("allow", assertIs<SelectedPermissionOutcome>(answer.outcome).optionId)
        val snap = h.client.snapshot(session)!!
        assertEquals(TurnState.IDLE, snap.state)
        assertEquals(StopReason.END_TURN, snap.stopReason)
        assertTrue(h.agent.pending(session).isEmpty())
    }

    @Test
    fun `a cancel answers the open request cancelled and a late answer is ignored`() = Host().use { h ->
        val request = h.client.newSession("/tmp", emptyList(), emptyList())
        h.pump()
        val session = assertIs<SessionCreated>(h.events.filterIsInstance<Answered>().single { it.request == request }.outcome).sessionId
        h.client.prompt(session, listOf(text("go")))
        h.pump()
        val asked = h.events.filterIsInstance<PermissionRequested>().single()
        h.client.cancel(session)
        h.pump()
        val answer = h.answered.single()
        assertEquals(asked.request, answer.requestId)
        assertIs<CancelledPermissionOutcome>(answer.outcome)
        // The client's own cancelled answer (ACP asks clients to send one) changes nothing.
        h.client.answerPermission(asked.request, CancelledPermissionOutcome())
        h.pump()
        assertEquals(1, h.answered.size)
    }
}
