package dev.acpinject

import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Test
import java.util.Collections
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.Executors
import kotlin.concurrent.thread
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** One AgentCore, and one ClientSession, shared by many threads: every call is atomic. */
class ThreadsTest {
    private val threads = 8
    private val perThread = 200

    @Test
    fun `one agent driven from eight coroutines on eight threads`() {
        val core = AgentCore(defaultAgentOptions())
        core.createSession("s1")
        assertTrue(core.handleLine("c1", request(0, "session/prompt", promptParams("go"))).actions().isNotEmpty())
        val accepted = Collections.synchronizedSet(HashSet<String>())
        val revoked = Collections.synchronizedSet(HashSet<String>())
        val delivered = Collections.synchronizedList(ArrayList<String>())

        fun record(outputs: List<AgentOutput>) {
            for (a in outputs.actions()) when (a) {
                is RuntimeAction.Deliver -> delivered += a.messages.map { it.messageId }
                is RuntimeAction.StartTurn -> delivered += a.messages.map { it.messageId }
                else -> {}
            }
        }

        fun answerTo(conn: String, outputs: List<AgentOutput>): JsonObject =
            Json.parseToJsonElement(outputs.filterIsInstance<AgentOutput.Line>().first { it.to == conn }.line).jsonObject

        fun worker(n: Int) {
            val conn = "c$n"
            for (i in 0 until perThread) {
                val req = n * 100_000L + i * 2
                val outs = core.handleLine(conn, request(req, "session/inject", injectParams(if (i % 2 == 1) "steer" else "queue", "$n-$i")))
                record(outs)
                val answer = answerTo(conn, outs)
                if ("error" in answer) {
                    // A steer that raced a turn end meets an idle session (R-STEER-2).
                    val reason = answer.getValue("error").jsonObject.getValue("data").jsonObject.getValue("reason").jsonPrimitive.content
                    assertEquals("no_running_turn", reason, answer.toString())
                    continue
                }
                val mid = answer.getValue("result").jsonObject.getValue("messageId").jsonPrimitive.content
                accepted += mid
                if (i % 3 == 0) {
                    val rev = core.handleLine(conn, request(req + 1, "session/revoke_inject", revokeParams(mid)))
                    record(rev)
                    if (answerTo(conn, rev)["result"] == JsonObject(emptyMap())) revoked += mid
                }
                if (i % 5 == 0) {
                    try { record(core.runtimeEvent("s1", RuntimeEvent.BreakPoint(BreakPoint.TOOL_RESULT))) } catch (_: AcpException.Host) {}
                }
                if (i % 17 == 0) {
                    try { record(core.runtimeEvent("s1", RuntimeEvent.TurnEnded("end_turn", null))) } catch (_: AcpException.Host) {}
                }
            }
        }

        Executors.newFixedThreadPool(threads).asCoroutineDispatcher().use { pool ->
            runBlocking {
                withTimeout(120_000) { (1..threads).map { n -> async(pool) { worker(n) } }.awaitAll() }
            }
        }

        val pending = core.pending("s1").map { it.messageId }.toSet()
        val deliveredSet = delivered.toSet()
        assertEquals(delivered.size, deliveredSet.size, "a message was delivered twice")
        assertTrue((deliveredSet intersect revoked).isEmpty(), "a revoked message was delivered")
        assertTrue(accepted.size > threads * perThread / 2)
        // Every accepted inject is exactly one of: delivered, revoked, still pending.
        for (mid in accepted) assertEquals(1, listOf(mid in deliveredSet, mid in revoked, mid in pending).count { it }, mid)
        core.close()
    }

    @Test
    fun `one client mirror fed and read from eight threads`() {
        val chunks = 300
        ClientSession("s1", FULL_CAPS).use { session ->
            val barrier = CyclicBarrier(threads)
            val errors = Collections.synchronizedList(ArrayList<Throwable>())
            val workers = (1..threads).map { n ->
                thread(name = "mirror-$n") {
                    try {
                        barrier.await()
                        for (k in 0 until chunks) {
                            session.receive(
                                """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":""" +
                                    """{"sessionUpdate":"agent_message_chunk","messageId":"a$n","content":{"type":"text","text":"$n-$k"}}}}""",
                            )
                            if (k % 50 == 0) session.snapshot() // readers interleave with writers
                        }
                    } catch (t: Throwable) {
                        errors += t
                    }
                }
            }
            workers.forEach { it.join(120_000) }
            assertEquals(emptyList(), errors)
            val transcript = session.snapshot().transcript
            assertEquals((1..threads).map { "a$it" }.toSet(), transcript.map { it.messageId }.toSet())
            for (entry in transcript) {
                val n = entry.messageId.drop(1)
                // Each thread's chunks arrive whole and in that thread's order.
                assertEquals((0 until chunks).map { text("$n-$it") }, entry.content, entry.messageId)
            }
        }
    }
}
