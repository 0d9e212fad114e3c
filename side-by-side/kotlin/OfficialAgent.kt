// The side-by-side agent written with the official ACP Kotlin SDK (com.agentclientprotocol:acp
// 0.10.5, ACP v1): it streams "you said: <text>" in chunks, reports a tool call, asks permission,
// completes the tool call (or fails it when rejected) and ends the turn; the SDK answers
// session/cancel by ending the turn `cancelled`.
//
//   java -cp CLASSPATH OfficialAgentKt        (side-by-side/kotlin/README.md)
import com.agentclientprotocol.agent.Agent
import com.agentclientprotocol.agent.AgentInfo
import com.agentclientprotocol.agent.AgentSession
import com.agentclientprotocol.agent.AgentSupport
import com.agentclientprotocol.agent.client
import com.agentclientprotocol.client.ClientInfo
import com.agentclientprotocol.common.Event
import com.agentclientprotocol.common.SessionCreationParameters
import com.agentclientprotocol.model.*
import com.agentclientprotocol.protocol.Protocol
import com.agentclientprotocol.transport.StdioTransport
import com.agentclientprotocol.transport.Transport
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runBlocking
import kotlinx.io.asSink
import kotlinx.io.asSource
import kotlinx.io.buffered
import kotlinx.serialization.json.JsonElement
import java.util.UUID

class EchoSession(override val sessionId: SessionId) : AgentSession {
    override suspend fun prompt(content: List<ContentBlock>, _meta: JsonElement?): Flow<Event> = flow {
        val text = content.filterIsInstance<ContentBlock.Text>().joinToString(" ") { it.text }
        for (chunk in listOf("you ", "said: ", text)) {
            emit(Event.SessionUpdateEvent(SessionUpdate.AgentMessageChunk(ContentBlock.Text(chunk))))
            delay(50)
        }

        val toolCallId = ToolCallId("call_${UUID.randomUUID()}")
        val title = "Echo the message"
        emit(Event.SessionUpdateEvent(SessionUpdate.ToolCall(toolCallId, title, ToolKind.OTHER, ToolCallStatus.PENDING)))
        val options = listOf(
            PermissionOption(PermissionOptionId("allow"), "Allow", PermissionOptionKind.ALLOW_ONCE),
            PermissionOption(PermissionOptionId("reject"), "Reject", PermissionOptionKind.REJECT_ONCE),
        )
        // A cancel while this waits cancels the flow: the SDK answers the prompt `cancelled`.
        val answer = currentCoroutineContext().client.requestPermissions(SessionUpdate.ToolCallUpdate(toolCallId, title), options)
        val allowed = (answer.outcome as? RequestPermissionOutcome.Selected)?.optionId?.value == "allow"
        val status = if (allowed) ToolCallStatus.COMPLETED else ToolCallStatus.FAILED
        emit(Event.SessionUpdateEvent(SessionUpdate.ToolCallUpdate(toolCallId, status = status)))

        emit(Event.PromptResponseEvent(PromptResponse(StopReason.END_TURN)))
    }
}

class EchoAgentSupport : AgentSupport {
    override suspend fun initialize(clientInfo: ClientInfo) =
        AgentInfo(implementation = Implementation("official-echo-agent", "0.1.0"))   // ACP v1, no extra capabilities

    override suspend fun createSession(sessionParameters: SessionCreationParameters): AgentSession =
        EchoSession(SessionId("session-${UUID.randomUUID()}"))

    override suspend fun loadSession(sessionId: SessionId, sessionParameters: SessionCreationParameters): AgentSession =
        EchoSession(sessionId)
}

fun main(): Unit = runBlocking {
    val transport = StdioTransport(this, Dispatchers.IO, System.`in`.asSource().buffered(), System.out.asSink().buffered())
    val protocol = Protocol(this, transport)
    Agent(protocol, EchoAgentSupport())
    protocol.start()
    transport.state.first { it == Transport.State.CLOSED }   // the client closed our stdin
    protocol.close()
}
