package dev.acpinject

import org.junit.jupiter.api.Test
import kotlin.test.assertEquals

/** The client mirror fed with the recorded benchmark stream: in bulk (bytes or text), per line and as a
 *  lazily pulled Sequence, the state it builds is the same, and it is the state the stream describes. */
class ClientMirrorTest {
    private val turns = 100
    private val lines = RecordedStream.lines(turns * RecordedStream.LINES_PER_TURN)

    private fun mirror() = ClientSession("s1", FULL_CAPS)

    @Test
    fun `bulk, text, per-line and sequence feeding build the same state`() {
        val bulk = mirror().use { s ->
            assertEquals(emptyList(), s.receiveBytes(RecordedStream.bytes(lines)))
            assertEquals(0uL, s.ignoredLines())
            s.snapshotJson()
        }
        val text = mirror().use { s ->
            assertEquals(emptyList(), s.receiveText(RecordedStream.text(lines)))
            assertEquals(0uL, s.ignoredLines())
            s.snapshotJson()
        }
        val perLine = mirror().use { s ->
            lines.forEach(s::receive)
            s.snapshotJson()
        }
        val sequence = mirror().use { s ->
            assertEquals(emptyList(), s.receiveAll(lines.asSequence(), batchSize = 1000))
            s.snapshotJson()
        }
        assertEquals(bulk, text)
        assertEquals(bulk, perLine)
        assertEquals(bulk, sequence)
    }

    @Test
    fun `the mirror holds what the stream said`(): Unit = mirror().use { s ->
        s.receiveBytes(RecordedStream.bytes(lines))
        val snap = s.snapshot()
        assertEquals(TurnState.IDLE, snap.state)
        assertEquals("end_turn", snap.stopReason)
        assertEquals(true, snap.usageJson?.contains("1200"))
        assertEquals(2 * turns, snap.transcript.size)
        val (user, agent) = snap.transcript.takeLast(2)
        assertEquals(TranscriptRole.USER to "u$turns", user.role to user.messageId)
        assertEquals(TranscriptRole.AGENT to "a$turns", agent.role to agent.messageId)
        assertEquals(40, agent.content.size) // one block per chunk, in order
        assertEquals(text("token ${40 * turns} of the answer "), agent.content.last())
        assertEquals(emptyList(), snap.pending)
        assertEquals(emptyList(), snap.violations)
    }
}
