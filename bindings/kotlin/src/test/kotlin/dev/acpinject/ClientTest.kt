package dev.acpinject

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Test
import java.util.Collections
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertIs
import kotlin.test.assertNotNull
import kotlin.test.assertTrue

/** Polls [condition] (a snapshot check) until it holds, for at most 20 s. */
suspend fun until(what: String, condition: suspend () -> Boolean) {
    val deadline = System.nanoTime() + 20_000_000_000L
    while (!condition()) {
        check(System.nanoTime() < deadline) { "timed out waiting for $what" }
        delay(5)
    }
}

/** Every activity of [session] into a list, from a background collector. */
fun CoroutineScope.record(session: ClientSession): Pair<MutableList<SessionActivity>, Job> {
    val seen = Collections.synchronizedList(mutableListOf<SessionActivity>())
    return seen to launch { session.events().collect { seen += it } }
}

/** The ids of the user messages delivered in these activities. */
fun List<SessionActivity>.deliveredIds(): List<String> = synchronized(this) {
    mapNotNull { (it as? UserMessage)?.messageId }
}

fun MirrorSnapshot.users(): List<TranscriptEntry> = transcript.filter { it.role == MessageRole.USER }

/** The client against the reference agent over real stdio. */
class ClientTest {
    @Test
    fun `a prompt streams events until the turn ends`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "5")).use { client ->
            assertEquals("acp-inject-reference-agent", client.agent.info.name)
            assertNotNull(client.inject).let { assertTrue(InjectMode.STEER in it.modes) }
            val session = client.newSession("/tmp/project")
            assertTrue("ClientSession(${session.id})" == session.toString())
            val id = assertNotNull(session.prompt("fix the bug").messageId)
            val seen = mutableListOf<SessionActivity>()
            val end = session.events().first { seen += it; it.turnEnded != null }
            assertEquals(StopReason.END_TURN, end.turnEnded)
            val fates = seen.mapNotNull { it.item }.filter { it.messageId == id }.map { it.status }
            assertEquals(ItemStatus.DELIVERED, fates.last(), "$seen")
            val snap = session.snapshot()
            assertEquals(TurnState.IDLE, snap.state)
            assertEquals(listOf(id), snap.users().map { it.messageId })
            assertEquals("fix the bug", textOf(snap.users().single().content))
            assertTrue(snap.transcript.any { it.role == MessageRole.AGENT })
            assertTrue(snap.violations.isEmpty(), "${snap.violations}")
            val open = session.status()
            assertEquals(SessionStatus.OPEN, open.status)
            assertIs<IdleStateUpdate>(open.state)
            assertTrue(client.sessions().first().sessionId == session.id)
            session.close()
            assertEquals(SessionStatusResponse(SessionStatus.SAVED), session.status())
        }
    }

    /**
     * Two sessions on one connection at once: a prompt in one; in the other a prompt, then
     * injects (queue and steer), a revoke and a replace sent concurrently, so requests and
     * answers of both sessions interleave on the wire. Nothing crosses between them.
     */
    @Test
    fun `two sessions on one connection, concurrently, never mix`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "40", "--tools", "3")).use { client ->
            val (a, b) = listOf(async { client.newSession("/tmp/a") }, async { client.newSession("/tmp/b") }).awaitAll()
            assertTrue(a.id != b.id)
            val (seenA, jobA) = record(a)
            val (seenB, jobB) = record(b)

            val pa = async { a.prompt("A: the long task") }
            val pb = async { b.prompt("B: start") }
            until("b to run") { b.snapshot().state == TurnState.RUNNING }
            val q1 = async { b.inject("B: queued, then revoked") }
            val q2 = async { b.inject("B: queued draft") }
            val st = async { b.inject("B: steer", InjectMode.STEER) }
            val revoke = async { b.revoke(q1.await()) }
            val replace = async { b.replace(q2.await(), "B: queued, final") }
            listOf(revoke, replace, st).awaitAll()
            val idA = assertNotNull(pa.await().messageId)
            val idB = assertNotNull(pb.await().messageId)
            val (idQ1, idQ2, idSt) = listOf(q1, q2, st).awaitAll()

            until("a's turn to end") { a.snapshot().let { it.state == TurnState.IDLE && it.stopReason != null } }
            until("b's queued message to be answered") {
                b.snapshot().let { s -> s.state == TurnState.IDLE && s.users().any { it.messageId == idQ2 } && s.pending.isEmpty() }
            }
            val snapA = a.snapshot()
            val snapB = b.snapshot()
            assertEquals(listOf(idA), snapA.users().map { it.messageId })
            assertEquals(listOf(idB, idSt, idQ2), snapB.users().map { it.messageId })
            assertEquals("B: queued, final", textOf(snapB.users().last().content))
            assertTrue(snapA.violations.isEmpty() && snapB.violations.isEmpty(), "${snapA.violations} ${snapB.violations}")

            until("both event streams to catch up") { seenB.deliveredIds().size == 3 && seenA.deliveredIds().size == 1 }
            jobA.cancel()
            jobB.cancel()
            assertEquals(listOf(idA), seenA.deliveredIds())
            assertEquals(listOf(idB, idSt, idQ2), seenB.deliveredIds())
            val bIds = setOf(idB, idQ1, idQ2, idSt)
            synchronized(seenA) {
                for (activity in seenA) {
                    val text = activity.toString()
                    assertTrue(bIds.none { it in text } && "B: " !in text, "b's traffic on a: $activity")
                }
            }
            synchronized(seenB) {
                for (activity in seenB) assertFalse(idA in activity.toString() || "A: " in activity.toString(), "a's traffic on b: $activity")
            }
        }
    }

    @Test
    fun `a permission request arrives as an activity and is answered`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "5", "--tools", "2", "--permission-on-tool", "0")).use { client ->
            val session = client.newSession("/tmp/p")
            session.prompt("needs a tool")
            val asked = assertIs<PermissionRequested>(session.events().first { it is PermissionRequested })
            assertEquals(TurnState.REQUIRES_ACTION, session.snapshot().state)
            session.allow(asked.request, asked.params.options.first().optionId)
            assertEquals(StopReason.END_TURN, session.events().first { it.turnEnded != null }.turnEnded)
        }
    }

    @Test
    fun `a cancelled turn ends cancelled and the queued message survives`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "200")).use { client ->
            val session = client.newSession("/tmp/c")
            session.prompt("long job")
            until("the turn to run") { session.snapshot().state == TurnState.RUNNING }
            val queued = session.inject("after the cancel")
            session.cancel()
            assertEquals(StopReason.CANCELLED, session.events().first { it.turnEnded != null }.turnEnded)
            until("the queued message to open the next turn") { session.snapshot().users().any { it.messageId == queued } }
        }
    }

    @Test
    fun `a turn is followed from its handle, with permissions answered by a handler`() = coTest {
        val asked = mutableListOf<String?>()
        val command = referenceAgent("--delay-ms", "20", "--tools", "2", "--permission-on-tool", "1")
        connect(command, name = "kotlin-tests", forwardStderr = false, onPermission = { request ->
            asked += request.title
            request.options.first().optionId
        }).use { client ->
            val session = client.newSession("/tmp/turn")
            val turn = session.prompt("fix the bug")
            assertNotNull(turn.messageId)
            val steered = session.inject("use auth_v2", InjectMode.STEER)
            val queued = session.inject("then the docs")
            val seen = turn.updates().toList()
            assertTrue(turn.ended)
            assertEquals(StopReason.END_TURN, turn.finished())
            assertEquals(seen, turn.updates().toList(), "each collector sees the whole turn")
            val delivered = seen.filterIsInstance<UserMessage>().map { it.messageId }
            // The prompt opened the turn, the steer was delivered inside it, the queued message
            // opens the next one.
            assertEquals(turn.messageId, delivered.first())
            assertTrue(steered in delivered && queued !in delivered, "$delivered")
            assertIs<IdleStateUpdate>(seen.last())
            assertTrue(seen.any { it is AgentMessageChunk })
            assertTrue(asked.isNotEmpty(), "the handler answered the agent's permission request")
            until("the queued message to open the next turn") { session.snapshot().users().any { it.messageId == queued } }
        }
    }

    /**
     * A turn's updates and the session's stream are read by one reader that hands every activity
     * to both: following the turn takes nothing from the stream, and a collector that comes late
     * to the turn still sees it from its start.
     */
    @Test
    fun `a turn and the session's stream each see every activity`() = coTest {
        connectQuietly(referenceAgent("--delay-ms", "5", "--tools", "1")).use { client ->
            val session = client.newSession("/tmp/both")
            val turn = session.prompt("fix the bug")
            val fromStream = mutableListOf<SessionActivity>()
            session.events().first { fromStream += it; it.turnEnded != null }
            val fromTurn = turn.updates().toList()
            assertEquals(StopReason.END_TURN, turn.finished())
            val streamUpdates = fromStream.filterIsInstance<SessionUpdate>().dropWhile { it !is UserMessage }
            assertEquals(streamUpdates, fromTurn, "the same updates, in the same order")
            assertTrue(fromStream.any { it is PendingItem }, "the stream also has the items: $fromStream")
            // The flat classes, exhaustively, from either reader.
            assertTrue(fromTurn.map { kindOf(it) }.any { it.startsWith("agent chunk") })
            assertEquals("state", groupOf(fromTurn.last()))
        }
    }
}
