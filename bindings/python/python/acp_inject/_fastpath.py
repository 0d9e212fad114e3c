"""Faster hot paths for the runtime UniFFI generates (uniffi 0.32.2), installed at import.

Profiling a streaming client (one ``ClientCore.feed`` per agent line) showed most of the time
in the generated module's own Python, not in Rust:

- its buffer reader slices the ctypes pointer once per field (``data[offset:offset+n]``
  builds a ``bytes`` through ctypes every time) and parses each number with ``struct.unpack``
  and a format string; a string takes three calls (length, bytes, decode);
- ``lift`` enters a generator-based context manager per returned value;
- every call builds its status record through two ``default()`` constructors.

The replacements below do the same work with less Python: the buffer is copied to ``bytes``
once (``ctypes.string_at``) and read with precompiled ``struct.Struct`` readers, a string in
one call; ``lift`` frees
the buffer in a ``finally``; the status record is ctypes' zero-initialised structure (what
``default()`` builds). Behaviour is unchanged, errors included: the same checks raise the same
exceptions. The tests replay every conformance vector and the property tests through these
paths, and compare their decoding with the generated one on the same buffers.

The generated module is pinned (``uniffi = "=0.32.2"``); ``install`` checks the names it
replaces exist and leaves everything as generated when one does not.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, Dict, Optional

from .acp_inject_ffi import acp_inject_ffi as _generated

_gen: Any = _generated  # its private runtime is not in the type stub

_ORIGINAL: Dict[str, Any] = {}


def _stream_init(self: Any, data: Any, length: int) -> None:
    self.data = ctypes.string_at(data, length) if length else b""
    self.len = length
    self.offset = 0


def _reader(fmt: str) -> Callable[[Any], Any]:
    layout = struct.Struct(fmt)
    size, unpack = layout.size, layout.unpack_from
    past_end = _gen.InternalError

    def read(self: Any) -> Any:
        offset = self.offset
        if offset + size > self.len:
            raise past_end("read past end of rust buffer")
        self.offset = offset + size
        return unpack(self.data, offset)[0]

    return read


def _stream_read(self: Any, size: int) -> bytes:
    offset = self.offset
    if offset + size > self.len:
        raise _gen.InternalError("read past end of rust buffer")
    self.offset = offset + size
    data: bytes = self.data[offset : offset + size]
    return data


_I32 = struct.Struct(">i").unpack_from


def _string_read(buf: Any) -> str:
    offset = buf.offset
    if offset + 4 > buf.len:
        raise _gen.InternalError("read past end of rust buffer")
    size = _I32(buf.data, offset)[0]
    if size < 0:
        raise _gen.InternalError("Unexpected negative string length")
    end = offset + 4 + size
    if end > buf.len:
        raise _gen.InternalError("read past end of rust buffer")
    buf.offset = end
    text: str = buf.data[offset + 4 : end].decode("utf-8")
    return text


def _lift(cls: Any, rbuf: Any) -> Any:
    try:
        stream = _gen._UniffiRustBufferStream(rbuf.data, rbuf.len)
        value = cls.read(stream)
        if stream.remaining() != 0:
            raise RuntimeError(f"junk data left in buffer at end of consume_with_stream {stream.remaining()}")
        return value
    finally:
        rbuf.free()


def _call_with_error(error_ffi_converter: Optional[Any], fn: Any, *args: Any) -> Any:
    status = _gen._UniffiRustCallStatus()
    result = fn(*args, ctypes.byref(status))
    if status.code:
        _gen._uniffi_check_call_status(error_ffi_converter, status)
    return result


_READERS = {
    "read_i8": ">b", "read_u8": ">B", "read_i16": ">h", "read_u16": ">H", "read_i32": ">i",
    "read_u32": ">I", "read_i64": ">q", "read_u64": ">Q", "read_float": ">f", "read_double": ">d",
}


def install() -> bool:
    """Installs the fast paths; ``False`` (and nothing changed) when the generated module is not
    the one they were written for."""
    stream = getattr(_gen, "_UniffiRustBufferStream", None)
    base = getattr(_gen, "_UniffiConverterRustBuffer", None)
    string = getattr(_gen, "_UniffiFfiConverterString", None)
    status = getattr(_gen, "_UniffiRustCallStatus", None)
    if stream is None or base is None or string is None or status is None or not hasattr(_gen, "_uniffi_rust_call_with_error"):
        return False
    if [f for f in ("code", "error_buf") if f not in dict(status._fields_)] or not all(hasattr(stream, r) for r in _READERS):
        return False
    if _ORIGINAL:
        return True
    _ORIGINAL.update({
        "stream": dict(vars(stream)),
        "lift": vars(base)["lift"],
        "string_read": vars(string)["read"],
        "call": _gen._uniffi_rust_call_with_error,
    })
    stream.__init__ = _stream_init
    stream.read = _stream_read
    for name, fmt in _READERS.items():
        setattr(stream, name, _reader(fmt))
    base.lift = classmethod(_lift)
    string.read = staticmethod(_string_read)
    _gen._uniffi_rust_call_with_error = _call_with_error
    return True


def uninstall() -> None:
    """Puts the generated code back (the tests compare both)."""
    if not _ORIGINAL:
        return
    stream, base = _gen._UniffiRustBufferStream, _gen._UniffiConverterRustBuffer
    for name in ["__init__", "read", *_READERS]:
        setattr(stream, name, _ORIGINAL["stream"][name])
    base.lift = _ORIGINAL["lift"]
    _gen._UniffiFfiConverterString.read = _ORIGINAL["string_read"]
    _gen._uniffi_rust_call_with_error = _ORIGINAL["call"]
    _ORIGINAL.clear()


install()
