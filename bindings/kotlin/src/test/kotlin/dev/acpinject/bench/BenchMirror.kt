/**
 * Client-mirror throughput through the Kotlin binding (JNA):
 *
 *     mvn -q test-compile exec:exec@bench
 *
 * Applies the recorded 100,000-line stream (the generator of bindings/python/bench/bench_mirror.py)
 * to a fresh ClientSession and reports, as the median of `--repeat` timed runs after one warm-up
 * run in the same JVM:
 * - bulk: the whole stream as one String in one `receiveText` crossing (parse + full mirror
 *   state in Rust; a String crosses as one UTF-8 copy), and the same as a ByteArray through
 *   `receiveBytes`;
 * - per line: one `receive` crossing per line;
 * - kotlinx.serialization `parseToJsonElement` of the same lines (a JVM JSON tree, no state);
 * - one no-op crossing (`libraryVersion()`), for the per-call overhead.
 */
package dev.acpinject.bench

import dev.acpinject.ClientSession
import dev.acpinject.FULL_CAPS
import dev.acpinject.RecordedStream
import dev.acpinject.libraryVersion
import kotlinx.serialization.json.Json

private fun medianSeconds(repeat: Int, body: () -> Unit): Double {
    body() // warm-up: JIT and JNA's first-call binding
    val times = (1..repeat).map {
        val t = System.nanoTime()
        body()
        (System.nanoTime() - t) / 1e9
    }.sorted()
    return times[times.size / 2]
}

fun main(args: Array<String>) {
    fun arg(name: String, default: Int) = args.indexOf(name).takeIf { it >= 0 }?.let { args[it + 1].toInt() } ?: default
    val n = arg("--lines", 100_000)
    val repeat = arg("--repeat", 5)
    val lines = RecordedStream.lines(n)
    val blob = RecordedStream.bytes(lines)
    val text = RecordedStream.text(lines)

    val tBulk = medianSeconds(repeat) {
        ClientSession("s1", FULL_CAPS).use { s ->
            check(s.receiveText(text).isEmpty())
            check(s.ignoredLines() == 0uL)
        }
    }
    val tBytes = medianSeconds(repeat) {
        ClientSession("s1", FULL_CAPS).use { s ->
            check(s.receiveBytes(blob).isEmpty())
            check(s.ignoredLines() == 0uL)
        }
    }
    val tLine = medianSeconds(repeat) {
        ClientSession("s1", FULL_CAPS).use { s -> for (line in lines) s.receive(line) }
    }
    val tJson = medianSeconds(repeat) {
        for (line in lines) Json.parseToJsonElement(line)
    }
    val calls = 50_000 // a JNA crossing costs tens of microseconds
    val tNoop = medianSeconds(repeat) {
        repeat(calls) { libraryVersion() }
    } / calls

    val mb = blob.size / 1e6
    fun row(what: String, t: Double) =
        println("%-44s %12s lines/s %8.1f MB/s %7.2f us/line".format(what, "%,.0f".format(n / t), mb / t, t / n * 1e6))
    println("stream: $n lines, %.1f MB (%d B/line); median of $repeat runs, JVM ${System.getProperty("java.version")}".format(mb, blob.size / n))
    row("bulk receiveText (parse + mirror)", tBulk)
    row("bulk receiveBytes (parse + mirror)", tBytes)
    row("per-line receive (parse + mirror)", tLine)
    row("kotlinx parseToJsonElement only (no state)", tJson)
    println("%-44s %12.2f us".format("one no-op crossing (libraryVersion)", tNoop * 1e6))
    println("per-line crossing overhead: %.2f us; bulk vs parseToJsonElement: %.2fx".format((tLine - tBulk) / n * 1e6, tJson / tBulk))
}
