/**
 * Content blocks and a session's activity: building blocks from text, reading their text back,
 * and shortcuts into the flat activity classes.
 */
package dev.acpinject

/** A text content block. */
fun text(value: String): ContentBlock = TextContent(value)

/** One text block per string, in order. */
fun texts(vararg values: String): List<ContentBlock> = values.map(::text)

/** The text of the text blocks, joined (other blocks are skipped). */
fun textOf(content: Iterable<ContentBlock>): String = content.joinToString("") { (it as? TextContent)?.text ?: "" }

/** The text of this block, or `""` for a block that is not text. */
val ContentBlock.text: String get() = (this as? TextContent)?.text ?: ""

/** The session update this activity is, if it is one. */
val SessionActivity.update: SessionUpdate? get() = this as? SessionUpdate

/** One of this client's own messages (a prompt or an inject) changing status, if this activity is that. */
val SessionActivity.item: PendingItem? get() = this as? PendingItem

/** How the turn ended, when this activity is the `idle` state update that ends one with a
 *  stop reason. */
val SessionActivity.turnEnded: StopReason? get() = (this as? IdleStateUpdate)?.stopReason
