/**
 * The per-line receive path: [ClientCore.receiveLine] returns exactly what [ClientCore.receive]
 * returns (the line's [Event]s) in one JNA direct call with primitive arguments, instead of
 * UniFFI's `Structure`-based convention (an allocating call for the argument, a freeing call for
 * the result, and a call status, each marshalled by reflection).
 *
 * The call goes to the library's own C functions (crates/ffi/src/lines.rs) with a handle of the
 * library's own, a line port (`linePort()` of the UniFFI object, taken once per [ClientCore] and
 * released when it is collected): nothing here reads UniFFI's private state or converters. The
 * line goes in as UTF-8 in a reusable direct buffer of the calling thread; the events come back
 * in the boundary encoding (a list of `Event`, docs/encoding.md), copied into a reusable array
 * and decoded by the generated decoder (`EventCodec`, Values.kt).
 */
package dev.acpinject

import com.sun.jna.Native
import com.sun.jna.Pointer
import java.nio.ByteBuffer
import java.nio.CharBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction

/** The line-port functions of crates/ffi/src/lines.rs, bound directly (JNA direct mapping). */
internal object LineCalls {
    init {
        Native.register(LineCalls::class.java, System.getProperty("uniffi.component.acp_inject_ffi.libraryOverride") ?: "acp_inject_ffi")
    }

    const val NOT_UTF8: Long = Long.MIN_VALUE + 1
    const val PANICKED: Long = Long.MIN_VALUE

    external fun acp_inject_line_port_receive_into(port: Long, line: Long, lineLen: Long, out: Long, outCap: Long): Long

    external fun acp_inject_line_port_free(port: Long)

    external fun acp_inject_take_spilled(out: Long, outCap: Long): Long
}

/** Each [ClientCore]'s line port, released by a cleaner once the object is unreachable: the
 *  port keeps the Rust connection alive, so a line in flight never outlives it. */
internal object LinePorts {
    private val cleaner = java.lang.ref.Cleaner.create()

    fun open(core: ClientCore): Long {
        val port = core.inner.linePort().toLong()
        cleaner.register(core) { LineCalls.acp_inject_line_port_free(port) }
        return port
    }
}

/** One thread's buffers: the line's UTF-8 going in, the encoded events coming out. */
private class LineBuffers {
    private val encoder = Charsets.UTF_8.newEncoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
    var input: ByteBuffer = ByteBuffer.allocateDirect(16 shl 10)
    var inputAt = address(input)
    var output: ByteBuffer = ByteBuffer.allocateDirect(16 shl 10)
    var outputAt = address(output)
    var copy = ByteArray(16 shl 10)

    /**
     * Encodes [line] into [input]; returns its length in bytes. `String.toByteArray` is the
     * JDK's intrinsic (several times faster than a `CharsetEncoder` on the strings a pipe
     * yields) but replaces a lone surrogate with `?`; so when the bytes hold a `?` at all
     * (rare in agent lines) the line is encoded again strictly, which reports it.
     */
    fun encode(line: String): Long {
        val bytes = line.toByteArray(Charsets.UTF_8)
        if (bytes.contains(QUESTION_MARK)) return encodeStrictly(line)
        if (bytes.size > input.capacity()) grow(bytes.size)
        input.clear()
        input.put(bytes)
        return bytes.size.toLong()
    }

    private fun encodeStrictly(line: String): Long {
        if (line.length * 3L > input.capacity()) grow(line.length * 3)
        input.clear()
        encoder.reset()
        val result = encoder.encode(CharBuffer.wrap(line), input, true)
        if (result.isError) result.throwException()
        encoder.flush(input)
        return input.position().toLong()
    }

    private fun grow(size: Int) {
        input = ByteBuffer.allocateDirect(size)
        inputAt = address(input)
    }

    fun growOutput(size: Int) {
        output = ByteBuffer.allocateDirect(maxOf(size, output.capacity() * 2))
        outputAt = address(output)
    }

    /** The [n] bytes written into [output], in a reusable array. */
    fun copied(n: Int): ByteArray {
        if (n > copy.size) copy = ByteArray(maxOf(n, copy.size * 2))
        output.get(0, copy, 0, n)
        return copy
    }

    private fun address(b: ByteBuffer): Long = Pointer.nativeValue(Native.getDirectBufferPointer(b))
}

private const val QUESTION_MARK = '?'.code.toByte()

private val lineBuffers = ThreadLocal.withInitial { LineBuffers() }

internal object Lines {
    private val events = EventCodec.list

    /** [ClientCore.receiveLine]. */
    fun receive(core: ClientCore, line: String): List<Event> {
        check(!core.closed) { "ClientCore object has already been destroyed" }
        val port = core.port
        val b = lineBuffers.get()
        val len = try {
            b.encode(line)
        } catch (e: CharacterCodingException) {
            throw AcpException.InvalidInput("the line is not valid Unicode: ${e.message}")
        }
        var n = LineCalls.acp_inject_line_port_receive_into(port, b.inputAt, len, b.outputAt, b.output.capacity().toLong())
        when {
            n == LineCalls.NOT_UTF8 -> throw AcpException.InvalidInput("the line is not UTF-8")
            n == LineCalls.PANICKED -> throw AcpException.Internal("a panic while applying a line")
            n < 0 -> {
                b.growOutput((-n).toInt())
                n = LineCalls.acp_inject_take_spilled(b.outputAt, b.output.capacity().toLong())
                if (n < 0) throw AcpException.Internal("the spilled events did not fit ${b.output.capacity()} bytes")
            }
        }
        val bytes = b.copied(n.toInt())
        return try {
            events.decode(bytes, 0, n.toInt())
        } catch (e: DecodeException) {
            throw AcpException.Internal("the library's events did not decode: ${e.message}")
        }
    }
}
