// A small real session against the reference agent, through the distributed jar only
// (dev.acpinject:acp-inject from dist/maven; JNA loads the library bundled in the jar).
//
//   java -classpath … SessionKt PATH/TO/acp-inject-agent
//
// Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
// queued message opened has ended (the mirror idle, nothing pending). Exits 1 (with the
// reason) when anything is off.
import dev.acpinject.*
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlin.system.exitProcess

val expected = listOf("Fix the failing login test", "Use the auth_v2 module", "Then update the changelog")

fun fail(why: String): Nothing {
    System.err.println("session failed: $why")
    exitProcess(1)
}

fun MirrorSnapshot.users(): List<String> = transcript.filter { it.role == MessageRole.USER }.map { textOf(it.content) }

/** Takes the session's events until [done] holds for its snapshot. */
suspend fun ClientSession.until(done: (MirrorSnapshot) -> Boolean): MirrorSnapshot {
    while (!done(snapshot())) {
        if (nextEvents().isEmpty()) fail("the connection ended")
    }
    return snapshot()
}

fun main(args: Array<String>) = runBlocking {
    val snap = try {
        withTimeout(60_000) {
            connect(listOf(args[0], "--delay-ms", "20", "--tools", "2"), name = "consumer").use { agent ->
                val session = agent.newSession("/tmp")
                session.prompt(expected[0])
                session.until { it.state == TurnState.RUNNING }
                session.inject(expected[1], InjectMode.STEER)
                session.inject(expected[2], InjectMode.QUEUE)
                val snap = session.until { it.state == TurnState.IDLE && it.pending.isEmpty() && it.users().size == expected.size }
                session.close()
                snap
            }
        }
    } catch (e: Exception) {
        fail("$e")
    }
    val problems = buildList {
        if (snap.users() != expected) add("user messages ${snap.users()}, expected $expected")
        if (snap.violations.isNotEmpty()) add("violations ${snap.violations}")
    }
    if (problems.isNotEmpty()) fail(problems.joinToString("; "))
    println("session ok: ${snap.transcript.size} transcript entries, user messages in order")
}
