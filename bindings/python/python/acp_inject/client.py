"""The asyncio client: one connection to an agent process, many sessions on it.

The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust; each
call here is one ``await``, and a session's events arrive in batches, one per read from the
agent::

    async def allow_all(request: RequestPermissionRequest) -> str:
        return request.options[0].option_id

    async with connect(["my-agent", "--flag"], on_permission=allow_all) as agent:
        session = await agent.new_session("/home/me/project")
        turn = await session.prompt("fix the bug")
        await session.inject("and add a test", mode="steer")
        async for update in turn:          # the turn's session/update values
            ...
        print(await turn.finished())       # its stop reason
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import Any, AsyncIterator, Awaitable, Callable, Generator, List, Optional, Sequence, Set, Tuple, Type, Union

from . import acp_inject_ffi as _ffi
from .acp_inject_ffi import (
    AcpError,
    CancelledPermissionOutcome,
    Implementation,
    InitializeResponse,
    InjectCapabilities,
    InjectMode,
    IdleStateUpdate,
    ItemStatus,
    McpServer,
    MirrorSnapshot,
    PendingItem,
    RequestId,
    RequestPermissionOutcome,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionActivity,
    SessionEvent,
    SessionInfo,
    SessionStatusResponse,
    SessionUpdate,
    StateUpdate,
)
from .enums import StopReason
from ._errors import checked, checked_methods
from .content import Content, blocks

# Ids are plain strings on the wire and in Python.
MessageId = str
PermissionOptionId = str
ToolCallId = str

Mode = Union[InjectMode, str]

#: Answers the agent's permission requests: given the request, the id of the option the user
#: chose, or ``None`` to decline (the request is answered ``cancelled``).
PermissionHandler = Callable[[RequestPermissionRequest], Awaitable[Optional[PermissionOptionId]]]


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

    def __init__(self, inner: _ffi.Session, on_permission: Optional[PermissionHandler] = None) -> None:
        self._inner = inner
        self._on_permission: Optional[PermissionHandler] = None
        # With a handler, one task reads the session's batches as they come (so a request is
        # answered even while nobody reads events, e.g. during ``await prompt(...)``) into this
        # queue: lists of activities, or the error that ended the stream.
        self._reader: Optional["asyncio.Task[None]"] = None
        self._queue: "asyncio.Queue[Union[List[SessionActivity], BaseException]]" = asyncio.Queue()
        self._answering: Set["asyncio.Task[None]"] = set()
        self.on_permission = on_permission

    @property
    def on_permission(self) -> Optional[PermissionHandler]:
        """Answers the agent's permission requests as they arrive, whether or not anything
        reads the session's events (``None``: they are handed out as
        ``SessionActivity.PERMISSION_REQUESTED`` activities for the caller to answer)."""
        return self._on_permission

    @on_permission.setter
    def on_permission(self, handler: Optional[PermissionHandler]) -> None:
        self._on_permission = handler
        if handler is not None and self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            while True:
                kept = []
                for activity in await self._inner.next_events():
                    handler = self._on_permission
                    if handler is not None and isinstance(activity, SessionActivity.PERMISSION_REQUESTED):
                        task = asyncio.get_running_loop().create_task(self._answer(activity.request, activity.params, handler))
                        self._answering.add(task)
                        task.add_done_callback(self._answering.discard)
                    else:
                        kept.append(activity)
                if kept:
                    self._queue.put_nowait(kept)
        except BaseException as e:  # the stream's end (Disconnected) or any failure, for the readers
            self._queue.put_nowait(e)

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    @property
    def id(self) -> str:
        """The session's id."""
        return self._inner.id()

    async def prompt(self, content: Content) -> "PromptTurn":
        """``session/prompt``: returns once the message is inserted, with a handle on the turn
        it opens (:class:`PromptTurn`: its ``message_id``, ``None`` from an agent that answers
        ``{}``; iterate it for the turn's updates, ``await turn.finished()`` for its stop
        reason). During a turn an agent on this toolkit holds the prompt and inserts it when
        the turn ends (so this returns then; ``AcpError.Protocol`` with code -32800 if it is
        never inserted); an agent of an older draft may refuse it with reason
        ``TURN_IN_PROGRESS``. :meth:`inject` says when a message mid-turn is delivered."""
        return PromptTurn(self, await self._inner.prompt(blocks(content)))

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
        """``session/status``: ``status`` is ``SessionStatus.OPEN`` while the agent has the
        session in memory (``state`` is then its foreground state, a snapshot) or
        ``SessionStatus.SAVED`` when it can resume it; ``AcpError.Protocol`` (-32002) for a
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
        outcome = RequestPermissionOutcome.SELECTED(SelectedPermissionOutcome(option_id=PermissionOptionId(option_id)))
        self._inner.answer_permission(request, outcome)

    def answer_permission(self, request: RequestId, outcome: RequestPermissionOutcome) -> None:
        """Answers a permission request."""
        self._inner.answer_permission(request, outcome)

    async def next_events(self) -> List[SessionActivity]:
        """Waits for activity and returns all of it (one batch per read from the agent, or all
        the batches that came since the last call). With :attr:`on_permission` set,
        permission requests are answered by it and left out."""
        if self._reader is None:
            return await self._inner.next_events()
        batches = [await self._queue.get()]
        while not self._queue.empty():
            batches.append(self._queue.get_nowait())
        activities: List[SessionActivity] = []
        for batch in batches:
            if isinstance(batch, BaseException):
                # Every later call ends the same way.
                self._queue.put_nowait(batch)
                if activities:
                    return activities
                raise batch
            activities += batch
        return activities

    async def _answer(self, request: RequestId, params: RequestPermissionRequest, handler: PermissionHandler) -> None:
        chosen = await handler(params)
        if chosen is None:
            self.answer_permission(request, RequestPermissionOutcome.CANCELLED(CancelledPermissionOutcome()))
        else:
            self.allow(request, chosen)

    async def events(self) -> AsyncIterator[SessionActivity]:
        """Every activity of the session, in order, until the connection ends (one consumer:
        a :class:`PromptTurn` being iterated reads the same stream)."""
        while True:
            try:
                batch = await self.next_events()
            except AcpError.Disconnected:
                return
            for activity in batch:
                yield activity


def update_of(activity: SessionActivity) -> Optional[SessionUpdate]:
    """The ``session/update`` an activity carries (a chunk, a tool call, a state update...),
    or ``None`` when it carries something else."""
    if isinstance(activity, SessionActivity.EVENT) and isinstance(activity[0], SessionEvent.UPDATE):
        update: SessionUpdate = activity[0][0]
        return update
    return None


def item_of(activity: SessionActivity) -> Optional[PendingItem]:
    """One of this client's own messages (a prompt or an inject), when the activity is a change
    of its status (``pending``, ``delivered``, ``revoked``...); else ``None``."""
    if isinstance(activity, SessionActivity.EVENT) and isinstance(activity[0], SessionEvent.ITEM):
        item: PendingItem = activity[0][0]
        return item
    return None


def turn_ended(activity: SessionActivity) -> Optional[IdleStateUpdate]:
    """The ``idle`` state update that ends a turn, when the activity is one (its
    ``stop_reason``, ``usage`` and ``error`` say how the turn went); else ``None``."""
    update = update_of(activity)
    return _idle_of(update) if update is not None else None


def _idle_of(update: SessionUpdate) -> Optional[IdleStateUpdate]:
    """The ``idle`` state update, when ``update`` is one."""
    if isinstance(update, SessionUpdate.STATE_UPDATE) and isinstance(update[0], StateUpdate.IDLE):
        idle: IdleStateUpdate = update[0][0]
        return idle
    return None


class PromptTurn:
    """The turn a :meth:`Session.prompt` opened: ``message_id`` is the prompt's id; ``async
    for update in turn`` yields the session's updates (``SessionUpdate`` values: chunks, tool
    calls, the user messages delivered into the turn, state updates) until the turn ends, and
    ``await turn.finished()`` waits for its end and returns its ``StopReason``.

    The turn starts when the agent delivers the prompt (its ``user_message``) and ends at the
    next ``idle`` state after it; steers delivered at its break-points belong to it, a queued
    message opens the next turn. Reading a turn consumes the session's event stream (as
    :meth:`Session.events` does): use one or the other at a time. Permission requests are
    answered by the session's ``on_permission`` handler (set it, or pass it to
    :func:`connect`); without one a request in the turn raises ``AcpError.InvalidInput``."""

    def __init__(self, session: Session, message_id: Optional[MessageId]) -> None:
        self.session = session
        self.message_id = message_id
        self._delivered = False
        self._stop_reason: Optional[StopReason] = None
        self._ended = False
        self._buffered: List[SessionUpdate] = []

    def __repr__(self) -> str:
        state = "ended" if self._ended else "running" if self._delivered else "waiting"
        return f"PromptTurn({self.message_id!r}, {state})"

    def _see(self, update: SessionUpdate) -> bool:
        """Follows the turn through one update; ``True`` when it belongs to the turn."""
        if self._ended:
            return False
        if isinstance(update, SessionUpdate.USER_MESSAGE) and not self._delivered:
            mine = self.message_id is None or update[0].message_id == self.message_id
            self._delivered = mine
            return mine
        if not self._delivered:
            return False
        idle = _idle_of(update)
        if idle is not None:
            self._ended = True
            self._stop_reason = idle.stop_reason
        return True

    async def _next_batch(self) -> List[SessionUpdate]:
        batch = await self.session.next_events()
        updates = []
        for activity in batch:
            if isinstance(activity, SessionActivity.PERMISSION_REQUESTED):
                raise AcpError.InvalidInput(
                    detail=f"the agent asks permission ({activity.params.title!r}) and session {self.session.id} has no on_permission handler"
                )
            update, item = update_of(activity), item_of(activity)
            if update is not None and self._see(update):
                updates.append(update)
            elif item is not None and not self._delivered:
                # An agent that echoes no user_message (ACP v1: the prompt's delivery is its
                # sending) still delivers the item.
                self._delivered = item.status == ItemStatus.DELIVERED and self.message_id is not None and item.message_id == self.message_id
        return updates

    async def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        while self._buffered:
            yield self._buffered.pop(0)
        while not self._ended:
            for update in await self._next_batch():
                yield update

    async def finished(self) -> Optional[StopReason]:
        """Waits until the turn ends; its stop reason (``None`` if the agent gave none)."""
        while not self._ended:
            self._buffered += await self._next_batch()
        return self._stop_reason

    @property
    def ended(self) -> bool:
        """Whether its end was seen."""
        return self._ended


@checked_methods
class Client:
    """A connection to one agent process (see :func:`connect`)."""

    def __init__(self, inner: _ffi.Connection, on_permission: Optional[PermissionHandler] = None) -> None:
        self._inner = inner
        #: Given to every session this client opens (see :attr:`Session.on_permission`).
        self.on_permission = on_permission

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

    async def new_session(
        self, cwd: Optional[str] = None, additional_directories: Sequence[str] = (), mcp_servers: Sequence[McpServer] = ()
    ) -> Session:
        """``session/new``, in ``cwd`` (an absolute path; the current directory by default)."""
        where = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        return Session(await self._inner.new_session(where, list(additional_directories), list(mcp_servers)), self.on_permission)

    async def list_sessions(self, cwd: Optional[str] = None, cursor: Optional[str] = None) -> Tuple[List[SessionInfo], Optional[str]]:
        """``session/list``: one page, and the cursor of the next (``None`` at the end)."""
        page = await self._inner.list_sessions(cwd, cursor)
        return page.sessions, page.next_cursor

    def sessions(self, cwd: Optional[str] = None) -> "SessionList":
        """Every session the agent knows, newest first, page after page: ``await
        client.sessions()`` gives the list, ``async for info in client.sessions()`` reads it
        as the pages come."""
        return SessionList(self, cwd)

    async def resume(self, session_id: str, cwd: str, replay: bool = True) -> Session:
        """``session/resume``; with ``replay`` the conversation is replayed into the session
        (its transcript and event stream) before this returns."""
        return Session(await self._inner.resume(session_id, cwd, replay), self.on_permission)

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


class SessionList:
    """What :meth:`Client.sessions` returns: awaitable (every session, as a list) and
    async-iterable (page by page, as they come)."""

    def __init__(self, client: Client, cwd: Optional[str]) -> None:
        self._client, self._cwd = client, cwd

    async def __aiter__(self) -> AsyncIterator[SessionInfo]:
        cursor: Optional[str] = None
        while True:
            page, cursor = await self._client.list_sessions(self._cwd, cursor)
            for info in page:
                yield info
            if cursor is None:
                return

    async def _all(self) -> List[SessionInfo]:
        return [info async for info in self]

    def __await__(self) -> Generator[Any, None, List[SessionInfo]]:
        return self._all().__await__()


_checked_connect = checked(_ffi.connect, "connect")
_checked_connect_url = checked(_ffi.connect_url, "connect")


class _Connecting:
    """The awaitable and async context manager :func:`connect` returns."""

    def __init__(
        self, target: Union[str, Sequence[str]], options: _ffi.ConnectOptions, token: Optional[str], on_permission: Optional[PermissionHandler]
    ) -> None:
        self._target, self._options, self._token, self._on_permission = target, options, token, on_permission
        self._client: Optional[Client] = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._open().__await__()

    async def _open(self) -> Client:
        if isinstance(self._target, str):
            self._client = Client(await _checked_connect_url(self._target, self._token, self._options), self._on_permission)
        else:
            self._client = Client(await _checked_connect(list(self._target), self._options), self._on_permission)
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
    on_permission: Optional[PermissionHandler] = None,
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
    ``AcpError.Rejected(CallRejected.STEER_NOT_SUPPORTED)``).

    ``on_permission`` answers the agent's permission requests in every session of the client
    (see :data:`PermissionHandler`); without it they arrive as activities to answer with
    :meth:`Session.allow`."""
    options = _ffi.default_connect_options()
    options.client = Implementation(name=name, version=version)
    options.pending_updates = pending_updates
    options.forward_stderr = forward_stderr
    options.handshake_timeout_ms = int(handshake_timeout * 1000)
    options.steer_fallback = steer_fallback
    if isinstance(target, str) and "://" not in target:
        raise TypeError(f"connect({target!r}): a command is a list (program and arguments); a string is a URL such as ws://host:port/acp")
    if token is not None and not isinstance(target, str):
        raise TypeError("connect(token=...): a token is for a URL; a command's credentials are its own")
    return _Connecting(target, options, token, on_permission)
