"""The per-line receive path: one agent line in, its typed events out, in one foreign call.

A UniFFI method call from Python is three ctypes calls (clone the object's handle, the call,
free the returned buffer), each with a call-status record built in Python, and its result is
read back field by field by Python code; for a streaming client that hands over one line at a
time that costs about what the whole official SDK's parse of the line costs. The library
exports, beside UniFFI's calling convention, plain C functions for this path
(``crates/ffi/src/lines.rs``), called here through ``ctypes`` on the package's own library file:
``acp_inject_line_port_receive_json_into`` takes a line port (a handle of the library's own,
from ``ClientCore.line_port()``, taken once per object and released when the object goes), the
line and a reusable output buffer, applies the line to the connection exactly as
``ClientCore.receive`` does, and writes the events as JSON that names each value's class
(``crates/ffi/src/line_json.rs``: ``{"$": "Usage", "total_tokens": 150, ...}``). ``json.loads``
reads it in C and builds each object with the public constructor of that class of the generated
module, so the events are the very typed events ``receive`` returns. Nothing of UniFFI's private
runtime is used. The tests check both paths give equal events for every vector.
"""

from __future__ import annotations

import ctypes
import enum
import gc
import json
import os
import sys
import threading
import weakref
from typing import Any, Callable, Dict, List, Union

from . import acp_inject_ffi as _ffi
from ._errors import InvalidArgument, checked_methods, checks_itself
from .acp_inject_ffi import AcpError, Event

# The sentinels of crates/ffi/src/lines.rs.
_NOT_UTF8 = -(2**63) + 1
_PANICKED = -(2**63)


def _library() -> ctypes.CDLL:
    """The package's library, by the file name it ships under beside the generated module (the
    same file the generated module loads; loading it again shares the one copy)."""
    name = {"darwin": "libacp_inject_ffi.dylib", "win32": "acp_inject_ffi.dll"}.get(sys.platform, "libacp_inject_ffi.so")
    return ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(_ffi.acp_inject_ffi.__file__)), name))


_lib = _library()
_receive_into = _lib.acp_inject_line_port_receive_json_into
_feed_into = _lib.acp_inject_line_port_feed_json_into
for _fn in (_receive_into, _feed_into):
    _fn.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]
    _fn.restype = ctypes.c_int64
_free_port = _lib.acp_inject_line_port_free
_free_port.argtypes = [ctypes.c_uint64]
_free_port.restype = None
_take_spilled = _lib.acp_inject_take_spilled
_take_spilled.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
_take_spilled.restype = ctypes.c_int64



class _Classes(Dict[str, Callable[..., Any]]):
    """What builds the value of each class name the library writes, found on first use by its
    public name in the generated module: a record or a variant with named fields is its class
    (called with the fields as keywords), a variant written with ``*`` takes them in order, and
    a member of a plain enum is that member."""

    def __missing__(self, tag: str) -> Callable[..., Any]:
        positional = tag.endswith("*")
        # The module itself, not its package: a custom type lifted into a class of its own
        # (`StopReason`, an alias of `acp_inject.enums.StopReason`) is no star-export.
        found: Any = _ffi.acp_inject_ffi
        try:
            for part in tag.rstrip("*").split("."):
                found = getattr(found, part)
        except AttributeError:
            raise AcpError.Internal(f"the library wrote a value of class {tag!r}, which the generated module does not have") from None
        build: Callable[..., Any]
        if isinstance(found, enum.Enum):
            member = found
            build = lambda: member  # noqa: E731
        elif positional:
            variant = found
            build = lambda **fields: variant(*fields.values())  # noqa: E731
        else:
            build = found
        self[tag] = build
        return build


_classes = _Classes()


def _value(fields: Dict[str, Any]) -> Any:
    """``json.loads``'s ``object_hook``: every object the library writes is a value of a class."""
    return _classes[fields.pop("$")](**fields)


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
# Events of more bytes than this are decoded with the cyclic collector paused.
_BULK = 64 << 10
_bytes = bytes
_port_lock = threading.Lock()


@checked_methods
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

    @checks_itself
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
        return self._events(_receive_into, line)

    def _events(self, function: Any, data: bytes) -> List[Event]:
        """Calls ``function`` (a per-line function of the library) with ``data`` and reads the
        events it wrote."""
        out = _output
        port = self.__dict__.get("_acp_line_port")
        if port is None:
            port = self._take_line_port()
        n = function(port, data, len(data), out.address, out.size)
        if n < 0:
            if n == _NOT_UTF8:
                raise AcpError.InvalidInput("ClientCore.receive_line: the line is not UTF-8")
            if n == _PANICKED:
                raise AcpError.Internal("a panic inside the library while applying a line")
            out.grow(max(-n, 2 * out.size))
            n = _take_spilled(out.address, out.size)
            if n < 0:
                raise AcpError.Internal(f"the spilled events did not fit {out.size} bytes")
        # Many events at once (a bulk read) are objects the cyclic collector would scan again
        # and again while they are built (none of them can form a cycle): it waits until they
        # are built, as it does for a single line's few.
        pause = n > _BULK and gc.isenabled()
        if pause:
            gc.disable()
        try:
            events: List[Event] = json.loads(out.buffer[:n], object_hook=_value)
        except AcpError:
            raise
        except (ValueError, TypeError, KeyError) as e:
            raise AcpError.Internal(f"the events of a line did not decode: {e!r}") from None
        finally:
            if pause:
                gc.enable()
        return events

    def _feed(self, call: str, data: bytes) -> List[Event]:
        if type(data) is not _bytes:
            raise InvalidArgument(f"ClientCore.{call}: bytes, not {type(data).__name__}")
        return self._events(_feed_into, data)

    @checks_itself
    def feed(self, bytes: bytes) -> List[Event]:
        """Applies bytes the agent wrote, in any chunking (a line may end in a later call), and
        returns the events they caused, through the same path as :meth:`receive_line`.

        Raises :class:`InvalidArgument` for anything but ``bytes``."""
        return self._feed("feed", bytes)

    @checks_itself
    def receive_bytes(self, bytes: bytes) -> List[Event]:
        """:meth:`feed` (the generated name for the same call)."""
        return self._feed("receive_bytes", bytes)

    @checks_itself
    def receive_text(self, text: str) -> List[Event]:
        """:meth:`feed` for text: any number of lines, in one call.

        Raises :class:`InvalidArgument` for anything but a ``str`` that encodes as UTF-8."""
        if type(text) is not str:
            raise InvalidArgument(f"ClientCore.receive_text: a str, not {type(text).__name__}")
        try:
            data = text.encode()
        except UnicodeEncodeError as e:
            raise InvalidArgument(f"ClientCore.receive_text: {e}") from None
        return self._events(_feed_into, data)
