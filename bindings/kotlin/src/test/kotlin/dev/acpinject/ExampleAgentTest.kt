package dev.acpinject

import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.seconds

/** The example agent (examples/Agent.kt) in its own JVM, driven by the Kotlin client. */
class ExampleAgentTest {
    @Test
    fun `the example agent reads a steer at a tool result and asks before step 2`() = coTest(90.seconds) {
        connectQuietly(exampleAgent("--delay-ms", "150")).use { client ->
            assertEquals("acp-inject-kotlin-example", client.agent.info.name)
            val session = client.newSession("/tmp/example")
            val answered = launch {
                session.events().collect { a ->
                    if (a is PermissionRequested) session.allow(a.request, "allow")
                }
            }
            session.prompt("fix the login test")
            until("the turn to run") { session.snapshot().state == TurnState.RUNNING }
            val steer = session.inject("use auth_v2", InjectMode.STEER)
            val queued = session.inject("then update the changelog")
            until("both turns to end") {
                session.snapshot().let { s -> s.state == TurnState.IDLE && s.users().any { it.messageId == queued } && s.stopReason != null }
            }
            answered.cancel()
            val snap = session.snapshot()
            assertEquals(3, snap.users().size)
            assertEquals(steer, snap.users()[1].messageId)
            val said = snap.transcript.filter { it.role == MessageRole.AGENT }.joinToString("|") { textOf(it.content) }
            assertTrue("(noted: use auth_v2)" in said, said)
            assertTrue("Done (2 message(s) handled this turn)." in said, said)
            assertTrue("Done (1 message(s) handled this turn)." in said, said)
            assertEquals(StopReason.END_TURN, snap.stopReason)
            assertTrue(snap.violations.isEmpty(), "${snap.violations}")
        }
    }

    @Test
    fun `the example agent's sessions outlive it with --store`(@TempDir dir: File) = coTest(90.seconds) {
        val store = File(dir, "sessions.db").path
        val id = connectQuietly(exampleAgent("--delay-ms", "1", "--store", store)).use { client ->
            val session = client.newSession("/tmp/kept")
            session.prompt("remember me")
            session.events().first { it is PermissionRequested }.let {
                session.allow((it as PermissionRequested).request, "reject")
            }
            session.events().first { it.turnEnded != null }
            session.id
        }
        connectQuietly(exampleAgent("--delay-ms", "1", "--store", store)).use { client ->
            assertTrue(client.sessions().first().sessionId == id)
            val resumed = client.resume(id, "/tmp/kept")
            assertEquals("remember me", textOf(resumed.snapshot().users().single().content))
        }
    }
}
