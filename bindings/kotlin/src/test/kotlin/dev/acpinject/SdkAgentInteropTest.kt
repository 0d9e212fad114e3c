package dev.acpinject

import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.add
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import java.io.File
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertIs
import kotlin.test.assertNotNull
import kotlin.test.assertNull
import kotlin.test.assertTrue

/**
 * This client against an agent written with the official ACP TypeScript SDK
 * (`interop/typescript-sdk/sdk-agent.mjs`), which checks every line both ways with the SDK's own
 * schemas and writes what it found to a report. Runs in the `interop` stage of `cargo xtask
 * test`, which installs the pinned SDK and sets `ACP_INJECT_SDK_AGENT` to the script; skipped
 * without it (the `kotlin` stage).
 */
class SdkAgentInteropTest {
    @Test
    fun `a session against an agent written with the official TypeScript SDK`() = coTest {
        val script = System.getenv("ACP_INJECT_SDK_AGENT")
        assumeTrue(!script.isNullOrEmpty(), "ACP_INJECT_SDK_AGENT names the SDK agent (the interop stage sets it)")
        val report = File.createTempFile("sdk-agent-report", ".json").apply { delete() }
        connectQuietly(listOf("node", script!!, "--delay-ms", "20", "--report", report.path)).use { client ->
            assertEquals("interop-sdk-agent", client.agent.info.name)
            assertNull(client.inject, "the SDK agent offers no session/inject")
            val session = client.newSession("/tmp/project")

            // A turn with a permission request, allowed.
            val id = kotlin.test.assertNotNull(session.prompt("fix the bug").messageId)
            val asked = assertIs<PermissionRequested>(session.events().first { it is PermissionRequested })
            session.allow(asked.request, "allow")
            assertEquals(StopReason.END_TURN, session.events().first { it.turnEnded != null }.turnEnded)
            val snap = session.snapshot()
            assertEquals(listOf(id), snap.users().map { it.messageId })
            assertTrue(snap.transcript.any { it.role == MessageRole.AGENT && textOf(it.content).contains("fix the bug") })
            assertTrue(snap.violations.isEmpty(), "${snap.violations}")

            // A turn cancelled mid-way.
            session.prompt("then the docs")
            session.events().first { it is AgentMessageChunk }
            session.cancel()
            assertEquals(StopReason.CANCELLED, session.events().first { it.turnEnded != null }.turnEnded)

            val open = session.status()
            assertEquals(SessionStatus.OPEN, open.status)
            assertIs<IdleStateUpdate>(open.state)
            client.sessions().first { it.sessionId == session.id }
            session.close()
        }
        val text = cleanReport(report)
        assertTrue(Regex("\"lines\":\\s*[1-9]").containsMatchIn(text), "no lines checked: $text")
    }

    /**
     * This client over the network, WebSocket and Streamable HTTP, against the same SDK agent
     * served by the SDK's own `AcpServer` (`sdk-agent.mjs --listen`): the interop stage starts
     * it, sets `ACP_INJECT_SDK_REMOTE_URL` to its endpoint and checks its report afterwards.
     */
    @Test
    fun `a session over the network against the official TypeScript SDK's server`() = coTest {
        val url = System.getenv("ACP_INJECT_SDK_REMOTE_URL")
        assumeTrue(!url.isNullOrEmpty(), "ACP_INJECT_SDK_REMOTE_URL is the SDK server's endpoint (the interop stage sets it)")
        for (endpoint in listOf(url!!.replaceFirst("http", "ws"), url)) {
            connect(endpoint, name = "kotlin-tests").use { client ->
                assertEquals("interop-sdk-agent", client.agent.info.name, endpoint)
                val session = client.newSession("/tmp/project")
                val id = kotlin.test.assertNotNull(session.prompt("fix the bug").messageId)
                val asked = assertIs<PermissionRequested>(session.events().first { it is PermissionRequested })
                session.allow(asked.request, "allow")
                assertEquals(StopReason.END_TURN, session.events().first { it.turnEnded != null }.turnEnded, endpoint)
                val snap = session.snapshot()
                assertEquals(listOf(id), snap.users().map { it.messageId })
                assertTrue(snap.violations.isEmpty(), "${snap.violations}")
                assertEquals(SessionStatus.OPEN, session.status().status)
                session.close()
            }
        }
    }

    /**
     * This client against an ACP v1 agent written with an official SDK's v1 API
     * (`interop/typescript-sdk/sdk-v1-agent.mjs`, `interop/python-sdk/sdk_v1_agent.py`): the
     * session API is the same, and the queue is held by this client (C-HELD-1): queue, revoke
     * and replace during a turn, each held message sent as the next prompt when a turn ends.
     * `ACP_INJECT_SDK_V1_AGENT` is the agent's command, one argument per line (the interop stage
     * sets it once per SDK).
     */
    @Test
    fun `a v1 session with a queue held by this client against an agent written with an official SDK`() = coTest {
        val command = System.getenv("ACP_INJECT_SDK_V1_AGENT")
        assumeTrue(!command.isNullOrEmpty(), "ACP_INJECT_SDK_V1_AGENT names the SDK v1 agent (the interop stage sets it)")
        val report = File.createTempFile("sdk-v1-agent-report", ".json").apply { delete() }
        val argv = command!!.split("\n") + listOf("--delay-ms", "20", "--report", report.path)
        connectQuietly(argv).use { client ->
            assertEquals(1, client.agent.protocolVersion, "the agent speaks ACP v1")
            assertNull(client.inject, "a v1 agent takes no session/inject")
            val session = client.newSession("/tmp/project")
            val allowing = launch {
                session.events().collect { if (it is PermissionRequested) session.allow(it.request, "allow") }
            }
            session.prompt("fix the bug")
            until("the turn to run") { session.snapshot().state == TurnState.RUNNING }
            val later = session.inject("then the docs")
            val gone = session.inject("revoke me")
            session.revoke(gone)
            val draft = session.inject("draft")
            session.replace(draft, "final text")
            val steer = assertFailsWith<AcpException.Rejected> { session.inject("now", InjectMode.STEER) }
            assertEquals(CallRejected.STEER_NOT_SUPPORTED, steer.reason)
            val held = session.snapshot().pending
            assertEquals(listOf(later, draft), held.map { it.messageId })
            assertTrue(held.all { it.held }, "$held")
            val wanted = listOf("fix the bug", "then the docs", "final text")
            until("the held messages to go out, one per turn") {
                val snap = session.snapshot()
                snap.users().map { textOf(it.content) } == wanted && snap.state == TurnState.IDLE && snap.pending.isEmpty()
            }
            assertEquals(StopReason.END_TURN, session.snapshot().stopReason)
            assertTrue(session.snapshot().violations.isEmpty())
            allowing.cancel()
        }
        val text = cleanReport(report)
        val prompts = Regex("\"promptTexts\":\\s*\\[([^]]*)]").find(text)?.groupValues?.get(1)?.replace(Regex("\\s"), "")
        assertEquals("\"fixthebug\",\"thenthedocs\",\"finaltext\"", prompts, "the agent's prompts, in order: $text")
    }

    /**
     * The same SDK agent with `--require-auth`: it advertises one auth method (`api-key`, type
     * `agent`), refuses every session method -32000 until `auth/login` succeeded, then notifies
     * `_interop/auth_status`, and serves the extension request `_interop/echo`. The Kotlin port
     * of `bindings/python/tests/test_sdk_interop.py`.
     */
    @Test
    fun `authenticates then opens a session and reaches the agent's extensions`() = coTest {
        val script = System.getenv("ACP_INJECT_SDK_AGENT")
        assumeTrue(!script.isNullOrEmpty(), "ACP_INJECT_SDK_AGENT names the SDK agent (the interop stage sets it)")
        val cwd = System.getProperty("java.io.tmpdir")
        connectQuietly(listOf("node", script!!, "--require-auth", "--delay-ms", "5")).use { client ->
            val method = assertIs<AuthMethodAgent>(client.agent.authMethods.orEmpty().single())
            assertEquals("api-key", method.methodId)

            // Before authenticating: the agent's -32000, as its own class.
            val refused = assertFailsWith<AcpException.AuthRequired> { client.newSession(cwd) }
            assertEquals(-32000L, refused.error.code)
            assertTrue("Authentication required" in refused.error.message, refused.error.message)
            // A method the agent does not advertise is refused without sending.
            val unknown = assertFailsWith<AcpException.Rejected> { client.authenticate("password") }
            assertEquals(CallRejected.INVALID_ARGUMENTS, unknown.reason)

            client.authenticate("api-key")
            val notification = within("the notification") { client.notifications().first() }
            assertEquals(
                Notification(method = "_interop/auth_status", params = buildJsonObject { put("state", "authenticated") }),
                notification,
            )
            val session = client.newSession(cwd)
            val turn = session.prompt("hello")
            assertNotNull(turn.messageId)
            // The turn waits on its permission request, left open until the cancel below.
            val asked = within("the turn's permission request") { session.events().first { it is PermissionRequested } }

            // An extension request and its JSON result; a method that is not an extension's is
            // refused locally; one the agent does not serve is its -32601.
            val params = buildJsonObject {
                putJsonArray("list") {
                    add(1)
                    add(2.5)
                    add(JsonNull)
                    add("x")
                }
            }
            assertEquals(buildJsonObject { put("echo", params) }, client.extRequest("_interop/echo", params))
            assertFailsWith<AcpException.Rejected> { client.extRequest("session/new", buildJsonObject {}) }
            val missing = assertFailsWith<AcpException.Protocol> { client.extRequest("_interop/missing") }
            assertEquals(-32601L, missing.error.code)
            client.extNotify("_interop/ping", buildJsonObject { put("at", 1) })

            // Upstream: after `session/cancel` the client MUST answer its pending permission
            // requests `cancelled`. This client does not do it by itself (nor does it act on the
            // agent's `$/cancel_request` for the request, which arrives as a Notification), and
            // this agent's turn waits for the answer: the app answers.
            session.cancel()
            try {
                session.answerPermission(assertIs<PermissionRequested>(asked).request, CancelledPermissionOutcome())
            } catch (e: AcpException) {
                // Answered already.
            }
            assertEquals(StopReason.CANCELLED, within("the cancelled turn's end") { turn.finished() })
            client.logout()
            // Logged out: the agent refuses session methods again.
            assertFailsWith<AcpException.AuthRequired> { client.newSession(cwd) }
        }
    }
}

/** The agent's report, which it writes when its input ends (just after the connection closes),
 *  read and deleted; it must list no problems. */
private fun cleanReport(report: File): String {
    val deadline = System.nanoTime() + 10_000_000_000L
    while (!report.exists() && System.nanoTime() < deadline) Thread.sleep(20)
    val text = report.readText()
    report.delete()
    assertTrue(Regex("\"problems\":\\s*\\[\\s*]").containsMatchIn(text), "the agent found problems: $text")
    return text
}
