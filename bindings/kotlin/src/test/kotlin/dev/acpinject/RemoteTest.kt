package dev.acpinject

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.seconds

/** A program that prints one line first (its address or URL); [line] is that line. */
private class Started(command: List<String>) : AutoCloseable {
    val process: Process = ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start()
    private val out = process.inputStream.bufferedReader()
    val line: String = out.readLine() ?: error("${command.first()} printed nothing")

    /** Sends a command line to the relay and waits for its echo. */
    fun command(what: String) {
        process.outputStream.write("$what\n".toByteArray())
        process.outputStream.flush()
        check(out.readLine() == what) { "the relay did not answer $what" }
    }

    override fun close() {
        process.destroy()
        process.waitFor()
    }
}

private val RELAY = File(WORKSPACE, "bindings/test-support/relay.py").path

private fun MirrorSnapshot.agentPending(): List<Pair<InjectMode, String>> = agentPending.orEmpty().map { it.mode to textOf(it.content) }

private suspend fun ClientSession.until(what: String, done: (MirrorSnapshot) -> Boolean): MirrorSnapshot {
    val deadline = System.nanoTime() + 30_000_000_000L
    while (!done(snapshot())) {
        check(System.nanoTime() < deadline) { "timed out waiting for $what: ${snapshot()}" }
        nextEvents()
    }
    return snapshot()
}

/**
 * Over the network: connect by URL to the reference agent (`--listen`) over WebSocket and over
 * Streamable HTTP, through a relay the test cuts mid-turn; reconnect, resume, find the
 * transcript and the pending list intact, and see every accepted message delivered once.
 */
class RemoteTest {
    private fun survivesADroppedNetwork(scheme: String) = coTest(90.seconds) {
        // Slow steps: the turn's first break-point comes seconds after it starts.
        val agent = Started(referenceAgent("--listen", "127.0.0.1:0", "--delay-ms", "1500", "--chunks", "2", "--tools", "1"))
        val relay = Started(listOf("python3", RELAY, agent.line.substringAfter("://").substringBefore("/")))
        agent.use {
            relay.use {
                val url = "$scheme://${relay.line}/acp"
                var client = connect(url, name = "kotlin-remote-test")
                var session = client.newSession("/tmp")
                session.prompt("first")
                session.until("the turn to run") { it.state == TurnState.RUNNING }
                session.inject("later")
                session.inject("now", InjectMode.STEER)
                session.revoke(session.inject("revoke me"))
                session.replace(session.inject("old"), "new")
                val expected = listOf(InjectMode.STEER to "now", InjectMode.QUEUE to "later", InjectMode.QUEUE to "new")
                val before = session.until("the pending list") { it.agentPending() == expected }

                // The network goes away mid-turn: the events end, calls fail with Disconnected.
                withContext(Dispatchers.IO) { relay.command("cut") }
                kotlinx.coroutines.withTimeout(30.seconds) { while (session.nextEvents().isNotEmpty()) Unit }
                val dropped = session
                assertThrows<AcpException.Disconnected> { kotlinx.coroutines.runBlocking { dropped.status() } }
                client.close()

                // A new connection resumes the session with replay: transcript and pending list intact.
                client = connect(url, name = "kotlin-remote-test")
                session = client.resume(session.id, "/tmp")
                val after = session.until("the replay") { it.agentPending() == expected && it.state == TurnState.RUNNING }
                assertEquals(before.transcript.map { Triple(it.role, it.messageId, textOf(it.content)) }, after.transcript.map { Triple(it.role, it.messageId, textOf(it.content)) })

                // The turn goes on: each accepted message delivered once, the revoked one never.
                val done = session.until("everything delivered") { it.state == TurnState.IDLE && it.agentPending().isEmpty() && it.users().size == 4 }
                val users = done.users().map { textOf(it.content) }
                assertEquals(listOf("first", "now"), users.take(2))
                assertEquals(listOf("later", "new"), users.drop(2).sorted())
                assertTrue(done.violations.isEmpty(), "${done.violations}")
                session.close()
                client.close()
            }
        }
    }

    @Test
    fun `over WebSocket a session survives a dropped network`() = survivesADroppedNetwork("ws")

    @Test
    fun `over Streamable HTTP a session survives a dropped network`() = survivesADroppedNetwork("http")

    private class Echo : Agent() {
        override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
            turn.say("echo: " + messages.joinToString(" ") { textOf(it.content) })
            return null
        }
    }

    @Test
    fun `a Kotlin agent serves by address, and refuses a public one without a token`() = coTest {
        listen(Echo(), "127.0.0.1:0").use { listening ->
            assertTrue(listening.url.startsWith("http://127.0.0.1:") && listening.url.endsWith("/acp"), listening.url)
            for (url in listOf(listening.url, listening.url.replaceFirst("http", "ws"))) {
                connect(url).use { client ->
                    val session = client.newSession("/tmp")
                    session.prompt("hello")
                    val done = session.until("the echo") { it.state == TurnState.IDLE && it.transcript.size == 2 }
                    assertEquals("echo: hello", textOf(done.transcript[1].content))
                }
            }
            assertEquals(2, listening.sessions.size)
        }
        val refused = assertThrows<AcpException.Config> { kotlinx.coroutines.runBlocking { listen(Echo(), "0.0.0.0:0") } }
        assertTrue("without authentication" in refused.message.orEmpty(), refused.message)
        listen(Echo(), "127.0.0.1:0", token = "s3cret").use { listening ->
            for (url in listOf(listening.url, listening.url.replaceFirst("http", "ws"))) {
                val wrong = assertThrows<AcpException.Disconnected> { kotlinx.coroutines.runBlocking { connect(url, token = "wrong") } }
                assertTrue("401" in wrong.message.orEmpty(), wrong.message)
            }
            connect(listening.url, token = "s3cret").use { it.newSession("/tmp") }
        }
    }
}
