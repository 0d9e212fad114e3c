/**
 * Reading [AcpException]s: every error the library raises is one of its classes, each with
 * typed fields (a reason enum, the agent's error), never a bare string where a type exists.
 *
 * The library's errors cross the FFI encoded (UniFFI's `FfiException.Failed`: the message and
 * the `AcpError` union in the boundary encoding); every call of this package turns them back into
 * the [AcpException] they encode, so no UniFFI type reaches a caller.
 */
package dev.acpinject

import dev.acpinject.ffi.FfiException

/** What went wrong, worded for a person. */
val AcpException.description: String
    get() = when (this) {
        is AcpException.InvalidInput -> "invalid input: $detail"
        is AcpException.Protocol -> "the agent refused: ${error.message} (${error.code}${error.reason?.let { ", $it" } ?: ""})"
        is AcpException.AuthRequired -> "the agent requires authentication first: ${error.message} (${error.code})"
        is AcpException.Rejected -> "refused locally: $detail"
        is AcpException.Host -> "the agent core cannot apply it: $detail"
        is AcpException.Config -> "invalid configuration: $detail"
        is AcpException.Store -> "store error: $detail"
        is AcpException.Disconnected -> detail
        is AcpException.Mismatch -> detail
        is AcpException.Internal -> "internal error (a bug): $detail"
    }

/** The agent's reason for refusing, when this is its error answer. */
val AcpException.errorReason: ErrorReason?
    get() = when (this) {
        is AcpException.Protocol -> error.reason
        is AcpException.AuthRequired -> error.reason
        else -> null
    }

/** The [AcpException] an FFI error encodes (its message alone when the bytes are no error: a bug). */
internal fun FfiException.toAcp(): AcpException = when (this) {
    is FfiException.Failed -> try {
        AcpExceptionCodec.decode(error)
    } catch (e: DecodeException) {
        AcpException.Internal("$message (the error did not decode: ${e.message})")
    }
}

/** [error] as the FFI error a callback hands back to the library. */
internal fun AcpException.toFfi(): FfiException = FfiException.Failed(message ?: description, AcpExceptionCodec.encode(this))

/** Runs one FFI call: a library error is thrown as the [AcpException] it encodes. */
internal inline fun <T> ffi(call: () -> T): T = try {
    call()
} catch (e: FfiException) {
    throw e.toAcp()
}

/** Decodes what the library returned: bytes that do not decode are a bug of the library's. */
internal fun <T> ValueCodec<T>.result(bytes: ByteArray, what: String): T = try {
    decode(bytes)
} catch (e: DecodeException) {
    throw AcpException.Internal("the library's $what did not decode: ${e.message}")
}
