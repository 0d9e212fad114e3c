"""The per-line receive path: one agent line in, its typed events out, in one foreign call.

A UniFFI method call from Python is three ctypes calls (clone the object's handle, the call,
free the returned buffer), each with a call-status record built in Python; for a streaming
client that hands over one line at a time that crossing costs about what the whole official
SDK's parse of the line costs. The library exports, beside UniFFI's calling convention, one
plain C function for this path (``acp_inject_client_core_receive_into``, in
``crates/ffi/src/lines.rs``): it takes the line and a reusable output buffer as pointers,
applies the line to the connection exactly as ``ClientCore.receive`` does, and writes the
events in UniFFI's own serialization of ``Vec<Event>``, which the generated reader decodes
into the very typed events ``receive`` returns. The tests check both paths give equal events.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, List, Union

from . import acp_inject_ffi as _ffi
from .acp_inject_ffi import AcpError, Event
from ._checked import InvalidArgument

_gen: Any = _ffi.acp_inject_ffi  # the generated module's private runtime is not in the stub

# The sentinels of crates/ffi/src/lines.rs.
_NOT_UTF8 = -(2**63) + 1
_PANICKED = -(2**63)

_receive_into = _gen._UniffiLib.acp_inject_client_core_receive_into
_receive_into.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]
_receive_into.restype = ctypes.c_int64
_take_spilled = _gen._UniffiLib.acp_inject_take_spilled
_take_spilled.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
_take_spilled.restype = ctypes.c_int64

_Stream = _gen._UniffiRustBufferStream
_read_events = _gen._UniffiFfiConverterSequenceTypeEvent.read
_string_at = ctypes.string_at


class _Output(threading.local):
    """One output buffer per thread: the library keeps what did not fit per thread, too."""

    def __init__(self) -> None:
        self.grow(16 << 10)

    def grow(self, size: int) -> None:
        self.buffer = ctypes.create_string_buffer(size)
        self.address = ctypes.addressof(self.buffer)
        self.size = size


_output = _Output()


class ClientCore(_ffi.ClientCore):
    """The sans-IO client connection (see the generated ``ClientCore``), with
    :meth:`receive_line`, the cheapest way to hand it the agent's output one line at a time."""

    def receive_line(self, line: Union[bytes, bytearray, memoryview, str]) -> List[Event]:
        """Applies one complete line from the agent (a trailing ``\\n`` or ``\\r\\n`` is
        allowed) and returns the events it caused: the same events as :meth:`receive`, in one
        foreign call. A line must not be split across calls; for arbitrary chunks of output use
        :meth:`feed`, and do not interleave the two in the middle of a line.

        Raises :class:`AcpError.InvalidInput` for bytes that are not UTF-8 and
        :class:`InvalidArgument` for anything but bytes (``bytes``, ``bytearray``, ``memoryview``) or ``str``.
        """
        if type(line) is not bytes:
            if isinstance(line, str):
                line = line.encode()
            elif isinstance(line, (bytearray, memoryview)):
                line = bytes(line)
            else:
                raise InvalidArgument(f"ClientCore.receive_line: a line is bytes or str, not {type(line).__name__}")
        size = len(line)
        if line.endswith(b"\n"):  # the length leaves the line ending out: no copy
            size -= 2 if line.endswith(b"\r\n") else 1
        out = _output
        handle: int = self._handle  # type: ignore[attr-defined]  # the generated object's, not in the stub
        n = _receive_into(handle, line, size, out.address, out.size)
        if n < 0:
            if n == _NOT_UTF8:
                raise AcpError.InvalidInput("ClientCore.receive_line: the line is not UTF-8")
            if n == _PANICKED:
                raise AcpError.Internal("a panic inside the library while applying a line")
            out.grow(max(-n, 2 * out.size))
            n = _take_spilled(out.address, out.size)
            if n < 0:
                raise AcpError.Internal(f"the spilled events did not fit {out.size} bytes")
        stream = _Stream.__new__(_Stream)
        stream.data = _string_at(out.address, n)
        stream.len = n
        stream.offset = 0
        events: List[Event] = _read_events(stream)
        if stream.offset != n:
            raise AcpError.Internal(f"{n - stream.offset} bytes left after the events of a line")
        return events
