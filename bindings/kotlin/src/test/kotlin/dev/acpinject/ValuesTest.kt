package dev.acpinject

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.put
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.msgpack.core.MessagePack
import org.msgpack.core.MessagePacker
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertIs
import kotlin.test.assertNotEquals
import kotlin.test.assertNotNull
import kotlin.test.assertTrue

/** MessagePack bytes written by hand, to test the decoders against the encoding itself. */
private fun msgpack(write: MessagePacker.() -> Unit): ByteArray = MessagePack.newDefaultBufferPacker().apply(write).toByteArray()

/** Every class of a session's activity, by a `when` with no `else`: it compiles only while the
 *  `when` is exhaustive over the flat classes (a class added to the model fails the build here). */
fun kindOf(activity: SessionActivity): String = when (activity) {
    is UserMessage -> "user ${activity.messageId}"
    is UserMessageChunk -> "user chunk"
    is AgentMessage -> "agent message"
    is AgentMessageChunk -> "agent chunk ${activity.content.text}"
    is AgentMessageClear -> "agent clear"
    is AgentThought -> "thought"
    is AgentThoughtChunk -> "thought chunk"
    is RunningStateUpdate -> "running"
    is IdleStateUpdate -> "idle ${activity.stopReason}"
    is RequiresActionStateUpdate -> "requires action"
    is UnknownStateUpdate -> "unknown state"
    is OtherStateUpdate -> "other state ${activity.tag}"
    is ToolCallUpdate -> "tool ${activity.toolCallId}"
    is ToolCallContentChunk -> "tool chunk"
    is PlanUpdate -> "plan"
    is UsageUpdate -> "usage"
    is SessionInfoUpdate -> "info"
    is ReplayComplete -> "replay complete"
    is PendingInjectsUpdate -> "pending injects"
    is SessionClosedUpdate -> "closed update"
    is OtherSessionUpdate -> "other ${activity.tag}"
    is PendingItem -> "item ${activity.status}"
    is Violation -> "violation ${activity.rule}"
    SessionClosed -> "session closed"
    is Tolerated -> "tolerated"
    is PermissionRequested -> "permission ${activity.params.title}"
}

/** The same union, one level up: the sealed sub-interfaces group the classes. */
fun groupOf(activity: SessionActivity): String = when (activity) {
    is StateUpdate -> "state"
    is SessionUpdate -> "update"
    is PendingItem, is Violation, SessionClosed, is Tolerated -> "session event"
    is PermissionRequested -> "permission"
}

/** The events of a client connection, exhaustive too. */
fun kindOf(event: Event): String = when (event) {
    is Answered -> "answered ${event.kind}"
    is InSession -> "in ${event.sessionId}: ${groupOf(event.event)}"
    is PermissionRequested -> "permission"
    is Notification -> "notification ${event.method}"
    is Ignored -> "ignored"
}

/** An agent core's outputs and actions, exhaustive. */
fun kindOf(output: Output): String = when (output) {
    is Line -> "line to ${output.to}"
    is Action -> when (val a = output.action) {
        is SessionOpened -> "opened"
        is SessionResumed -> "resumed"
        is StartTurn -> "start ${a.input.size}"
        is Deliver -> "deliver ${a.input.size}"
        InterruptStream -> "interrupt"
        CancelTurn -> "cancel"
        is PermissionAnswered -> "answered"
        is ReleaseSession -> "release"
    }
    is HostCallMade -> when (val c = output.call) {
        is Authenticate -> "login ${c.methodId}"
        is ExtensionRequest -> "extension ${c.method}"
        is ExtensionNotification -> "extension notification ${c.method}"
    }
}

/** The error classes, exhaustive over the sealed class. */
fun kindOf(e: AcpException): String = when (e) {
    is AcpException.InvalidInput -> "invalid input"
    is AcpException.Protocol -> "protocol ${e.error.code}"
    is AcpException.AuthRequired -> "authentication required"
    is AcpException.Rejected -> "rejected ${e.reason}"
    is AcpException.Host -> "host ${e.error}"
    is AcpException.Config -> "config"
    is AcpException.Store -> "store"
    is AcpException.Disconnected -> "disconnected"
    is AcpException.Mismatch -> "mismatch"
    is AcpException.Internal -> "internal"
}

/**
 * The generated value types (Values.kt) and their codec: value equality, open enums that keep
 * what they do not know, defaults, the encoding as docs/encoding.md has it, errors naming where,
 * and values crossing the FFI both ways.
 */
class ValuesTest {
    @Test
    fun `classes are values, with defaults for what is optional`() {
        val usage = Usage(totalTokens = 150)
        assertEquals(listOf(150L, 0L, 0L), listOf(usage.totalTokens, usage.inputTokens, usage.outputTokens))
        assertEquals(null, usage.thoughtTokens)
        assertEquals(Usage(150), usage)
        assertEquals(usage.hashCode(), Usage(totalTokens = 150, inputTokens = 0).hashCode())
        assertNotEquals(usage, usage.copy(outputTokens = 1))
        assertEquals("Usage(totalTokens=150, inputTokens=0, outputTokens=0, thoughtTokens=null, cachedReadTokens=null, cachedWriteTokens=null, meta=null)", "$usage")
        assertEquals(Policy(), AgentConfig(AgentInfo("a", "1")).policy)
        assertEquals(QueueDrain.BATCH, Policy().queueDrain)
        assertEquals(Patch.Absent, UserMessage("m1").content)
        assertEquals(TextContent("hi"), text("hi"))
        assertEquals("ResumedSessionClosed", "$Resumed$SessionClosed", "fieldless classes are data objects")
    }

    @Test
    fun `open enums keep unknown values, closed enums are enum classes, one casing`() {
        assertEquals(StopReason.END_TURN, StopReason("end_turn"))
        assertEquals("end_turn", StopReason.END_TURN.value)
        assertEquals("end_turn", "${StopReason.END_TURN}")
        val vendor = StopReason("_vendor_stop")
        assertFalse(vendor.known)
        assertTrue(StopReason.CANCELLED.known)
        assertEquals(setOf(StopReason("end_turn")), setOf(StopReason.END_TURN), "equal by wire string")
        assertEquals("other", ToolKind.OTHER.value)
        assertFalse(ToolKind("_x").known)
        val described = when (StopReason("cancelled")) {
            StopReason.CANCELLED -> "cancelled"
            else -> "something else"
        }
        assertEquals("cancelled", described)
        assertEquals("queue", InjectMode.QUEUE.value)
        assertEquals(listOf(InjectMode.QUEUE, InjectMode.STEER), InjectMode.entries)
        assertEquals(InjectMode.STEER, Values.decode<InjectMode>(Values.encode(InjectMode.STEER)))
        assertEquals(vendor, Values.decode<StopReason>(Values.encode(vendor)))
        val unknown = assertThrows<DecodeException> { Values.decode<InjectMode>(msgpack { packString("sideways") }) }
        assertEquals("\"sideways\" is not a value of InjectMode", unknown.message)
    }

    @Test
    fun `the encoding is MessagePack maps by field name, the class first under the tag`() {
        val idle = IdleStateUpdate(stopReason = StopReason.END_TURN, usage = Usage(totalTokens = 150))
        val expected = msgpack {
            packMapHeader(3)
            packString("$").packString("IdleStateUpdate")
            packString("usage").packMapHeader(3)
            packString("total_tokens").packInt(150)
            packString("input_tokens").packInt(0)
            packString("output_tokens").packInt(0)
            packString("stop_reason").packString("end_turn")
        }
        assertEquals(expected.toList(), Values.encode<SessionActivity>(idle).toList())
        assertEquals(expected.toList(), Values.encode(idle).toList(), "a union's class carries its tag wherever it is")
        assertEquals(idle, Values.decode<SessionActivity>(expected))
        assertEquals(idle, Values.decode<StateUpdate>(expected))
        // Fields in any order (the tag first), defaults filled in, nil for an optional field.
        val reordered = msgpack {
            packMapHeader(4)
            packString("$").packString("IdleStateUpdate")
            packString("stop_reason").packString("end_turn")
            packString("error").packNil()
            packString("usage").packMapHeader(1).packString("total_tokens").packInt(150)
        }
        assertEquals(idle, Values.decode<SessionUpdate>(reordered))
    }

    @Test
    fun `decoding is strict and says where`() {
        fun fails(bytes: ByteArray): String = assertThrows<DecodeException> { Values.decode<SessionUpdate>(bytes) }.message!!
        val chunk = { text: MessagePacker.() -> Unit ->
            msgpack {
                packMapHeader(3)
                packString("$").packString("AgentMessageChunk")
                packString("message_id").packString("a1")
                packString("content").packMapHeader(2).packString("$").packString("TextContent").packString("text")
                text()
            }
        }
        assertEquals("content.text: expected a string, found an integer", fails(chunk { packInt(5) }))
        assertEquals("hi", assertIs<AgentMessageChunk>(Values.decode<SessionUpdate>(chunk { packString("hi") })).content.text)
        assertEquals("`Usage` is not a kind of SessionUpdate", fails(msgpack { packMapHeader(1).packString("$").packString("Usage") }))
        assertEquals("AgentMessageChunk needs `content`", fails(msgpack { packMapHeader(2).packString("$").packString("AgentMessageChunk").packString("message_id").packString("a") }))
        assertEquals(
            "UserMessage has no field `colour`",
            fails(msgpack { packMapHeader(3).packString("$").packString("UserMessage").packString("message_id").packString("a").packString("colour").packString("red") }),
        )
        assertEquals("a union's value names its class first, under \"$\"", fails(msgpack { packMapHeader(1).packString("message_id").packString("a") }))
        assertEquals("expected a map, found a list", fails(msgpack { packArrayHeader(0) }))
        val range = assertThrows<DecodeException> { Values.decode<Usage>(msgpack { packMapHeader(1).packString("total_tokens").packInt(-1) }) }
        assertEquals(listOf("total_tokens"), range.path)
        assertThrows<DecodeException> { Values.decode<Usage>(Values.encode(Usage(1)) + byteArrayOf(0)) }
        assertEquals(Usage(5), Values.decode<Usage>(msgpack { packMapHeader(1).packString("total_tokens").packInt(5) }))
    }

    @Test
    fun `patch fields tell absent, null and a value apart`() {
        for (title in listOf(Patch.Absent, Patch.Null, Patch.Value("t"))) {
            val update = SessionInfoUpdate(title = title)
            assertEquals(update, Values.decode<SessionUpdate>(Values.encode<SessionUpdate>(update)))
        }
        assertEquals(2, MessagePack.newDefaultUnpacker(Values.encode(SessionInfoUpdate(title = Patch.Null))).unpackMapHeader(), "the tag and the null")
        assertEquals(1, MessagePack.newDefaultUnpacker(Values.encode(SessionInfoUpdate())).unpackMapHeader(), "absent: left out")
        assertEquals(Patch.Value("x"), Patch.of("x"))
        assertEquals(Patch.Null, Patch.of<String>(null))
    }

    @Test
    fun `request ids, JSON values and errors round trip`() {
        for (id in listOf(RequestId.of(7), RequestId.of("r-1"), RequestId.Null, RequestId.of(Long.MAX_VALUE))) {
            assertEquals(id, Values.decode<RequestId>(Values.encode(id)))
        }
        val meta = Json.parseToJsonElement("""{"n": 1, "big": 18446744073709551615, "neg": -5, "f": 1.5, "s": "x", "l": [true, null, {"a": []}]}""").jsonObject
        val info = Implementation(name = "n", version = "1", meta = meta)
        assertEquals(info, Values.decode<Implementation>(Values.encode(info)))
        for (e in listOf<AcpException>(
            AcpException.Disconnected("gone"),
            AcpException.Rejected(CallRejected.UNKNOWN_SESSION, "no such session"),
            AcpException.Protocol(ProtocolError(code = -32010, message = "no turn", reason = ErrorReason.NO_RUNNING_TURN)),
        )) {
            val back = Values.decode<AcpException>(Values.encode(e))
            assertEquals(e, back)
            assertEquals(e.message, back.message)
        }
        assertEquals("gone", AcpException.Disconnected("gone").message)
        assertEquals(AcpException.Disconnected("gone"), Values.decode<AcpException.Disconnected>(Values.encode(AcpException.Disconnected("gone"))))
        assertEquals(listOf(Usage(1), Usage(2)), Values.decode<List<Usage>>(Values.encode(listOf(Usage(1), Usage(2)))))
        assertEquals(null, Values.decode<Usage?>(Values.encode<Usage?>(null)))
        assertThrows<IllegalArgumentException> { Values.codec<java.io.File>() }
    }

    @Test
    fun `a known or unknown stop reason crosses the FFI into the agent and back to the client`() {
        for (reason in listOf(StopReason.MAX_TOKENS, StopReason("_vendor_stop"))) Wire().use { w ->
            val s = w.newSession("/tmp/a")
            w.client.prompt(s, listOf(text("one")))
            w.pump()
            w.runtime(s, TurnEnd(reason, Usage(totalTokens = 7)))
            val snap = assertNotNull(w.client.snapshot(s))
            assertEquals(reason, snap.stopReason)
            assertEquals(7L, snap.usage?.totalTokens)
            assertEquals(emptyList(), snap.violations)
        }
    }

    @Test
    fun `an update this version does not know arrives whole, and unknown enum values are kept`() = benchClientFor { c ->
        val line = """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"_vendor_thing","x":[1,2],"_meta":{"k":"v"}}}}"""
        val event = assertIs<InSession>(c.receive(line).single())
        val other = assertIs<OtherSessionUpdate>(event.event)
        assertEquals("_vendor_thing", other.tag)
        assertEquals(Json.parseToJsonElement(line).jsonObject["params"]!!.jsonObject["update"], other.raw)
        assertEquals("other _vendor_thing", kindOf(other))
        val tool = """{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"_teleport","status":"_paused"}}}"""
        val update = assertIs<ToolCallUpdate>(assertIs<InSession>(c.receive(tool).single()).event)
        assertEquals(ToolKind("_teleport"), update.kind)
        assertEquals(ToolCallStatus("_paused"), update.status)
        assertFalse(update.status!!.known)
    }

    @Test
    fun `a when over a session's activity names the flat classes, exhaustively`() = Wire().use { w ->
        val s = w.newSession("/tmp/when")
        w.client.prompt(s, listOf(text("go")))
        w.pump()
        val chunk = AgentMessageChunk(messageId = w.agent.mintAgentMessageId(), content = text("hello"))
        w.runtime(s, chunk)
        w.runtime(s, ToolCallUpdate(toolCallId = "c1", status = ToolCallStatus.PENDING, meta = buildJsonObject { put("k", 1) }))
        w.runtime(s, TurnEnd(StopReason.END_TURN))
        val activities = w.events.filterIsInstance<InSession>().filter { it.sessionId == s }.map { it.event }
        val kinds = activities.map { kindOf(it) }
        assertTrue("agent chunk hello" in kinds && "tool c1" in kinds && "idle end_turn" in kinds, "$kinds")
        assertTrue(kinds.any { it.startsWith("item ") } && kinds.any { it.startsWith("user ") }, "$kinds")
        assertEquals("state", groupOf(activities.last { it is IdleStateUpdate }))
        val tool = activities.filterIsInstance<ToolCallUpdate>().single()
        assertEquals(JsonPrimitive(1), (tool.meta as JsonObject)["k"])
        assertTrue(w.events.map { kindOf(it) }.any { it.startsWith("answered PROMPT") })
        assertTrue(w.actions.map { kindOf(it) }.any { it.startsWith("start ") })
    }
}

/** A client core with the bench's session open (see [dev.acpinject.bench.benchClient]). */
private fun <T> benchClientFor(body: (ClientCore) -> T): T = dev.acpinject.bench.benchClient().use(body)
