/**
 * Replays conformance vectors through the Kotlin binding: [AgentCore] and [ClientSession] are
 * driven exactly as a Kotlin host would drive them, so a passing vector proves the behaviour
 * survives the FFI boundary. This file implements only the vector format (`VECTORS.md`,
 * `spec/vectors/README.md`: captures and comparison), never the protocol; it is a port of the
 * Python replay (`bindings/python/python/acp_inject/conformance.py`).
 *
 *     mvn -q test-compile exec:exec@conformance -Dacp.vectors=DIR[:DIR…]
 *
 * Directories come from the arguments (each may hold several, path-separator separated) or,
 * when none is given, `ACP_INJECT_VECTORS`. Prints `N passed, N failed` and each failure's
 * first mismatch, like `cargo xtask conformance`.
 */
package dev.acpinject.conformance

import dev.acpinject.AcpException
import dev.acpinject.AgentCore
import dev.acpinject.AgentOutput
import dev.acpinject.BreakPoint
import dev.acpinject.ClearStyle
import dev.acpinject.ClientSession
import dev.acpinject.ContentBlock
import dev.acpinject.InjectCapabilities
import dev.acpinject.InjectMode
import dev.acpinject.QueueDrain
import dev.acpinject.RevokeReplace
import dev.acpinject.Role
import dev.acpinject.RuntimeAction
import dev.acpinject.RuntimeEvent
import dev.acpinject.SteerInStream
import dev.acpinject.defaultAgentOptions
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.add
import kotlinx.serialization.json.addJsonArray
import kotlinx.serialization.json.addJsonObject
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import java.io.File
import java.math.BigDecimal
import kotlin.system.exitProcess

/** The first difference between a vector and what the binding did. */
class Mismatch(message: String) : Exception(message)

data class VectorResult(val name: String, val file: String, val mismatch: String? = null)

data class Report(val results: List<VectorResult>) {
    val passed: Int get() = results.count { it.mismatch == null }
    val failed: Int get() = results.size - passed

    fun render(): String = buildString {
        for (r in results) if (r.mismatch != null) append("FAILED ${r.name} (${r.file})\n  ${r.mismatch}\n")
        append("$passed passed, $failed failed\n")
    }
}

private val CAPTURE = Regex("^\\$[A-Za-z_][A-Za-z0-9_]*$")

private fun JsonElement.isCapture() = this is JsonPrimitive && isString && CAPTURE.matches(content)

/** The JSON type of a value (`null`, `boolean`, `number`, `string`, `array`, `object`). */
private fun JsonElement.kind(): String = when (this) {
    is JsonNull -> "null"
    is JsonObject -> "object"
    is JsonArray -> "array"
    is JsonPrimitive -> when {
        isString -> "string"
        content == "true" || content == "false" -> "boolean"
        else -> "number"
    }
}

/** JSON value equality: same type, numbers by value, objects regardless of member order. */
internal fun sameJson(a: JsonElement, b: JsonElement): Boolean {
    if (a.kind() != b.kind()) return false
    return when (a) {
        is JsonObject -> { b as JsonObject; a.keys == b.keys && a.all { (k, v) -> sameJson(v, b.getValue(k)) } }
        is JsonArray -> { b as JsonArray; a.size == b.size && a.indices.all { sameJson(a[it], b[it]) } }
        is JsonPrimitive ->
            if (a.kind() == "number") BigDecimal(a.content).compareTo(BigDecimal((b as JsonPrimitive).content)) == 0
            else a.content == (b as JsonPrimitive).content
    }
}

/** `$name` captures: bound at first sight, compared afterwards, substituted into inputs. */
class Captures {
    private val bound = LinkedHashMap<String, JsonElement>()

    fun match(expected: JsonElement, actual: JsonElement, at: String) {
        if (expected.isCapture()) {
            val name = expected.jsonPrimitive.content.drop(1)
            val value = bound[name]
            if (value != null) {
                if (!sameJson(value, actual)) throw Mismatch("$at: \$$name is bound to $value, got $actual")
                return
            }
            if (actual.kind() != "string" && actual.kind() != "number") {
                throw Mismatch("$at: \$$name must capture a string or number, got $actual")
            }
            for ((other, v) in bound) {
                if (sameJson(v, actual)) throw Mismatch("$at: \$$name would bind $actual, already bound to \$$other")
            }
            bound[name] = actual
            return
        }
        val exp = unescape(expected)
        when {
            exp is JsonObject && actual is JsonObject -> {
                for ((k, v) in exp) {
                    val a = actual[k] ?: throw Mismatch("$at: missing member `$k` (expected $v)")
                    match(v, a, "$at.$k")
                }
                for ((k, v) in actual) if (k !in exp) throw Mismatch("$at: unexpected member `$k`: $v")
            }
            exp is JsonArray && actual is JsonArray -> {
                if (exp.size != actual.size) throw Mismatch("$at: expected ${exp.size} items, got ${actual.size}: $actual")
                exp.indices.forEach { match(exp[it], actual[it], "$at[$it]") }
            }
            !sameJson(exp, actual) -> throw Mismatch("$at: expected $exp, got $actual")
        }
    }

    fun substitute(value: JsonElement): JsonElement = when {
        value.isCapture() -> {
            val name = value.jsonPrimitive.content.drop(1)
            bound[name] ?: throw Mismatch("capture \$$name is used before it is bound")
        }
        value is JsonArray -> JsonArray(value.map(::substitute))
        value is JsonObject -> JsonObject(value.mapValues { substitute(it.value) })
        else -> unescape(value)
    }

    /** `"$$x"` is the literal text `$x`. */
    private fun unescape(v: JsonElement): JsonElement =
        if (v is JsonPrimitive && v.isString && v.content.startsWith("$$")) JsonPrimitive(v.content.drop(1)) else v
}

private fun JsonObject.str(key: String): String? = (this[key] as? JsonPrimitive)?.takeIf { it.isString }?.content

private fun JsonObject.obj(key: String): JsonObject? = this[key] as? JsonObject

private inline fun <reified E : Enum<E>> wireEnum(value: String): E =
    enumValues<E>().firstOrNull { it.name == value.uppercase() } ?: throw Mismatch("unknown ${E::class.simpleName} value \"$value\"")

private fun capabilities(vector: JsonObject): InjectCapabilities? {
    val inject = vector.obj("capabilities")?.obj("inject") ?: return null
    return InjectCapabilities(
        modes = inject.getValue("modes").jsonArray.map { wireEnum<InjectMode>(it.jsonPrimitive.content) },
        replace = inject.obj("pending")?.get("replace")?.jsonPrimitive?.content == "true",
        steerInStream = (inject["steerInStream"] as? JsonArray).orEmpty().map { wireEnum<SteerInStream>(it.jsonPrimitive.content) },
    )
}

private fun parse(json: String): JsonElement = Json.parseToJsonElement(json)

private fun actionJson(action: RuntimeAction): JsonObject = buildJsonObject {
    when (action) {
        is RuntimeAction.StartTurn -> {
            put("action", "start_turn")
            putJsonArray("messageIds") { action.messages.forEach { add(it.messageId) } }
        }
        is RuntimeAction.Deliver -> {
            put("action", "deliver")
            putJsonArray("messageIds") { action.messages.forEach { add(it.messageId) } }
            putJsonArray("content") { action.messages.forEach { add(parse(it.contentJson)) } }
        }
        RuntimeAction.InterruptStream -> put("action", "interrupt_stream")
        RuntimeAction.CancelTurn -> put("action", "cancel_turn")
        is RuntimeAction.Dropped -> {
            put("action", "dropped")
            putJsonArray("injects") {
                for (d in action.injects) addJsonObject {
                    put("messageId", d.messageId)
                    put("mode", d.mode.name.lowercase())
                    put("content", parse(d.contentJson))
                }
            }
        }
    }
}

private fun runtimeEvent(rt: JsonObject): RuntimeEvent = when (val event = rt.str("event")) {
    "stream_started" -> RuntimeEvent.StreamStarted
    "stream_finished" -> RuntimeEvent.StreamFinished
    "permission_requested" -> RuntimeEvent.PermissionRequested
    "permission_resolved" -> RuntimeEvent.PermissionResolved
    "paused" -> RuntimeEvent.Paused
    "resumed" -> RuntimeEvent.Resumed
    "close" -> RuntimeEvent.Close
    "break_point" -> RuntimeEvent.BreakPoint(wireEnum<BreakPoint>(rt.str("kind") ?: "tool_result"))
    "turn_ended" -> RuntimeEvent.TurnEnded(
        stopReason = rt.str("stopReason") ?: "end_turn",
        usageJson = rt["usage"]?.takeIf { it !is JsonNull }?.toString(),
    )
    "update" -> RuntimeEvent.Update(rt.getValue("update").toString())
    "clear_agent_message" -> RuntimeEvent.ClearAgentMessage(rt.str("messageId") ?: throw Mismatch("clear_agent_message needs messageId"))
    else -> throw Mismatch("unknown runtime event $event")
}

/** Runs [body], prefixing a mismatch with where it happened. */
private inline fun <T> at(where: String, body: () -> T): T =
    try { body() } catch (m: Mismatch) { throw Mismatch("$where: ${m.message}") }

private fun replayAgent(vector: JsonObject) {
    val policy = vector.obj("policy") ?: JsonObject(emptyMap())
    var options = defaultAgentOptions().copy(inject = capabilities(vector))
    policy.str("queueDrain")?.let { options = options.copy(queueDrain = wireEnum<QueueDrain>(it)) }
    policy.str("steerInStream")?.let { options = options.copy(steerInStream = wireEnum<SteerInStream>(it)) }
    policy.str("revokeReplace")?.let { options = options.copy(revokeReplace = wireEnum<RevokeReplace>(it)) }
    policy["rememberIds"]?.let { options = options.copy(rememberIds = it.jsonPrimitive.content.toUInt()) }
    policy.str("clearStyle")?.let { options = options.copy(clearStyle = wireEnum<ClearStyle>(it)) }

    AgentCore(options).use { core ->
        core.createSession("s1")
        core.attach("c1", Role.CONTROLLER)
        (vector["observers"] as? JsonArray).orEmpty().forEach { core.attach(it.jsonPrimitive.content, Role.OBSERVER) }
        val captures = Captures()
        val outputs = mutableListOf<AgentOutput>()

        fun expect(expected: List<JsonElement>) {
            val msgs = expected.filter { "action" !in it.jsonObject }
            val acts = expected.filter { "action" in it.jsonObject }
            val lines = outputs.filterIsInstance<AgentOutput.Line>()
            val gotActs = outputs.filterIsInstance<AgentOutput.Action>().map { actionJson(it.action) }
            outputs.clear()
            if (msgs.size != lines.size) {
                throw Mismatch("expected ${msgs.size} messages, got ${lines.size}: ${lines.joinToString(" | ") { it.line }}")
            }
            for ((i, pair) in msgs.zip(lines).withIndex()) {
                val (e, o) = pair
                val wantTo = e.jsonObject.str("to")
                val want = JsonObject(e.jsonObject - "to")
                var actual = parse(o.line).jsonObject
                if (wantTo != null && o.to != wantTo) throw Mismatch("message $i: expected to $wantTo, sent to ${o.to}")
                if (wantTo == null && o.to != null && "id" !in want) {
                    throw Mismatch("message $i: a notification must go to every connection, sent to ${o.to}")
                }
                // An expected error without `data.detail` ignores an actual `detail`.
                val err = actual["error"] as? JsonObject
                val data = err?.get("data") as? JsonObject
                if (err != null && data != null) {
                    val expData = want.obj("error")?.get("data")
                    if (!(expData is JsonObject && "detail" in expData)) {
                        val trimmed = JsonObject(data - "detail")
                        val newErr = if (trimmed.isEmpty() && (expData == null || expData is JsonNull)) JsonObject(err - "data")
                        else JsonObject(err + ("data" to trimmed))
                        actual = JsonObject(actual + ("error" to newErr))
                    }
                }
                captures.match(want, actual, "message $i")
            }
            if (acts.size != gotActs.size) throw Mismatch("expected ${acts.size} actions, got ${gotActs.size}: $gotActs")
            for ((i, pair) in acts.zip(gotActs).withIndex()) captures.match(pair.first, pair.second, "action $i")
        }

        for ((i, stepElement) in vector.getValue("steps").jsonArray.withIndex()) at<Unit>("step $i") {
            val step = stepElement.jsonObject
            when {
                "client" in step -> {
                    val line = captures.substitute(step.getValue("client")).toString()
                    outputs += core.handleLine(step.str("from") ?: "c1", line)
                }
                "runtime" in step -> {
                    val rt = step.getValue("runtime").jsonObject
                    val want = step.str("hostError")
                    try {
                        outputs += core.runtimeEvent(rt.str("sessionId") ?: "s1", runtimeEvent(rt))
                        if (want != null) throw Mismatch("expected host error $want, the event was accepted")
                    } catch (e: AcpException.Host) {
                        if (want != e.kind) throw Mismatch("expected host error $want, got ${e.kind}")
                    }
                }
                "expect" in step -> expect(step.getValue("expect").jsonArray)
                "expectHistory" in step -> {
                    val history = buildJsonArray {
                        for (u in core.history("s1")) addJsonObject {
                            put("messageId", u.messageId)
                            put("content", parse(u.contentJson))
                        }
                    }
                    captures.match(step.getValue("expectHistory"), history, "history")
                }
                else -> throw Mismatch("unknown step $step")
            }
        }
        at("end of vector") { expect(emptyList()) }
    }
}

private fun call(session: ClientSession, call: JsonObject): String {
    val blocks = (call["content"] as? JsonArray).orEmpty().map { ContentBlock.Other(it.toString()) }
    return when (val op = call.str("op")) {
        "prompt" -> session.prompt(blocks)
        "inject" -> session.inject(wireEnum<InjectMode>(call.str("mode") ?: ""), blocks)
        "revoke" -> session.revoke(call.str("messageId") ?: "")
        "replace" -> session.replace(call.str("messageId") ?: "", blocks)
        "cancel" -> session.cancel()
        "status" -> session.status()
        else -> throw Mismatch("unknown op $op")
    }
}

private fun replayClient(vector: JsonObject) {
    ClientSession(vector.str("sessionId") ?: "s1", capabilities(vector)).use { session ->
        val captures = Captures()
        var lastError: JsonObject? = null
        for ((i, stepElement) in vector.getValue("steps").jsonArray.withIndex()) at<Unit>("step $i") {
            val step = stepElement.jsonObject
            when {
                "call" in step -> {
                    val line = try {
                        call(session, captures.substitute(step.getValue("call")).jsonObject)
                    } catch (r: AcpException.Rejected) {
                        if (step.str("rejects") != r.reason) throw Mismatch("the call was rejected (${r.reason})")
                        return@at
                    }
                    step.str("rejects")?.let { throw Mismatch("expected rejection $it, it sent $line") }
                    captures.match(step.getValue("sends"), parse(line), "sends")
                }
                "receive" in step -> {
                    lastError = null
                    try {
                        session.receive(captures.substitute(step.getValue("receive")).toString())
                    } catch (e: AcpException.Protocol) {
                        lastError = buildJsonObject {
                            put("code", e.code)
                            put("reason", e.reason)
                            e.messageId?.let { put("messageId", it) }
                        }
                    }
                }
                "expectState" in step -> {
                    val snap = parse(session.snapshotJson()).jsonObject
                    for ((k, v) in step.getValue("expectState").jsonObject) captures.match(v, snap[k] ?: JsonNull, "state.$k")
                }
                "expectError" in step -> {
                    val last = lastError ?: throw Mismatch("expected an error, the last receive surfaced none")
                    val expected = step.getValue("expectError").jsonObject
                    var actual = last.filterKeys { it in expected || it == "reason" }
                    if ("reason" !in expected && actual["reason"] is JsonNull) actual = actual - "reason"
                    captures.match(expected, JsonObject(actual), "expectError")
                }
                "expectItem" in step -> {
                    val item = captures.substitute(step.getValue("expectItem")).jsonObject
                    val id = item.str("messageId") ?: throw Mismatch("expectItem needs messageId")
                    val got = session.itemStatus(id)?.name?.lowercase()
                    val want = item.str("status")
                    if (got != want) throw Mismatch("item $id has status $got, expected $want")
                }
                else -> throw Mismatch("unknown step $step")
            }
        }
    }
}

fun runFile(file: File): VectorResult {
    val vector = try {
        parse(file.readText()).jsonObject
    } catch (e: Exception) {
        return VectorResult(file.path, file.path, "unreadable: ${e.message}")
    }
    val name = vector.str("name") ?: "(unnamed)"
    return try {
        when (val side = vector.str("side")) {
            "agent" -> replayAgent(vector)
            "client" -> replayClient(vector)
            else -> throw Mismatch("unknown side $side")
        }
        VectorResult(name, file.path)
    } catch (m: Mismatch) {
        VectorResult(name, file.path, m.message)
    } catch (e: AcpException) {
        VectorResult(name, file.path, "unexpected ${e::class.simpleName}: ${e.message}")
    } catch (e: IllegalArgumentException) {
        VectorResult(name, file.path, "malformed vector: ${e.message}")
    }
}

/** Every `*.json` below each directory (or the file itself), sorted by path. */
fun vectorFiles(dirs: List<String>): List<File> = dirs
    .map(::File)
    .flatMap { d -> if (d.isFile) listOf(d) else d.walkTopDown().filter { it.isFile && it.name.endsWith(".json") }.toList() }
    .sortedBy { it.path }

fun runDirs(dirs: List<String>): Report = Report(vectorFiles(dirs).map(::runFile))

/** The directories named by `ACP_INJECT_VECTORS` (path-separator separated). */
fun envDirs(): List<String> = System.getenv("ACP_INJECT_VECTORS").orEmpty().split(File.pathSeparator).filter { it.isNotEmpty() }

fun main(args: Array<String>) {
    val dirs = args.flatMap { it.split(File.pathSeparator) }.filter { it.isNotEmpty() }.ifEmpty { envDirs() }
    if (dirs.isEmpty()) {
        System.err.println("usage: Conformance DIR… (or set ACP_INJECT_VECTORS)")
        exitProcess(2)
    }
    val report = runDirs(dirs)
    print(report.render())
    if (report.results.isEmpty()) {
        System.err.println("no vector files found")
        exitProcess(1)
    }
    exitProcess(if (report.failed == 0) 0 else 1)
}
