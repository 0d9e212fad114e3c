package dev.acpinject

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.add
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.int
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import org.junit.jupiter.api.Test
import java.io.BufferedReader
import java.io.BufferedWriter
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.seconds

/**
 * Authentication and extension methods served by a Kotlin agent (spec/rules.md R-AUTH-*,
 * R-EXT-2), the Kotlin port of bindings/python/tests/test_auth.py: the example agent requiring
 * an API key, driven by a raw ACP v1 client (as an editor speaking v1 would); a Kotlin agent
 * checking credentials in [Agent.authenticate], driven by our client (login, a session and a
 * prompt, logout); an agent serving extension methods; and [AgentCore.answerCall] /
 * [AgentCore.refuseCall] for a host that drives the core itself.
 */
class AuthTest {
    /** A line-by-line ACP v1 client over the example agent's stdio. */
    private class V1Client(key: String?) : AutoCloseable {
        private val process: Process = ProcessBuilder(exampleAgent("--require-api-key", "--delay-ms", "1"))
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .also { builder ->
                val env = builder.environment()
                env.remove("ACP_EXAMPLE_API_KEY")
                if (key != null) env["ACP_EXAMPLE_API_KEY"] = key
            }
            .start()
        private val input: BufferedWriter = process.outputStream.bufferedWriter()
        private val output: BufferedReader = process.inputStream.bufferedReader()
        private var nextId = 0

        /** The agent's notifications seen so far, as they came. */
        val notifications = mutableListOf<JsonObject>()

        private fun send(message: JsonObject) {
            input.write(message.toString())
            input.write("\n")
            input.flush()
        }

        /** Sends a request and returns its answer; a permission request meanwhile is allowed. */
        fun request(method: String, params: JsonObject): JsonObject {
            val id = ++nextId
            send(buildJsonObject {
                put("jsonrpc", "2.0")
                put("id", id)
                put("method", method)
                put("params", params)
            })
            while (true) {
                val line = output.readLine() ?: throw AssertionError("the agent ended before answering $method")
                val message = Json.parseToJsonElement(line).jsonObject
                when {
                    "method" !in message -> if (message["id"]?.jsonPrimitive?.intOrNull == id) return message
                    message["method"]?.jsonPrimitive?.content == "session/request_permission" -> send(buildJsonObject {
                        put("jsonrpc", "2.0")
                        put("id", message["id"]!!)
                        put("result", buildJsonObject { put("outcome", buildJsonObject { put("outcome", "selected"); put("optionId", "allow") }) })
                    })
                    else -> notifications += message
                }
            }
        }

        override fun close() {
            input.close()
            if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly()
        }
    }

    private fun JsonObject.error(): JsonObject = getValue("error").jsonObject

    private fun JsonObject.code(): Int = error().getValue("code").jsonPrimitive.int

    @Test
    fun `a v1 client authenticates with the example agent`() = coTest(120.seconds) {
        val cwd = System.getProperty("java.io.tmpdir")
        val v1 = buildJsonObject {
            put("protocolVersion", 1)
            put("clientCapabilities", buildJsonObject {})
        }
        val newSession = buildJsonObject {
            put("cwd", cwd)
            putJsonArray("mcpServers") {}
        }
        withContext(Dispatchers.IO) {
            // Without the key in the agent's environment: advertised, required, and refused.
            V1Client(null).use { client ->
                val init = client.request("initialize", v1).getValue("result").jsonObject
                assertEquals(1, init.getValue("protocolVersion").jsonPrimitive.int)
                val advertised = Json.parseToJsonElement(
                    """[{"id":"api-key","name":"API key","description":"ACP_EXAMPLE_API_KEY in the agent's environment"}]""",
                )
                assertEquals(advertised, init["authMethods"])
                val refused = client.request("session/new", newSession)
                assertEquals(-32000, refused.code())
                assertEquals("Authentication required", refused.error().getValue("message").jsonPrimitive.content)
                val login = client.request("authenticate", buildJsonObject { put("methodId", "api-key") })
                assertEquals(-32000, login.code())
                assertEquals("set ACP_EXAMPLE_API_KEY", login.error().getValue("data").jsonObject.getValue("detail").jsonPrimitive.content)
                val unknown = client.request("authenticate", buildJsonObject { put("methodId", "password") })
                assertEquals(-32602, unknown.code())
            }
            // With it: the login succeeds, then the session and a prompt are served.
            V1Client("sk-test").use { client ->
                client.request("initialize", v1)
                assertEquals(Json.parseToJsonElement("""{"jsonrpc":"2.0","id":2,"result":{}}"""), client.request("authenticate", buildJsonObject { put("methodId", "api-key") }))
                val session = client.request("session/new", newSession).getValue("result").jsonObject.getValue("sessionId").jsonPrimitive.content
                val answer = client.request("session/prompt", buildJsonObject {
                    put("sessionId", session)
                    putJsonArray("prompt") { add(buildJsonObject { put("type", "text"); put("text", "hi") }) }
                })
                assertEquals("end_turn", answer.getValue("result").jsonObject.getValue("stopReason").jsonPrimitive.content, "$answer")
                val said = client.notifications.joinToString("\n")
                assertTrue("Working on: hi" in said, said)
            }
        }
    }

    /** Checks an API key standing for [environmentKey] (the agent's environment, as the test sets it). */
    private class Guarded : Agent() {
        @Volatile var environmentKey: String? = null
        val logins = CopyOnWriteArrayList<String>()

        override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
            turn.say("logged in; you said: " + textOf(messages.flatMap { it.content }))
            return null
        }

        override suspend fun authenticate(methodId: String) {
            logins += methodId
            val key = environmentKey ?: throw refused(-32000, "Authentication required", "set ACME_API_KEY")
            if (key != "sk-test") throw refused(-32001, "Invalid API key", "ACME_API_KEY is not a key of ours")
        }
    }

    private val apiKey = AuthMethodAgent(methodId = "api-key", name = "API key", description = "ACME_API_KEY in the agent's environment")
    private val terminal = AuthMethodTerminal(methodId = "login", name = "Log in", args = listOf("--login"))

    @Test
    fun `our client logs in with a Kotlin agent's method, opens a session and prompts, and logs out`() = coTest {
        val agent = Guarded()
        val config = agentConfig("guarded", authMethods = listOf(apiKey, terminal), authRequired = true)
        val cwd = System.getProperty("java.io.tmpdir")
        listen(agent, "127.0.0.1:0", config).use { listening ->
            connect(listening.url).use { client ->
                assertEquals(listOf(apiKey, terminal), client.authMethods)
                val first = assertFailsWith<AcpException.AuthRequired> { client.newSession(cwd) }
                assertEquals(-32000L, first.error.code)
                assertEquals("Authentication required", first.error.message)
                // Refused without sending: a method the agent does not advertise, and a terminal one.
                assertEquals(CallRejected.INVALID_ARGUMENTS, assertFailsWith<AcpException.Rejected> { client.authenticate("password") }.reason)
                assertFailsWith<AcpException.Rejected> { client.authenticate("login") }
                assertEquals(emptyList(), agent.logins)

                // The agent's refusals, its code, message and detail as it gave them.
                val noKey = assertFailsWith<AcpException.AuthRequired> { client.authenticate("api-key") }
                assertEquals(ProtocolError(code = -32000, message = "Authentication required", detail = "set ACME_API_KEY"), noKey.error)
                agent.environmentKey = "sk-wrong"
                val wrong = assertFailsWith<AcpException.Protocol> { client.authenticate("api-key") }
                assertEquals(ProtocolError(code = -32001, message = "Invalid API key", detail = "ACME_API_KEY is not a key of ours"), wrong.error)
                assertFailsWith<AcpException.AuthRequired> { client.newSession(cwd) }

                agent.environmentKey = "sk-test"
                client.authenticate("api-key")
                assertEquals(listOf("api-key", "api-key", "api-key"), agent.logins)
                val session = client.newSession(cwd)
                val turn = session.prompt("hi")
                assertEquals(StopReason.END_TURN, within("the turn's end") { turn.finished() })
                val said = session.snapshot().transcript.filter { it.role == MessageRole.AGENT }.joinToString { textOf(it.content) }
                assertEquals("logged in; you said: hi", said)

                client.logout()
                assertFailsWith<AcpException.AuthRequired> { client.newSession(cwd) }
                assertFailsWith<AcpException.AuthRequired> { session.status() }
            }
        }
    }

    /** An agent that advertises a method but does not override [Agent.authenticate]. */
    private class Unchecked : Agent() {
        override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? = null
    }

    @Test
    fun `the default authenticate hook refuses`() = coTest {
        val config = agentConfig("unchecked", authMethods = listOf(apiKey), authRequired = true)
        listen(Unchecked(), "127.0.0.1:0", config).use { listening ->
            connect(listening.url).use { client ->
                val refused = assertFailsWith<AcpException.AuthRequired> { client.authenticate("api-key") }
                assertEquals(-32000L, refused.error.code)
                assertTrue("api-key" in refused.error.detail.orEmpty(), "${refused.error}")
                assertFailsWith<AcpException.AuthRequired> { client.newSession("/tmp") }
            }
        }
    }

    /** Serves `_acme/usage` (and a few that show the error paths) and hears `_acme/ping`. */
    private class UsageAgent : Agent() {
        val pings = Channel<Pair<String, JsonElement?>>(Channel.UNLIMITED)

        override suspend fun run(turn: AgentTurn, messages: List<UserInput>): TurnEnd? {
            turn.say("ok")
            return null
        }

        override suspend fun extension(method: String, params: JsonElement?): JsonElement? = when (method) {
            "_acme/usage" -> {
                val period = (params as? JsonObject)?.get("period") ?: throw refused(-32602, "Invalid params", "a period is needed")
                buildJsonObject {
                    put("method", method)
                    put("period", period)
                    putJsonArray("tokens") {
                        add(1)
                        add(2.5)
                        add(JsonNull)
                    }
                }
            }
            "_acme/broken" -> error("the usage database is down")
            "_acme/todo" -> TODO("an Error, not an Exception")
            else -> super.extension(method, params)
        }

        override suspend fun extensionNotification(method: String, params: JsonElement?) {
            pings.send(method to params)
        }
    }

    @Test
    fun `a Kotlin agent serves extension methods`() = coTest {
        val agent = UsageAgent()
        val served = listOf("_acme/usage", "_acme/ping", "_acme/broken", "_acme/todo", "_acme/unhandled")
        listen(agent, "127.0.0.1:0", agentConfig("usage", extensions = served)).use { listening ->
            connect(listening.url).use { client ->
                val answer = within("_acme/usage") { client.extRequest("_acme/usage", buildJsonObject { put("period", "day") }) }
                val expected = Json.parseToJsonElement("""{"method":"_acme/usage","period":"day","tokens":[1,2.5,null]}""")
                assertEquals(expected, answer)

                val bad = assertFailsWith<AcpException.Protocol> { within("_acme/usage without a period") { client.extRequest("_acme/usage", buildJsonObject {}) } }
                assertEquals(ProtocolError(code = -32602, message = "Invalid params", detail = "a period is needed"), bad.error)
                // Not served: the library's -32601; served but left to the default hook: the same.
                assertEquals(-32601L, assertFailsWith<AcpException.Protocol> { within("_acme/other") { client.extRequest("_acme/other") } }.error.code)
                assertEquals(-32601L, assertFailsWith<AcpException.Protocol> { within("_acme/unhandled") { client.extRequest("_acme/unhandled") } }.error.code)
                // What the hook threw that is no refusal: -32603, its text left in the agent's stderr.
                val broken = assertFailsWith<AcpException.Protocol> { within("_acme/broken") { client.extRequest("_acme/broken") } }
                assertEquals(-32603L, broken.error.code)
                assertTrue("database" !in broken.error.toString(), "${broken.error}")
                // An Error (TODO()) is answered the same, not left without an answer.
                assertEquals(-32603L, assertFailsWith<AcpException.Protocol> { within("_acme/todo") { client.extRequest("_acme/todo") } }.error.code)

                client.extNotify("_acme/unserved", buildJsonObject { put("at", 0) })   // ignored
                client.extNotify("_acme/ping", buildJsonObject { put("at", 1) })
                assertEquals("_acme/ping" to buildJsonObject { put("at", 1) }, within("the ping") { agent.pings.receive() })
                // The connection still serves sessions.
                val turn = within("a session and a prompt") { client.newSession("/tmp").prompt("hello") }
                assertEquals(StopReason.END_TURN, within("the turn's end") { turn.finished() })
                assertTrue(agent.pings.tryReceive().isFailure, "only the served notification arrives")
            }
        }
    }

    @Test
    fun `a host driving the agent core answers and refuses its host calls`() {
        val config = defaultAgentConfig().copy(auth = AuthSupport(methods = listOf(apiKey), required = true), extensions = listOf("_acme/usage"))
        AgentCore(config).use { core ->
            core.attach("c1", ConnectionRole.CONTROLLER)
            fun lines(outputs: List<Output>) = outputs.filterIsInstance<Line>().map { Json.parseToJsonElement(it.line).jsonObject }
            fun call(outputs: List<Output>): HostCallMade = outputs.filterIsInstance<HostCallMade>().single().also { assertEquals("c1", it.connection) }
            core.handleLine("c1", """{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"host","version":"1"}}}""")

            val refusedLogin = call(core.handleLine("c1", """{"jsonrpc":"2.0","id":1,"method":"auth/login","params":{"methodId":"api-key"}}"""))
            assertEquals(Authenticate("api-key"), refusedLogin.call)
            val refused = lines(core.refuseCall(refusedLogin.id, TurnFailure(-32000, "Authentication required", buildJsonObject { put("detail", "no key") }))).single()
            assertEquals(Json.parseToJsonElement("""{"code":-32000,"message":"Authentication required","data":{"detail":"no key"}}"""), refused["error"])
            // Answered already: the call is no longer open.
            assertEquals(HostError.UNKNOWN_REQUEST, assertFailsWith<AcpException.Host> { core.answerCall(refusedLogin.id) }.error)

            val login = call(core.handleLine("c1", """{"jsonrpc":"2.0","id":2,"method":"auth/login","params":{"methodId":"api-key"}}"""))
            assertEquals(Json.parseToJsonElement("""{"jsonrpc":"2.0","id":2,"result":{}}"""), lines(core.answerCall(login.id)).single())

            val usage = call(core.handleLine("c1", """{"jsonrpc":"2.0","id":3,"method":"_acme/usage","params":{"period":"day"}}"""))
            assertEquals(ExtensionRequest("_acme/usage", buildJsonObject { put("period", "day") }), usage.call)
            val result = buildJsonObject { put("tokens", 1200) }
            assertEquals(result, lines(core.answerCall(usage.id, result)).single()["result"])
            // A `null` result is JSON null.
            val nothing = call(core.handleLine("c1", """{"jsonrpc":"2.0","id":5,"method":"_acme/usage"}"""))
            assertEquals(ExtensionRequest("_acme/usage"), nothing.call)
            assertEquals(Json.parseToJsonElement("""{"jsonrpc":"2.0","id":5,"result":null}"""), lines(core.answerCall(nothing.id, null)).single())
            // Another extension is not the host's: the core answers it.
            val other = lines(core.handleLine("c1", """{"jsonrpc":"2.0","id":4,"method":"_acme/other","params":{}}""")).single()
            assertEquals(-32601, other.code())
        }
    }
}
