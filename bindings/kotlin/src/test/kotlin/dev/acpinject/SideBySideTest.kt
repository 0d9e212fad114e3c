package dev.acpinject

import kotlinx.coroutines.flow.first
import org.junit.jupiter.api.Test
import java.io.File
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertIs
import kotlin.test.assertTrue
import kotlin.test.fail

/**
 * The side-by-side examples (`side-by-side/kotlin`: an agent and a client written with the
 * official ACP Kotlin SDK, the same two written with this package), compiled with the tests:
 * each client against each agent, every program in a JVM of its own, the client's output checked;
 * then each agent driven by this package's client through a rejected permission and a cancel.
 */
class SideBySideTest {
    @Test
    fun `the official client against the official agent`() {
        commonPart(run("Official", "Official"), "official-echo-agent", 1, "COMPLETED", "END_TURN")
    }

    @Test
    fun `the official client against our agent, which answers it in ACP v1`() {
        commonPart(run("Official", "Ours"), "ours-echo-agent", 1, "COMPLETED", "END_TURN")
    }

    @Test
    fun `our client against the official agent, holding the queue itself`() {
        val out = run("Ours", "Official")
        commonPart(out, "official-echo-agent", 1, "completed", "end_turn")
        // No steer (a v1 agent offers none); the queue is held by the client and each message
        // goes out as a prompt of its own when a turn ends, the revoked one never, the replaced
        // one with its new text.
        assertFalse("STEER" in out, out)
        assertTrue("[QUEUE REVOKED] never mind" in out, out)
        assertInOrder(replies(out), "[stop] end_turn", "you said: and a follow-up", "[stop] end_turn", "you said: the final question", "[stop] end_turn")
        assertEquals(3, Regex("""\[stop] end_turn""").findAll(out).count(), out)
        assertFalse("said: a draft" in out || "said: never mind" in out, out)
    }

    @Test
    fun `our client against our agent, with queue, steer, revoke and replace`() {
        val out = run("Ours", "Ours")
        commonPart(out, "ours-echo-agent", 2, "completed", "end_turn")
        // The steer is delivered at the tool result of the first turn and read there; the two
        // queued messages open the next turn together; the revoked one is never delivered, the
        // replaced one is delivered with its new text.
        assertInOrder(out, "[STEER DELIVERED] keep it short", "(steered: keep it short)", "[stop] end_turn")
        assertTrue("[QUEUE REVOKED] never mind" in out, out)
        assertInOrder(out, "[stop] end_turn", "[QUEUE DELIVERED] and a follow-up", "[QUEUE DELIVERED] the final question")
        assertInOrder(replies(out), "[stop] end_turn", "you said: and a follow-up the final question", "[stop] end_turn")
        assertFalse("DELIVERED] never mind" in out || "DELIVERED] a draft" in out || "a draft the final" in out, out)
    }

    @Test
    fun `each agent fails the tool call when rejected and ends a cancelled turn cancelled`() = coTest {
        for (name in listOf("Official", "Ours")) {
            connectQuietly(program("${name}AgentKt")).use { agent ->
                val session = agent.newSession("/tmp/side-by-side")
                session.prompt("reject this")
                val asked = assertIs<PermissionRequested>(session.events().first { it is PermissionRequested })
                session.allow(asked.request, "reject")
                val failed = session.events().first { (it as? ToolCallUpdate)?.status == ToolCallStatus.FAILED }
                assertEquals(StopReason.END_TURN, session.events().first { it.turnEnded != null }.turnEnded, "$name after $failed")

                session.prompt("cancel this")
                session.events().first { it is PermissionRequested }
                session.cancel()
                assertEquals(StopReason.CANCELLED, session.events().first { it.turnEnded != null }.turnEnded, name)
                assertTrue(session.snapshot().violations.isEmpty(), "$name: ${session.snapshot().violations}")
            }
        }
    }
}

/** `java … MAIN ARGS…` on this test's classpath, with the workspace's library for JNA. */
private fun program(main: String, vararg args: String): List<String> = listOf(
    File(System.getProperty("java.home"), "bin/java").path,
    "-Djna.library.path=${System.getProperty("jna.library.path").orEmpty()}",
    "-cp", System.getProperty("java.class.path"),
    main, *args,
)

/** Runs `<client>ClientKt` with `<agent>AgentKt` as its agent; its stdout, once it exited 0. */
private fun run(client: String, agent: String): String {
    val stderr = File.createTempFile("side-by-side", ".stderr")
    try {
        val process = ProcessBuilder(program("${client}ClientKt", *program("${agent}AgentKt").toTypedArray()))
            .redirectError(stderr)
            .start()
        process.outputStream.close()
        val out = process.inputStream.readBytes().decodeToString()
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly()
            fail("$client client against the $agent agent: no exit within 60 s\n$out\n${stderr.readText()}")
        }
        assertEquals(0, process.exitValue(), "$client client against the $agent agent:\n$out\n${stderr.readText()}")
        println("--- the $client client against the $agent agent:\n$out")
        return out
    } finally {
        stderr.delete()
    }
}

/** What every pairing shows: the agent and protocol, the reply, the permission allowed, the
 *  tool call completed, the turn's end. */
private fun commonPart(out: String, agent: String, protocol: Int, completed: String, endTurn: String) {
    assertTrue("[agent] $agent, protocol $protocol" in out, out)
    assertInOrder(replies(out), "you said: hello", "[permission] Echo the message: Allow", ": $completed", "[stop] $endTurn")
}

/** [out] without our client's lines about its messages (`[QUEUE DELIVERED] text`), which may
 *  arrive in the middle of the agent's streamed text. */
private fun replies(out: String): String = out.replace(Regex("""\[(PROMPT|QUEUE|STEER) [A-Z]+] [^\n]*\n"""), "")

/** The [parts] occur in [out] in this order. */
private fun assertInOrder(out: String, vararg parts: String) {
    var from = 0
    for (part in parts) {
        val at = out.indexOf(part, from)
        assertTrue(at >= 0, "\"$part\" after position $from in:\n$out")
        from = at + part.length
    }
}
