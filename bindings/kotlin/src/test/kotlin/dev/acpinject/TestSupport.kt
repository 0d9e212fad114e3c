package dev.acpinject

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import java.io.File
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** The workspace root (surefire passes it; the default works from bindings/kotlin). */
val WORKSPACE: File = File(System.getProperty("acp.workspace.dir") ?: "../..").canonicalFile

val PROJECT_VECTORS: File = File(WORKSPACE, "spec/vectors")

/** The reference agent binary: `$ACP_INJECT_AGENT` (what `cargo xtask test` passes), else
 *  `cargo build` it in this checkout and take it from cargo's target directory. */
val REFERENCE_AGENT: String by lazy {
    System.getenv("ACP_INJECT_AGENT")?.takeIf { it.isNotEmpty() } ?: run {
        fun run(vararg command: String): String {
            val p = ProcessBuilder(*command).directory(WORKSPACE).redirectError(ProcessBuilder.Redirect.INHERIT).start()
            val out = p.inputStream.readBytes().decodeToString()
            check(p.waitFor() == 0) { "`${command.joinToString(" ")}` failed" }
            return out
        }
        run("cargo", "build", "--quiet", "-p", "acp-inject-reference-agent")
        val meta = run("cargo", "metadata", "--format-version", "1", "--no-deps")
        val target = Regex("\"target_directory\":\"([^\"]+)\"").find(meta)?.groupValues?.get(1) ?: error("no target_directory")
        File(target, "debug/acp-inject-agent").path
    }
}

/** The reference agent with these arguments (`--delay-ms`, `--tools`, `--permission-on-tool`, …). */
fun referenceAgent(vararg args: String): List<String> = listOf(REFERENCE_AGENT, *args)

/** The Kotlin example agent (examples/Agent.kt), run by a fresh JVM on this test's classpath. */
fun exampleAgent(vararg args: String): List<String> = listOf(
    File(System.getProperty("java.home"), "bin/java").path,
    "-Djna.library.path=${System.getProperty("jna.library.path").orEmpty()}",
    "-cp", System.getProperty("java.class.path"),
    "AgentKt", *args,
)

/** A coroutine test with a deadline, so a hang fails instead of stalling the build. */
fun coTest(deadline: Duration = 60.seconds, body: suspend CoroutineScope.() -> Unit) = runBlocking { withTimeout(deadline) { body() } }

/** Connects to [command], quietly (the agents' stderr stays out of the test report). */
suspend fun connectQuietly(command: List<String>): Client = connect(command, name = "kotlin-tests", forwardStderr = false)

/** [block], failing with an [AssertionError] that names [what] when it takes longer than [limit]. */
suspend fun <T> within(what: String, limit: Duration = 10.seconds, block: suspend () -> T): T = try {
    withTimeout(limit) { block() }
} catch (e: TimeoutCancellationException) {
    throw AssertionError("timed out after $limit waiting for $what")
}
