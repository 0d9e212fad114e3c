package dev.acpinject

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertNotNull
import kotlin.test.assertSame

/**
 * The open string enums (generated OpenEnums.kt): known values are objects, others are kept,
 * equality is by wire string, and they cross the FFI both ways; [Usage] needs only its total.
 */
class OpenEnumsTest {
    @Test
    fun `known values are objects and unknown ones are kept`() {
        assertSame(StopReason.EndTurn, StopReason.of("end_turn"))
        assertEquals("end_turn", StopReason.EndTurn.value)
        val vendor = StopReason.of("_vendor_stop")
        assertIs<StopReason.Other>(vendor)
        assertEquals(StopReason.Other("_vendor_stop"), vendor)
        assertEquals(setOf<StopReason>(StopReason.Other("end_turn")), setOf<StopReason>(StopReason.EndTurn), "equal by wire string")
        // ToolKind knows `other`: its catch-all is `Unknown`.
        assertSame(ToolKind.Other, ToolKind.of("other"))
        assertIs<ToolKind.Unknown>(ToolKind.of("_x"))
        val described = when (StopReason.of("cancelled")) {
            StopReason.Cancelled -> "cancelled"
            else -> "something else"
        }
        assertEquals("cancelled", described)
    }

    @Test
    fun `usage needs only its total`() {
        val usage = Usage(totalTokens = 150uL)
        assertEquals(listOf(150uL, 0uL, 0uL), listOf(usage.totalTokens, usage.inputTokens, usage.outputTokens))
        assertEquals(null, usage.thoughtTokens)
    }

    @Test
    fun `a known or unknown stop reason crosses the FFI into the agent and back to the client`() {
        for (reason in listOf(StopReason.MaxTokens, StopReason.of("_vendor_stop"))) Wire().use { w ->
            val s = w.newSession("/tmp/a")
            w.client.prompt(s, listOf(text("one")))
            w.pump()
            w.runtime(s, RuntimeEvent.TurnEnded(reason, Usage(totalTokens = 7uL)))
            val snap = assertNotNull(w.client.snapshot(s))
            assertEquals(reason, snap.stopReason)
            assertEquals(7uL, snap.usage?.totalTokens)
            assertEquals(emptyList(), snap.violations)
        }
    }
}
