/**
 * Content blocks: building them from text and reading their text back.
 */
package dev.acpinject

/** A text content block. */
fun text(value: String): ContentBlock = ContentBlock.Text(TextContent(value))

/** One text block per string, in order. */
fun texts(vararg values: String): List<ContentBlock> = values.map(::text)

/** The text of the text blocks, joined (other blocks are skipped). */
fun textOf(content: Iterable<ContentBlock>): String =
    content.joinToString("") { (it as? ContentBlock.Text)?.v1?.text ?: "" }

/** The text of this block, or `""` for a block that is not text. */
val ContentBlock.text: String get() = (this as? ContentBlock.Text)?.v1?.text ?: ""
