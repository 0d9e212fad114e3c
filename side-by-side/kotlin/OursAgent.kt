// The side-by-side agent written with acp-inject's Kotlin package (dev.acpinject; ACP v2 with
// session/inject, and v1 for v1 clients): it streams "you said: <text>" in chunks, reports a tool
// call, asks permission, completes the tool call (or fails it when rejected) and ends the turn;
// a cancel ends it `cancelled`. The library also serves queue, steer, revoke and replace: the
// steers sent meanwhile are read at the tool result, and queued messages open the next turn.
//
//   java -Djna.library.path=DIR -cp CLASSPATH OursAgentKt        (side-by-side/kotlin/README.md)
import dev.acpinject.*
import kotlin.time.Duration.Companion.milliseconds

class EchoAgent : Agent() {
    override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
        val text = messages.joinToString(" ") { textOf(it.content) }
        for (chunk in listOf("you ", "said: ", text)) {
            turn.say(chunk)
            if (!turn.sleep(50.milliseconds)) return null              // cancelled
        }

        val call = "call_${System.nanoTime()}"
        turn.toolCall(call, ToolCallStatus.PENDING, title = "Echo the message", kind = ToolKind.OTHER)
        val answer = turn.permission("Echo the message", toolCallId = call) ?: return null   // null: cancelled
        turn.toolCall(call, if (answer == "allow") ToolCallStatus.COMPLETED else ToolCallStatus.FAILED)
        for (steer in turn.breakPoint(BreakPoint.TOOL_RESULT)) turn.say(" (steered: ${textOf(steer.content)})")
        return null                                                      // end_turn
    }
}

fun main() = runAgent(EchoAgent(), agentConfig("ours-echo-agent"))
