/**
 * The per-line receive path: [ClientCore.receiveLine] returns exactly what
 * [ClientCore.receive] returns (the line's typed [Event]s) in one JNA call with primitive
 * arguments, instead of UniFFI's `Structure`-based convention (an allocating call for the
 * argument, a freeing call for the result, and a call status, each marshalled by reflection).
 * The line goes in as UTF-8 in a reusable direct buffer of the calling thread; the events come
 * back in UniFFI's own serialization, read by the generated converter.
 */
package dev.acpinject

import com.sun.jna.Native
import com.sun.jna.Pointer
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.nio.CharBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import java.util.concurrent.atomic.AtomicLong

/** The two functions of crates/ffi/src/lines.rs. */
internal object LineCalls {
    init {
        Native.register(LineCalls::class.java, System.getProperty("uniffi.component.acp_inject_ffi.libraryOverride") ?: "acp_inject_ffi")
    }

    const val NOT_UTF8: Long = Long.MIN_VALUE + 1
    const val PANICKED: Long = Long.MIN_VALUE

    external fun acp_inject_client_core_receive_into(handle: Long, line: Long, lineLen: Long, out: Long, outCap: Long): Long
    external fun acp_inject_take_spilled(out: Long, outCap: Long): Long
}

/** One thread's buffers: the line's UTF-8 going in, the serialized events coming out. */
private class LineBuffers {
    private val encoder = Charsets.UTF_8.newEncoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
    var input: ByteBuffer = ByteBuffer.allocateDirect(16 shl 10)
    var inputAt = address(input)
    var output: ByteBuffer = ByteBuffer.allocateDirect(16 shl 10)
    var outputAt = address(output)

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

    private fun address(b: ByteBuffer): Long = Pointer.nativeValue(Native.getDirectBufferPointer(b))
}

private const val QUESTION_MARK = '?'.code.toByte()

private val lineBuffers = ThreadLocal.withInitial { LineBuffers() }

/**
 * The generated object's own handle, call counter and cleaner (not public in the generated
 * class), read by reflection once per class. The generated `callWithHandle` hands its block a
 * *clone* of the handle, made by a UniFFI call of its own (the costliest part of a crossing)
 * and owned by the callee; `acp_inject_client_core_receive_into` only borrows the handle, so
 * [borrowHandle] keeps the object alive the way `callWithHandle` does (the same counter) and
 * passes the handle itself. `null` when the generated class does not have these fields (a
 * different UniFFI version): [receiveLine] then takes UniFFI's own call.
 */
internal object CoreFields {
    private fun field(name: String) = runCatching {
        ClientCore::class.java.getDeclaredField(name).apply { isAccessible = true }
    }.getOrNull()

    val handle = field("handle")
    val callCounter = field("callCounter")
    val cleanable = field("cleanable")
    val available = handle != null && callCounter != null && cleanable != null
}

/** Runs [block] with this object's handle, the object kept alive meanwhile (see [CoreFields]). */
private inline fun <R> ClientCore.borrowHandle(block: (Long) -> R): R {
    val counter = CoreFields.callCounter!!.get(this) as AtomicLong
    do {
        val c = counter.get()
        check(c != 0L) { "ClientCore object has already been destroyed" }
        check(c != Long.MAX_VALUE) { "ClientCore call counter would overflow" }
    } while (!counter.compareAndSet(c, c + 1L))
    try {
        return block(CoreFields.handle!!.getLong(this))
    } finally {
        // The object was closed meanwhile: this call was its last user, so it frees it.
        if (counter.decrementAndGet() == 0L) (CoreFields.cleanable!!.get(this) as UniffiCleaner.Cleanable?)?.clean()
    }
}

/**
 * Applies one line from the agent and returns the events it caused: the same result as
 * [ClientCore.receive], at a fraction of its crossing cost (see this file's header). For a
 * client that reads the agent's output line by line and acts on each line at once.
 */
fun ClientCore.receiveLine(line: String): List<Event> {
    if (!CoreFields.available) return receive(line)
    val b = lineBuffers.get()
    val len = try {
        b.encode(line)
    } catch (e: CharacterCodingException) {
        throw AcpException.InvalidInput("the line is not valid Unicode: ${e.message}")
    }
    var n = borrowHandle { LineCalls.acp_inject_client_core_receive_into(it, b.inputAt, len, b.outputAt, b.output.capacity().toLong()) }
    when {
        n == LineCalls.NOT_UTF8 -> throw AcpException.InvalidInput("the line is not UTF-8")
        n == LineCalls.PANICKED -> throw AcpException.Internal("a panic while applying a line")
        n < 0 -> {
            b.growOutput((-n).toInt())
            n = LineCalls.acp_inject_take_spilled(b.outputAt, b.output.capacity().toLong())
            if (n < 0) throw AcpException.Internal("the spilled events did not fit ${b.output.capacity()} bytes")
        }
    }
    val out = b.output.duplicate().order(ByteOrder.BIG_ENDIAN)
    out.position(0).limit(n.toInt())
    return FfiConverterSequenceTypeEvent.read(out)
}
