/**
 * Per-line speed: a streaming client that receives agent lines one at a time, through the
 * Kotlin API with its typed events, versus the official ACP Kotlin SDK's models parsing the
 * same lines one at a time (`bindings/kotlin/bench.sh ROUNDS`, which `cargo xtask bench` runs):
 *
 *     mvn -q test-compile exec:exec@bench-official -Dacp.skipCargo=true -Dacp.lib.dir=$TARGET/release
 *
 * The official models are `com.agentclientprotocol:acp-model` 0.10.5 from Maven Central (the JVM
 * artifact `acp-model-jvm`; kotlinx.serialization; its released models are v1). Its client
 * reads a line as `decodeJsonRpcMessage(line)` (a `JsonElement` tree, then a
 * `JsonRpcNotification`) and then decodes `params` with the method's serializer: exactly what
 * this bench calls per line.
 *
 * The stream is `shared_stream` of bindings/python/bench/bench_per_line.py, byte for byte
 * (checked by hash): 100,000 lines of the update kinds v1 and v2 share in the same wire shape.
 * Ours does more than parse: each line is applied to the full client mirror and its typed
 * events come back to Kotlin. Every contender gets one line at a time, as a client reading a
 * pipe line by line would. Rounds interleave the contenders after two warm-up rounds (the two
 * rows through UniFFI's own convention come after, see `main`); figures are medians, garbage
 * collection included (as a client would pay it).
 */
package dev.acpinject.bench

import com.agentclientprotocol.model.AcpMethod
import com.agentclientprotocol.model.SessionNotification
import com.agentclientprotocol.model.SessionUpdate
import com.agentclientprotocol.rpc.ACPJson
import com.agentclientprotocol.rpc.JsonRpcNotification
import com.agentclientprotocol.rpc.decodeJsonRpcMessage
import dev.acpinject.ClientCore
import dev.acpinject.Event
import dev.acpinject.InSession
import dev.acpinject.InjectCapabilities
import dev.acpinject.InjectMode
import dev.acpinject.SessionUpdate as OurSessionUpdate
import dev.acpinject.SteerInStream
import dev.acpinject.ffi.libraryVersion
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import java.io.File
import java.security.MessageDigest

/** The stream of bench_per_line.py's `shared_stream(n)`, with Python's `json.dumps` spacing. */
fun sharedStream(n: Int): List<String> {
    val words = "the parser now streams tokens instead of buffering whole files lexer tests pass".split(" ")
    val lines = ArrayList<String>(n)
    var i = 0
    while (lines.size < n) {
        i += 1
        val text = (0 until 3 + i % 12).joinToString(" ") { k -> words[(i + k) % words.size] }
        val kind = i % 10
        val u = when {
            kind < 5 -> """{"sessionUpdate": "agent_message_chunk", "messageId": "a${i / 40}", "content": {"type": "text", "text": "$text"}}"""
            kind < 7 -> """{"sessionUpdate": "agent_thought_chunk", "messageId": "t${i / 40}", "content": {"type": "text", "text": "$text"}}"""
            kind < 8 -> """{"sessionUpdate": "user_message_chunk", "messageId": "u${i / 400}", "content": {"type": "text", "text": "$text"}}"""
            else -> {
                val status = listOf("pending", "in_progress", "completed")[i % 3]
                """{"sessionUpdate": "tool_call_update", "toolCallId": "call_${i / 25}", "kind": "execute", "status": "$status", "content": [{"type": "content", "content": {"type": "text", "text": "$text"}}]}"""
            }
        }
        lines += """{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_1", "update": $u}}"""
    }
    return lines
}

/** sha256 of the 100,000 newline-terminated lines of the Python bench's `shared_stream(100000)`, joined. */
const val PYTHON_STREAM_SHA256 = "bbdb2d0814265f5fc8463194b43d86bc9b55f6b7d87170ff6e3edd5e26e742dd"

private val sessionUpdateMethod = AcpMethod.ClientMethods.SessionUpdate

/** The official SDK's client path for one incoming line. */
fun officialDecode(line: String): SessionNotification {
    val message = decodeJsonRpcMessage(line) as JsonRpcNotification
    check(message.method == sessionUpdateMethod.methodName) // the SDK dispatches on the method name
    return ACPJson.decodeFromJsonElement(sessionUpdateMethod.serializer, message.params ?: JsonNull)
}

fun streamSha256(bytes: ByteArray): String =
    MessageDigest.getInstance("SHA-256").digest(bytes).joinToString("") { "%02x".format(it) }

/** Both modes, replace, `finish`: what the default agent advertises. */
val FULL_CAPS = InjectCapabilities(modes = listOf(InjectMode.QUEUE, InjectMode.STEER), steerInStream = listOf(SteerInStream.FINISH))

/** A client connection with the bench's session open, as after `session/new`. */
fun benchClient(): ClientCore = ClientCore(16L shl 20).also {
    it.assumeCapabilities(FULL_CAPS)
    it.openSession("sess_1")
}

/** Both sides must accept every line, or the comparison means nothing: the official models
 *  read each line as the update it is, and our client applies each one as a session update
 *  (no ignored line, no violation). */
fun checkBothAccept(lines: List<String>) {
    for ((idx, line) in lines.withIndex()) {
        val u = officialDecode(line).update
        val expected = line.substringAfter("\"sessionUpdate\": \"").substringBefore('"')
        val ok = when (expected) {
            "agent_message_chunk" -> u is SessionUpdate.AgentMessageChunk
            "agent_thought_chunk" -> u is SessionUpdate.AgentThoughtChunk
            "user_message_chunk" -> u is SessionUpdate.UserMessageChunk
            "tool_call_update" -> u is SessionUpdate.ToolCallUpdate && u.content?.size == 1 &&
                u.status?.name?.lowercase() == line.substringAfter("\"status\": \"").substringBefore('"')
            else -> false
        }
        check(ok) { "the official models read line $idx as $u: $line" }
    }
    benchClient().use { c ->
        for ((idx, line) in lines.withIndex()) {
            val events = c.receive(line)
            check(events.size == 1 && ((events[0] as? InSession)?.event is OurSessionUpdate)) { "ours read line $idx as $events" }
        }
        check(c.ignoredLines() == 0L) { "ours ignored lines" }
        val snap = c.snapshot("sess_1")!!
        check(snap.violations.isEmpty()) { "ours found violations: ${snap.violations}" }
        check(snap.transcript.isNotEmpty())
    }
}

private fun median(xs: List<Double>): Double = xs.sorted()[xs.size / 2]

/** What every contender does with a line's result: look at it, so the JIT cannot drop it. */
private fun touch(events: List<Event>): Long = events.size.toLong() + ((events.firstOrNull() as? InSession)?.sessionId?.length ?: 0)

fun main(args: Array<String>) {
    fun arg(name: String): String? = args.indexOf(name).takeIf { it >= 0 }?.let { args[it + 1] }
    val n = arg("--lines")?.toInt() ?: 100_000
    val rounds = arg("--rounds")?.toInt() ?: 7
    val jsonOut = arg("--json")?.let(::File)
    require(rounds >= 1) { "--rounds must be at least 1" }

    val lines = sharedStream(n)
    val blob = lines.joinToString("\n") + "\n"
    val bytes = blob.toByteArray()
    if (n == 100_000) check(streamSha256(bytes) == PYTHON_STREAM_SHA256) { "the stream differs from bench_per_line.py's" }
    checkBothAccept(lines)

    var sink = 0L // keeps the JIT from discarding decoded values
    val contenders = linkedMapOf<String, () -> Unit>(
        "ours_line_fast" to {
            benchClient().use { c -> for (line in lines) sink += touch(c.receiveLine(line)) }
        },
        "official" to {
            for (line in lines) sink += officialDecode(line).update.hashCode()
        },
        "kotlinx_tree" to {
            for (line in lines) sink += (Json.parseToJsonElement(line) as Map<*, *>).size
        },
        "ours_stream" to {
            benchClient().use { c -> sink += c.receiveText(blob).size }
        },
    )
    // The two rows through UniFFI's own calling convention run after all the rounds above, each
    // in rounds of its own: every such call leaves JNA `Memory` behind, freed by JNA's cleaner
    // thread for seconds after a collection. On two cores that thread took one from whichever
    // contender ran next (receiveLine measured 2.5x slower right after them than alone).
    val calls = 20_000
    val convention = linkedMapOf<String, () -> Unit>(
        "crossing" to { repeat(calls) { sink += libraryVersion().length } },
        "ours_line" to {
            benchClient().use { c -> for (line in lines) sink += touch(c.receive(line)) }
        },
    )

    val times = (contenders.keys + convention.keys).associateWith { mutableListOf<Double>() }
    fun timed(body: () -> Unit): Double {
        // Each contender starts on a collected heap: the garbage of the one before is not
        // charged to it.
        System.gc()
        val t = System.nanoTime()
        body()
        return (System.nanoTime() - t) / 1e9
    }
    repeat(2) { contenders.values.forEach { it() } } // warm-up: JIT, JNA binding
    repeat(rounds) {
        for ((name, body) in contenders) times.getValue(name) += timed(body)
    }
    // One after the other, the crossing first: each pays for its own garbage only.
    for ((name, body) in convention) {
        repeat(2) { body() }
        repeat(rounds) { times.getValue(name) += timed(body) }
    }
    val lps = times.filterKeys { it != "crossing" }.mapValues { n / median(it.value) }
    val crossingUs = median(times.getValue("crossing")) / calls * 1e6
    val ratio = lps.getValue("ours_line_fast") / lps.getValue("official")
    val best = times.mapValues { n / it.value.min() }
    val bestRatio = best.getValue("ours_line_fast") / best.getValue("official")
    val jvm = "JDK ${System.getProperty("java.version")}"

    println("stream: $n lines, %.1f MB (%d B/line), identical to bench_vs_official.py's; median of $rounds interleaved rounds, $jvm".format(bytes.size / 1e6, bytes.size / n))
    val labels = linkedMapOf(
        "ours_line_fast" to "ours, one line per call: `ClientCore.receiveLine(line)` → typed `List<Event>`, parse + full mirror state",
        "ours_line" to "ours, one line per call through UniFFI's own convention: `ClientCore.receive(line)`, the same result",
        "official" to "official SDK models (`acp-model` 0.10.5), one line per call: `decodeJsonRpcMessage` + `ACPJson.decodeFromJsonElement`, parse only",
        "kotlinx_tree" to "kotlinx.serialization `Json.parseToJsonElement` per line alone (floor for any kotlinx-based parser)",
        "ours_stream" to "ours, the whole stream in one call (`ClientCore.receiveText`), for scale",
    )
    for ((k, what) in labels) {
        val spread = times.getValue(k).map { n / it }
        println("%12s lines/s %7.2f us/line  (rounds %,.0f..%,.0f)  %s".format("%,.0f".format(lps.getValue(k)), 1e6 / lps.getValue(k), spread.min(), spread.max(), what))
    }
    println("%12s us        one no-op crossing (`libraryVersion()`)".format("%.2f".format(crossingUs)))
    println("ours / official, per line: %.2fx (medians); %.2fx (best rounds)".format(ratio, bestRatio))

    val summary = ("$n lines (${bytes.size / n} B/line) of the update kinds v1 and v2 share in the same wire shape " +
        "(message/thought chunks with `messageId`, tool call updates), the very lines of the Python comparison, " +
        "handed over **one line per call** as a client reading a pipe line by line would. Ours parses each line, applies it " +
        "to the full client mirror and returns its typed events to Kotlin; the official Kotlin SDK's models " +
        "(`com.agentclientprotocol:acp-model-jvm` 0.10.5, kotlinx.serialization, v1 models) only parse, along the path its " +
        "client takes for each line (`decodeJsonRpcMessage` then `ACPJson.decodeFromJsonElement(…SessionUpdate.serializer, params)`); " +
        "both accept every line. **ours / official, per line: %.2f×** (medians of $rounds interleaved rounds, $jvm; %.2f× between " +
        "the best rounds). One no-op JNA crossing (`libraryVersion()`) costs %.2f µs.")
        .format(ratio, bestRatio, crossingUs)
    val result = buildJsonObject {
        put("summary", summary)
        put("rows", buildJsonArray {
            for ((k, what) in labels) add(buildJsonObject { put("what", what); put("lines_per_s", lps.getValue(k)) })
            add(buildJsonObject { put("what", "one no-op crossing (`libraryVersion()`), calls/s (not lines)"); put("lines_per_s", 1e6 / crossingUs) })
        })
        put("lines", n)
        put("bytes_per_line", bytes.size / n)
        put("rounds", rounds)
        put("jvm", System.getProperty("java.version"))
        put("official", "com.agentclientprotocol:acp-model-jvm:0.10.5")
        put("ours_over_official", ratio)
        put("ours_over_official_best_rounds", bestRatio)
        put("crossing_us", crossingUs)
    }
    if (sink == 42L) println() // the decoded values were used
    val line = result.toString()
    jsonOut?.writeText(line + "\n")
    println(line)
}
