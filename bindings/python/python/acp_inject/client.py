"""The asyncio client: one connection to an agent process, many sessions on it.

The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust; each
call here is one ``await``, and a session's events arrive in batches, one per read from the
agent::

    async with connect(["my-agent", "--flag"]) as agent:
        session = await agent.new_session("/home/me/project")
        await session.prompt("fix the bug")
        async for activity in session.events():
            ...
"""

from __future__ import annotations

from types import TracebackType
from typing import AsyncIterator, List, Optional, Sequence, Tuple, Type, Union

from . import acp_inject_ffi as _ffi
from .acp_inject_ffi import (
    AcpError,
    Implementation,
    InitializeResponse,
    InjectCapabilities,
    InjectMode,
    McpServer,
    MirrorSnapshot,
    RequestId,
    RequestPermissionOutcome,
    SelectedPermissionOutcome,
    SessionActivity,
    SessionInfo,
    SessionStatusResponse,
)
from ._errors import checked, checked_methods
from .content import Content, blocks

# Ids are plain strings on the wire and in Python.
MessageId = str
PermissionOptionId = str
ToolCallId = str

Mode = Union[InjectMode, str]


def _mode(mode: Mode) -> InjectMode:
    if isinstance(mode, InjectMode):
        return mode
    try:
        return InjectMode[mode.upper()]
    except KeyError:
        raise ValueError(f"unknown inject mode {mode!r} (queue or steer)") from None


@checked_methods
class Session:
    """A session open on a :class:`Client`."""

    def __init__(self, inner: _ffi.Session) -> None:
        self._inner = inner

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    @property
    def id(self) -> str:
        """The session's id."""
        return self._inner.id()

    async def prompt(self, content: Content) -> Optional[MessageId]:
        """``session/prompt``: returns once the message is inserted, with its id (``None``
        from an agent that answers ``{}``). During a turn an agent on this toolkit holds it and
        inserts it when the turn ends (so this returns then; ``AcpError.Protocol`` with code
        -32800 if it is never inserted); an agent of an older draft may refuse it with reason
        ``TURN_IN_PROGRESS``. :meth:`inject` says when a message mid-turn is delivered."""
        return await self._inner.prompt(blocks(content))

    async def inject(self, content: Content, mode: Mode = InjectMode.QUEUE) -> MessageId:
        """``session/inject`` (``queue`` by default, or ``steer``); returns the message's id.
        Raises ``AcpError.Rejected`` without sending when the agent does not offer the mode."""
        return await self._inner.inject(_mode(mode), blocks(content))

    async def revoke(self, message_id: MessageId) -> None:
        """``session/revoke_inject`` of one of this client's pending injects."""
        await self._inner.revoke(message_id)

    async def replace(self, message_id: MessageId, content: Content) -> None:
        """``session/replace_inject``: new content, same id, mode and position."""
        await self._inner.replace(message_id, blocks(content))

    def cancel(self) -> None:
        """``session/cancel``: the running turn ends ``cancelled``; pending injects survive."""
        self._inner.cancel()

    async def status(self) -> SessionStatusResponse:
        """``session/status``: ``status`` is ``SessionStatus.OPEN()`` while the agent has the
        session in memory (``state`` is then its foreground state, a snapshot) or
        ``SessionStatus.SAVED()`` when it can resume it; ``AcpError.Protocol`` (-32002) for a
        session the agent does not know."""
        return await self._inner.status()

    async def close(self) -> None:
        """``session/close``."""
        await self._inner.close()

    def snapshot(self) -> MirrorSnapshot:
        """Everything a UI renders now: state, own pending items, transcript, violations."""
        snap = self._inner.snapshot()
        if snap is None:
            raise AcpError.InvalidInput(detail=f"session {self.id} is not open on this connection")
        return snap

    def allow(self, request: RequestId, option_id: str) -> None:
        """Answers a permission request with the chosen option."""
        outcome = RequestPermissionOutcome.SELECTED(SelectedPermissionOutcome(option_id=PermissionOptionId(option_id), meta=None))
        self._inner.answer_permission(request, outcome)

    def answer_permission(self, request: RequestId, outcome: RequestPermissionOutcome) -> None:
        """Answers a permission request."""
        self._inner.answer_permission(request, outcome)

    async def next_events(self) -> List[SessionActivity]:
        """Waits for activity and returns all of it (one batch per read from the agent)."""
        return await self._inner.next_events()

    async def events(self) -> AsyncIterator[SessionActivity]:
        """Every activity of the session, in order, until the connection ends."""
        while True:
            try:
                batch = await self._inner.next_events()
            except AcpError.Disconnected:
                return
            for activity in batch:
                yield activity


@checked_methods
class Client:
    """A connection to one agent process (see :func:`connect`)."""

    def __init__(self, inner: _ffi.Connection) -> None:
        self._inner = inner

    @property
    def agent(self) -> InitializeResponse:
        """The agent's ``initialize`` answer: version, identity, capabilities."""
        return self._inner.agent()

    @property
    def inject(self) -> Optional[InjectCapabilities]:
        """What the agent offers for ``session/inject`` (``None``: no inject)."""
        caps = self.agent.capabilities
        session = caps.session if caps else None
        return session.inject if session else None

    async def new_session(self, cwd: str, additional_directories: Sequence[str] = (), mcp_servers: Sequence[McpServer] = ()) -> Session:
        """``session/new``."""
        return Session(await self._inner.new_session(cwd, list(additional_directories), list(mcp_servers)))

    async def list_sessions(self, cwd: Optional[str] = None, cursor: Optional[str] = None) -> Tuple[List[SessionInfo], Optional[str]]:
        """``session/list``: one page, and the cursor of the next (``None`` at the end)."""
        page = await self._inner.list_sessions(cwd, cursor)
        return page.sessions, page.next_cursor

    async def sessions(self, cwd: Optional[str] = None) -> AsyncIterator[SessionInfo]:
        """Every session the agent knows, newest first, page after page."""
        cursor: Optional[str] = None
        while True:
            page, cursor = await self.list_sessions(cwd, cursor)
            for info in page:
                yield info
            if cursor is None:
                return

    async def resume(self, session_id: str, cwd: str, replay: bool = True) -> Session:
        """``session/resume``; with ``replay`` the conversation is replayed into the session
        (its transcript and event stream) before this returns."""
        return Session(await self._inner.resume(session_id, cwd, replay))

    async def close(self) -> None:
        """Closes the connection: the agent's stdin closes, it may exit, else it is killed."""
        await self._inner.close()

    def ignored(self) -> List[str]:
        """Agent lines the connection could not use, most recent last."""
        return self._inner.ignored()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.close()


_checked_connect = checked(_ffi.connect, "connect")
_checked_connect_url = checked(_ffi.connect_url, "connect")


class _Connecting:
    """The awaitable and async context manager :func:`connect` returns."""

    def __init__(self, target: Union[str, Sequence[str]], options: _ffi.ConnectOptions, token: Optional[str]) -> None:
        self._target, self._options, self._token = target, options, token
        self._client: Optional[Client] = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._open().__await__()

    async def _open(self) -> Client:
        if isinstance(self._target, str):
            self._client = Client(await _checked_connect_url(self._target, self._token, self._options))
        else:
            self._client = Client(await _checked_connect(list(self._target), self._options))
        return self._client

    async def __aenter__(self) -> Client:
        return await self._open()

    async def __aexit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self._client is not None:
            await self._client.close()


def connect(
    target: Union[str, Sequence[str]],
    *,
    token: Optional[str] = None,
    name: str = "acp-inject-python",
    version: str = "0",
    pending_updates: bool = True,
    forward_stderr: bool = True,
    handshake_timeout: float = 30.0,
    steer_fallback: Optional[_ffi.SteerFallback] = None,
) -> _Connecting:
    """Connects to an agent: ``target`` is a command (a list: program and arguments) to start
    and talk to over stdio, or a URL (a string) to reach over the network: ``ws://`` or
    ``wss://`` over WebSocket, ``http://`` or ``https://`` over Streamable HTTP (the upstream
    remote transport; the ``/acp`` path included). ``token`` is sent as
    ``Authorization: Bearer <token>`` on the network. Use as ``async with connect(target) as
    client`` or ``client = await connect(target)``. Raises ``AcpError.Disconnected`` when the
    agent cannot be started or reached, or exits or drops the connection (with its exit status
    and the end of its stderr, for a process). Over the network a dropped connection is
    normal: connect again and ``resume`` each session (its turns went on in the agent; the
    replay brings back the transcript and the pending list).

    The agent may speak ACP v1 or v2 (``client.agent.protocol_version``). For one that takes
    no injects (every v1 agent), queued messages are held by this client and sent as prompts
    when the turn ends; ``steer_fallback`` says what a steer does then
    (``SteerFallback.QUEUE`` or ``SteerFallback.CANCEL_AND_RESEND``; ``None`` raises
    ``AcpError.Rejected(CallRejected.STEER_NOT_SUPPORTED)``)."""
    options = _ffi.default_connect_options()
    options.client = Implementation(name=name, title=None, version=version, meta=None)
    options.pending_updates = pending_updates
    options.forward_stderr = forward_stderr
    options.handshake_timeout_ms = int(handshake_timeout * 1000)
    options.steer_fallback = steer_fallback
    if isinstance(target, str) and "://" not in target:
        raise TypeError(f"connect({target!r}): a command is a list (program and arguments); a string is a URL such as ws://host:port/acp")
    if token is not None and not isinstance(target, str):
        raise TypeError("connect(token=...): a token is for a URL; a command's credentials are its own")
    return _Connecting(target, options, token)
