package dev.acpinject

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertIs
import kotlin.test.assertNotNull
import kotlin.test.assertTrue

/** Errors cross the boundary as typed exceptions (`AcpException` subclasses) carrying code,
 *  reason and messageId; objects are `AutoCloseable`. */
class ErrorsTest {
    private fun json(line: String) = Json.parseToJsonElement(line).jsonObject

    private fun agent(): AgentCore = AgentCore(defaultAgentOptions()).also { it.createSession("s1") }

    @Test
    fun `agent error answers surface as Protocol exceptions`(): Unit = agent().use { core ->
        ClientSession("s1", FULL_CAPS).use { session ->
            // A steer while idle: the agent answers -32010 no_running_turn.
            val answers = core.handleLine("c1", session.inject(InjectMode.STEER, listOf(text("use auth_v2")))).linesFor("c1")
            assertEquals(1, answers.size)
            val e = assertFailsWith<AcpException.Protocol> { session.receive(answers[0]) }
            assertEquals(Triple(-32010L, "no_running_turn", null), Triple(e.code, e.reason, e.messageId))
            assertEquals("Inject precondition failed", e.errorMessage)
            assertTrue(session.snapshot().pending.isEmpty())
            // The bulk path reports the same answer as a record instead of raising.
            val again = core.handleLine("c1", session.inject(InjectMode.STEER, listOf(text("again")))).linesFor("c1")
            val errors = session.receiveLines(again)
            assertEquals(listOf("no_running_turn"), errors.map { it.reason })
            assertEquals(e.code, errors.single().toException().code)
        }
    }

    @Test
    fun `already delivered carries the message id`(): Unit = agent().use { core ->
        val session = ClientSession("s1", FULL_CAPS)
        fun exchange(line: String) = core.handleLine("c1", line).linesFor("c1").forEach(session::receive)
        exchange(session.prompt(listOf(text("fix the bug"))))
        exchange(session.inject(InjectMode.STEER, listOf(text("and the docs"))))
        val steerId = assertNotNull(session.snapshot().pending.single().messageId)
        core.runtimeEvent("s1", RuntimeEvent.BreakPoint(BreakPoint.TOOL_RESULT)).linesFor("c1").forEach(session::receive)
        // The mirror knows it is delivered, so it refuses locally…
        val rejected = assertFailsWith<AcpException.Rejected> { session.revoke(steerId) }
        assertEquals("unknown_message_id", rejected.reason)
        // …and the agent, asked directly, answers already_delivered with the id.
        val answer = json(core.handleLine("c1", request(99, "session/revoke_inject", revokeParams(steerId))).linesFor("c1").single())
        val error = answer.getValue("error").jsonObject
        assertEquals(-32010, error.getValue("code").jsonPrimitive.int)
        val data = error.getValue("data").jsonObject
        assertEquals("already_delivered", data.getValue("reason").jsonPrimitive.content)
        assertEquals(steerId, data.getValue("messageId").jsonPrimitive.content)
        session.close()
    }

    @Test
    fun `local rejections are typed`() {
        val session = ClientSession("s1", InjectCapabilities(listOf(InjectMode.QUEUE), replace = false, steerInStream = emptyList()))
        assertEquals("mode_not_supported", assertFailsWith<AcpException.Rejected> { session.inject(InjectMode.STEER, listOf(text("x"))) }.reason)
        assertEquals("replace_not_supported", assertFailsWith<AcpException.Rejected> { session.replace("m_1", listOf(text("x"))) }.reason)
        assertFalse(session.snapshot().affordances.steer)
        // One sealed hierarchy: a `when` over it is exhaustive.
        val e: AcpException = assertFailsWith<AcpException> { session.revoke("m_9") }
        val described = when (e) {
            is AcpException.Rejected -> "rejected ${e.reason}"
            is AcpException.InvalidInput -> "invalid"
            is AcpException.Protocol -> "protocol"
            is AcpException.Host -> "host"
            is AcpException.Internal -> "bug"
        }
        assertEquals("rejected unknown_message_id", described)
    }

    @Test
    fun `bad input raises InvalidInput and changes nothing`(): Unit = ClientSession("s1", FULL_CAPS).use { session ->
        val before = session.snapshotJson()
        assertFailsWith<AcpException.InvalidInput> { session.prompt(listOf(ContentBlock.Other("{not json"))) }
        assertFailsWith<AcpException.InvalidInput> { session.prompt(listOf(ContentBlock.Other("""{"type": 5}"""))) }
        assertFailsWith<AcpException.InvalidInput> { session.prompt(listOf(ContentBlock.Resource("file:///a", null, null, null))) }
        assertFailsWith<AcpException.InvalidInput> {
            ClientSession("s1", InjectCapabilities(listOf(InjectMode.STEER), replace = false, steerInStream = emptyList()))
        }
        assertFailsWith<AcpException.InvalidInput> { ClientSession.fromInitializeResult("s1", """{"protocolVersion": "two"}""") }
        assertEquals(before, session.snapshotJson())
        // Garbage from the agent is counted, never raised.
        for (line in listOf("{oops", "", "[]", "\u0000", """{"jsonrpc":"2.0","id":42,"result":{}}""")) session.receive(line)
        assertTrue(session.ignoredLines() >= 4u)
        assertEquals(before, session.snapshotJson())
    }

    @Test
    fun `host errors name their kind`(): Unit = agent().use { core ->
        val idle = assertFailsWith<AcpException.Host> { core.runtimeEvent("s1", RuntimeEvent.TurnEnded("end_turn", null)) }
        assertEquals("no_turn_in_progress", idle.kind)
        assertTrue(idle.errorMessage.isNotEmpty())
        assertEquals("session_closed", assertFailsWith<AcpException.Host> { core.runtimeEvent("nope", RuntimeEvent.StreamStarted) }.kind)
        assertFailsWith<AcpException.InvalidInput> { core.runtimeEvent("s1", RuntimeEvent.TurnEnded("end_turn", "{bad")) }
        assertFailsWith<AcpException.InvalidInput> { core.runtimeEvent("s1", RuntimeEvent.Update("""{"sessionUpdate": 7}""")) }
    }

    @Test
    fun `malformed lines get JSON-RPC errors, not exceptions`(): Unit = agent().use { core ->
        val bytes = "{oops\n".toByteArray() + byteArrayOf(0xff.toByte(), 0xfe.toByte(), '\n'.code.toByte()) +
            """{"jsonrpc": "2.0", "id": 1, "method": "nope"}""".toByteArray()
        val codes = core.handleBytes("c1", bytes).linesFor("c1").map { json(it).getValue("error").jsonObject.getValue("code").jsonPrimitive.int }
        assertEquals(listOf(-32700, -32700, -32601), codes)
    }

    @Test
    fun `snapshot and restore round-trip through the binding`() {
        val restored = agent().use { core ->
            val session = ClientSession("s1", FULL_CAPS)
            core.handleLine("c1", session.prompt(listOf(text("a"))))
            core.handleLine("c1", session.inject(InjectMode.QUEUE, listOf(text("b"))))
            AgentCore.restore(core.snapshot())
        }
        restored.use { assertEquals(listOf(listOf(text("b"))), it.pending("s1").map { p -> p.content }) }
        assertFailsWith<AcpException.InvalidInput> { AgentCore.restore("""{"version": 99}""") }
    }

    @Test
    fun `use {} frees the Rust object and a closed object refuses calls`() {
        val core = AgentCore(defaultAgentOptions())
        core.use { it.createSession("s1") }
        assertTrue(core.uniffiIsDestroyed)
        val e = assertFailsWith<IllegalStateException> { core.isLive("s1") }
        assertTrue("destroyed" in e.message.orEmpty())
        core.close() // closing twice is harmless
    }

    @Test
    fun `content blocks keep their shape across the boundary`(): Unit = agent().use { core ->
        val blocks = listOf(
            text("hi"),
            ContentBlock.Image("aGk=", "image/png"),
            ContentBlock.ResourceLink("spec", "file:///spec.md"),
            ContentBlock.Resource("file:///a", "text/plain", "x", null),
        )
        val session = ClientSession("s1", FULL_CAPS)
        val start = core.handleLine("c1", session.prompt(blocks)).actions("s1").single()
        val input = assertIs<RuntimeAction.StartTurn>(start).messages.single()
        assertContentEquals(blocks, input.content)
        assertTrue("\"resource_link\"" in input.contentJson)
        assertEquals(listOf(input.messageId), core.history("s1").map { it.messageId })
    }

    @Test
    fun `the library version is the package version`() {
        assertEquals(System.getProperty("acp.package.version"), libraryVersion())
    }
}
