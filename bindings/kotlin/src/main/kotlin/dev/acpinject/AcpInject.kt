/**
 * The idiomatic Kotlin layer over the generated binding (`generated/kotlin/dev/acpinject/acp_inject_ffi.kt`,
 * written by `cargo xtask codegen`). No protocol logic lives here: [AgentCore] and
 * [ClientSession] run the Rust state machine, and every helper below is a few lines of
 * plumbing that keeps callers on the coarse side of the boundary (a crossing costs
 * microseconds; batch where latency allows).
 *
 * Both objects are [AutoCloseable], so `AgentCore(defaultAgentOptions()).use { … }` frees the
 * Rust state deterministically; errors are [AcpException] subclasses (`InvalidInput`,
 * `Protocol`, `Rejected`, `Host`, `Internal`); both objects may be shared between threads.
 */
package dev.acpinject

/** A text content block. */
fun text(value: String): ContentBlock = ContentBlock.Text(value)

/** The JSON-RPC lines among these outputs that go to [connection]: its responses and every
 *  notification (a notification has `to == null` and goes to every attached connection). */
fun Iterable<AgentOutput>.linesFor(connection: String): List<String> =
    filterIsInstance<AgentOutput.Line>().filter { it.to == null || it.to == connection }.map { it.line }

/** The runtime actions among these outputs, in order; only those of [session] when given. */
fun Iterable<AgentOutput>.actions(session: String? = null): List<RuntimeAction> =
    filterIsInstance<AgentOutput.Action>().filter { session == null || it.session == session }.map { it.action }

/** Applies [lines] from [connection] as they are pulled and yields every output, in order
 *  (one crossing per line: use it for live input; for a buffer, [AgentCore.handleText]). */
fun AgentCore.handleLines(connection: String, lines: Sequence<String>): Sequence<AgentOutput> =
    lines.flatMap { handleLine(connection, it) }

/** Feeds a stream of agent lines to the mirror, [batchSize] lines per crossing; returns the
 *  error answers met (as [receive] would have raised them), in order. */
fun ClientSession.receiveAll(lines: Sequence<String>, batchSize: Int = 4096): List<ProtocolError> {
    require(batchSize > 0) { "batchSize must be positive" }
    return lines.chunked(batchSize).flatMap { receiveLines(it) }.toList()
}

/** The error answer as the exception [ClientSession.receive] raises for it. */
fun ProtocolError.toException(): AcpException.Protocol = AcpException.Protocol(code, message, reason, messageId)
