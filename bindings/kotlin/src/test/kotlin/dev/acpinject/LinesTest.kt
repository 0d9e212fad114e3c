package dev.acpinject

import dev.acpinject.bench.benchClient
import dev.acpinject.bench.sharedStream
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** [ClientCore.receiveLine] is [ClientCore.receive], faster: same events, same state. */
class LinesTest {
    @Test
    fun `receiveLine returns what receive returns, line for line`() {
        val lines = sharedStream(3000) + listOf(
            "{not json",
            """{"jsonrpc":"2.0","id":5,"result":{}}""",
            """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}""",
            """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"é","content":{"type":"text","text":"ünïcødé ✓ 🚀"}}}}""",
            """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"q","content":{"type":"text","text":"why? ¿ ✓"}}}}""",
        )
        benchClient().use { slow ->
            benchClient().use { fast ->
                for (line in lines) assertEquals(slow.receive(line), fast.receiveLine(line), line)
                assertEquals(slow.snapshot("sess_1"), fast.snapshot("sess_1"))
                assertEquals(slow.ignoredLines(), fast.ignoredLines())
            }
        }
    }

    @Test
    fun `events larger than the buffer still come back whole`() = benchClient().use { c ->
        val big = "x".repeat(200_000)
        val line = """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"$big"}}}}"""
        repeat(2) {
            val events = c.receiveLine(line)
            val update = (events.single() as InSession).event as AgentMessageChunk
            assertEquals(big, update.content.text)
        }
    }

    @Test
    fun `a string that is not valid Unicode is InvalidInput, and the core is untouched`() = benchClient().use { c ->
        assertThrows<AcpException.InvalidInput> { c.receiveLine("{\"lone\": \"\uD800\"}") }
        assertThrows<AcpException.InvalidInput> { c.receiveLine("{\"lone\": \"\uDC00?\"}") }
        assertThrows<AcpException.InvalidInput> { c.receiveLine("{\"lone\": \"${"y".repeat(50_000)}\uD83D\"}") }
        assertEquals(0L, c.ignoredLines())
        assertTrue(c.receiveLine("{not json").single() is Ignored)
    }

    @Test
    fun `eight threads feed one client line by line`() = benchClient().use { c ->
        val lines = sharedStream(4000)
        val pool = Executors.newFixedThreadPool(8)
        val counts = (0 until 8).map { t -> pool.submit<Int> { lines.filterIndexed { i, _ -> i % 8 == t }.sumOf { c.receiveLine(it).size } } }
        pool.shutdown()
        assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS))
        assertEquals(lines.size, counts.sumOf { it.get() })
        assertEquals(0L, c.ignoredLines())
    }

    @Test
    fun `the per-line path uses the object's own line port, and refuses a closed object`() {
        val c = benchClient()
        assertEquals(1, c.receiveLine(sharedStream(1).single()).size)
        // Each object has its own port: a line given to one is counted by it alone.
        val d = benchClient()
        val stray = """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s9","update":{"sessionUpdate":"state_update","state":"running"}}}"""
        c.receiveLine(stray)
        assertEquals(1L, c.ignoredLines(), "a line for a session not open here is ignored, and counted")
        assertEquals(0L, d.ignoredLines())
        c.close()
        assertThrows<IllegalStateException> { c.receiveLine(sharedStream(1).single()) }
    }

    @Test
    fun `the per-line path reads nothing of UniFFI's but the line port`() {
        val source = java.io.File(WORKSPACE, "bindings/kotlin/src/main/kotlin/dev/acpinject/Lines.kt").readText()
        // (Spelled in two pieces: the tidy rule the_bindings_use_uniffis_public_surface_only reads this file too.)
        for (name in listOf("Ffi" + "Converter", "RustBuffer", "UniffiLib", "uniffiIsDestroyed", "callWithHandle", "uniffiRustCall")) {
            kotlin.test.assertFalse(name in source, "Lines.kt names $name")
        }
    }
}
