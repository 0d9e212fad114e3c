package dev.acpinject

import kotlinx.coroutines.flow.first
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertNull
import kotlin.test.assertTrue

/**
 * This client against an agent written with the official ACP TypeScript SDK
 * (`interop/typescript-sdk/sdk-agent.mjs`), which checks every line both ways with the SDK's own
 * schemas and writes what it found to a report. Runs in the `interop` stage of `cargo xtask
 * test`, which installs the pinned SDK and sets `ACP_INJECT_SDK_AGENT` to the script; skipped
 * without it (the `kotlin` stage).
 */
class SdkAgentInteropTest {
    @Test
    fun `a session against an agent written with the official TypeScript SDK`() = coTest {
        val script = System.getenv("ACP_INJECT_SDK_AGENT")
        assumeTrue(!script.isNullOrEmpty(), "ACP_INJECT_SDK_AGENT names the SDK agent (the interop stage sets it)")
        val report = File.createTempFile("sdk-agent-report", ".json").apply { delete() }
        connectQuietly(listOf("node", script!!, "--delay-ms", "20", "--report", report.path)).use { client ->
            assertEquals("interop-sdk-agent", client.agent.info.name)
            assertNull(client.inject, "the SDK agent offers no session/inject")
            val session = client.newSession("/tmp/project")

            // A turn with a permission request, allowed.
            val id = kotlin.test.assertNotNull(session.prompt("fix the bug"))
            val asked = assertIs<SessionActivity.PermissionRequested>(session.events().first { it is SessionActivity.PermissionRequested })
            session.allow(asked.request, "allow")
            assertEquals(StopReason.EndTurn, session.events().first { it.turnEnded != null }.turnEnded)
            val snap = session.snapshot()
            assertEquals(listOf(id), snap.users().map { it.messageId })
            assertTrue(snap.transcript.any { it.role == MessageRole.AGENT && textOf(it.content).contains("fix the bug") })
            assertTrue(snap.violations.isEmpty(), "${snap.violations}")

            // A turn cancelled mid-way.
            session.prompt("then the docs")
            session.events().first { (it.update as? SessionUpdate.AgentMessageChunk) != null }
            session.cancel()
            assertEquals(StopReason.Cancelled, session.events().first { it.turnEnded != null }.turnEnded)

            val open = session.status()
            assertEquals(SessionStatus.Open, open.status)
            assertIs<StateUpdate.Idle>(open.state)
            client.sessions().first { it.sessionId == session.id }
            session.close()
        }
        // The agent writes its report when its input ends, just after the connection closes.
        val deadline = System.nanoTime() + 10_000_000_000L
        while (!report.exists() && System.nanoTime() < deadline) Thread.sleep(20)
        val text = report.readText()
        report.delete()
        assertTrue(Regex("\"problems\":\\s*\\[\\s*]").containsMatchIn(text), "the SDK's schemas refused lines: $text")
        assertTrue(Regex("\"lines\":\\s*[1-9]").containsMatchIn(text), "no lines checked: $text")
    }
}
