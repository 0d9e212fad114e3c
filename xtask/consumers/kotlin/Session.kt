// A small real session against the reference agent, through the distributed jar only
// (dev.acpinject:acp-inject from dist/maven; JNA loads the library bundled in the jar).
//
//   java -classpath … SessionKt PATH/TO/acp-inject-agent
//
// Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
// queued message opened has answered and ended (the mirror idle, nothing pending).
// Exits 1 (with the reason) when anything is off.
import dev.acpinject.*
import kotlinx.serialization.json.*
import kotlin.system.exitProcess

val expected = listOf("Fix the failing login test", "Use the auth_v2 module", "Then update the changelog")

fun fail(why: String): Nothing {
    System.err.println("session failed: $why")
    exitProcess(1)
}

fun main(args: Array<String>) {
    val agent = ProcessBuilder(args[0], "--delay-ms", "20", "--tools", "2")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start()
    val toAgent = agent.outputStream.bufferedWriter()
    val fromAgent = agent.inputStream.bufferedReader()
    fun send(line: String) = toAgent.run { write(line + "\n"); flush() }
    fun call(id: Int, method: String, params: JsonObject): JsonObject {
        send(buildJsonObject { put("jsonrpc", "2.0"); put("id", id); put("method", method); put("params", params) }.toString())
        while (true) {
            val message = Json.parseToJsonElement(fromAgent.readLine() ?: fail("the agent exited before answering $method")).jsonObject
            if (message["id"]?.jsonPrimitive?.intOrNull == id) return message["result"]!!.jsonObject
        }
    }

    val initialize = call(1, "initialize", buildJsonObject {
        put("protocolVersion", 2)
        putJsonObject("info") { put("name", "consumer"); put("version", "1") }
    })
    val sessionId = call(2, "session/new", buildJsonObject { put("cwd", "/tmp") })["sessionId"]!!.jsonPrimitive.content
    ClientSession.fromInitializeResult(sessionId, initialize.toString()).use { session ->
        send(session.prompt(listOf(text(expected[0]))))
        var sentMore = false
        var snap = session.snapshot()
        var users = listOf<String>()
        while (true) {
            val line = fromAgent.readLine() ?: break
            session.receive(line) // throws AcpException.Protocol on an error answer
            snap = session.snapshot()
            if (!sentMore && snap.state == TurnState.RUNNING) {
                send(session.inject(InjectMode.STEER, listOf(text(expected[1]))))
                send(session.inject(InjectMode.QUEUE, listOf(text(expected[2]))))
                sentMore = true
            }
            users = snap.transcript.filter { it.role == TranscriptRole.USER }.map { (it.content.first() as ContentBlock.Text).text }
            // Done once the turn the queued message opened has answered and ended.
            val answered = snap.transcript.lastOrNull()?.role == TranscriptRole.AGENT
            if (sentMore && snap.state == TurnState.IDLE && snap.pending.isEmpty() && users.size == expected.size && answered) break
        }
        toAgent.close()
        val code = agent.waitFor()
        val problems = buildList {
            if (users != expected) add("user messages $users, expected $expected")
            if (snap.violations.isNotEmpty()) add("violations ${snap.violations}")
            if (code != 0) add("the agent exited with $code")
        }
        if (problems.isNotEmpty()) fail(problems.joined())
        println("session ok: ${snap.transcript.size} transcript entries, user messages in order, agent exit 0")
    }
}

fun List<String>.joined() = joinToString("; ")
