package dev.acpinject

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import java.io.File
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertNotNull
import kotlin.test.assertTrue
import kotlin.test.fail

/**
 * End to end over real stdio: the reference agent (`acp-inject-agent`, a subprocess speaking
 * newline-delimited JSON-RPC) driven from a [ClientSession], playing the scenario of
 * bindings/python/examples/live_demo.py, and checking that every behaviour really happened.
 *
 * The agent binary is `$ACP_INJECT_AGENT` (set by `cargo xtask test`), else built here with
 * cargo from this checkout.
 */
class LiveAgentTest {
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS) // a backstop: the session has its own 60 s deadline
    fun `a live session over stdio shows every behaviour`() {
        val demo = LiveDemo(agentBinary(), delayMs = 40)
        val finished = demo.run(deadlineMillis = 60_000)
        demo.check(finished)
        println("live agent: ${demo.summary()}")
    }
}

/** The reference agent binary: `$ACP_INJECT_AGENT`, else `cargo build` it in this checkout. */
fun agentBinary(): File {
    System.getenv("ACP_INJECT_AGENT")?.takeIf { it.isNotEmpty() }?.let { return File(it) }
    fun run(vararg command: String): String {
        val p = ProcessBuilder(*command).directory(WORKSPACE).redirectError(ProcessBuilder.Redirect.INHERIT).start()
        val out = p.inputStream.readBytes().decodeToString()
        check(p.waitFor() == 0) { "`${command.joinToString(" ")}` failed" }
        return out
    }
    run("cargo", "build", "--quiet", "-p", "acp-inject-reference-agent")
    val meta = Json.parseToJsonElement(run("cargo", "metadata", "--format-version", "1", "--no-deps")).jsonObject
    return File(meta.getValue("target_directory").jsonPrimitive.content, "debug/acp-inject-agent")
}

private fun JsonElement?.str(): String? = (this as? JsonPrimitive)?.takeIf { it.isString }?.content
private fun JsonObject.obj(key: String): JsonObject? = this[key] as? JsonObject

/**
 * A user who prompts, steers on the first agent chunk, queues three messages on the first tool
 * call and revokes one and replaces another, steers while a permission prompt is open, answers
 * it, revokes a queued message too late, and cancels with a message still queued. The
 * [ClientSession] tracks everything; this class decides when to act and records what happened.
 */
class LiveDemo(agent: File, delayMs: Int) {
    private val proc: Process = ProcessBuilder(
        agent.path, "--delay-ms", "$delayMs", "--tools", "3", "--permission-on-tool", "1",
    ).redirectError(ProcessBuilder.Redirect.INHERIT).start()
    private val stdin = proc.outputStream.bufferedWriter()

    /** Lines from the agent; [EOF] once its stdout closes. */
    private val lines = LinkedBlockingQueue<String>()
    private val t0 = System.nanoTime()
    private var nextId = 1000L
    private lateinit var session: ClientSession
    private val narrative = StringBuilder()

    // What the user meant (ids → words, ids → how they were sent), and open requests.
    private val label = LinkedHashMap<String, String>()
    private val kind = HashMap<String, String>()
    private val requests = HashMap<String, Pair<String, String>>()

    private var linesRead = 0
    private var turn = 0
    private var state = "idle"
    private var permissionOpen = false
    private var permissionId: JsonElement? = null
    private var permissionAt = 0L
    private val plan = HashSet<String>()

    /** Every `user_message` the mirror read. */
    data class Delivery(
        val messageId: String,
        val text: String,
        val how: String,
        val turn: Int,
        val state: String,
        val line: Int,
        /** The update just before it (a break-point shows as a completed tool call). */
        val after: String,
    )

    val deliveries = mutableListOf<Delivery>()
    val seen = linkedMapOf(
        "steer_at_break_point" to 0, "steer_held_in_permission" to 0, "queued_after_idle" to 0,
        "cancel_kept_pending" to 0, "revoke_ok" to 0, "revoke_too_late" to 0, "replaced" to 0,
    )
    private fun bump(what: String) {
        seen[what] = seen.getValue(what) + 1
    }

    private var lastUpdate = "nothing"
    private var heldSteer: String? = null
    private var heldSteerSentIn: TurnState? = null
    private var permissionAnsweredAtLine: Int? = null // turn 1's answer
    private var completionAfterAnswer: Pair<Int, String>? = null // line, tool call id
    private var revoked: String? = null
    private var replaced: String? = null
    private var replacedEcho: String? = null
    private var lateRevoke: Pair<String, ItemStatus?>? = null // id, the mirror's status when sent
    private var lateRevokeError: AcpException.Protocol? = null
    private var cancelledWith: String? = null
    private val idles = mutableListOf<Triple<Int, String?, Int>>() // turn, stop reason, line
    private val protocolErrors = mutableListOf<AcpException.Protocol>()
    private var exitCode: Int? = null

    init {
        Thread {
            proc.inputStream.bufferedReader().useLines { seq -> seq.forEach { lines.put(it) } }
            lines.put(EOF)
        }.apply { isDaemon = true }.start()
    }

    // ----- plumbing -----

    private fun say(who: String, what: String) {
        narrative.append("%7.2fs  %-10s %s\n".format((System.nanoTime() - t0) / 1e9, who, what))
    }

    private fun send(line: String) {
        stdin.write(line)
        stdin.write("\n")
        stdin.flush()
    }

    private fun idKey(msg: JsonObject): String? = msg["id"]?.toString()

    /** A request outside the mirror (initialize, session/new): waits for its answer. */
    private fun request(method: String, params: String, deadline: Long): JsonObject {
        nextId += 1
        send("""{"jsonrpc":"2.0","id":$nextId,"method":"$method","params":$params}""")
        while (true) {
            val line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)
                ?: fail("no answer to $method before the deadline\n$narrative")
            if (line === EOF) fail("the agent exited during $method\n$narrative")
            val msg = Json.parseToJsonElement(line).jsonObject
            if (msg["id"]?.toString() == "$nextId") {
                msg["error"]?.let { fail("$method failed: $it") }
                return msg.getValue("result").jsonObject
            }
        }
    }

    /** Sends one of the mirror's request lines and remembers what it was for. */
    private fun user(op: String, words: String, line: String, shown: String = "\"$words\"") {
        send(line)
        idKey(Json.parseToJsonElement(line).jsonObject)?.let { requests[it] = op to words }
        say("you", "%-8s %s".format(op, shown))
    }

    private fun pendingId(words: String): String? = label.entries.firstOrNull { it.value == words }?.key

    // ----- the scenario -----

    /** Plays the scenario; true when turn 3 ended before the deadline. */
    fun run(deadlineMillis: Long): Boolean {
        val deadline = System.nanoTime() + deadlineMillis * 1_000_000
        var done = false
        try {
            val init = request("initialize", """{"protocolVersion":2,"info":{"name":"live-test","version":"1"}}""", deadline)
            say("agent", "initialized: ${init["capabilities"]}")
            val sessionId = request("session/new", """{"cwd":"/tmp"}""", deadline).getValue("sessionId").jsonPrimitive.content
            session = ClientSession.fromInitializeResult(sessionId, init.toString())
            say("agent", "session $sessionId created")
            user("prompt", PROMPT, session.prompt(listOf(text(PROMPT))))
            while (System.nanoTime() < deadline && !done) {
                val line = lines.poll(50, TimeUnit.MILLISECONDS)
                if (line === EOF) break
                if (line != null) done = handle(line)
                tick()
            }
        } finally {
            stdin.close() // the agent exits at end of input
            exitCode = if (proc.waitFor(10, TimeUnit.SECONDS)) proc.exitValue() else null
            if (exitCode == null) proc.destroyForcibly()
        }
        return done
    }

    /** Actions that wait for answers rather than for agent events. */
    private fun tick() {
        if ("queued" in plan && "edited" !in plan) {
            val q2 = pendingId(BUMP)
            val q3 = pendingId(DRAFT)
            if (q2 != null && q3 != null) {
                plan += "edited"
                revoked = q2
                replaced = q3
                user("revoke", BUMP, session.revoke(q2), "\"$BUMP\" ($q2)")
                user("replace", REGRESSION, session.replace(q3, listOf(text(REGRESSION))), "\"$DRAFT\" ($q3) → \"$REGRESSION\"")
                label[q3] = REGRESSION
            }
        }
        if ("cancel_after" in plan && "cancelled" !in plan) {
            pendingId(SUMMARY)?.let { id ->
                plan += "cancelled"
                cancelledWith = id
                send(session.cancel())
                say("you", "cancel   (the queued summary should survive)")
            }
        }
        // Answer after 0.3 s, and in turn 1 only once the steer sent meanwhile was accepted.
        val steerSettled = turn != 1 || heldSteer != null
        if (permissionOpen && steerSettled && System.nanoTime() - permissionAt > 300_000_000) {
            permissionOpen = false
            if (turn == 1) permissionAnsweredAtLine = linesRead
            send("""{"jsonrpc":"2.0","id":$permissionId,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}""")
            say("you", "allow    (permission answered)")
        }
    }

    /** Applies one agent line; true once turn 3 is over. */
    private fun handle(line: String): Boolean {
        linesRead += 1
        val msg = Json.parseToJsonElement(line).jsonObject
        if (msg["method"].str() == "session/request_permission") {
            permissionOpen = true
            permissionId = msg["id"]
            permissionAt = System.nanoTime()
            say("agent", "asks permission: ${msg.obj("params")?.get("title").str()}")
            return false
        }
        try {
            session.receive(line)
        } catch (e: AcpException.Protocol) {
            idKey(msg)?.let { requests.remove(it) }
            protocolErrors += e
            say("agent", "error    ${e.reason} for \"${label[e.messageId] ?: ""}\" (${e.messageId})")
            if (e.reason == "already_delivered") {
                bump("revoke_too_late")
                lateRevokeError = e
            }
        }
        val answered = idKey(msg)?.takeIf { "result" in msg }?.let { requests.remove(it) }
        if (answered != null) {
            val (op, words) = answered
            val result = msg.getValue("result").jsonObject
            when (op) {
                "prompt", "queue", "steer" -> {
                    val mid = result.getValue("messageId").jsonPrimitive.content
                    label[mid] = words
                    kind[mid] = op
                    say("agent", "accepted \"$words\" as $mid")
                    if (op == "steer" && permissionOpen) heldSteer = mid
                }
                "revoke" -> {
                    bump("revoke_ok")
                    say("agent", "revoked  (it will never be delivered)")
                }
                "replace" -> {
                    bump("replaced")
                    replacedEcho = result["messageId"].str()
                    say("agent", "replaced (same id $replacedEcho, same place in the queue)")
                }
            }
        }
        val update = msg.obj("params")?.obj("update") ?: return false
        when (update["sessionUpdate"].str()) {
            "agent_message_chunk" -> {
                say("agent", "says \"${update.obj("content")?.get("text").str()?.trim()}\"")
                lastUpdate = "agent_message_chunk"
                onAgentChunk()
            }
            "user_message" -> {
                val mid = update.getValue("messageId").jsonPrimitive.content
                val text = update["content"]?.jsonArray?.joinToString(" ") { (it as? JsonObject)?.get("text").str() ?: "" } ?: ""
                val how = kind[mid] ?: "?"
                deliveries += Delivery(mid, text, how, turn, state, linesRead, lastUpdate)
                var where = "starting the turn"
                if (state == "running" && how == "steer") {
                    where = "at a break-point"
                    bump("steer_at_break_point")
                    if (mid == heldSteer) {
                        bump("steer_held_in_permission")
                        where += ", after the permission decision (it was held, not dropped)"
                    }
                } else if ((how == "queue" || how == "prompt") && state == "idle" && turn > 0) {
                    where = "after idle, opening the next turn"
                    bump("queued_after_idle")
                    if (mid == cancelledWith) {
                        bump("cancel_kept_pending")
                        where += " (survived the cancel)"
                    }
                }
                say("delivered", "%-8s \"%s\" (%s) %s (after %s)".format(how, text, mid, where, lastUpdate))
            }
            "state_update" -> {
                val next = update["state"].str() ?: "?"
                var extra = ""
                if (next == "running" && state == "idle") {
                    turn += 1
                    extra = " (turn $turn)"
                }
                if (next == "idle") {
                    idles += Triple(turn, update["stopReason"].str(), linesRead)
                    extra = " (${update["stopReason"].str()})"
                }
                say("state", next + extra)
                state = next
                lastUpdate = "state_update $next"
                if (next == "requires_action" && turn == 1 && "held" !in plan) {
                    plan += "held"
                    heldSteerSentIn = session.snapshot().state
                    inject(InjectMode.STEER, HELD)
                }
                if (next == "idle" && turn == 1 && "late_revoke" !in plan) {
                    // The agent emitted this idle and the queued user_messages together; the
                    // mirror has not read them yet, so it still thinks the changelog is pending.
                    plan += "late_revoke"
                    pendingId(CHANGELOG)?.let { q1 ->
                        val status = session.itemStatus(q1)
                        lateRevoke = q1 to status
                        if (status == ItemStatus.PENDING) {
                            user("revoke", CHANGELOG, session.revoke(q1), "\"$CHANGELOG\" ($q1), racing its delivery")
                        }
                    }
                }
                if (next == "idle" && turn >= 3) return true
            }
            "tool_call_update" -> {
                val call = update["toolCallId"].str()
                val status = update["status"].str()
                lastUpdate = "tool_call_update $call $status"
                if (status == "completed" && permissionAnsweredAtLine != null && completionAfterAnswer == null) {
                    completionAfterAnswer = linesRead to (call ?: "?")
                }
                update["title"].str()?.let { title ->
                    say("agent", "tool     $title ($status)")
                    if (turn == 1 && "queued" !in plan) {
                        plan += "queued"
                        inject(InjectMode.QUEUE, CHANGELOG)
                        inject(InjectMode.QUEUE, BUMP)
                        inject(InjectMode.QUEUE, DRAFT)
                    }
                }
            }
            else -> lastUpdate = update["sessionUpdate"].str() ?: "?"
        }
        return false
    }

    private fun inject(mode: InjectMode, words: String) =
        user(mode.name.lowercase(), words, session.inject(mode, listOf(text(words))))

    private fun onAgentChunk() {
        if (turn == 1 && "steered" !in plan) {
            plan += "steered"
            inject(InjectMode.STEER, STEER)
        }
        if (turn == 2 && "summary_queued" !in plan) {
            plan += "summary_queued"
            inject(InjectMode.QUEUE, SUMMARY)
            plan += "cancel_after"
        }
    }

    // ----- the checks -----

    fun summary(): String =
        "$turn turns; " + seen.entries.joinToString(", ") { "${it.key}=${it.value}" } +
            "; delivered in order: " + deliveries.joinToString(", ") { "${it.messageId}(${it.how})" }

    /** Asserts that every behaviour of the scenario really happened, in the right place. */
    fun check(finished: Boolean) {
        val why = "\n${summary()}\n$narrative"
        assertTrue(finished, "turn 3 did not end before the deadline$why")
        assertEquals(0, exitCode, "the agent exits cleanly at end of input$why")
        assertEquals(
            mapOf(
                "steer_at_break_point" to 2, "steer_held_in_permission" to 1, "queued_after_idle" to 3,
                "cancel_kept_pending" to 1, "revoke_ok" to 1, "revoke_too_late" to 1, "replaced" to 1,
            ),
            seen.toMap(), "every behaviour, exactly once$why",
        )
        val byText = deliveries.associateBy { label[it.messageId] }
        fun delivered(words: String) = assertNotNull(byText[words], "\"$words\" was delivered$why")

        // The steer sent on the first chunk: delivered mid-turn, at a break-point (a tool result).
        val steer = delivered(STEER)
        assertEquals(Triple(1, "running", "steer"), Triple(steer.turn, steer.state, steer.how), "steer delivered mid-turn 1$why")
        assertTrue(steer.after.matches(Regex("tool_call_update call_1_\\d+ completed")), "steer delivered at a tool-result break-point, got after ${steer.after}$why")

        // The steer sent during the permission prompt: held, delivered at the first break-point
        // after the decision (the completion of the tool that asked), not at the decision.
        assertEquals(TurnState.REQUIRES_ACTION, heldSteerSentIn, "the second steer was sent while requires_action$why")
        val held = delivered(HELD)
        assertEquals(heldSteer, held.messageId, "the held steer was accepted while the prompt was open$why")
        val answeredAt = assertNotNull(permissionAnsweredAtLine, "the permission was answered$why")
        val (completionLine, completedCall) = assertNotNull(completionAfterAnswer, "a tool completed after the answer$why")
        assertEquals("call_1_1", completedCall, "the first completion after the answer is the permission's tool$why")
        assertTrue(held.line > completionLine && completionLine > answeredAt, "held steer delivered after the decision AND after the next break-point (answer@$answeredAt, completion@$completionLine, steer@${held.line})$why")
        assertEquals(Triple(1, "running", "tool_call_update call_1_1 completed"), Triple(held.turn, held.state, held.after), "held steer delivered at the tool result$why")

        // Queue, revoke, replace: the revoked one never arrives, the replaced one arrives with
        // its new content under the same id, both remaining queued messages open turn 2.
        val snap = session.snapshot()
        val revokedId = assertNotNull(revoked)
        assertTrue(deliveries.none { it.messageId == revokedId }, "the revoked message was never delivered$why")
        assertEquals(ItemStatus.REVOKED, session.itemStatus(revokedId), "the mirror shows it revoked$why")
        val regression = delivered(REGRESSION)
        assertEquals(replaced, regression.messageId, "replace keeps the id$why")
        assertEquals(replaced, replacedEcho, "the replace answer names the same id$why")
        assertEquals(REGRESSION, regression.text, "the replaced content is what was delivered$why")

        // The late revoke: the mirror still showed it pending, the agent had delivered it.
        val (lateId, statusWhenSent) = assertNotNull(lateRevoke, "a revoke was attempted at turn 1's idle$why")
        assertEquals(ItemStatus.PENDING, statusWhenSent, "the mirror had not read the delivery yet$why")
        val lateError = assertNotNull(lateRevokeError, "the late revoke was answered with an error$why")
        assertEquals(Pair("already_delivered", lateId), lateError.reason to lateError.messageId, why)
        assertEquals(ItemStatus.DELIVERED, session.itemStatus(lateId), "and it was delivered$why")
        val changelog = delivered(CHANGELOG)
        for (d in listOf(changelog, regression)) {
            assertEquals(Triple(1, "idle", "queue"), Triple(d.turn, d.state, d.how), "queued messages open turn 2 after idle$why")
        }
        assertEquals(Pair(1, "end_turn"), idles.first().let { it.first to it.second }, "turn 1 ended normally$why")

        // The cancel: turn 2 ends cancelled and the queued summary survives it, opening turn 3.
        val summary = delivered(SUMMARY)
        assertEquals(cancelledWith, summary.messageId, why)
        val cancelled = idles.firstOrNull { it.first == 2 }
        assertEquals("cancelled", cancelled?.second, "turn 2 ended cancelled$why")
        assertTrue(summary.line > cancelled!!.third && summary.turn == 2 && summary.state == "idle", "the summary was delivered after the cancel, opening turn 3$why")
        assertEquals(3, turn, why)

        // The mirror agrees: no violations, nothing left pending, the user transcript in order.
        assertEquals(emptyList(), snap.violations, why)
        assertEquals(emptyList(), snap.pending.map { it.messageId }, "nothing left pending$why")
        assertEquals(TurnState.IDLE, snap.state, why)
        val users = snap.transcript.filter { it.role == TranscriptRole.USER }.map { it.messageId }
        assertEquals(listOf(PROMPT, STEER, HELD, CHANGELOG, REGRESSION, SUMMARY).map { w -> label.entries.first { it.value == w }.key }, users, "the user transcript$why")
        assertEquals(listOf("already_delivered"), protocolErrors.map { it.reason }, "no other error answer$why")
    }

    private companion object {
        val EOF = String(charArrayOf('\u0000')) // a sentinel compared by identity
        const val PROMPT = "Fix the failing login test"
        const val STEER = "Use the auth_v2 module"
        const val CHANGELOG = "Then update the changelog"
        const val BUMP = "Also bump the version"
        const val DRAFT = "Draft: add a test"
        const val REGRESSION = "Add a regression test for the login bug"
        const val HELD = "Skip the slow integration tests"
        const val SUMMARY = "Finally, summarize the changes"
    }
}
