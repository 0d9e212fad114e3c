package dev.acpinject

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertTrue

/**
 * An agent runtime loop written in Kotlin (a fake model with tool calls) drives the agent side
 * through queue, steer, revoke, replace, cancel and a permission hold, over the binding; the
 * client side is a [ClientSession] fed with every line the agent sends.
 */
class RuntimeLoopTest {
    private class FakeModel(
        val core: AgentCore,
        val client: ClientSession,
        val tools: Int = 2,
        val permissionOnTool: Int? = null,
    ) {
        val seenInputs = mutableListOf<String>()
        val sent = mutableListOf<String>() // every line the agent sent: the recorded stream
        var turns = 0

        fun feed(outputs: List<AgentOutput>): List<RuntimeAction> {
            for (line in outputs.linesFor("c1")) {
                sent += line
                client.receive(line)
            }
            val actions = outputs.actions("s1")
            for (a in actions) when (a) {
                is RuntimeAction.StartTurn -> seenInputs += a.messages.map { it.firstText() }
                is RuntimeAction.Deliver -> seenInputs += a.messages.map { it.firstText() }
                else -> {}
            }
            return actions
        }

        private fun UserInput.firstText() = (content.first() as ContentBlock.Text).text

        fun send(line: String) = feed(core.handleLine("c1", line))

        fun event(event: RuntimeEvent) = feed(core.runtimeEvent("s1", event))

        /** One turn: a chunk, `tools` tool calls (one may ask permission), then the turn ends. */
        fun runTurn(duringTool: (Int) -> Unit = {}) {
            turns += 1
            event(RuntimeEvent.Update("""{"sessionUpdate": "agent_message_chunk", "messageId": "a$turns", "content": {"type": "text", "text": "working"}}"""))
            for (tool in 0 until tools) {
                duringTool(tool)
                if (permissionOnTool == tool) {
                    event(RuntimeEvent.PermissionRequested)
                    assertEquals(TurnState.REQUIRES_ACTION, client.snapshot().state)
                    duringTool(-1) // the user acts while the permission prompt is open
                    event(RuntimeEvent.PermissionResolved)
                }
                event(RuntimeEvent.BreakPoint(BreakPoint.TOOL_RESULT))
            }
            event(RuntimeEvent.TurnEnded("end_turn", """{"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}"""))
        }

        fun transcriptTexts(): List<String> =
            client.snapshot().transcript.mapNotNull { (it.content.firstOrNull() as? ContentBlock.Text)?.text }
    }

    private fun make(): FakeModel {
        val core = AgentCore(defaultAgentOptions())
        core.createSession("s1")
        return FakeModel(core, ClientSession("s1", FULL_CAPS), permissionOnTool = 1)
    }

    @Test
    fun `queue, steer, revoke, replace, cancel and a permission hold`() {
        val m = make()
        m.send(m.client.prompt(listOf(text("fix the bug"))))
        val pendingIds = mutableMapOf<String, String>()

        m.runTurn { tool ->
            if (tool == 0) {
                m.send(m.client.inject(InjectMode.QUEUE, listOf(text("then update the docs"))))
                m.send(m.client.inject(InjectMode.QUEUE, listOf(text("drop this one"))))
                m.send(m.client.inject(InjectMode.QUEUE, listOf(text("draft"))))
                for (p in m.client.snapshot().pending) pendingIds[(p.content[0] as ContentBlock.Text).text] = p.messageId!!
                m.send(m.client.revoke(pendingIds.getValue("drop this one")))
                m.send(m.client.replace(pendingIds.getValue("draft"), listOf(text("final wording"))))
            }
            if (tool == -1) {
                // A steer during the permission prompt is held, not dropped (R-PERM-1).
                m.send(m.client.inject(InjectMode.STEER, listOf(text("use auth_v2"))))
                assertEquals(ItemStatus.PENDING, m.client.itemStatus(m.client.snapshot().pending.last().messageId!!))
            }
        }
        assertTrue("use auth_v2" in m.seenInputs, "the held steer was delivered at the break-point after the decision")
        assertTrue(m.seenInputs.indexOf("use auth_v2") > m.seenInputs.indexOf("fix the bug"))
        // The queued messages (not the revoked one; the replaced one with its new text) opened the next turn.
        assertEquals(listOf("then update the docs", "final wording"), m.seenInputs.takeLast(2))
        assertTrue("drop this one" !in m.transcriptTexts())
        assertEquals(ItemStatus.REVOKED, m.client.itemStatus(pendingIds.getValue("drop this one")))
        assertEquals(TurnState.RUNNING, m.client.snapshot().state)
        assertEquals(emptyList(), m.client.snapshot().violations)

        // Cancel with a pending queue inject: the turn ends, the inject survives and opens the next one.
        m.send(m.client.inject(InjectMode.QUEUE, listOf(text("after the cancel"))))
        val actions = m.send(m.client.cancel())
        assertTrue(actions.any { it is RuntimeAction.CancelTurn })
        m.event(RuntimeEvent.TurnEnded("cancelled", null))
        assertEquals("after the cancel", m.seenInputs.last())
        val snap = m.client.snapshot()
        assertEquals(TurnState.RUNNING, snap.state)
        assertEquals(emptyList(), snap.pending)
        val texts = m.transcriptTexts()
        assertTrue(texts.indexOf("fix the bug") < texts.indexOf("use auth_v2"))
        assertTrue(texts.indexOf("use auth_v2") < texts.indexOf("final wording"))
        assertTrue(texts.indexOf("final wording") < texts.indexOf("after the cancel"))

        // Closing hands nothing back (nothing is pending) and a closed session refuses events.
        val closing = m.event(RuntimeEvent.Close)
        assertEquals(emptyList(), closing)
        assertEquals("session_closed", runCatching { m.event(RuntimeEvent.StreamStarted) }.exceptionOrNull().let { assertIs<AcpException.Host>(it).kind })
    }

    @Test
    fun `a recorded stream replayed into a fresh mirror rebuilds the same state`() {
        val m = make()
        m.send(m.client.prompt(listOf(text("fix the bug"))))
        m.runTurn { tool -> if (tool == 0) m.send(m.client.inject(InjectMode.QUEUE, listOf(text("next")))) }
        m.runTurn()
        val live = m.client.snapshot()

        // Another client (an observer UI) sees only the agent's lines, as bytes, in one crossing.
        ClientSession("s1", FULL_CAPS).use { replay ->
            assertEquals(emptyList(), replay.receiveBytes(RecordedStream.bytes(m.sent)))
            val got = replay.snapshot()
            assertEquals(live.transcript, got.transcript)
            assertEquals(live.state, got.state)
            assertEquals(live.stopReason, got.stopReason)
            assertEquals(live.usageJson, got.usageJson)
        }
        // The same stream line by line, pulled lazily through a Sequence, gives the same state.
        ClientSession("s1", FULL_CAPS).use { replay ->
            assertEquals(emptyList(), replay.receiveAll(m.sent.asSequence(), batchSize = 3))
            assertEquals(live.transcript, replay.snapshot().transcript)
        }
    }
}
