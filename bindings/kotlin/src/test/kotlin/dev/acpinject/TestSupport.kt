package dev.acpinject

import java.io.File

/** The workspace root (surefire passes it; the default works from bindings/kotlin). */
val WORKSPACE: File = File(System.getProperty("acp.workspace.dir") ?: "../..").canonicalFile

val PROJECT_VECTORS: File = File(WORKSPACE, "spec/vectors")

/** Both modes, replace, `finish`: what [defaultAgentOptions] advertises. */
val FULL_CAPS = InjectCapabilities(
    modes = listOf(InjectMode.QUEUE, InjectMode.STEER),
    replace = true,
    steerInStream = listOf(SteerInStream.FINISH),
)

private fun jsonString(s: String): String = buildString {
    append('"')
    for (c in s) when (c) {
        '"' -> append("\\\"")
        '\\' -> append("\\\\")
        '\n' -> append("\\n")
        else -> append(c)
    }
    append('"')
}

/** A JSON-RPC request line (params given as raw JSON). */
fun request(id: Long, method: String, params: String): String =
    """{"jsonrpc":"2.0","id":$id,"method":${jsonString(method)},"params":$params}"""

fun injectParams(mode: String, text: String, session: String = "s1"): String =
    """{"sessionId":${jsonString(session)},"mode":${jsonString(mode)},"content":[{"type":"text","text":${jsonString(text)}}]}"""

fun revokeParams(messageId: String, session: String = "s1"): String =
    """{"sessionId":${jsonString(session)},"messageId":${jsonString(messageId)}}"""

fun promptParams(text: String, session: String = "s1"): String =
    """{"sessionId":${jsonString(session)},"prompt":[{"type":"text","text":${jsonString(text)}}]}"""

/**
 * The recorded mixed stream of agent lines the benchmarks of every language use (the same
 * generator as bindings/python/bench/bench_mirror.py): per turn a user message, `running`, 40
 * agent message chunks with a tool call (two updates) every 10 chunks, and `idle` with usage.
 */
object RecordedStream {
    const val LINES_PER_TURN = 51

    fun lines(n: Int): List<String> {
        val lines = ArrayList<String>(n + LINES_PER_TURN)
        fun update(u: String) {
            lines += """{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": $u}}"""
        }
        var turn = 0
        var i = 0
        while (lines.size < n) {
            turn += 1
            update("""{"sessionUpdate": "user_message", "messageId": "u$turn", "content": [{"type": "text", "text": "request number $turn: please fix the failing test"}]}""")
            update("""{"sessionUpdate": "state_update", "state": "running"}""")
            for (k in 0 until 40) {
                i += 1
                update("""{"sessionUpdate": "agent_message_chunk", "messageId": "a$turn", "content": {"type": "text", "text": "token $i of the answer "}}""")
                if (k % 10 == 9) {
                    val tc = "call_${turn}_$k"
                    update("""{"sessionUpdate": "tool_call_update", "toolCallId": "$tc", "title": "Run tests", "kind": "execute", "status": "in_progress"}""")
                    update("""{"sessionUpdate": "tool_call_update", "toolCallId": "$tc", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "all 42 tests passed"}}]}""")
                }
            }
            update("""{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "usage": {"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200}}""")
        }
        return lines.subList(0, n)
    }

    fun text(lines: List<String>): String = lines.joinToString("\n") + "\n"

    fun bytes(lines: List<String>): ByteArray = text(lines).toByteArray()
}
