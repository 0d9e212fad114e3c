/**
 * Replays conformance vectors through the Kotlin binding:
 *
 *     mvn -q test-compile exec:exec@conformance -Dacp.vectors=DIR[:DIR…]   (or ACP_INJECT_VECTORS=DIR:DIR)
 *
 * A driver, not an engine: it performs each step on [AgentCore] or [ClientCore] exactly as a
 * Kotlin host would and hands what came out to the shared Rust engine ([VectorRun]), which owns
 * the vector format and the comparison. The engine's records carry values in the boundary
 * encoding: the driver decodes what it is handed with the generated decoders ([Values.decode])
 * and hands back what the public API returned, encoded again with the generated encoders
 * ([Values.encode]), so every value goes through both directions of the Kotlin codec. A client-side
 * vector drives two connections, one fed through [ClientCore.receive] and one through the per-line
 * path [ClientCore.receiveLine], which must agree throughout. A passing vector shows the behaviour
 * survives the FFI boundary. Prints `N passed, N failed` and each
 * failure's first mismatch.
 *
 * Test code, never in the jar: the engine is the test-only UniFFI component of
 * crates/ffi-conformance (its binding, generated/conformance/kotlin, is a test source root, in
 * this package), loaded from that crate's library, which also holds the shipped component (the
 * pom points `uniffi.component.acp_inject_ffi.libraryOverride` at it).
 */
package dev.acpinject.conformance

import dev.acpinject.AcpException
import dev.acpinject.AgentConfig
import dev.acpinject.AgentCore
import dev.acpinject.CallRejected
import dev.acpinject.ClientCore
import dev.acpinject.ConnectionRole
import dev.acpinject.ContentBlock
import dev.acpinject.HostError
import dev.acpinject.InitializeResponse
import dev.acpinject.InjectMode
import dev.acpinject.ItemStatus
import dev.acpinject.MirrorSnapshot
import dev.acpinject.Output
import dev.acpinject.RuntimeEvent
import dev.acpinject.SteerFallback
import dev.acpinject.TurnFailure
import dev.acpinject.Values
import dev.acpinject.description
import dev.acpinject.ffi.FfiException
import kotlinx.serialization.json.JsonElement
import java.io.File
import kotlin.system.exitProcess

/** Runs a call of the engine: its errors are the [AcpException] they encode. */
private inline fun <T> engine(call: () -> T): T = try {
    call()
} catch (e: FfiException.Failed) {
    throw Values.decode<AcpException>(e.error)
}

private fun AgentCore.attachedBySession(): Map<String, List<String>> = sessionIds().associateWith { attached(it) }

private fun mismatch(detail: String): Nothing = throw AcpException.Mismatch(detail)

private fun driveAgent(run: VectorRun) {
    val setup = engine { run.agentSetup() } ?: mismatch("an agent-side vector without an agent setup")
    AgentCore(Values.decode<AgentConfig>(setup.config)).use { core ->
        core.createSession(setup.session, setup.cwd)
        for (c in setup.connections) {
            core.attach(c.id, Values.decode<ConnectionRole>(c.role), c.principal)
            if (c.joined) core.attachToSession(c.id, setup.session)
        }
        val outputs = mutableListOf<Output>()
        while (true) {
            when (val step = engine { run.next() } ?: break) {
                is Instruction.ClientLine -> outputs += core.handleLine(step.connection, step.line)
                is Instruction.Runtime -> {
                    val refused = try {
                        outputs += core.runtimeEvent(step.session, Values.decode<RuntimeEvent>(step.event))
                        null
                    } catch (e: AcpException.Host) {
                        e.error
                    }
                    engine { run.recordRuntimeResult(Values.encode<HostError?>(refused)) }
                }
                Instruction.Expect -> {
                    engine { run.checkOutputs(Values.encode<List<Output>>(outputs), core.attachedBySession()) }
                    outputs.clear()
                }
                is Instruction.ExpectHistory -> engine { run.checkHistory(Values.encode(core.history(step.session))) }
                is Instruction.AnswerCall -> {
                    // Exactly one of `result` (encoded JSON) and `error` (an encoded TurnFailure) is not empty.
                    val refused = try {
                        outputs += if (step.error.isNotEmpty()) {
                            core.refuseCall(step.id.toLong(), Values.decode<TurnFailure>(step.error))
                        } else {
                            core.answerCall(step.id.toLong(), Values.decode<JsonElement?>(step.result))
                        }
                        null
                    } catch (e: AcpException.Host) {
                        e.error
                    }
                    engine { run.recordRuntimeResult(Values.encode<HostError?>(refused)) }
                }
                else -> mismatch("an agent-side vector has a client-side step: $step")
            }
        }
        engine { run.checkOutputs(Values.encode<List<Output>>(outputs), core.attachedBySession()) }
    }
}

private fun content(bytes: ByteArray): List<ContentBlock> = Values.decode(bytes)

private fun ClientCore.perform(call: ClientCall) {
    when (call) {
        is ClientCall.Prompt -> prompt(call.session, content(call.content))
        is ClientCall.Inject -> inject(call.session, Values.decode<InjectMode>(call.mode), content(call.content))
        is ClientCall.Revoke -> revoke(call.session, call.messageId)
        is ClientCall.Replace -> replace(call.session, call.messageId, content(call.content))
        is ClientCall.Cancel -> cancel(call.session)
        is ClientCall.Status -> status(call.session)
        is ClientCall.Close -> closeSession(call.session)
        is ClientCall.Resume -> resume(call.session, call.cwd, call.replay)
    }
}

private fun driveClient(run: VectorRun) {
    val setup = engine { run.clientSetup() } ?: mismatch("a client-side vector without a client setup")
    // Two connections fed the same lines, one through `receive` (UniFFI's convention), one
    // through `receiveLine` (the per-line path, Lines.kt): they must agree on every event, every
    // line sent and every state.
    ClientCore(16L shl 20).use { client ->
        ClientCore(16L shl 20).use { lined ->
            for (c in listOf(client, lined)) {
                c.assumeInitialized(Values.decode<InitializeResponse>(setup.agent))
                c.setSteerFallback(Values.decode<SteerFallback?>(setup.steerFallback))
                c.openSession(setup.session)
            }
            fun sent(): List<String> {
                val sent = client.takeOutgoing()
                val twin = lined.takeOutgoing()
                if (withoutKeys(twin) != withoutKeys(sent)) mismatch("receiveLine's twin sent $twin, receive's $sent")
                return sent
            }
            while (true) {
                when (val step = engine { run.next() } ?: break) {
                    is Instruction.Call -> {
                        val rejected = try {
                            client.perform(step.call)
                            null
                        } catch (e: AcpException.Rejected) {
                            e.reason
                        }
                        try {
                            lined.perform(step.call)
                        } catch (e: AcpException.Rejected) {
                            if (e.reason != rejected) mismatch("receiveLine's twin refused the call with ${e.reason}, receive's with $rejected")
                        }
                        val sent = sent()
                        client.takeEvents()
                        lined.takeEvents()
                        engine { run.checkCall(Values.encode<CallRejected?>(rejected), sent) }
                    }
                    is Instruction.Receive -> {
                        val events = client.receive(step.line)
                        val byLine = lined.receiveLine(step.line)
                        if (byLine != events) mismatch("receiveLine gave $byLine, receive gave $events")
                        engine { run.recordEvents(Values.encode(events)) }
                    }
                    is Instruction.ExpectState -> {
                        val snapshot = client.snapshot(step.session)
                        if (lined.snapshot(step.session) != snapshot) mismatch("receiveLine's twin is in another state than receive's")
                        engine { run.checkState(Values.encode<MirrorSnapshot?>(snapshot)) }
                    }
                    is Instruction.ExpectSent -> engine { run.checkSent(sent()) }
                    is Instruction.ExpectItem -> {
                        val status = client.itemStatus(step.session, step.messageId)
                        if (lined.itemStatus(step.session, step.messageId) != status) mismatch("receiveLine's twin has another item status")
                        engine { run.checkItem(Values.encode<ItemStatus?>(status)) }
                    }
                    else -> mismatch("a client-side vector has an agent-side step: $step")
                }
            }
        }
    }
}

/** One vector's outcome: its name and its first mismatch (`null` when it passed). */
data class VectorResult(val name: String, val mismatch: String?)

/** Replays one vector (its JSON text). */
fun runText(text: String): VectorResult {
    val run = try {
        engine { VectorRun(text) }
    } catch (e: AcpException) {
        return VectorResult("(unreadable)", e.description)
    }
    return run.use {
        try {
            if (it.side() == Side.AGENT) driveAgent(it) else driveClient(it)
            VectorResult(it.name(), null)
        } catch (e: AcpException) {
            VectorResult(it.name(), e.description)
        }
    }
}

/** Every `*.json` below [dirs] (a file stands for itself), sorted. */
fun vectorFiles(dirs: List<File>): List<File> =
    dirs.flatMap { d -> if (d.isFile) listOf(d) else d.walkTopDown().filter { it.isFile && it.extension == "json" }.toList() }.sorted()

/** The directories of `ACP_INJECT_VECTORS` (path-separator separated). */
fun envDirs(): List<File> =
    System.getenv("ACP_INJECT_VECTORS").orEmpty().split(File.pathSeparatorChar).filter { it.isNotEmpty() }.map(::File)

fun main(args: Array<String>) {
    val dirs = args.map(::File).ifEmpty { envDirs() }
    if (dirs.isEmpty()) {
        System.err.println("usage: dev.acpinject.conformance.ConformanceKt DIR… (or set ACP_INJECT_VECTORS)")
        exitProcess(2)
    }
    val files = vectorFiles(dirs)
    var failed = 0
    for (f in files) {
        val result = runText(f.readText())
        if (result.mismatch != null) {
            failed += 1
            println("FAILED ${result.name} ($f)\n  ${result.mismatch}")
        }
    }
    println("${files.size - failed} passed, $failed failed")
    exitProcess(if (failed > 0 || files.isEmpty()) 1 else 0)
}

private val KEY = Regex("\"idempotencyKey\":\"[^\"]*\"")

/** The lines with their idempotency keys masked: each client draws fresh random keys
 *  (C-IDEM-1), so the twins agree on everything else. */
private fun withoutKeys(lines: List<String>): List<String> = lines.map { KEY.replace(it, "\"idempotencyKey\":\"…\"") }
