/**
 * Replays conformance vectors through the Kotlin binding:
 *
 *     mvn -q test-compile exec:exec@conformance -Dacp.vectors=DIR[:DIR…]   (or ACP_INJECT_VECTORS=DIR:DIR)
 *
 * A driver, not an engine: it performs each step on [AgentCore] or [ClientCore] exactly as a
 * Kotlin host would and hands what came out to the shared Rust engine ([VectorRun]), which owns
 * the vector format and the comparison. A passing vector shows the behaviour survives the FFI
 * boundary. Prints `N passed, N failed` and each failure's first mismatch.
 *
 * Test code, never in the jar: the engine is the test-only UniFFI component of
 * crates/ffi-conformance (its binding, generated/conformance/kotlin, is a test source root, in
 * this package), loaded from that crate's library, which also holds the shipped component (the
 * pom points `uniffi.component.acp_inject_ffi.libraryOverride` at it).
 */
package dev.acpinject.conformance

import dev.acpinject.AcpException
import dev.acpinject.AgentCore
import dev.acpinject.ClientCore
import dev.acpinject.Output
import dev.acpinject.description
import java.io.File
import kotlin.system.exitProcess

private fun AgentCore.attachedBySession(): Map<String, List<String>> = sessionIds().associateWith { attached(it) }

private fun mismatch(detail: String): Nothing = throw AcpException.Mismatch(detail)

private fun driveAgent(run: VectorRun) {
    val setup = run.agentSetup() ?: mismatch("an agent-side vector without an agent setup")
    AgentCore(setup.config).use { core ->
        core.createSession(setup.session, setup.cwd)
        for (c in setup.connections) {
            core.attach(c.id, c.role)
            core.attachToSession(c.id, setup.session)
        }
        val outputs = mutableListOf<Output>()
        while (true) {
            when (val step = run.next() ?: break) {
                is Instruction.ClientLine -> outputs += core.handleLine(step.connection, step.line)
                is Instruction.Runtime -> try {
                    outputs += core.runtimeEvent(step.session, step.event)
                    run.recordRuntimeResult(null)
                } catch (e: AcpException.Host) {
                    run.recordRuntimeResult(e.error)
                }
                Instruction.Expect -> {
                    run.checkOutputs(outputs, core.attachedBySession())
                    outputs.clear()
                }
                is Instruction.ExpectHistory -> run.checkHistory(core.history(step.session))
                else -> mismatch("an agent-side vector has a client-side step: $step")
            }
        }
        run.checkOutputs(outputs, core.attachedBySession())
    }
}

private fun ClientCore.perform(call: ClientCall) {
    when (call) {
        is ClientCall.Prompt -> prompt(call.session, call.content)
        is ClientCall.Inject -> inject(call.session, call.mode, call.content)
        is ClientCall.Revoke -> revoke(call.session, call.messageId)
        is ClientCall.Replace -> replace(call.session, call.messageId, call.content)
        is ClientCall.Cancel -> cancel(call.session)
        is ClientCall.Status -> status(call.session)
        is ClientCall.Close -> close(call.session)
        is ClientCall.Resume -> resume(call.session, call.cwd, call.replay)
    }
}

private fun driveClient(run: VectorRun) {
    val setup = run.clientSetup() ?: mismatch("a client-side vector without a client setup")
    ClientCore(16uL shl 20).use { client ->
        client.assumeAgent(setup.protocolVersion, setup.capabilities)
        client.setSteerFallback(setup.steerFallback)
        client.openSession(setup.session, null)
        while (true) {
            when (val step = run.next() ?: break) {
                is Instruction.Call -> {
                    val rejected = try {
                        client.perform(step.v1)
                        null
                    } catch (e: AcpException.Rejected) {
                        e.reason
                    }
                    val sent = client.takeOutgoing()
                    client.takeEvents()
                    run.checkCall(rejected, sent)
                }
                is Instruction.Receive -> run.recordEvents(client.receive(step.line))
                is Instruction.ExpectState -> run.checkState(client.snapshot(step.session))
                is Instruction.ExpectSent -> run.checkSent(client.takeOutgoing())
                is Instruction.ExpectItem -> run.checkItem(client.itemStatus(step.session, step.messageId))
                else -> mismatch("a client-side vector has an agent-side step: $step")
            }
        }
    }
}

/** One vector's outcome: its name and its first mismatch (`null` when it passed). */
data class VectorResult(val name: String, val mismatch: String?)

/** Replays one vector (its JSON text). */
fun runText(text: String): VectorResult {
    val run = try {
        VectorRun(text)
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
