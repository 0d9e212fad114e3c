package dev.acpinject

import dev.acpinject.conformance.VectorRun
import dev.acpinject.ffi.FfiException
import kotlinx.coroutines.flow.toList
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertTrue

/** Bad input of every kind gets a typed answer ([AcpException] variants, or the protocol's
 *  error answers), never a crash, and the object stays usable. */
class ErrorsTest {
    private fun AgentCore.answers(connection: String, outputs: List<Output>): List<String> =
        outputs.filterIsInstance<Line>().filter { connection in it.to }.map { it.line }

    @Test
    fun `the agent core answers malformed JSON, invalid UTF-8, unknown methods and huge lines`() {
        val default = defaultAgentConfig()
        val config = default.copy(policy = default.policy.copy(maxLineBytes = 4096))
        AgentCore(config).use { core ->
            core.attach("c1", ConnectionRole.CONTROLLER)
            val parse = core.answers("c1", core.handleLine("c1", "{not json"))
            assertTrue(parse.single().contains("-32700"), "$parse")
            val utf8 = core.answers("c1", core.handleBytes("c1", byteArrayOf(0xff.toByte(), 0xfe.toByte(), '{'.code.toByte(), '}'.code.toByte(), '\n'.code.toByte())))
            assertTrue(utf8.single().contains("-32700"), "$utf8")
            val unknown = core.answers("c1", core.handleLine("c1", """{"jsonrpc":"2.0","id":7,"method":"session/frobnicate","params":{}}"""))
            assertTrue(unknown.single().contains("-32601") && unknown.single().contains("\"id\":7"), "$unknown")
            val huge = core.answers("c1", core.handleLine("c1", """{"jsonrpc":"2.0","id":8,"method":"x","params":{"pad":"${"x".repeat(1 shl 20)}"}}"""))
            assertTrue(huge.single().contains("\"error\""), "$huge")
            // Still usable: a session is created and listed.
            assertTrue(core.createSession("s1", "/w"))
            assertEquals(listOf("s1"), core.sessionIds())
        }
    }

    @Test
    fun `the client core ignores what it cannot use and counts it`() = ClientCore(1024).use { client ->
        client.openSession("s1", null)
        val events = client.receive("{not json") +
            client.receiveBytes(byteArrayOf(0xff.toByte(), 0xfe.toByte(), '\n'.code.toByte())) +
            client.receive("""{"jsonrpc":"2.0","id":99,"result":{}}""") +
            client.receive("""{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"x","pad":"${"y".repeat(4096)}"}}}""")
        assertEquals(4, events.count { it is Ignored }, "$events")
        assertEquals(4L, client.ignoredLines())
        val unknown = client.receive("""{"jsonrpc":"2.0","method":"session/frobnicate","params":{"sessionId":"s1"}}""")
        // A notification this version does not handle is handed to the app as it came.
        assertEquals("session/frobnicate", assertIs<Notification>(unknown.single()).method)
        assertEquals(TurnState.IDLE, client.snapshot("s1")!!.state)
    }

    @Test
    fun `calls with bad arguments raise typed exceptions`() {
        val engine = assertThrows<FfiException.Failed> { VectorRun("{not json") }
        assertIs<AcpException.Mismatch>(Values.decode<AcpException>(engine.error))
        assertIs<AcpException.InvalidInput>(assertThrows<AcpException> { AgentCore.restore(defaultAgentConfig(), "garbage") })
        ClientCore(1024).use { client ->
            assertIs<AcpException.InvalidInput>(assertThrows<AcpException> { client.openSession("s1", "{bad mirror") })
            val e = assertThrows<AcpException.Rejected> { client.prompt("nowhere", listOf(text("x"))) }
            assertEquals(CallRejected.UNKNOWN_SESSION, e.reason)
            assertEquals("rejected UNKNOWN_SESSION", kindOf(e))
            client.assumeCapabilities(InjectCapabilities(modes = listOf(InjectMode.QUEUE)))
            client.openSession("s1")
            val steer = assertThrows<AcpException.Rejected> { client.inject("s1", InjectMode.STEER, listOf(text("x"))) }
            assertEquals(CallRejected.MODE_NOT_SUPPORTED, steer.reason)
            assertTrue(client.takeOutgoing().isEmpty(), "a refused call sends nothing")
        }
        AgentCore(defaultAgentConfig()).use { core ->
            core.createSession("s1", "/w")
            val host = assertThrows<AcpException.Host> { core.runtimeEvent("s1", BreakPointReached(BreakPoint.TOOL_RESULT)) }
            assertEquals(HostError.NO_TURN_IN_PROGRESS, host.error)
            assertTrue(host.description.isNotEmpty())
        }
        val config = defaultAgentConfig().copy(inject = InjectCapabilities(modes = emptyList()))
        assertIs<AcpException.Config>(assertThrows<AcpException> { AgentCore(config) })
        // Bytes the caller hands over that are not the value asked for are the caller's InvalidInput.
        assertThrows<DecodeException> { Values.decode<AgentConfig>(byteArrayOf(0x91.toByte(), 1)) }
    }

    @Test
    fun `a destroyed object refuses calls without crashing`() {
        val client = ClientCore(1024)
        client.close()
        assertThrows<IllegalStateException> { client.takeOutgoing() }
        assertThrows<IllegalStateException> { client.receiveLine("{}") }
        val core = AgentCore()
        core.close()
        assertThrows<IllegalStateException> { core.sessionIds() }
    }

    @Test
    fun `an agent that cannot start or is not an agent is Disconnected, with the reason`() = coTest {
        val missing = assertThrows<AcpException.Disconnected> { runBlockingIn { connectQuietly(listOf("/nonexistent/agent")) } }
        assertTrue("nonexistent" in missing.detail, missing.detail)
        val notAnAgent = assertThrows<AcpException.Disconnected> { runBlockingIn { connectQuietly(listOf("sh", "-c", "echo hello; echo oops >&2; exit 3")) } }
        assertTrue(notAnAgent.description.isNotEmpty())
    }

    @Test
    fun `the agent's refusals are typed, and calls after the end are Disconnected`() = coTest {
        val client = connectQuietly(referenceAgent("--delay-ms", "5"))
        val session = client.newSession("/tmp/e")
        val idle = assertThrows<AcpException.Protocol> { runBlockingIn { session.inject("x", InjectMode.STEER) } }
        assertEquals(ErrorReason.NO_RUNNING_TURN, idle.errorReason)
        assertEquals(-32010L, idle.error.code)
        // Not one of this client's ids: refused before anything is sent (C-PEND-3).
        val unknown = assertThrows<AcpException.Rejected> { runBlockingIn { session.revoke("msg_nope") } }
        assertEquals(CallRejected.UNKNOWN_MESSAGE_ID, unknown.reason)
        assertThrows<AcpException.Protocol> { runBlockingIn { client.resume("sess_nope", "/tmp") } }
        client.close()
        client.close() // idempotent
        assertTrue(client.isClosed)
        session.events().toList() // the session's stream ends with the connection (no hang)
        assertTrue(session.nextEvents().isEmpty())
        assertThrows<Exception> { runBlockingIn { session.prompt("too late") } }.let {
            assertTrue(it is AcpException.Disconnected || it is IllegalStateException, "$it")
        }
    }
}

/** Runs a suspend block from a non-suspend lambda (for `assertThrows`). */
fun <T> runBlockingIn(body: suspend () -> T): T = kotlinx.coroutines.runBlocking { body() }
