"""Agents written in Python: subclass :class:`Agent`, implement :meth:`Agent.run`, call
:func:`run_agent`. The library serves the protocol over stdio — ``initialize``, sessions (new,
list, resume with replay, close, status), prompts, queue and steer injects, revoke, replace,
cancel — and calls :meth:`Agent.run` for each turn with the messages that open it; over the
network with :func:`listen` (or ``run_agent(agent, listen="127.0.0.1:8080")``).

Inside a turn, :class:`Turn` streams the agent's output, asks permission, and reports
break-points, where steers the user sent mid-turn are delivered and handed back::

    class Echo(Agent):
        async def run(self, turn, messages):
            turn.say("You said: " + text_of(messages[0].content))

    run_agent(Echo())

stdout carries the protocol: log to stderr.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, List, Mapping, Optional, Sequence, Tuple, TypeVar, cast

from ._core import default_agent_config
from ._errors import acall, arg, call, checked, to_ffi
from .acp_inject_ffi import acp_inject_ffi as _ffi
from .content import text
from .values import (
    AcpError,
    AgentConfig,
    AuthMethod,
    AuthSupport,
    BreakPoint,
    ListenLimits,
    PendingInject,
    PermissionOption,
    PermissionOptionKind,
    ProtocolError,
    RequestPermissionOutcome,
    SelectedPermissionOutcome,
    SessionSetup,
    SessionUpdate,
    SteerInStream,
    StopReason,
    ToolCallContent,
    ToolCallContentBlock,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    TurnEnd,
    UserInput,
    decode,
)


@checked
class Turn:
    """One running turn: what the agent says and does, and what the user sends meanwhile."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._message: Optional[str] = None

    @property
    def session_id(self) -> str:
        """The session."""
        return str(self._ctx.session_id())

    @property
    def cwd(self) -> str:
        """The session's working directory."""
        return str(self._ctx.cwd())

    def new_message(self) -> str:
        """Starts a new agent message; :meth:`say` then streams into it."""
        self._message = str(self._ctx.new_message_id())
        return self._message

    def say(self, words: str) -> None:
        """Streams text into the current agent message (started on first use)."""
        message = self._message if self._message is not None else self.new_message()
        call("Turn.say", self._ctx.send_text, message, words)

    def send(self, update: SessionUpdate) -> None:
        """Sends any of the agent's own updates (thoughts, plans, usage, session info, …)."""
        call("Turn.send", self._ctx.send, arg(update))

    def tool_call(
        self,
        tool_call_id: str,
        status: ToolCallStatus,
        title: Optional[str] = None,
        kind: Optional[ToolKind] = None,
        output: Optional[str] = None,
    ) -> None:
        """Reports a tool call (created or changed); ``output`` becomes its text content."""
        content: Optional[List[ToolCallContent]] = None
        if output is not None:
            content = [ToolCallContentBlock(content=text(output))]
        self.send(ToolCallUpdate(tool_call_id=tool_call_id, title=title, kind=kind, status=status, content=content))

    def break_point(self, kind: BreakPoint = BreakPoint.TOOL_RESULT) -> List[UserInput]:
        """A safe point (a tool result, between model steps): steers sent meanwhile are
        delivered now and returned, for the model to read."""
        return decode(List[UserInput], call("Turn.break_point", self._ctx.break_point, arg(kind)))  # type: ignore[no-any-return]

    def stream_started(self) -> None:
        """A model stream with no tool call pending began."""
        call("Turn.stream_started", self._ctx.stream_started)

    def stream_finished(self) -> None:
        """That stream ended."""
        call("Turn.stream_finished", self._ctx.stream_finished)

    @property
    def cancelled(self) -> bool:
        """The user cancelled the turn: stop and return."""
        return bool(self._ctx.is_cancelled())

    async def wait_cancelled(self) -> None:
        """Returns when the user cancels the turn."""
        await self._ctx.cancelled()

    @property
    def interrupt_requested(self) -> bool:
        """A steer asked to cut the current model stream (``steerInStream: interrupt``)."""
        return bool(self._ctx.interrupt_requested())

    async def sleep(self, seconds: float) -> bool:
        """Waits, unless the user cancels first; returns ``False`` when cancelled."""
        if self.cancelled:
            return False
        waiter = asyncio.ensure_future(self.wait_cancelled())
        try:
            done, _ = await asyncio.wait({waiter}, timeout=seconds)
        finally:
            waiter.cancel()
        return not done and not self.cancelled

    async def permission(
        self,
        title: str,
        options: Sequence[Tuple[str, str, PermissionOptionKind]] = (),
        *,
        tool_call_id: Optional[str] = None,
    ) -> Optional[str]:
        """Asks the user (``session/request_permission``); returns the chosen option id, or
        ``None`` when the request was cancelled. The default options are allow/reject once.
        ``tool_call_id`` names the tool call the request is about (an ACP v1 client gets it as
        the request's ``toolCall``)."""
        opts = [
            PermissionOption(option_id=oid, name=name, kind=kind)
            for oid, name, kind in (options or (("allow", "Allow", PermissionOptionKind.ALLOW_ONCE), ("reject", "Reject", PermissionOptionKind.REJECT_ONCE)))
        ]
        answer = await acall("Turn.permission", self._ctx.request_permission, title, None, arg(opts), tool_call_id)
        outcome: RequestPermissionOutcome = decode(RequestPermissionOutcome, answer)
        if isinstance(outcome, SelectedPermissionOutcome):
            return outcome.option_id
        return None


class Agent:
    """Subclass and implement :meth:`run`; the other hooks are optional."""

    async def run(self, turn: Turn, messages: List[UserInput]) -> Optional[TurnEnd]:
        """One turn, opened by ``messages`` (empty for a turn the agent started itself).
        Return ``None`` to end it normally, or a :class:`TurnEnd` with another stop reason or
        usage."""
        raise NotImplementedError

    async def opened(self, session_id: str, setup: SessionSetup) -> None:
        """A client created a session (``cwd``, ``additional_directories``, ``mcp_servers``)."""

    async def resumed(self, session_id: str, setup: SessionSetup) -> None:
        """A client resumed a session."""

    async def closed(self, session_id: str, dropped: List[PendingInject]) -> None:
        """A session closed; ``dropped`` were pending and will never be delivered."""

    async def authenticate(self, method_id: str) -> None:
        """A client logs in with ``method_id``, one of the ``agent`` methods the configuration
        advertises (``agent_config(auth_methods=…)``): check the credentials it stands for.
        Return to log the connection in; raise ``refused(-32000, "Authentication required",
        "why")`` (an ``AcpError.Protocol``) to refuse with that error. The default refuses."""
        raise refused(-32000, "Authentication required", f"this agent cannot check the method {method_id!r}")

    async def extension(self, method: str, params: Any) -> Any:
        """A request of an extension this agent serves (``agent_config(extensions=[…])``), its
        params as JSON (``None`` when it had none): return its result (JSON), or raise
        ``refused(code, message)``. The default answers -32601."""
        raise refused(-32601, "Method not found")

    async def extension_notification(self, method: str, params: Any) -> None:
        """A notification of an extension this agent serves. The default ignores it."""


def refused(code: int, message: str, detail: Optional[str] = None) -> AcpError:
    """The error to raise from :meth:`Agent.authenticate` or :meth:`Agent.extension` to
    answer the client with this JSON-RPC error: ``raise refused(-32000, "Authentication
    required", "set ACME_API_KEY")``."""
    return AcpError.Protocol(ProtocolError(code=code, message=message, detail=detail))


class _Runtime(_ffi.AgentRuntime):  # type: ignore[misc]
    """The runtime interface the library calls, over the author's :class:`Agent`: values come
    in encoded and go back encoded; what the agent raises goes back as the library's error."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    async def run_turn(self, turn: Any, input: bytes) -> bytes:
        try:
            t = Turn(turn)
            end = await self._agent.run(t, decode(List[UserInput], input))
            if end is None:
                end = TurnEnd(stop_reason=StopReason.CANCELLED if t.cancelled else StopReason.END_TURN)
            return arg(end)
        except Exception as e:
            raise to_ffi(e) from e

    async def session_opened(self, session_id: str, setup: bytes) -> None:
        await _for_library(lambda: self._agent.opened(session_id, decode(SessionSetup, setup)))

    async def session_resumed(self, session_id: str, setup: bytes) -> None:
        await _for_library(lambda: self._agent.resumed(session_id, decode(SessionSetup, setup)))

    async def session_closed(self, session_id: str, dropped: bytes) -> None:
        await _for_library(lambda: self._agent.closed(session_id, decode(List[PendingInject], dropped)))

    async def authenticate(self, method_id: str) -> None:
        await _for_library(lambda: self._agent.authenticate(method_id))

    async def extension(self, method: str, params: bytes) -> bytes:
        async def answer() -> bytes:
            return arg(await self._agent.extension(method, decode(Any, params)))

        return await _for_library(answer)

    async def extension_notification(self, method: str, params: bytes) -> None:
        await _for_library(lambda: self._agent.extension_notification(method, decode(Any, params)))


_T = TypeVar("_T")


async def _for_library(call: Callable[[], Awaitable[_T]]) -> _T:
    """Runs one of the author's hooks for the library: what it raises (or what its arguments
    fail to decode with) goes back as the library's error."""
    try:
        return await call()
    except Exception as e:
        raise to_ffi(e) from e


def agent_config(
    name: str,
    version: str = "0.1.0",
    steer_in_stream: str = "finish",
    *,
    auth_methods: Sequence[AuthMethod] = (),
    auth_required: bool = False,
    extensions: Sequence[str] = (),
) -> AgentConfig:
    """The default configuration (queue and steer, replace) under this agent's name.
    ``auth_methods`` are advertised (an ``AuthMethodAgent`` is checked by
    :meth:`Agent.authenticate` when a client logs in with it); with ``auth_required`` a
    connection gets -32000 until it logged in. ``extensions`` are the ``_``-methods
    :meth:`Agent.extension` serves."""
    import msgspec

    config = default_agent_config(name, version)
    config = msgspec.structs.replace(
        config, auth=AuthSupport(methods=list(auth_methods), required=auth_required), extensions=list(extensions)
    )
    if steer_in_stream == "interrupt" and config.inject is not None:
        inject = msgspec.structs.replace(config.inject, steer_in_stream=[SteerInStream.INTERRUPT])
        policy = msgspec.structs.replace(config.policy, steer_in_stream=SteerInStream.INTERRUPT)
        config = msgspec.structs.replace(config, inject=inject, policy=policy)
    return config


def _server(agent: Agent, config: Optional[AgentConfig], store: Optional[str]) -> Any:
    return call("AgentServer", _ffi.AgentServer, _Runtime(agent), arg(config or agent_config(type(agent).__name__)), store)


async def serve_stdio(agent: Agent, config: Optional[AgentConfig] = None, store: Optional[str] = None) -> None:
    """Serves ``agent`` over this process's stdin/stdout until the client closes stdin. With
    ``store``, sessions outlive the process: a file path is SQLite; a ``postgres://`` URL is a
    PostgreSQL database several agent hosts share
    (``postgres://USER@HOST/DB?acp_host=NAME&acp_lease_ms=N``, each host its own ``NAME``)."""
    # The library calls the agent's async methods from its own threads: they run on this loop.
    _ffi.uniffi_set_event_loop(cast(asyncio.BaseEventLoop, asyncio.get_running_loop()))
    await acall("serve_stdio", _server(agent, config, store).run_stdio)


@checked
class Listening:
    """An agent serving over the network (see :func:`listen`): its endpoint's ``url``, and
    :meth:`close` to stop."""

    def __init__(self, server: Any, url: str) -> None:
        self._server, self.url = server, url

    def __repr__(self) -> str:
        return f"<Listening {self.url}>"

    @property
    def sessions(self) -> List[str]:
        """The live sessions."""
        return list(self._server.sessions())

    async def close(self) -> None:
        """Stops listening (every connection ends) and cancels the running turns."""
        try:
            await self._server.shutdown()
        finally:
            # The library no longer calls the agent: later calls run on whatever loop they
            # are awaited from (this one may be closed next).
            _ffi.uniffi_set_event_loop(None)

    async def __aenter__(self) -> "Listening":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def listen(
    agent: Agent,
    addr: str,
    config: Optional[AgentConfig] = None,
    store: Optional[str] = None,
    *,
    token: Optional[str] = None,
    tokens: Optional[Mapping[str, str]] = None,
    allowed_origins: Sequence[str] = (),
    limits: Optional[ListenLimits] = None,
) -> Listening:
    """Serves ``agent`` over the network on ``addr`` (``"HOST:PORT"``; port 0 picks a free
    one): the upstream Streamable HTTP & WebSocket transport on ``/acp``. Returns once bound,
    with the endpoint's URL (``http://HOST:PORT/acp``; WebSocket clients use ``ws://`` on the
    same path); serving goes on until :meth:`Listening.close`. Every client is one connection
    of the same agent: a session outlives the connection that opened it, and a client that
    reconnects resumes it. Anything but a loopback address needs ``token`` (clients send
    ``Authorization: Bearer <token>``) or ``tokens``, or ``AcpError.Config`` is raised;
    ``tokens`` maps each principal (a user, a tenant) to a token of its own: a client sees the
    sessions its principal created and no other, and another principal's session is answered
    as unknown (``token``, beside them, sees the sessions created without a principal);
    ``allowed_origins`` lists the browser origins that may call. ``limits`` bounds what
    clients may take (connections, message size, unread output, the listener's memory: see
    :class:`ListenLimits`, whose defaults apply without it); a zero limit raises
    ``AcpError.Config``."""
    # The library calls the agent's async methods from its own threads: they run on this loop
    # while it listens (until `close`).
    _ffi.uniffi_set_event_loop(cast(asyncio.BaseEventLoop, asyncio.get_running_loop()))
    try:
        server = _server(agent, config, store)
        url = await acall("listen", server.listen, addr, token, dict(tokens or {}), list(allowed_origins), arg(limits or ListenLimits()))
    except BaseException:
        _ffi.uniffi_set_event_loop(None)
        raise
    return Listening(server, url)


def run_agent(
    agent: Agent,
    config: Optional[AgentConfig] = None,
    store: Optional[str] = None,
    *,
    listen: Optional[str] = None,
    token: Optional[str] = None,
    allowed_origins: Sequence[str] = (),
    limits: Optional[ListenLimits] = None,
) -> None:
    """Runs ``agent`` over stdio until the client goes away (see :func:`serve_stdio`), or,
    with ``listen="HOST:PORT"``, over the network until interrupted (see :func:`listen`; the
    endpoint's URL is printed on stdout; ``token``, ``allowed_origins`` and ``limits`` as
    there). Over the network, a store failure ends it with
    ``AcpError.Store`` (on a ``postgres://`` store several hosts share: a session another host
    took over while this one was paused); restart the process."""
    if listen is None:
        asyncio.run(serve_stdio(agent, config, store))
        return
    addr = listen

    async def serve() -> None:
        listening = await _listen(agent, addr, config, store, token=token, allowed_origins=allowed_origins, limits=limits)
        print(listening.url, flush=True)
        try:
            await acall("run_agent", listening._server.stopped)
        finally:
            await listening.close()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


_listen = listen
