/**
 * Reading [AcpException]s: every error the library raises is one of its variants, each with
 * typed fields (a reason enum, the agent's error record), never a bare string where a type exists.
 */
package dev.acpinject

/** What went wrong, worded for a person (the generated `message` lists the fields). */
val AcpException.description: String
    get() = when (this) {
        is AcpException.InvalidInput -> "invalid input: $detail"
        is AcpException.Protocol -> "the agent refused: ${error.message} (${error.code}${error.reason?.let { ", $it" } ?: ""})"
        is AcpException.Rejected -> "refused locally: $reason"
        is AcpException.Host -> "the agent core cannot apply it: $error"
        is AcpException.Config -> "invalid configuration: $detail"
        is AcpException.Store -> "store error: $detail"
        is AcpException.Disconnected -> detail
        is AcpException.Mismatch -> detail
        is AcpException.Internal -> "internal error (a bug): $detail"
    }

/** The agent's reason for refusing, when this is its error answer. */
val AcpException.errorReason: ErrorReason? get() = (this as? AcpException.Protocol)?.error?.reason
