/**
 * The boundary encoding's runtime (docs/encoding.md): every value crossing between this package
 * and the Rust library is MessagePack, a class as a map of its fields by their snake_case names,
 * a union's value as its class's map with the class name first under `"$"`. The generated
 * codecs of `Values.kt` (one object per type, from the value model, codegen/src/values/kotlin.rs)
 * read and write through [ValueReader] and [ValueWriter], which wrap msgpack-core (MessagePack's
 * Java implementation, `org.msgpack:msgpack-core`) for the primitives and add what the encoding
 * needs on top: the class tag, typed errors naming where, range checks, JSON values as
 * kotlinx.serialization's [JsonElement], request ids.
 *
 * [Values.encode] and [Values.decode] are the public entry points, by type:
 *
 * ```kotlin
 * val bytes = Values.encode(Usage(totalTokens = 150))
 * val usage: Usage = Values.decode(bytes)
 * val events = Values.decode<List<Event>>(eventBytes)
 * ```
 */
package dev.acpinject

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.msgpack.core.MessageBufferPacker
import org.msgpack.core.MessageFormat
import org.msgpack.core.MessagePack
import org.msgpack.core.MessageUnpacker
import org.msgpack.core.buffer.ArrayBufferInput
import org.msgpack.value.ValueType
import java.math.BigInteger
import kotlin.reflect.KClass
import kotlin.reflect.KType
import kotlin.reflect.typeOf

/**
 * A field that tells three things apart (ACP's patch semantics): [Absent] leaves what the other
 * side has, [Null] clears it, [Value] sets it. The encoding leaves an absent field out and
 * writes `nil` for [Null].
 */
public sealed interface Patch<out T> {
    /** Leave it as it is (the field is left out). */
    public data object Absent : Patch<Nothing>

    /** Clear it. */
    public data object Null : Patch<Nothing>

    /** Set it to [value]. */
    public data class Value<out T>(public val value: T) : Patch<T>

    public companion object {
        /** [Null] for `null`, else [Value]: a patch that sets or clears. */
        public fun <T : Any> of(value: T?): Patch<T> = if (value == null) Null else Value(value)
    }
}

/** The value a patch sets, `null` when it clears or leaves the field. */
public val <T> Patch<T>.valueOrNull: T? get() = (this as? Patch.Value<T>)?.value

/** A JSON-RPC request id: an integer, a string, or null (as the wire has it). */
public sealed interface RequestId {
    /** An integer id. */
    public data class Number(public val value: Long) : RequestId {
        override fun toString(): String = value.toString()
    }

    /** A string id. */
    public data class Text(public val value: String) : RequestId {
        override fun toString(): String = "\"$value\""
    }

    /** The null id (a request that cannot be answered by id). */
    public data object Null : RequestId

    public companion object {
        /** The id [value]. */
        public fun of(value: Long): RequestId = Number(value)

        /** The id [value]. */
        public fun of(value: String): RequestId = Text(value)
    }
}

/**
 * Bytes that are not the encoding of the value asked for: [detail] says what was wrong and
 * [path] where (fields and list indexes, outermost first), as in
 * `AgentMessageChunk.content.text: expected a string, found an integer`.
 */
public class DecodeException internal constructor(
    /** What was wrong. */
    public val detail: String,
    /** Where: the fields and items leading to it, outermost first. */
    public val path: List<String> = emptyList(),
) : IllegalArgumentException(if (path.isEmpty()) detail else "${path.joinToString(".")}: $detail") {
    /** The same error one level further out, inside field (or item) [at]. */
    internal fun at(at: String): DecodeException = DecodeException(detail, listOf(at) + path)

    internal companion object {
        fun missing(cls: String, field: String) = DecodeException("$cls needs `$field`")
        fun unknownField(cls: String, field: String) = DecodeException("$cls has no field `$field`")
        fun unknownClass(union: String, cls: String) = DecodeException("`$cls` is not a kind of $union")
        fun unknownValue(enum: String, value: String) = DecodeException("\"$value\" is not a value of $enum")
    }
}

/**
 * How values of one type are read from and written to the boundary encoding. The generated
 * `Values.kt` has one per type of the model; [Values.codec] finds them by type, and [list] and
 * [optional] build those of lists and optional values.
 */
public abstract class ValueCodec<T> internal constructor() {
    internal abstract fun read(r: ValueReader): T

    internal abstract fun write(w: ValueWriter, value: T)

    /** The value [bytes] encode, all of them; [DecodeException] when they encode none. */
    public fun decode(bytes: ByteArray): T = decode(bytes, 0, bytes.size)

    /** The value [len] bytes of [bytes] from [offset] encode. */
    public fun decode(bytes: ByteArray, offset: Int, len: Int): T = ValueReader.reading(bytes, offset, len) { r ->
        val value = read(r)
        r.finish()
        value
    }

    /** [value], encoded. */
    public fun encode(value: T): ByteArray {
        val w = ValueWriter(MessagePack.newDefaultBufferPacker())
        write(w, value)
        return w.bytes()
    }

    /** The codec of a list of these values. */
    public val list: ValueCodec<List<T>> by lazy { ListCodec(this) }

    /** The codec of an optional value (`nil` when absent). */
    public val optional: ValueCodec<T?> by lazy { OptionalCodec(this) }
}

private class ListCodec<T>(private val item: ValueCodec<T>) : ValueCodec<List<T>>() {
    override fun read(r: ValueReader): List<T> = r.list { item.read(r) }
    override fun write(w: ValueWriter, value: List<T>) = w.list(value) { item.write(w, it) }
}

private class OptionalCodec<T>(private val item: ValueCodec<T>) : ValueCodec<T?>() {
    override fun read(r: ValueReader): T? = if (r.takeNil()) null else item.read(r)
    override fun write(w: ValueWriter, value: T?) = if (value == null) w.nil() else item.write(w, value)
}

private class ScalarCodec<T>(private val reader: (ValueReader) -> T, private val writer: (ValueWriter, T) -> Unit) : ValueCodec<T>() {
    override fun read(r: ValueReader): T = reader(r)
    override fun write(w: ValueWriter, value: T) = writer(w, value)
}

/** The codec of request ids. */
internal val RequestIdCodec: ValueCodec<RequestId> = ScalarCodec(ValueReader::requestId, ValueWriter::requestId)

/** The codecs of the scalar types a value may hold (the model's own are in `Values.kt`). */
private val SCALAR_CODECS: Map<KClass<*>, ValueCodec<*>> = mapOf(
    Boolean::class to ScalarCodec(ValueReader::bool, ValueWriter::bool),
    Long::class to ScalarCodec(ValueReader::i64, ValueWriter::long),
    Int::class to ScalarCodec(ValueReader::i32, ValueWriter::int),
    Double::class to ScalarCodec(ValueReader::double, ValueWriter::double),
    String::class to ScalarCodec(ValueReader::string, ValueWriter::string),
    JsonElement::class to ScalarCodec(ValueReader::json, ValueWriter::json),
    JsonObject::class to ScalarCodec(ValueReader::jsonObject, ValueWriter::json),
    RequestId::class to RequestIdCodec,
)

/**
 * The boundary encoding of any value of the model, by type: `Values.encode(usage)`,
 * `Values.decode<List<Event>>(bytes)`. A type is a class, union or enum of the model, a scalar
 * (`String`, `Long`, `Int`, `Double`, `Boolean`, [JsonElement], [JsonObject], [RequestId]), a
 * `List` of one, or a nullable one (`null` is `nil`).
 */
public object Values {
    private val cache = java.util.concurrent.ConcurrentHashMap<KType, ValueCodec<*>>()

    /** [value] (of type [T]), encoded. */
    public inline fun <reified T> encode(value: T): ByteArray = codec<T>().encode(value)

    /** The value of type [T] that [bytes] encode; [DecodeException] when they do not. */
    public inline fun <reified T> decode(bytes: ByteArray): T = codec<T>().decode(bytes)

    /** The codec of [T]. */
    public inline fun <reified T> codec(): ValueCodec<T> {
        @Suppress("UNCHECKED_CAST")
        return codec(typeOf<T>()) as ValueCodec<T>
    }

    /** The codec of [type]; [IllegalArgumentException] for a type that is not a value of the model. */
    public fun codec(type: KType): ValueCodec<*> = cache.getOrPut(type) {
        val base: ValueCodec<*> = when (val classifier = type.classifier) {
            List::class -> {
                val item = type.arguments.singleOrNull()?.type ?: throw IllegalArgumentException("$type: a list of what?")
                codec(item).list
            }
            is KClass<*> -> VALUE_CODECS[classifier] ?: SCALAR_CODECS[classifier]
                ?: throw IllegalArgumentException("$type is not a value of the model")
            else -> throw IllegalArgumentException("$type is not a value of the model")
        }
        if (type.isMarkedNullable) base.optional else base
    }
}

/** What a MessagePack value is, for the errors. */
private fun describe(type: ValueType): String = when (type) {
    ValueType.NIL -> "null"
    ValueType.BOOLEAN -> "a boolean"
    ValueType.INTEGER -> "an integer"
    ValueType.FLOAT -> "a number"
    ValueType.STRING -> "a string"
    ValueType.BINARY -> "bytes"
    ValueType.ARRAY -> "a list"
    ValueType.MAP -> "a map"
    ValueType.EXTENSION -> "an extension value"
}

/** The longest key [ValueReader.key] keeps decoded (the model's names are far shorter). */
private const val KEY_MAX = 64

/**
 * Decoded keys by their UTF-8 bytes: a direct-mapped table of [SLOTS] entries, each the bytes and
 * the string (a colliding key replaces the one in its slot; it is only decoded again).
 */
private class KeyCache {
    private val bytes = arrayOfNulls<ByteArray>(SLOTS)
    private val strings = arrayOfNulls<String>(SLOTS)

    /** The string of the first [len] bytes of [b]. */
    fun get(b: ByteArray, len: Int): String {
        var h = len
        for (i in 0 until len) h = 31 * h + b[i]
        val slot = (h xor (h ushr 16)) and (SLOTS - 1)
        val known = bytes[slot]
        if (known != null && known.size == len && java.util.Arrays.equals(known, 0, len, b, 0, len)) return strings[slot]!!
        val s = String(b, 0, len, Charsets.UTF_8)
        bytes[slot] = b.copyOf(len)
        strings[slot] = s
        return s
    }

    private companion object {
        const val SLOTS = 512
    }
}

/** How deep JSON values may nest (as deep as the Rust side reads them). */
private const val MAX_DEPTH = 128

private val LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE)

/**
 * Reads the encoding: msgpack-core's unpacker, with the checks the generated codecs rely on.
 * One per thread is reused ([reading]): decoding calls back into nothing, so it never nests.
 */
internal class ValueReader private constructor() {
    private val input = ArrayBufferInput(ByteArray(0))
    private val u: MessageUnpacker = MessagePack.newDefaultUnpacker(input)
    private var busy = false

    private fun format(): MessageFormat = try {
        u.nextFormat
    } catch (e: Exception) {
        throw DecodeException("the value ends early")
    }

    private fun expected(what: String): DecodeException = DecodeException("expected $what, found ${describe(format().valueType)}")

    fun mapHeader(): Int {
        if (format().valueType != ValueType.MAP) throw expected("a map")
        return u.unpackMapHeader()
    }

    fun arrayHeader(): Int {
        if (format().valueType != ValueType.ARRAY) throw expected("a list")
        return u.unpackArrayHeader()
    }

    fun string(): String {
        if (format().valueType != ValueType.STRING) throw expected("a string")
        return u.unpackString()
    }

    /**
     * A map's key, or a class tag: the same few names (the model's fields and classes) over and
     * over, so each is decoded into a `String` once per reader and found again by its bytes
     * ([keys]). The same string `unpackString` would give (msgpack-core's default replaces
     * malformed UTF-8, and so does `String(bytes, UTF_8)`).
     */
    fun key(): String {
        if (format().valueType != ValueType.STRING) throw expected("a string")
        val len = u.unpackRawStringHeader()
        if (len > KEY_MAX) return String(u.readPayload(len), Charsets.UTF_8)
        u.readPayload(keyBytes, 0, len)
        return keys.get(keyBytes, len)
    }

    private val keyBytes = ByteArray(KEY_MAX)
    private val keys = KeyCache()

    /** The class tag, the first pair of a union's map of [n] pairs. */
    fun tag(n: Int): String {
        if (n < 1 || field("$") { key() } != "$") throw DecodeException("a union's value names its class first, under \"$\"")
        return field("$") { key() }
    }

    /** The class tag, which must be [cls]. */
    fun expectTag(n: Int, cls: String) {
        val tag = tag(n)
        if (tag != cls) throw DecodeException("expected a $cls, found a $tag")
    }

    /** Reads a `nil` when one is next. */
    fun takeNil(): Boolean = format() == MessageFormat.NIL && u.tryUnpackNil()

    fun bool(): Boolean {
        if (format().valueType != ValueType.BOOLEAN) throw expected("a boolean")
        return u.unpackBoolean()
    }

    private fun integer(what: String, min: Long, max: Long): Long {
        val f = format()
        if (f.valueType != ValueType.INTEGER) throw expected(what)
        val v = if (f == MessageFormat.UINT64) {
            val big = u.unpackBigInteger()
            if (big > LONG_MAX) throw DecodeException("expected $what, found one out of range")
            big.toLong()
        } else {
            u.unpackLong()
        }
        if (v < min || v > max) throw DecodeException("expected $what, found one out of range")
        return v
    }

    fun u64(): Long = integer("an integer (u64)", 0, Long.MAX_VALUE)
    fun i64(): Long = integer("an integer (i64)", Long.MIN_VALUE, Long.MAX_VALUE)
    fun u32(): Int = integer("an integer (u32)", 0, Int.MAX_VALUE.toLong()).toInt()
    fun u16(): Int = integer("an integer (u16)", 0, 65535).toInt()
    fun i32(): Int = integer("an integer (i32)", Int.MIN_VALUE.toLong(), Int.MAX_VALUE.toLong()).toInt()
    fun nonZero(): Int = integer("a count (at least 1)", 1, Int.MAX_VALUE.toLong()).toInt()

    /** A number (an integer is taken as its value). */
    fun double(): Double {
        val f = format()
        return when (f.valueType) {
            ValueType.FLOAT -> u.unpackDouble()
            ValueType.INTEGER -> if (f == MessageFormat.UINT64) u.unpackBigInteger().toDouble() else u.unpackLong().toDouble()
            else -> throw expected("a number")
        }
    }

    fun requestId(): RequestId {
        val f = format()
        return when (f.valueType) {
            ValueType.NIL -> {
                u.unpackNil()
                RequestId.Null
            }
            ValueType.STRING -> RequestId.Text(u.unpackString())
            ValueType.INTEGER -> RequestId.Number(i64())
            else -> throw expected("a request id (an integer or a string)")
        }
    }

    fun json(): JsonElement = json(0)

    private fun json(depth: Int): JsonElement {
        if (depth > MAX_DEPTH) throw DecodeException("a JSON value nests too deep")
        val f = format()
        return when (f.valueType) {
            ValueType.NIL -> {
                u.unpackNil()
                JsonNull
            }
            ValueType.BOOLEAN -> JsonPrimitive(u.unpackBoolean())
            ValueType.INTEGER -> if (f == MessageFormat.UINT64) {
                val big = u.unpackBigInteger()
                if (big > LONG_MAX) JsonPrimitive(big) else JsonPrimitive(big.toLong())
            } else {
                JsonPrimitive(u.unpackLong())
            }
            ValueType.FLOAT -> JsonPrimitive(u.unpackDouble())
            ValueType.STRING -> JsonPrimitive(u.unpackString())
            ValueType.ARRAY -> {
                val n = u.unpackArrayHeader()
                val items = ArrayList<JsonElement>(minOf(n, 1024))
                for (i in 0 until n) items.add(field(i) { json(depth + 1) })
                JsonArray(items)
            }
            ValueType.MAP -> jsonObject(depth)
            else -> throw expected("a JSON value")
        }
    }

    fun jsonObject(): JsonObject = jsonObject(0)

    private fun jsonObject(depth: Int): JsonObject {
        val n = mapHeader()
        val map = LinkedHashMap<String, JsonElement>(n * 2)
        for (i in 0 until n) {
            if (format().valueType != ValueType.STRING) throw DecodeException("a JSON object's key: ${expected("a string").detail}")
            val key = u.unpackString()
            map[key] = field(key) { json(depth + 1) }
        }
        return JsonObject(map)
    }

    /** A list, each item read by [item]. */
    inline fun <T> list(item: () -> T): List<T> {
        val n = arrayHeader()
        // Every item takes at least a byte: a hostile length reserves no more than the input.
        val out = ArrayList<T>(minOf(n, 1024))
        for (i in 0 until n) out.add(field(i) { item() })
        return out
    }

    /** Reads field [key] with [read]: an error inside says where. */
    inline fun <T> field(key: String, read: () -> T): T = try {
        read()
    } catch (e: DecodeException) {
        throw e.at(key)
    } catch (e: RuntimeException) {
        throw DecodeException(e.message ?: e.toString()).at(key)
    }

    /** Reads item [index] with [read]. */
    inline fun <T> field(index: Int, read: () -> T): T = try {
        read()
    } catch (e: DecodeException) {
        throw e.at(index.toString())
    } catch (e: RuntimeException) {
        throw DecodeException(e.message ?: e.toString()).at(index.toString())
    }

    /** Fails unless every byte was read. */
    fun finish() {
        val left = try {
            u.hasNext()
        } catch (e: Exception) {
            false
        }
        if (left) throw DecodeException("bytes follow the value")
    }

    companion object {
        private val mine = ThreadLocal.withInitial { ValueReader() }

        /** Runs [body] with this thread's reader over [len] bytes of [bytes] from [offset]. */
        fun <T> reading(bytes: ByteArray, offset: Int, len: Int, body: (ValueReader) -> T): T {
            var r = mine.get()
            // A codec used inside a codec (never by the generated ones): a reader of its own.
            if (r.busy) r = ValueReader()
            r.busy = true
            try {
                r.input.reset(bytes, offset, len)
                r.u.reset(r.input)
                return try {
                    body(r)
                } catch (e: DecodeException) {
                    throw e
                } catch (e: java.io.IOException) {
                    throw DecodeException(e.message ?: "the value ends early")
                } catch (e: org.msgpack.core.MessagePackException) {
                    throw DecodeException(e.message ?: e.toString())
                }
            } finally {
                r.busy = false
            }
        }
    }
}

/** Writes the encoding: msgpack-core's buffer packer (integers in their smallest form). */
internal class ValueWriter(private val p: MessageBufferPacker) {
    fun bytes(): ByteArray = p.toByteArray()

    fun map(n: Int) {
        p.packMapHeader(n)
    }

    fun array(n: Int) {
        p.packArrayHeader(n)
    }

    /** A map's key. */
    fun key(key: String) {
        p.packString(key)
    }

    /** The class tag, the first pair of a union's map. */
    fun tag(cls: String) {
        p.packString("$")
        p.packString(cls)
    }

    fun string(s: String) {
        p.packString(s)
    }

    fun bool(b: Boolean) {
        p.packBoolean(b)
    }

    fun long(v: Long) {
        p.packLong(v)
    }

    fun int(v: Int) {
        p.packInt(v)
    }

    fun double(v: Double) {
        p.packDouble(v)
    }

    fun nil() {
        p.packNil()
    }

    inline fun <T> list(items: List<T>, each: (T) -> Unit) {
        array(items.size)
        for (item in items) each(item)
    }

    fun requestId(id: RequestId) {
        when (id) {
            is RequestId.Number -> long(id.value)
            is RequestId.Text -> string(id.value)
            RequestId.Null -> nil()
        }
    }

    fun json(v: JsonElement) {
        when (v) {
            JsonNull -> nil()
            is JsonPrimitive -> when {
                v.isString -> string(v.content)
                v.content == "true" -> bool(true)
                v.content == "false" -> bool(false)
                else -> number(v.content)
            }
            is JsonArray -> {
                array(v.size)
                for (item in v) json(item)
            }
            is JsonObject -> {
                map(v.size)
                for ((key, item) in v) {
                    key(key)
                    json(item)
                }
            }
        }
    }

    /** A JSON number from its text: an integer when it is one (up to 2^64 - 1), else a float. */
    private fun number(text: String) {
        text.toLongOrNull()?.let { return long(it) }
        val big = text.toBigIntegerOrNull()
        if (big != null && big.signum() > 0 && big.bitLength() <= 64) {
            p.packBigInteger(big)
        } else {
            double(text.toDouble())
        }
    }
}
