package dev.acpinject

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
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

    /** Sends a command line to the relay and waits for its answer ([answer]: the command itself). */
    fun command(what: String, answer: String = what) {
        process.outputStream.write("$what\n".toByteArray())
        process.outputStream.flush()
        check(out.readLine()?.trim() == answer) { "the relay did not answer $what" }
    }

    override fun close() {
        process.destroy()
        process.waitFor()
    }
}

private val RELAY = File(WORKSPACE, "bindings/test-support/relay.py").path

/** A bearer token long enough to be accepted (16 bytes at least). */
private const val SECRET = "s3cret-s3cret-s3cret"

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
 * Streamable HTTP, through a relay the test cuts mid-turn (over WebSocket the client connects
 * again and resumes the session with replay by itself; over Streamable HTTP it reopens the
 * stream); find the transcript and the pending list intact, and see every accepted message
 * delivered once.
 */
class RemoteTest {
    private fun survivesADroppedNetwork(scheme: String) = coTest(90.seconds) {
        // Slow steps: the turn's first break-point comes seconds after it starts.
        val agent = Started(referenceAgent("--listen", "127.0.0.1:0", "--delay-ms", "1500", "--chunks", "2", "--tools", "1"))
        val relay = Started(listOf("python3", RELAY, agent.line.substringAfter("://").substringBefore("/")))
        agent.use {
            relay.use {
                val url = "$scheme://${relay.line}/acp"
                val client = connect(url, name = "kotlin-remote-test")
                val session = client.newSession("/tmp")
                session.prompt("first")
                session.until("the turn to run") { it.state == TurnState.RUNNING }
                session.inject("later")
                session.inject("now", InjectMode.STEER)
                session.revoke(session.inject("revoke me"))
                session.replace(session.inject("old"), "new")
                val expected = listOf(InjectMode.STEER to "now", InjectMode.QUEUE to "later", InjectMode.QUEUE to "new")
                val before = session.until("the pending list") { it.agentPending() == expected }

                // The network goes away mid-turn, and comes back.
                withContext(Dispatchers.IO) { relay.command("cut") }
                // The connection outlives the cut: over WebSocket the client connects again and
                // resumes the session with replay; over Streamable HTTP it reopens the session's
                // stream from the last event it read. A call made now is answered, and the
                // transcript and the pending list are intact.
                assertTrue(session.status().state is RunningStateUpdate, "running after the cut")
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

    /** The relay gives up on one session's Streamable HTTP stream mid-turn without telling the
     *  agent; the client reopens it from the last event it read, and loses nothing. */
    @Test
    fun `a dropped session stream over Streamable HTTP loses nothing`() = coTest(90.seconds) {
        // Many small chunks, so the stream is dropped while the agent is writing.
        val agent = Started(referenceAgent("--listen", "127.0.0.1:0", "--delay-ms", "15", "--chunks", "60", "--tools", "0"))
        val relay = Started(listOf("python3", RELAY, agent.line.substringAfter("://").substringBefore("/")))
        fun MirrorSnapshot.agentText() = transcript.filter { it.role == MessageRole.AGENT }.joinToString("") { textOf(it.content) }
        agent.use {
            relay.use {
                connect("http://${relay.line}/acp", name = "kotlin-remote-test").use { client ->
                    val session = client.newSession("/tmp")
                    session.prompt("stream")
                    session.until("a few chunks") { it.agentText().length > 20 }
                    withContext(Dispatchers.IO) { relay.command("drop-stream ${session.id}", "dropped") }
                    val done = session.until("the turn's end") { it.state == TurnState.IDLE && it.stopReason != null }
                    // What the client saw is what the agent recorded: the replay on a fresh connection.
                    connect(agent.line, name = "kotlin-remote-check").use { check ->
                        val replayed = check.resume(session.id, "/tmp").snapshot()
                        assertEquals(replayed.agentText(), done.agentText())
                        assertTrue(done.agentText().length > 60, done.agentText())
                    }
                }
            }
        }
    }

    /** The network breaks after the agent accepted a prompt, then an inject, before its answer:
     *  the client sends each again with its idempotency key (over WebSocket on a new socket,
     *  after resuming the session), and the agent keeps one copy of each (R-IDEM-2, C-IDEM-1). */
    private fun aCutBetweenAcceptanceAndAnswerLeavesOneCopy(scheme: String) = coTest(90.seconds) {
        val agent = Started(referenceAgent("--listen", "127.0.0.1:0", "--delay-ms", "20", "--chunks", "20", "--tools", "0"))
        val relay = Started(listOf("python3", RELAY, agent.line.substringAfter("://").substringBefore("/")))
        fun MirrorSnapshot.users() = transcript.filter { it.role == MessageRole.USER }
        agent.use {
            relay.use {
                connect("$scheme://${relay.line}/acp", name = "kotlin-remote-test").use { client ->
                    val session = client.newSession("/tmp")
                    withContext(Dispatchers.IO) { relay.command("cut-answer session/prompt", "armed") }
                    val turn = session.prompt("first")
                    withContext(Dispatchers.IO) { relay.command("answers-cut", "cut 1") }
                    withContext(Dispatchers.IO) { relay.command("cut-answer session/inject", "armed") }
                    val later = session.inject("second")
                    withContext(Dispatchers.IO) { relay.command("answers-cut", "cut 2") }
                    val done = session.until("both turns") { it.state == TurnState.IDLE && it.users().size >= 2 }
                    assertEquals(listOf("first", "second"), done.users().map { textOf(it.content) })
                    assertEquals(listOf(turn.messageId, later), done.users().map { it.messageId })
                    // What the agent recorded: one copy of each, on a fresh connection's replay.
                    connect(agent.line, name = "kotlin-remote-check").use { check ->
                        val replayed = check.resume(session.id, "/tmp").snapshot()
                        assertEquals(listOf("first", "second"), replayed.users().map { textOf(it.content) })
                    }
                }
            }
        }
    }

    @Test
    fun `a cut between acceptance and answer over Streamable HTTP leaves one copy`() = aCutBetweenAcceptanceAndAnswerLeavesOneCopy("http")

    @Test
    fun `a cut between acceptance and answer over WebSocket leaves one copy`() = aCutBetweenAcceptanceAndAnswerLeavesOneCopy("ws")

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
        val refused = assertThrows<AcpException.Config> { runBlockingIn { listen(Echo(), "0.0.0.0:0") } }
        assertTrue("without authentication" in refused.message.orEmpty(), refused.message)
        // A token too short to be a secret is refused too.
        val weak = assertThrows<AcpException.Config> { runBlockingIn { listen(Echo(), "127.0.0.1:0", token = "s3cret") } }
        assertTrue("too short" in weak.detail, weak.detail)
        listen(Echo(), "127.0.0.1:0", token = SECRET).use { listening ->
            for (url in listOf(listening.url, listening.url.replaceFirst("http", "ws"))) {
                val wrong = assertThrows<AcpException.Disconnected> { runBlockingIn { connect(url, token = "wrong") } }
                assertTrue("401" in wrong.message.orEmpty(), wrong.message)
            }
            connect(listening.url, token = SECRET).use { it.newSession("/tmp") }
            assertEquals(1, listening.sessions.size)
        }
    }

    /** The listener's limits from Kotlin: a zero one is refused naming it; one client at a time
     *  turns a second away with 503 until the first has gone. */
    @Test
    fun `listen limits are in force`() = coTest {
        val zero = assertThrows<AcpException.Config> {
            runBlockingIn { listen(Echo(), "127.0.0.1:0", limits = ListenLimits(maxConnections = 0)) }
        }
        assertTrue("max_connections must be more than zero" in zero.detail, zero.detail)
        listen(Echo(), "127.0.0.1:0", limits = ListenLimits(maxConnections = 1)).use { listening ->
            val ws = listening.url.replaceFirst("http", "ws")
            connect(listening.url).use { first ->
                first.newSession("/tmp")
                for (url in listOf(ws, listening.url)) {
                    val busy = assertThrows<AcpException.Disconnected> { runBlockingIn { connect(url) } }
                    assertTrue("503" in busy.message.orEmpty(), busy.message)
                }
            }
            // Its place is free again once it has gone (its close may take a moment to land).
            var attempt = 0
            while (true) {
                try {
                    connect(ws).use { it.newSession("/tmp") }
                    break
                } catch (e: AcpException.Disconnected) {
                    if (++attempt == 50) throw e
                    delay(100)
                }
            }
        }
    }

    /** A token per principal: each client sees its own principal's sessions only; another
     *  principal's session is answered as one the agent never had (R-TENANT-1). */
    @Test
    fun `principals see their own sessions only`() = coTest {
        val alice = "alice-0123456789abcdef"
        val bob = "bob-0123456789abcdef00"
        listen(Echo(), "127.0.0.1:0", tokens = mapOf("alice" to alice, "bob" to bob)).use { listening ->
            val ws = listening.url.replaceFirst("http", "ws")
            connect(ws, token = alice).use { a ->
                val theirs = a.newSession("/tmp")
                val bobs = mutableListOf<String>()
                for (url in listOf(ws, listening.url)) {
                    connect(url, token = bob).use { b ->
                        bobs.add(0, b.newSession("/tmp").id)
                        assertEquals(bobs, b.listSessions().sessions.map { it.sessionId })
                        val never = runCatching { b.resume("sess_never", "/tmp") }.exceptionOrNull()
                        val foreign = runCatching { b.resume(theirs.id, "/tmp") }.exceptionOrNull()
                        assertTrue(never is AcpException && foreign != null, "$never / $foreign")
                        assertEquals(never!!::class, foreign!!::class)
                        assertEquals(never.message!!.replace("sess_never", "ID"), foreign.message!!.replace(theirs.id, "ID"))
                    }
                }
                assertEquals(listOf(theirs.id), a.listSessions().sessions.map { it.sessionId })
                theirs.prompt("still mine")
                theirs.until("the echo") { it.state == TurnState.IDLE && it.transcript.size == 2 }
            }
        }
        for (tokens in listOf(mapOf("a" to alice, "b" to alice), mapOf("a" to "short"))) {
            assertThrows<AcpException.Config> { runBlockingIn { listen(Echo(), "127.0.0.1:0", tokens = tokens) } }
        }
    }
}
