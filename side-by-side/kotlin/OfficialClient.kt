// The side-by-side client written with the official ACP Kotlin SDK (com.agentclientprotocol:acp
// 0.10.5, ACP v1): it starts the agent over stdio, initializes, opens a session, sends a prompt,
// prints the agent's text as it streams, allows the permission request and prints the stop
// reason.
//
//   java -cp CLASSPATH OfficialClientKt AGENT-COMMAND...        (side-by-side/kotlin/README.md)
import com.agentclientprotocol.client.Client
import com.agentclientprotocol.client.ClientInfo
import com.agentclientprotocol.common.ClientSessionOperations
import com.agentclientprotocol.common.Event
import com.agentclientprotocol.common.SessionCreationParameters
import com.agentclientprotocol.model.*
import com.agentclientprotocol.protocol.Protocol
import com.agentclientprotocol.transport.StdioTransport
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.io.asSink
import kotlinx.io.asSource
import kotlinx.io.buffered
import kotlinx.serialization.json.JsonElement

class PrintingSession : ClientSessionOperations {
    override suspend fun requestPermissions(
        toolCall: SessionUpdate.ToolCallUpdate,
        permissions: List<PermissionOption>,
        _meta: JsonElement?,
    ): RequestPermissionResponse {
        val allow = permissions.first { it.kind == PermissionOptionKind.ALLOW_ONCE }
        println("\n[permission] ${toolCall.title}: ${allow.name}")
        return RequestPermissionResponse(RequestPermissionOutcome.Selected(allow.optionId))
    }

    // Updates that arrive outside a prompt's flow.
    override suspend fun notify(notification: SessionUpdate, _meta: JsonElement?) {}
}

fun main(args: Array<String>): Unit = runBlocking {
    val agent = ProcessBuilder(*args).redirectError(ProcessBuilder.Redirect.INHERIT).start()
    val transport = StdioTransport(this, Dispatchers.IO, agent.inputStream.asSource().buffered(), agent.outputStream.asSink().buffered())
    val protocol = Protocol(this, transport)
    val client = Client(protocol)
    protocol.start()

    val info = client.initialize(ClientInfo(implementation = Implementation("official-client", "0.1.0")))
    println("[agent] ${info.implementation?.name}, protocol ${info.protocolVersion}")
    val session = client.newSession(SessionCreationParameters(System.getProperty("user.dir"), emptyList())) { _, _ -> PrintingSession() }

    session.prompt(listOf(ContentBlock.Text("hello"))).collect { event ->
        when (event) {
            is Event.SessionUpdateEvent -> when (val update = event.update) {
                is SessionUpdate.AgentMessageChunk -> print((update.content as? ContentBlock.Text)?.text.orEmpty())
                is SessionUpdate.ToolCall -> println("\n[tool] ${update.title}: ${update.status}")
                is SessionUpdate.ToolCallUpdate -> println("[tool] ${update.toolCallId}: ${update.status}")
                else -> {}
            }
            is Event.PromptResponseEvent -> println("[stop] ${event.response.stopReason}")
        }
    }

    protocol.close()
    agent.destroy()
}
