// A complete ACP v2 agent with session/inject, in Kotlin: a scripted "model" that streams its
// answer, runs two tool calls (asking permission before the second) and reads the steers the
// user sends mid-turn at each tool result. Queue, steer, revoke, replace, cancel, status, list,
// resume and close are the library's.
//
//   java -cp CLASSPATH AgentKt [--store sessions.db] [--delay-ms 50] [--require-api-key]   (bindings/kotlin/README.md)
//
// With --require-api-key it advertises one auth method (`api-key`) and serves a client only once
// it logged in with it (`auth/login`, v1's `authenticate`), which succeeds when the environment
// variable ACP_EXAMPLE_API_KEY is set.
import dev.acpinject.*
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds

class ScriptedAgent(private val delay: Duration) : Agent() {
    override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
        val heard = messages.map { textOf(it.content) }.toMutableList()
        turn.say("Working on: ${heard.joinToString("; ")}. ")
        for (step in 1..2) {
            if (!turn.sleep(delay)) return null                  // cancelled: the library reports it
            turn.say("step $step of my plan. ")
        }
        for (tool in 1..2) {
            val call = "call_${turn.sessionId}_${heard.size}_$tool"
            turn.toolCall(call, ToolCallStatus.PENDING, title = "Run step $tool", kind = ToolKind.EXECUTE)
            if (tool == 2 && turn.permission("Allow step $tool?", toolCallId = call) != "allow") {
                turn.toolCall(call, ToolCallStatus.FAILED)
                continue
            }
            turn.toolCall(call, ToolCallStatus.IN_PROGRESS)
            if (!turn.sleep(delay)) return null
            turn.toolCall(call, ToolCallStatus.COMPLETED, output = "step $tool done")
            for (steer in turn.breakPoint(BreakPoint.TOOL_RESULT)) {
                heard += textOf(steer.content)                  // the model reads the user's steer here
                turn.say("(noted: ${textOf(steer.content)}) ")
            }
        }
        turn.say("Done (${heard.size} message(s) handled this turn).")
        val n = heard.size.toLong()
        return TurnEnd(StopReason.END_TURN, Usage(totalTokens = 100 * n + 50, inputTokens = 100 * n, outputTokens = 50))
    }

    override suspend fun authenticate(methodId: String) {
        if (System.getenv("ACP_EXAMPLE_API_KEY").isNullOrEmpty()) throw refused(-32000, "Authentication required", "set ACP_EXAMPLE_API_KEY")
    }
}

fun main(args: Array<String>) {
    fun option(name: String): String? = args.indexOf(name).takeIf { it >= 0 }?.let { args.getOrNull(it + 1) }
    val delay = (option("--delay-ms")?.toLong() ?: 50L).milliseconds
    val requireKey = "--require-api-key" in args
    val apiKey = AuthMethodAgent(methodId = "api-key", name = "API key", description = "ACP_EXAMPLE_API_KEY in the agent's environment")
    val config = agentConfig("acp-inject-kotlin-example", authMethods = if (requireKey) listOf(apiKey) else emptyList(), authRequired = requireKey)
    runAgent(ScriptedAgent(delay), config, store = option("--store"), listen = option("--listen"))
}
