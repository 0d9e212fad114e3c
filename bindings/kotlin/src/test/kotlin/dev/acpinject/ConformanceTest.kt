package dev.acpinject

import dev.acpinject.conformance.envDirs
import dev.acpinject.conformance.runDirs
import dev.acpinject.conformance.runFile
import dev.acpinject.conformance.vectorFiles
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.io.TempDir
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** Every conformance vector replays through the binding (AgentCore / ClientSession), the
 *  project's and those of `ACP_INJECT_VECTORS`, and the Kotlin replay agrees with the Rust runner. */
class ConformanceTest {
    private val dirs = listOf(PROJECT_VECTORS.path) + envDirs()

    @TestFactory
    fun `every vector`(): List<DynamicTest> = vectorFiles(dirs).map { file ->
        DynamicTest.dynamicTest("${file.parentFile.name}/${file.name}") {
            val result = runFile(file)
            assertNull(result.mismatch, "${result.name}: ${result.mismatch}")
        }
    }

    @Test
    fun `the vector report, and the Kotlin replay agrees with the Rust runner`() {
        val all = runDirs(dirs)
        // The closing `N passed, N failed` line is what `cargo xtask test` reads.
        println("== conformance vectors through the Kotlin binding ==")
        print(all.render())
        assertTrue(PROJECT_VECTORS.walkTopDown().count { it.name.endsWith(".json") } >= 90)
        val kotlin = runDirs(listOf(PROJECT_VECTORS.path))
        val rust = runConformance(listOf(PROJECT_VECTORS.path))
        assertEquals(rust.passed.toInt() to rust.failed.toInt(), kotlin.passed to kotlin.failed)
        assertEquals(0u, rust.failed, rust.rendered)
        assertEquals(0, all.failed, all.render())
    }

    @Test
    fun `a copied vector runs from anywhere and a changed one fails`(@TempDir tmp: File) {
        val src = File(PROJECT_VECTORS, "agent/steer-delivered-at-tool-result.json")
        val copy = File(tmp, "copy.json")
        src.copyTo(copy)
        val ok = runDirs(listOf(tmp.path))
        assertEquals(1 to 0, ok.passed to ok.failed)
        assertTrue("1 passed, 0 failed" in ok.render())

        copy.writeText(src.readText().replaceFirst("use auth_v2", "use auth_v3"))
        val changed = runDirs(listOf(tmp.path))
        val out = changed.render()
        assertEquals(0 to 1, changed.passed to changed.failed)
        assertTrue("0 passed, 1 failed" in out && "auth_v3" in out && "step" in out, out)
        // The Rust runner sees the same failure.
        assertEquals(1u, runConformance(listOf(tmp.path)).failed)
    }

    @Test
    fun `a malformed vector is a failure, not a crash`(@TempDir tmp: File) {
        File(tmp, "bad.json").writeText("{not json")
        File(tmp, "odd.json").writeText("""{"name": "odd", "side": "agent", "steps": [{"runtime": {"event": "break_point", "kind": "lunch"}}]}""")
        val report = runDirs(listOf(tmp.path))
        assertEquals(0 to 2, report.passed to report.failed)
        assertTrue("unreadable" in report.render() && "lunch" in report.render(), report.render())
    }
}
