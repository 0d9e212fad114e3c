"""The asyncio client: one connection to an agent process (or endpoint), many sessions on it.

The connection (ids, routing, the read loop, the agent's stderr and exit) runs in Rust; each
call here is one ``await``, and a session's activity arrives in batches, one per read from the
agent::

    async def allow_all(request: RequestPermissionRequest) -> str:
        return request.options[0].option_id

    async with connect(["my-agent", "--flag"], on_permission=allow_all) as agent:
        session = await agent.new_session()
        turn = await session.prompt("fix the bug")
        await session.inject("and add a test", mode="steer")
        async for update in turn:          # the turn's updates
            match update:
                case AgentMessageChunk(content=TextContent(text=t)):
                    print(t, end="")
        print(await turn.finished())       # its stop reason
"""

from __future__ import annotations

import asyncio
import collections
import os
from types import TracebackType
from typing import Any, AsyncIterator, Awaitable, Callable, Deque, Dict, Generator, List, Optional, Sequence, Set, Tuple, Type, Union

import msgspec

from ._errors import acall, arg, call, checked
from .acp_inject_ffi import acp_inject_ffi as _ffi
from .content import Content, blocks
from .values import (
    AcpError,
    AuthMethod,
    CancelledPermissionOutcome,
    ConnectOptions,
    IdleStateUpdate,
    Implementation,
    InitializeResponse,
    InjectCapabilities,
    InjectMode,
    ItemStatus,
    McpServer,
    MirrorSnapshot,
    Notification,
    PendingItem,
    PermissionRequested,
    RequestId,
    RequestPermissionOutcome,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionActivity,
    SessionInfo,
    SessionPage,
    SessionStatusResponse,
    SessionUpdate,
    SteerFallback,
    StopReason,
    UserMessage,
    decode,
)

#: Answers the agent's permission requests: given the request, the id of the option the user
#: chose, or ``None`` to decline (the request is answered ``cancelled``).
PermissionHandler = Callable[[RequestPermissionRequest], Awaitable[Optional[str]]]

#: The params of an extension request or notification: a JSON object or array.
JsonParams = Union[Dict[str, Any], List[Any]]

_activities = msgspec.msgpack.Decoder(List[SessionActivity])


def _mode(mode: Union[InjectMode, str]) -> InjectMode:
    try:
        return InjectMode(mode)
    except ValueError:
        raise ValueError(f"unknown inject mode {mode!r} (queue or steer)") from None


@checked
class Session:
    """A session open on a :class:`Client`.

    Its activity (:meth:`events`, :meth:`next_events`) is one flat stream of values: every
    session update (``AgentMessageChunk``, ``ToolCallUpdate``, ``IdleStateUpdate`` when a turn
    ends, …), this client's own items changing (``PendingItem``), violations (``Violation``),
    permission requests (``PermissionRequested``, when no handler answers them), the session's
    end (``SessionClosed``)."""

    def __init__(self, inner: Any, on_permission: Optional[PermissionHandler] = None) -> None:
        self._inner = inner
        self._on_permission: Optional[PermissionHandler] = None
        # With a handler, one task reads the session's batches as they come (so a request is
        # answered even while nobody reads events, e.g. during ``await prompt(...)``) into this
        # queue: lists of activities, or the error that ended the stream.
        self._reader: Optional["asyncio.Task[None]"] = None
        self._queue: "asyncio.Queue[Union[List[SessionActivity], BaseException]]" = asyncio.Queue()
        self._answering: Set["asyncio.Task[None]"] = set()
        # Activities read and handed back (what followed a turn's end in its batch): the next
        # read returns them first.
        self._backlog: Deque[SessionActivity] = collections.deque()
        self.on_permission = on_permission

    @property
    def on_permission(self) -> Optional[PermissionHandler]:
        """Answers the agent's permission requests as they arrive, whether or not anything
        reads the session's events (``None``: they are handed out as ``PermissionRequested``
        activities, to answer with :meth:`allow` or :meth:`answer_permission`)."""
        return self._on_permission

    @on_permission.setter
    def on_permission(self, handler: Optional[PermissionHandler]) -> None:
        self._on_permission = handler
        if handler is not None and self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read_batch(self) -> List[SessionActivity]:
        return _activities.decode(await acall("Session.next_events", self._inner.next_events))

    async def _read(self) -> None:
        try:
            while True:
                kept = []
                for activity in await self._read_batch():
                    handler = self._on_permission
                    if handler is not None and isinstance(activity, PermissionRequested):
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
        return str(self._inner.id())

    async def prompt(self, content: Content) -> "PromptTurn":
        """``session/prompt``: returns once the message is inserted, with a handle on the turn
        it opens (:class:`PromptTurn`: its ``message_id``, ``None`` from an agent that answers
        ``{}``; iterate it for the turn's updates, ``await turn.finished()`` for its stop
        reason). During a turn an agent on this toolkit holds the prompt and inserts it when
        the turn ends (so this returns then); :meth:`inject` says when a message mid-turn is
        delivered."""
        message_id = decode(Optional[str], await acall("Session.prompt", self._inner.prompt, arg(blocks(content))))
        return PromptTurn(self, message_id)

    async def inject(self, content: Content, mode: Union[InjectMode, str] = InjectMode.QUEUE) -> str:
        """``session/inject`` (``queue`` by default, or ``steer``); returns the message's id.
        Raises ``AcpError.Rejected`` without sending when the agent does not offer the mode."""
        return await acall("Session.inject", self._inner.inject, arg(_mode(mode)), arg(blocks(content)))

    async def revoke(self, message_id: str) -> None:
        """``session/revoke_inject`` of one of this client's pending injects."""
        await acall("Session.revoke", self._inner.revoke, message_id)

    async def replace(self, message_id: str, content: Content) -> None:
        """``session/replace_inject``: new content, same id, mode and position."""
        await acall("Session.replace", self._inner.replace, message_id, arg(blocks(content)))

    def cancel(self) -> None:
        """``session/cancel``: the running turn ends ``cancelled``; pending injects survive."""
        call("Session.cancel", self._inner.cancel)

    async def status(self) -> SessionStatusResponse:
        """``session/status``: ``status`` is ``SessionStatus.OPEN`` while the agent has the
        session in memory (``state`` is then its foreground state, a snapshot) or
        ``SessionStatus.SAVED`` when it can resume it; ``AcpError.Protocol`` (-32002) for a
        session the agent does not know."""
        return decode(SessionStatusResponse, await acall("Session.status", self._inner.status))  # type: ignore[no-any-return]

    async def close(self) -> None:
        """``session/close``."""
        await acall("Session.close", self._inner.close)

    def snapshot(self) -> MirrorSnapshot:
        """Everything a UI renders now: state, own pending items, transcript, violations."""
        snap: Optional[MirrorSnapshot] = decode(Optional[MirrorSnapshot], call("Session.snapshot", self._inner.snapshot))
        if snap is None:
            raise AcpError.InvalidInput(f"session {self.id} is not open on this connection")
        return snap

    def allow(self, request: RequestId, option_id: str) -> None:
        """Answers a permission request with the chosen option."""
        self.answer_permission(request, SelectedPermissionOutcome(option_id=option_id))

    def answer_permission(self, request: RequestId, outcome: RequestPermissionOutcome) -> None:
        """Answers a permission request."""
        call("Session.answer_permission", self._inner.answer_permission, arg(request), arg(outcome))

    async def next_events(self) -> List[SessionActivity]:
        """Waits for activity and returns all of it (one batch per read from the agent, or all
        the batches that came since the last call). With :attr:`on_permission` set,
        permission requests are answered by it and left out."""
        if self._backlog:
            taken = list(self._backlog)
            self._backlog.clear()
            return taken
        if self._reader is None:
            return await self._read_batch()
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

    def _unread(self, activities: Sequence[SessionActivity]) -> None:
        """Hands ``activities`` back: the next read returns them first, in order."""
        self._backlog.extendleft(reversed(activities))

    async def _answer(self, request: RequestId, params: RequestPermissionRequest, handler: PermissionHandler) -> None:
        chosen = await handler(params)
        if chosen is None:
            self.answer_permission(request, CancelledPermissionOutcome())
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


class PromptTurn:
    """The turn a :meth:`Session.prompt` opened: ``message_id`` is the prompt's id; ``async
    for update in turn`` yields the session's updates (chunks, tool calls, the user messages
    delivered into the turn, state updates) until the turn ends, and ``await
    turn.finished()`` waits for its end and returns its ``StopReason``.

    The turn starts when the agent delivers the prompt (its ``user_message``) and ends at the
    next ``IdleStateUpdate`` after it; steers delivered at its break-points belong to it, a
    queued message opens the next turn. Reading a turn reads the session's event stream (as
    :meth:`Session.events` does: use one or the other at a time); what follows the turn's end
    stays in the stream for the next reader. Permission requests are answered by the session's
    ``on_permission`` handler (set it, or pass it to :func:`connect`); without one a request in
    the turn raises ``AcpError.InvalidInput``."""

    def __init__(self, session: Session, message_id: Optional[str]) -> None:
        self.session = session
        self.message_id = message_id
        self._delivered = False
        self._stop_reason: Optional[StopReason] = None
        self._ended = False
        self._buffered: Deque[SessionUpdate] = collections.deque()

    def __repr__(self) -> str:
        state = "ended" if self._ended else "running" if self._delivered else "waiting"
        return f"PromptTurn({self.message_id!r}, {state})"

    def _see(self, update: SessionUpdate) -> bool:
        """Follows the turn through one update; ``True`` when it belongs to the turn."""
        if isinstance(update, UserMessage) and not self._delivered:
            mine = self.message_id is None or update.message_id == self.message_id
            self._delivered = mine
            return mine
        if not self._delivered:
            return False
        if isinstance(update, IdleStateUpdate):
            self._ended = True
            self._stop_reason = update.stop_reason
        return True

    async def _next_batch(self) -> List[SessionUpdate]:
        batch = await self.session.next_events()
        updates: List[SessionUpdate] = []
        for i, activity in enumerate(batch):
            if isinstance(activity, PermissionRequested):
                raise AcpError.InvalidInput(
                    f"the agent asks permission ({activity.params.title!r}) and session {self.session.id} has no on_permission handler"
                )
            if isinstance(activity, SessionUpdate):
                if self._see(activity):
                    updates.append(activity)
                    if self._ended:
                        # What follows the end belongs to the session's stream.
                        self.session._unread(batch[i + 1 :])
                        return updates
            elif isinstance(activity, PendingItem) and not self._delivered:
                # An agent that echoes no user_message (ACP v1: the prompt's delivery is its
                # sending) still delivers the item.
                self._delivered = (
                    activity.status == ItemStatus.DELIVERED and self.message_id is not None and activity.message_id == self.message_id
                )
        return updates

    async def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        while self._buffered:
            yield self._buffered.popleft()
        while not self._ended:
            for update in await self._next_batch():
                yield update

    async def finished(self) -> Optional[StopReason]:
        """Waits until the turn ends; its stop reason (``None`` if the agent gave none)."""
        while not self._ended:
            self._buffered.extend(await self._next_batch())
        return self._stop_reason

    @property
    def ended(self) -> bool:
        """Whether its end was seen."""
        return self._ended


@checked
class Client:
    """A connection to one agent (see :func:`connect`)."""

    def __init__(self, inner: Any, on_permission: Optional[PermissionHandler] = None) -> None:
        self._inner = inner
        self._agent: Optional[InitializeResponse] = None
        #: Given to every session this client opens (see :attr:`Session.on_permission`).
        self.on_permission = on_permission

    @property
    def agent(self) -> InitializeResponse:
        """The agent's ``initialize`` answer: version, identity, capabilities."""
        if self._agent is None:
            self._agent = decode(InitializeResponse, call("Connection.agent", self._inner.agent))
        return self._agent

    @property
    def inject(self) -> Optional[InjectCapabilities]:
        """What the agent offers for ``session/inject`` (``None``: no inject)."""
        caps = self.agent.capabilities
        session = caps.session if caps else None
        return session.inject if session else None

    @property
    def auth_methods(self) -> List[AuthMethod]:
        """The agent's ``authMethods`` (``AuthMethodAgent``, ``AuthMethodTerminal``, or an
        ``OtherAuthMethod`` of a type this version does not know); empty when it needs none."""
        return list(self.agent.auth_methods or [])

    async def authenticate(self, method_id: str) -> None:
        """``auth/login`` with one of :attr:`auth_methods` (``authenticate`` to an ACP v1
        agent). An agent that requires it answers the session methods with
        ``AcpError.AuthRequired`` until this succeeds. Raises ``AcpError.Rejected`` without
        sending for a method the agent does not advertise, or a ``terminal`` one (the app runs
        the agent in a terminal for it instead)."""
        await acall("Connection.authenticate", self._inner.authenticate, method_id)

    async def logout(self) -> None:
        """``auth/logout``."""
        await acall("Connection.logout", self._inner.logout)

    async def ext_request(self, method: str, params: Optional[JsonParams] = None) -> Any:
        """A request of an extension (``method`` starts with ``_``; ``params`` a dict or a
        list): the agent's result, as JSON (dicts, lists, str, int, float, bool, None). An
        error answer raises ``AcpError.Protocol``."""
        return decode(Any, await acall("Connection.ext_request", self._inner.ext_request, method, arg(params)))

    def ext_notify(self, method: str, params: Optional[JsonParams] = None) -> None:
        """A notification of an extension (``method`` starts with ``_``)."""
        call("Connection.ext_notify", self._inner.ext_notify, method, arg(params))

    async def next_notification(self) -> Notification:
        """The next notification of the agent's that the library does not handle itself (an
        extension's, such as ``_auth/status_update``, or a method it does not know), in
        order; ``AcpError.Disconnected`` once the connection has ended and none is left."""
        return decode(Notification, await acall("Connection.next_notification", self._inner.next_notification))  # type: ignore[no-any-return]

    async def notifications(self) -> AsyncIterator[Notification]:
        """Every such notification, as it comes, until the connection ends."""
        while True:
            try:
                yield await self.next_notification()
            except AcpError.Disconnected:
                return

    async def new_session(
        self, cwd: Optional[str] = None, additional_directories: Sequence[str] = (), mcp_servers: Sequence[McpServer] = ()
    ) -> Session:
        """``session/new``, in ``cwd`` (the current directory by default)."""
        where = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        inner = await acall("Connection.new_session", self._inner.new_session, where, list(additional_directories), arg(list(mcp_servers)))
        return Session(inner, self.on_permission)

    async def list_sessions(self, cwd: Optional[str] = None, cursor: Optional[str] = None) -> SessionPage:
        """``session/list``: one page (``sessions``, and ``next_cursor``: ``None`` at the end)."""
        return decode(SessionPage, await acall("Connection.list_sessions", self._inner.list_sessions, cwd, cursor))  # type: ignore[no-any-return]

    def sessions(self, cwd: Optional[str] = None) -> "SessionList":
        """Every session the agent knows, most recently created first, page after page: ``await
        client.sessions()`` gives the list, ``async for info in client.sessions()`` reads it
        as the pages come."""
        return SessionList(self, cwd)

    async def resume(self, session_id: str, cwd: Optional[str] = None, replay: bool = True) -> Session:
        """``session/resume``; with ``replay`` the conversation is replayed into the session
        (its transcript and event stream) before this returns."""
        where = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        return Session(await acall("Connection.resume", self._inner.resume, session_id, where, replay), self.on_permission)

    async def close(self) -> None:
        """Closes the connection: the agent's stdin closes, it may exit, else it is killed."""
        await acall("Connection.close", self._inner.close)

    def ignored(self) -> List[str]:
        """Agent lines the connection could not use, most recent last."""
        return call("Connection.ignored", self._inner.ignored)

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
            page = await self._client.list_sessions(self._cwd, cursor)
            for info in page.sessions:
                yield info
            cursor = page.next_cursor
            if cursor is None:
                return

    async def _all(self) -> List[SessionInfo]:
        return [info async for info in self]

    def __await__(self) -> Generator[Any, None, List[SessionInfo]]:
        return self._all().__await__()


class _Connecting:
    """The awaitable and async context manager :func:`connect` returns."""

    def __init__(self, target: Union[str, Sequence[str]], options: ConnectOptions, token: Optional[str], on_permission: Optional[PermissionHandler]) -> None:
        self._target, self._options, self._token, self._on_permission = target, options, token, on_permission
        self._client: Optional[Client] = None

    def __await__(self) -> Generator[Any, None, Client]:
        return self._open().__await__()

    async def _open(self) -> Client:
        options = arg(self._options)
        if isinstance(self._target, str):
            inner = await acall("connect", _ffi.connect_url, self._target, self._token, options)
        else:
            inner = await acall("connect", _ffi.connect, list(self._target), options)
        self._client = Client(inner, self._on_permission)
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
    steer_fallback: Optional[SteerFallback] = None,
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
    ``AcpError.Rejected`` with reason ``CallRejected.STEER_NOT_SUPPORTED``).

    ``on_permission`` answers the agent's permission requests in every session of the client
    (see :data:`PermissionHandler`); without it they arrive as activities to answer with
    :meth:`Session.allow`."""
    if isinstance(target, str) and "://" not in target:
        raise TypeError(f"connect({target!r}): a command is a list (program and arguments); a string is a URL such as ws://host:port/acp")
    if token is not None and not isinstance(target, str):
        raise TypeError("connect(token=...): a token is for a URL; a command's credentials are its own")
    options = ConnectOptions(
        client=Implementation(name=name, version=version),
        pending_updates=pending_updates,
        forward_stderr=forward_stderr,
        handshake_timeout_ms=int(handshake_timeout * 1000),
        steer_fallback=steer_fallback,
    )
    return _Connecting(target, options, token, on_permission)


def turn_ended(activity: SessionActivity) -> Optional[IdleStateUpdate]:
    """The ``IdleStateUpdate`` that ends a turn, when ``activity`` is one (its ``stop_reason``,
    ``usage`` and ``error`` say how the turn went); else ``None``."""
    return activity if isinstance(activity, IdleStateUpdate) else None


__all__: Tuple[str, ...] = ("Client", "PermissionHandler", "PromptTurn", "Session", "SessionList", "connect", "turn_ended")
