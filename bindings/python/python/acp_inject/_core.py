"""The sans-IO cores, for hosts that run their own I/O: :class:`ClientCore` (one client
connection to an agent) and :class:`AgentCore` (one agent process, all its sessions).

Each method is one call into the library; values go in and out in the boundary encoding
(``docs/encoding.md``), read and written by ``msgspec`` in C straight into the classes of
:mod:`acp_inject.values`.

The per-line path. A UniFFI method call from Python is three ctypes calls (clone the object's
handle, the call, free the returned buffer), each with a call-status record built in Python;
for a streaming client that hands over one line at a time that costs more than the work. The
library exports, beside UniFFI's calling convention, plain C functions for this path
(``crates/ffi/src/lines.rs``), called here through ``ctypes`` on the package's own library file:
``acp_inject_line_port_receive_into`` takes a line port (a handle of the library's own, from
``line_port()``, taken once per object and released when the object goes), the line and a
reusable output buffer, applies the line exactly as :meth:`ClientCore.receive` does, and writes
the events encoded; ``msgspec`` decodes them from the buffer in place. Nothing of UniFFI's private
runtime is used.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import weakref
from typing import Any, List, Optional, Sequence, Union

import msgspec

from ._errors import InvalidArgument, arg, call, checked, checks_itself
from .acp_inject_ffi import acp_inject_ffi as _ffi
from .content import Content, blocks
from .values import (
    AcpError,
    AgentConfig,
    ConnectionRole,
    Event,
    HistoryEntry,
    Implementation,
    InitializeResponse,
    InjectCapabilities,
    InjectMode,
    ItemStatus,
    McpServer,
    MirrorSnapshot,
    Output,
    PendingInject,
    TurnFailure,
    PermissionAsk,
    PermissionRequestSent,
    RequestId,
    RequestPermissionOutcome,
    RuntimeEvent,
    SteerFallback,
    TurnPhase,
    decode,
)

_events_decoder = msgspec.msgpack.Decoder(List[Event])
_outputs_decoder = msgspec.msgpack.Decoder(List[Output])
_request_id_decoder: msgspec.msgpack.Decoder[RequestId] = msgspec.msgpack.Decoder(RequestId)


def _events(data: bytes) -> List[Event]:
    return _events_decoder.decode(data)


def _outputs(data: bytes) -> List[Output]:
    return _outputs_decoder.decode(data)


def _request_id(data: bytes) -> RequestId:
    return _request_id_decoder.decode(data)


def _mode(mode: Union[InjectMode, str]) -> InjectMode:
    try:
        return InjectMode(mode)
    except ValueError:
        raise InvalidArgument(f"unknown inject mode {mode!r} (queue or steer)") from None


# The sentinels of crates/ffi/src/lines.rs.
_NOT_UTF8 = -(2**63) + 1
_PANICKED = -(2**63)


def _library() -> ctypes.CDLL:
    """The package's library, by the file name it ships under beside the generated module (the
    same file the generated module loads; loading it again shares the one copy)."""
    name = {"darwin": "libacp_inject_ffi.dylib", "win32": "acp_inject_ffi.dll"}.get(sys.platform, "libacp_inject_ffi.so")
    return ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(_ffi.__file__)), name))


_lib = _library()
_receive_into = _lib.acp_inject_line_port_receive_into
_feed_into = _lib.acp_inject_line_port_feed_into
for _fn in (_receive_into, _feed_into):
    _fn.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]
    _fn.restype = ctypes.c_int64
_free_port = _lib.acp_inject_line_port_free
_free_port.argtypes = [ctypes.c_uint64]
_free_port.restype = None
_take_spilled = _lib.acp_inject_take_spilled
_take_spilled.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
_take_spilled.restype = ctypes.c_int64


class _Output(threading.local):
    """One output buffer per thread (the library keeps what did not fit per thread, too): a
    ``bytearray`` the library writes into through its address and msgspec reads in place."""

    def __init__(self) -> None:
        self.grow(16 << 10)

    def grow(self, size: int) -> None:
        self.buffer = bytearray(size)
        # The ctypes view holds an export of the bytearray: it cannot be resized (or moved)
        # while this thread uses it.
        self.view = (ctypes.c_char * size).from_buffer(self.buffer)
        self.address = ctypes.addressof(self.view)
        self.size = size
        self.memory = memoryview(self.buffer)


_output = _Output()
# Events of more bytes than this are decoded with the cyclic collector paused.
_BULK = 64 << 10
_port_lock = threading.Lock()


@checked
class ClientCore:
    """One client connection to an agent, without I/O: the calls queue lines to send
    (:meth:`take_outgoing`), the agent's output produces :class:`Event` values (an answer to a
    request, a session's activity, a permission request, an ignored line).

    Feed the agent's output with :meth:`receive_line` (one line, the cheapest per line),
    :meth:`feed` (bytes in any chunking) or :meth:`receive_text` (many lines at once)."""

    def __init__(self, max_line_bytes: int = 16 << 20) -> None:
        self._inner = call("ClientCore", _ffi.ClientCore, max_line_bytes)
        self._port: Optional[int] = None

    def __repr__(self) -> str:
        return f"<ClientCore protocol_version={self.protocol_version()}>"

    def initialize(self, client: Implementation, pending_updates: bool = True) -> RequestId:
        """``initialize`` as ``client``; ``pending_updates`` opts into the pending-list extension."""
        return _request_id(call("ClientCore.initialize", self._inner.initialize, arg(client), pending_updates))

    def assume_capabilities(self, inject: Optional[InjectCapabilities]) -> None:
        """Takes the agent's inject capabilities as known, without ``initialize``."""
        call("ClientCore.assume_capabilities", self._inner.assume_capabilities, arg(inject))

    def assume_agent(self, protocol_version: int, inject: Optional[InjectCapabilities] = None) -> None:
        """Takes the agent's protocol version (1 or 2) and inject capabilities as known, without
        ``initialize``. A version 1 agent takes no injects: this client holds queued messages
        for it (C-HELD-1)."""
        call("ClientCore.assume_agent", self._inner.assume_agent, protocol_version, arg(inject))

    def assume_initialized(self, agent: InitializeResponse) -> None:
        """Takes the agent's whole ``initialize`` answer as known, without ``initialize`` (a
        restored app): its version, ``session.inject`` and the extensions its ``_meta``
        advertises (steering)."""
        call("ClientCore.assume_initialized", self._inner.assume_initialized, arg(agent))

    def set_steer_fallback(self, fallback: Optional[SteerFallback]) -> None:
        """What a steer does when the agent takes no injects (C-HELD-3); ``None`` refuses it."""
        call("ClientCore.set_steer_fallback", self._inner.set_steer_fallback, arg(fallback))

    def protocol_version(self) -> int:
        """The protocol version ``initialize`` settled (2 until an agent answers 1)."""
        return int(call("ClientCore.protocol_version", self._inner.protocol_version))

    def open_session(self, session_id: str, mirror_json: Optional[str] = None) -> None:
        """Opens a session without ``session/new`` (restoring a mirror from ``mirror_json``)."""
        call("ClientCore.open_session", self._inner.open_session, session_id, mirror_json)

    def mirror_json(self, session_id: str) -> Optional[str]:
        """A session's mirror as JSON, for an app that restarts without resuming."""
        mirror: Optional[str] = call("ClientCore.mirror_json", self._inner.mirror_json, session_id)
        return mirror

    def new_session(self, cwd: str, additional_directories: Sequence[str] = (), mcp_servers: Sequence[McpServer] = ()) -> RequestId:
        """``session/new``."""
        return _request_id(call("ClientCore.new_session", self._inner.new_session, cwd, list(additional_directories), arg(list(mcp_servers))))

    def list_sessions(self, cwd: Optional[str] = None, cursor: Optional[str] = None) -> RequestId:
        """``session/list``."""
        return _request_id(call("ClientCore.list_sessions", self._inner.list_sessions, cwd, cursor))

    def resume(self, session_id: str, cwd: str, replay: bool = True) -> RequestId:
        """``session/resume``."""
        return _request_id(call("ClientCore.resume", self._inner.resume, session_id, cwd, replay))

    def prompt(self, session_id: str, content: Content) -> RequestId:
        """``session/prompt``. Raises ``AcpError.Rejected`` when refused without sending."""
        return _request_id(call("ClientCore.prompt", self._inner.prompt, session_id, arg(blocks(content))))

    def inject(self, session_id: str, mode: Union[InjectMode, str], content: Content) -> RequestId:
        """``session/inject``. Raises ``AcpError.Rejected`` when refused without sending."""
        return _request_id(call("ClientCore.inject", self._inner.inject, session_id, arg(_mode(mode)), arg(blocks(content))))

    def revoke(self, session_id: str, message_id: str) -> RequestId:
        """``session/revoke_inject``."""
        return _request_id(call("ClientCore.revoke", self._inner.revoke, session_id, message_id))

    def replace(self, session_id: str, message_id: str, content: Content) -> RequestId:
        """``session/replace_inject``."""
        return _request_id(call("ClientCore.replace", self._inner.replace, session_id, message_id, arg(blocks(content))))

    def cancel(self, session_id: str) -> None:
        """``session/cancel``."""
        call("ClientCore.cancel", self._inner.cancel, session_id)

    def close(self, session_id: str) -> RequestId:
        """``session/close``."""
        return _request_id(call("ClientCore.close", self._inner.close, session_id))

    def status(self, session_id: str) -> RequestId:
        """``session/status``."""
        return _request_id(call("ClientCore.status", self._inner.status, session_id))

    def answer_permission(self, request: RequestId, outcome: RequestPermissionOutcome) -> None:
        """Answers an open ``session/request_permission``."""
        call("ClientCore.answer_permission", self._inner.answer_permission, arg(request), arg(outcome))

    def receive(self, line: str) -> List[Event]:
        """Applies one line from the agent through UniFFI's calling convention; the events it
        caused (:meth:`receive_line` is the same, cheaper)."""
        return _events(call("ClientCore.receive", self._inner.receive, line))

    def finish(self) -> List[Event]:
        """The agent's output ended: a last line without a newline is still read."""
        return _events(call("ClientCore.finish", self._inner.finish))

    def take_outgoing(self) -> List[str]:
        """Every line to send to the agent, in order."""
        return call("ClientCore.take_outgoing", self._inner.take_outgoing)

    def take_events(self) -> List[Event]:
        """Every event not yet returned (calls queue events too: an item is ``sending``)."""
        return _events(call("ClientCore.take_events", self._inner.take_events))

    def snapshot(self, session_id: str) -> Optional[MirrorSnapshot]:
        """Everything a UI renders for a session (``None`` for a session not open here)."""
        return decode(Optional[MirrorSnapshot], call("ClientCore.snapshot", self._inner.snapshot, session_id))  # type: ignore[no-any-return]

    def item_status(self, session_id: str, message_id: str) -> Optional[ItemStatus]:
        """The status of one of this client's items."""
        return decode(Optional[ItemStatus], call("ClientCore.item_status", self._inner.item_status, session_id, message_id))  # type: ignore[no-any-return]

    def ignored_lines(self) -> int:
        """Lines dropped (malformed, oversized, answers to no request), counted."""
        return int(call("ClientCore.ignored_lines", self._inner.ignored_lines))

    def _line_port(self) -> int:
        """This object's line port, taken once (under a lock: two threads' first lines must not
        take two) and released when the object is collected; the port keeps the connection
        alive, so no line in flight outlives it."""
        with _port_lock:
            if self._port is None:
                port: int = self._inner.line_port()
                weakref.finalize(self, _free_port, port)
                self._port = port
            return self._port

    @checks_itself
    def receive_line(self, line: Union[bytes, bytearray, memoryview, str]) -> List[Event]:
        """Applies one complete line from the agent (a trailing ``\\n`` or ``\\r\\n`` is
        allowed) and returns the events it caused: the same events as :meth:`receive`, in one
        foreign call. A line must not be split across calls; for arbitrary chunks of output use
        :meth:`feed`, and do not interleave the two in the middle of a line.

        Raises ``AcpError.InvalidInput`` for bytes that are not UTF-8 and
        :class:`InvalidArgument` for anything but bytes (``bytes``, ``bytearray``,
        ``memoryview``) or ``str``."""
        if type(line) is not bytes:
            if isinstance(line, str):
                line = line.encode()
            elif isinstance(line, (bytearray, memoryview)):
                line = bytes(line)
            else:
                raise InvalidArgument(f"ClientCore.receive_line: a line is bytes or str, not {type(line).__name__}")
        return self._lines(_receive_into, line)

    @checks_itself
    def feed(self, data: Union[bytes, bytearray, memoryview]) -> List[Event]:
        """Applies bytes the agent wrote, in any chunking (a line may end in a later call), and
        returns the events they caused, through the same path as :meth:`receive_line`.

        Raises :class:`InvalidArgument` for anything but bytes (``bytes``, ``bytearray``,
        ``memoryview``)."""
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise InvalidArgument(f"ClientCore.feed: bytes, not {type(data).__name__}")
            data = bytes(data)
        return self._lines(_feed_into, data)

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
        return self._lines(_feed_into, data)

    def _lines(self, function: "ctypes._NamedFuncPointer", data: bytes) -> List[Event]:
        """Calls ``function`` (a per-line function of the library) with ``data`` and decodes
        the events it wrote."""
        out = _output
        port = self._port
        if port is None:
            port = self._line_port()
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
        if n <= _BULK:
            return _events_decoder.decode(out.memory[:n])
        # Many events at once (a bulk read) are objects the cyclic collector would scan again
        # and again while they are built (none of them can form a cycle): it waits until they
        # are built, as it does for a single line's few.
        pause = gc.isenabled()
        if pause:
            gc.disable()
        try:
            return _events_decoder.decode(out.memory[:n])
        finally:
            if pause:
                gc.enable()


@checked
class AgentCore:
    """The agent side of one agent process (all its sessions), without I/O: the host moves the
    bytes of each connection and runs the turns; the core speaks the protocol. Every call
    returns the :class:`Output` values it caused, in order: lines for connections and actions
    for the runtime of a session."""

    def __init__(self, config: AgentConfig) -> None:
        """An agent keeping its sessions in memory."""
        self._inner = call("AgentCore", _ffi.AgentCore, arg(config))

    @classmethod
    def open(cls, config: AgentConfig, path: str) -> "AgentCore":
        """An agent on a store at ``path``: a SQLite file (created if missing), or a
        ``postgres://`` URL several agent hosts share. Its sessions outlive the process."""
        core = cls.__new__(cls)
        core._inner = call("AgentCore.open", _ffi.AgentCore.open, arg(config), path)
        return core

    @classmethod
    def restore(cls, config: AgentConfig, snapshot: str) -> "AgentCore":
        """An agent continuing from :meth:`snapshot` (history starts empty)."""
        core = cls.__new__(cls)
        core._inner = call("AgentCore.restore", _ffi.AgentCore.restore, arg(config), snapshot)
        return core

    def attach(self, connection: str, role: ConnectionRole = ConnectionRole.CONTROLLER, principal: Optional[str] = None) -> None:
        """Registers a connection with a role, speaking for ``principal`` when given: it sees
        the sessions that principal created and no other (another principal's session is
        answered as one the agent does not know)."""
        if principal is None:
            call("AgentCore.attach", self._inner.attach, connection, arg(role))
        else:
            call("AgentCore.attach", self._inner.attach_as, connection, arg(role), principal)

    def detach(self, connection: str) -> None:
        """A connection went away: it is detached from every session, and the agent's requests
        only it could answer are answered ``cancelled`` (drained with the next call's outputs)."""
        call("AgentCore.detach", self._inner.detach, connection)

    def detach_and_drain(self, connection: str) -> List[Output]:
        """Like :meth:`detach`, returning the outputs it caused."""
        return _outputs(call("AgentCore.detach_and_drain", self._inner.detach_and_drain, connection))

    def attach_to_session(self, connection: str, session_id: str) -> bool:
        """Attaches a connection to a live session; ``False`` when the session is not live."""
        return bool(call("AgentCore.attach_to_session", self._inner.attach_to_session, connection, session_id))

    def attached(self, session_id: str) -> List[str]:
        """The connections attached to a session."""
        return call("AgentCore.attached", self._inner.attached, session_id)

    def create_session(self, session_id: str, cwd: str) -> bool:
        """Creates an idle session with a chosen id; ``False`` when the id is taken."""
        return bool(call("AgentCore.create_session", self._inner.create_session, session_id, cwd))

    def forget_session(self, session_id: str) -> None:
        """Forgets a session and its history."""
        call("AgentCore.forget_session", self._inner.forget_session, session_id)

    def is_live(self, session_id: str) -> bool:
        """Whether the agent holds the session live (R-STATUS-1)."""
        return bool(call("AgentCore.is_live", self._inner.is_live, session_id))

    def renew_every_ms(self) -> Optional[int]:
        """On a store several hosts share: how often to call :meth:`renew_leases`."""
        every: Optional[int] = call("AgentCore.renew_every_ms", self._inner.renew_every_ms)
        return every

    def renew_leases(self) -> None:
        """On a store several hosts share: extends this host's leases."""
        call("AgentCore.renew_leases", self._inner.renew_leases)

    def session_ids(self) -> List[str]:
        """The live sessions."""
        return call("AgentCore.session_ids", self._inner.session_ids)

    def turn(self, session_id: str) -> Optional[TurnPhase]:
        """A live session's turn (``None`` for a session that is not live)."""
        return decode(Optional[TurnPhase], call("AgentCore.turn", self._inner.turn, session_id))  # type: ignore[no-any-return]

    def handle_line(self, connection: str, line: str) -> List[Output]:
        """Applies one line from ``connection``; every output it caused, in order."""
        return _outputs(call("AgentCore.handle_line", self._inner.handle_line, connection, line))

    def handle_text(self, connection: str, lines: str) -> List[Output]:
        """Applies newline-separated lines given as one string (one crossing for many lines)."""
        return _outputs(call("AgentCore.handle_text", self._inner.handle_text, connection, lines))

    def handle_bytes(self, connection: str, data: bytes) -> List[Output]:
        """Feeds raw bytes from ``connection`` in any chunking: complete lines are applied, a
        partial line waits for the next call."""
        return _outputs(call("AgentCore.handle_bytes", self._inner.handle_bytes, connection, data))

    def handle_end(self, connection: str) -> List[Output]:
        """``connection``'s stream ended: a last line without a newline is applied."""
        return _outputs(call("AgentCore.handle_end", self._inner.handle_end, connection))

    def request_permission(self, session_id: str, ask: PermissionAsk) -> PermissionRequestSent:
        """Asks the session's controllers for permission (R-PERM-2): the request's id and the
        outputs; the answer comes later as a ``PermissionAnswered`` action with that id."""
        sent = call("AgentCore.request_permission", self._inner.request_permission, session_id, arg(ask))
        return decode(PermissionRequestSent, sent)  # type: ignore[no-any-return]

    def runtime_event(self, session_id: str, event: RuntimeEvent) -> List[Output]:
        """Applies a runtime event of a session; every output it caused. Raises ``AcpError.Host``
        when the core cannot apply it (nothing was emitted)."""
        return _outputs(call("AgentCore.runtime_event", self._inner.runtime_event, session_id, arg(event)))

    def answer_call(self, call_id: int, result: Any = None) -> List[Output]:
        """Answers the host call ``call_id`` (an ``Output`` ``HostCallMade``) with ``result`` (JSON;
        for an ``Authenticate`` call any value: the connection is logged in); every output it
        caused. Raises ``AcpError.Host`` (``HostError.UNKNOWN_REQUEST``) when the call is not open."""
        return _outputs(call("AgentCore.answer_call", self._inner.answer_call, call_id, arg(result)))

    def refuse_call(self, call_id: int, error: TurnFailure) -> List[Output]:
        """Refuses the host call ``call_id`` with ``error``, the JSON-RPC error the client gets
        (``TurnFailure(code=-32000, message="Authentication required", data={...})``, say)."""
        return _outputs(call("AgentCore.refuse_call", self._inner.refuse_call, call_id, arg(error)))

    def mint_agent_message_id(self) -> str:
        """A fresh id for an agent message or thought."""
        return str(call("AgentCore.mint_agent_message_id", self._inner.mint_agent_message_id))

    def history(self, session_id: str) -> List[HistoryEntry]:
        """The session's history (R-REPLAY-1), as stored."""
        return decode(List[HistoryEntry], call("AgentCore.history", self._inner.history, session_id))  # type: ignore[no-any-return]

    def pending(self, session_id: str) -> List[PendingInject]:
        """The session's pending injects in delivery order."""
        return decode(List[PendingInject], call("AgentCore.pending", self._inner.pending, session_id))  # type: ignore[no-any-return]

    def snapshot(self) -> str:
        """The live state as JSON, for :meth:`restore` (drain first)."""
        return str(call("AgentCore.snapshot", self._inner.snapshot))


def default_agent_config(name: Optional[str] = None, version: Optional[str] = None) -> AgentConfig:
    """The default configuration (queue and steer, replace, steers at break-points), under
    ``name`` and ``version`` when given (else the library's own)."""
    config: AgentConfig = decode(AgentConfig, _ffi.default_agent_config())
    info = msgspec.structs.replace(config.info, name=name or config.info.name, version=version or config.info.version)
    return msgspec.structs.replace(config, info=info)


def library_version() -> str:
    """The library's version."""
    return str(call("library_version", _ffi.library_version))

