package dev.acpinject

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Test
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** The objects are shared between threads and coroutines: many callers at once, one answer each. */
class ThreadsTest {
    @Test
    fun `eight threads drive one agent core and one client core at once`() = Wire().use { w ->
        val sessions = (1..8).map { w.newSession("/tmp/$it") }
        val pool = Executors.newFixedThreadPool(8)
        val start = CountDownLatch(1)
        val perThread = 200
        val failures = java.util.concurrent.ConcurrentLinkedQueue<Throwable>()
        // Each thread: a session of its own, many queue injects, each line straight to the agent
        // core and every answer line back into the client core (both objects shared by all).
        for (s in sessions) pool.execute {
            try {
                start.await()
                repeat(perThread) { i ->
                    w.client.inject(s, InjectMode.QUEUE, listOf(text("$s #$i")))
                    // Another thread may take this line: any thread forwards whatever is queued.
                    for (line in w.client.takeOutgoing()) for (out in w.agent.handleLine(Wire.CONNECTION, line)) {
                        if (out is Line && Wire.CONNECTION in out.to) w.client.receive(out.line)
                    }
                    w.client.snapshot(s)
                }
            } catch (t: Throwable) {
                failures += t
            }
        }
        start.countDown()
        pool.shutdown()
        assertTrue(pool.awaitTermination(120, TimeUnit.SECONDS))
        assertTrue(failures.isEmpty(), "$failures")
        w.pump()
        for (s in sessions) {
            // The first inject found the session idle and opened a turn; the others wait.
            val pending = w.agent.pending(s)
            assertEquals(perThread - 1, pending.size, "agent-side pending of $s")
            assertEquals((0 until perThread).map { "$s #$it" }.toSet() - pending.map { textOf(it.content) }.toSet(), setOf(textOf(w.agent.history(s).filterIsInstance<DeliveredMessage>().single().content)))
            val items = w.client.snapshot(s)!!.pending
            assertEquals(perThread - 1, items.count { it.status == ItemStatus.PENDING }, "client-side pending of $s: $items")
            assertEquals(pending.map { it.messageId }.toSet(), items.filter { it.status == ItemStatus.PENDING }.map { it.messageId }.toSet())
        }
        assertEquals(0L, w.client.ignoredLines())
    }

    @Test
    fun `many coroutines on many threads call one live session at once`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "2000")).use { client ->
            val session = client.newSession("/tmp/threads")
            session.prompt("a long turn")
            until("the turn to run") { session.snapshot().state == TurnState.RUNNING }
            val ids = (1..64).map { i ->
                async(Dispatchers.Default) {
                    val id = session.inject("queued $i")
                    if (i % 4 == 0) session.replace(id, "replaced $i")
                    if (i % 8 == 1) session.revoke(id)
                    session.snapshot()
                    session.status()
                    id
                }
            }.awaitAll()
            assertEquals(64, ids.toSet().size, "every inject got its own id")
            val snap = session.snapshot()
            val pending = snap.pending.filter { it.status == ItemStatus.PENDING }
            assertEquals(64 - 8, pending.size)
            assertTrue(pending.filter { textOf(it.content).startsWith("replaced") }.size == 16)
            val revoked = ids.filterIndexed { i, _ -> (i + 1) % 8 == 1 }.toSet()
            assertTrue(snap.pending.none { it.messageId in revoked && it.status == ItemStatus.PENDING })
            session.cancel()
        }
    }

    @Test
    fun `sessions opened from many coroutines at once each get their own events`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "1", "--tools", "1")).use { client ->
            val sessions = (1..6).map { async(Dispatchers.Default) { client.newSession("/tmp/s$it") } }.awaitAll()
            val runs = sessions.mapIndexed { i, s ->
                launch(Dispatchers.Default) {
                    val id = s.prompt("task $i").messageId
                    until("session $i to finish") { s.snapshot().let { it.state == TurnState.IDLE && it.stopReason != null } }
                    assertEquals(listOf(id), s.snapshot().users().map { it.messageId })
                    assertEquals("task $i", textOf(s.snapshot().users().single().content))
                }
            }
            runs.forEach { it.join() }
        }
    }
}
