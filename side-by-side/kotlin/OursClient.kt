// The side-by-side client written with acp-inject's Kotlin package (dev.acpinject; negotiates ACP
// v2 or v1): it starts the agent over stdio, opens a session, sends a prompt, prints the agent's
// text as it streams, allows the permission request and prints the stop reason. During the turn
// it also queues a follow-up, steers, revokes one queued message and replaces another, and prints
// what became of each. Against a v1 agent the queue is held by the library and sent as prompts
// when the turn ends; a steer needs an agent that offers it.
//
//   java -Djna.library.path=DIR -cp CLASSPATH OursClientKt AGENT-COMMAND...   (side-by-side/kotlin/README.md)
import dev.acpinject.*
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking

fun main(args: Array<String>): Unit = runBlocking {
    connect(args.toList(), name = "ours-client").use { agent ->
        println("[agent] ${agent.agent.info.name}, protocol ${agent.agent.protocolVersion}")
        val session = agent.newSession(System.getProperty("user.dir"))
        session.prompt("hello")

        val followUp = session.inject("and a follow-up")                   // queued: opens the next turn
        if (agent.inject?.modes?.contains(InjectMode.STEER) == true) {
            session.inject("keep it short", InjectMode.STEER)                // read at the next break-point
        }
        session.revoke(session.inject("never mind"))                        // never delivered
        val draft = session.inject("a draft")
        session.replace(draft, "the final question")                       // same place in the queue

        val waiting = mutableSetOf<MessageId?>(followUp, draft)
        session.events().first { activity ->
            when (activity) {
                is PermissionRequested -> {
                    val allow = activity.params.options.first { it.kind == PermissionOptionKind.ALLOW_ONCE }
                    println("\n[permission] ${activity.params.title}: ${allow.name}")
                    session.allow(activity.request, allow.optionId)
                }
                is PendingItem -> {                                             // our messages' progress
                    println("[${activity.mode} ${activity.status}] ${textOf(activity.content)}")
                    if (activity.status == ItemStatus.DELIVERED) waiting.remove(activity.messageId)
                }
                is AgentMessageChunk -> print(activity.content.text)
                is ToolCallUpdate -> println("\n[tool] ${activity.title ?: activity.toolCallId}: ${activity.status}")
                is IdleStateUpdate -> activity.stopReason?.let { println("[stop] $it") }
                else -> {}
            }
            activity.turnEnded != null && waiting.isEmpty()                      // the queue answered too
        }
    }
}
