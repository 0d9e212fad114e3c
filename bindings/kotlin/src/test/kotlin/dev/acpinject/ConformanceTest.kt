package dev.acpinject

import dev.acpinject.conformance.envDirs
import dev.acpinject.conformance.runText
import dev.acpinject.conformance.vectorFiles
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertNotNull
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** Every conformance vector replays through the binding (AgentCore / ClientCore driving the
 *  shared VectorRun engine): those of spec/vectors and of `ACP_INJECT_VECTORS`. */
class ConformanceTest {
    private val files = vectorFiles(listOf(PROJECT_VECTORS) + envDirs())

    @TestFactory
    fun `every vector`(): List<DynamicTest> = files.map { file ->
        DynamicTest.dynamicTest("${file.parentFile.name}/${file.name}") {
            val result = runText(file.readText())
            assertNull(result.mismatch, "${result.name}: ${result.mismatch}")
        }
    }

    @Test
    fun `the project's vectors are all there`() {
        val onDisk = PROJECT_VECTORS.walkTopDown().count { it.isFile && it.extension == "json" }
        assertTrue(onDisk >= 116, "only $onDisk vectors in $PROJECT_VECTORS")
        assertTrue(files.size >= onDisk)
    }

    @Test
    fun `a changed vector fails with its first mismatch`() {
        val src = File(PROJECT_VECTORS, "agent/steer-delivered-at-tool-result.json").readText()
        assertNull(runText(src).mismatch)
        val changed = runText(src.replaceFirst("use auth_v2", "use auth_v3"))
        val mismatch = assertNotNull(changed.mismatch)
        assertTrue("auth_v3" in mismatch && "step" in mismatch, mismatch)
    }

    @Test
    fun `a malformed vector is a failure, not a crash`() {
        val unreadable = runText("{not json")
        assertEquals("(unreadable)", unreadable.name)
        assertTrue(unreadable.mismatch!!.contains("not JSON"), unreadable.mismatch)
        val odd = runText("""{"name": "odd", "side": "agent", "steps": [{"runtime": {"event": "break_point", "kind": "lunch"}}]}""")
        assertTrue(odd.mismatch!!.contains("lunch"), odd.mismatch)
    }
}
