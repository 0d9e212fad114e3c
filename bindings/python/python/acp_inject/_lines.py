"""The per-line receive path: one agent line in, its typed events out, in one foreign call.

A UniFFI method call from Python is three ctypes calls (clone the object's handle, the call,
free the returned buffer), each with a call-status record built in Python; for a streaming
client that hands over one line at a time that crossing costs about what the whole official
SDK's parse of the line costs. The library exports, beside UniFFI's calling convention, plain C
functions for this path (``crates/ffi/src/lines.rs``), called here through ``ctypes`` on the
package's own library file: ``acp_inject_line_port_receive_into`` takes a line port (a handle of
the library's own, from ``ClientCore.line_port()``, taken once per object and released when the
object goes), the line and a reusable output buffer, applies the line to the connection exactly
as ``ClientCore.receive`` does, and writes the events in UniFFI's own serialization of
``Vec<Event>``, which the flat reader of ``acp_inject._readers`` (or, without it, the generated
reader) decodes into the very typed events ``receive`` returns. The tests check both paths give
equal events.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import weakref
from typing import Any, List, Union

from . import _readers
from . import acp_inject_ffi as _ffi
from .acp_inject_ffi import AcpError, Event
from ._checked import InvalidArgument

_gen: Any = _ffi.acp_inject_ffi  # the generated module's private runtime is not in the stub

# The sentinels of crates/ffi/src/lines.rs.
_NOT_UTF8 = -(2**63) + 1
_PANICKED = -(2**63)


def _library() -> ctypes.CDLL:
    """The package's library, by the file name it ships under beside the generated module (the
    same file the generated module loads; loading it again shares the one copy)."""
    name = {"darwin": "libacp_inject_ffi.dylib", "win32": "acp_inject_ffi.dll"}.get(sys.platform, "libacp_inject_ffi.so")
    return ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(_gen.__file__)), name))


_lib = _library()
_receive_into = _lib.acp_inject_line_port_receive_into
_receive_into.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]
_receive_into.restype = ctypes.c_int64
_free_port = _lib.acp_inject_line_port_free
_free_port.argtypes = [ctypes.c_uint64]
_free_port.restype = None
_take_spilled = _lib.acp_inject_take_spilled
_take_spilled.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
_take_spilled.restype = ctypes.c_int64

_Stream = _gen._UniffiRustBufferStream
_events_converter = _gen._UniffiFfiConverterSequenceTypeEvent
_flat_events = _readers.rSequenceTypeEvent


class _Output(threading.local):
    """One output buffer per thread (the library keeps what did not fit per thread, too): a
    ``bytearray`` the library writes into through its address and the readers read in place."""

    def __init__(self) -> None:
        self.grow(16 << 10)

    def grow(self, size: int) -> None:
        self.buffer = bytearray(size)
        # The ctypes view holds an export of the bytearray: it cannot be resized (or moved)
        # while this thread uses it.
        self.view = (ctypes.c_char * size).from_buffer(self.buffer)
        self.address = ctypes.addressof(self.view)
        self.size = size


_output = _Output()
_port_lock = threading.Lock()


class ClientCore(_ffi.ClientCore):
    """The sans-IO client connection (see the generated ``ClientCore``), with
    :meth:`receive_line`, the cheapest way to hand it the agent's output one line at a time."""

    def _take_line_port(self) -> int:
        """This object's line port, taken once (under a lock: two threads' first lines must not
        take two) and released when the object is collected; the port keeps the connection
        alive, so no line in flight outlives it."""
        with _port_lock:
            port: int = self.__dict__.get("_acp_line_port") or self.line_port()
            if "_acp_line_port" not in self.__dict__:
                self.__dict__["_acp_line_port"] = port
                weakref.finalize(self, _free_port, port)
            return port

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
        out = _output
        port = self.__dict__.get("_acp_line_port")
        if port is None:
            port = self._take_line_port()
        # The library drops the line ending.
        n = _receive_into(port, line, len(line), out.address, out.size)
        if n < 0:
            if n == _NOT_UTF8:
                raise AcpError.InvalidInput("ClientCore.receive_line: the line is not UTF-8")
            if n == _PANICKED:
                raise AcpError.Internal("a panic inside the library while applying a line")
            out.grow(max(-n, 2 * out.size))
            n = _take_spilled(out.address, out.size)
            if n < 0:
                raise AcpError.Internal(f"the spilled events did not fit {out.size} bytes")
        events: List[Event]
        if _readers.ACTIVE:
            # Read in place: every value read is a copy (str, int, …), nothing keeps the buffer.
            try:
                events, end = _flat_events(out.buffer, 0)
            except (struct.error, IndexError, UnicodeDecodeError) as e:
                raise AcpError.Internal(f"the events of a line did not decode: {e}") from None
        else:
            stream = _Stream.__new__(_Stream)
            stream.data, stream.len, stream.offset = bytes(out.buffer[:n]), n, 0
            events = _events_converter.read(stream)
            end = stream.offset
        if end != n:
            raise AcpError.Internal(f"{n - end} bytes left after the events of a line")
        return events
