package dev.acpinject.bench

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals

/** The comparison bench's ground (bench.sh): its stream is the Python comparison's, byte for
 *  byte, and both contenders accept it (on a prefix here; the bench checks every line). */
class BenchStreamTest {
    @Test
    fun `the stream is bench_vs_official_py's and both sides accept it`() {
        val lines = sharedStream(100_000)
        assertEquals(PYTHON_STREAM_SHA256, streamSha256((lines.joinToString("\n") + "\n").toByteArray()))
        checkBothAccept(lines.take(5_000))
    }
}
