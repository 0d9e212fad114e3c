"""ACP v2 with ``session/inject`` (queue, steer, revoke, replace) from one shared Rust core.

Everything protocol-related runs in Rust; this package is the Python face of it:

- :func:`connect` starts an agent (a command) or reaches one by URL (``ws://``, ``http://``,
  with TLS too) and gives an asyncio :class:`Client`; its sessions (:class:`Session`) have
  ``await``-able calls and an ``async for`` event stream.
- :class:`Agent` and :func:`run_agent` run an agent written in Python: implement
  :meth:`Agent.run`, the library serves the whole session surface over stdio, or over the
  network with :func:`listen` (``run_agent(agent, listen="127.0.0.1:8080")``).
- :class:`AgentCore` and :class:`ClientCore` are the sans-IO cores, for hosts with their own
  I/O; the tests replay every conformance vector through them.

The wire types (``ContentBlock``, ``SessionUpdate``, ``Usage``, …) are the generated ones,
shared with Kotlin and Swift; :func:`text` and friends build the common ones.
"""

from __future__ import annotations

import atexit
import inspect
from typing import Set

from . import acp_inject_ffi as _ffi
from . import _fastpath  # noqa: F401  (faster generated hot paths, installed at import)
from ._checked import InvalidArgument  # first: wraps the generated calls before they are imported below
from ._lines import ClientCore  # the generated ClientCore with receive_line, the per-line path
from .acp_inject_ffi import (
    AcpError,
    Activity,
    AgentConfig,
    AgentCore,
    AgentInfo,
    AgentMessageChunk,
    AgentThoughtChunk,
    Answer,
    BreakPoint,
    CallRejected,
    ClearStyle,
    ConnectionRole,
    ContentBlock,
    ErrorReason,
    Event,
    HistoryEntry,
    HostError,
    Implementation,
    InitializeResponse,
    InjectCapabilities,
    InjectMode,
    ItemMode,
    ItemStatus,
    MessageRole,
    MirrorSnapshot,
    Output,
    PendingCapabilities,
    PendingInject,
    PendingItem,
    PermissionAsk,
    PermissionOption,
    PermissionOptionKind,
    PermissionRequestSent,
    PlanEntry,
    Policy,
    ProtocolError,
    QueueDrain,
    RequestId,
    RequestPermissionOutcome,
    RequestKind,
    RequestPermissionRequest,
    RevokeReplace,
    RuntimeAction,
    RuntimeEvent,
    SessionActivity,
    SessionEvent,
    SessionInfo,
    SessionSetup,
    SessionStatus,
    SessionStatusResponse,
    SessionUpdate,
    SetupSupport,
    StateUpdate,
    SteerFallback,
    SteerInStream,
    StopReason,
    TextContent,
    ToolCallContent,
    ToolCallContentBlock,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    TranscriptEntry,
    Turn as TurnPhase,
    TurnEnd,
    TurnState,
    Usage,
    UserInput,
    Violation,
    default_agent_config,
    library_version,
)
from .agent import Agent, Listening, Turn, listen, run_agent, serve_stdio
from .client import Client, Session, connect
from .content import text, text_of

__version__: str = library_version()

__all__ = [
    "AcpError", "Activity", "Agent", "AgentConfig", "AgentCore", "AgentInfo", "AgentMessageChunk",
    "AgentThoughtChunk", "Answer", "BreakPoint", "CallRejected", "ClearStyle", "Client", "ClientCore",
    "ConnectionRole", "ContentBlock", "ErrorReason", "Event", "HistoryEntry", "HostError", "Implementation",
    "InitializeResponse", "InjectCapabilities", "InvalidArgument", "InjectMode", "ItemMode", "ItemStatus", "MessageRole",
    "MirrorSnapshot", "Output", "PendingCapabilities", "PendingInject", "PendingItem", "PermissionAsk", "PermissionOption",
    "PermissionOptionKind", "PermissionRequestSent", "PlanEntry", "Policy", "ProtocolError", "QueueDrain", "RequestId", "RequestKind",
    "RequestPermissionOutcome", "RequestPermissionRequest", "RevokeReplace", "RuntimeAction", "RuntimeEvent",
    "Session", "SessionActivity", "SessionEvent", "SessionInfo", "SessionSetup", "SessionStatus", "SessionStatusResponse", "SessionUpdate",
    "SetupSupport", "StateUpdate", "SteerFallback", "SteerInStream", "StopReason", "TextContent", "ToolCallContent", "ToolCallContentBlock",
    "ToolCallStatus", "ToolCallUpdate", "ToolKind", "TranscriptEntry", "Turn", "TurnEnd", "TurnState",
    "Usage", "UserInput", "Violation", "__version__", "connect", "default_agent_config",
    "library_version", "listen", "Listening", "run_agent", "serve_stdio", "text", "text_of",
]


def _readable_reprs() -> None:
    """Generated records and enum variants define ``__str__`` with their fields; make ``repr``
    (what lists, tracebacks and the REPL show) the same, so every value prints its contents
    (the enum variants' own ``__repr__`` would print ``ContentBlock.TEXT()``)."""
    seen: Set[type] = set()

    def fix(cls: type) -> None:
        if cls in seen:
            return
        seen.add(cls)
        if getattr(cls, "__str__") is not getattr(object, "__str__"):
            cls.__repr__ = cls.__str__  # type: ignore[method-assign]
        for member in list(vars(cls).values()):
            if inspect.isclass(member) and member.__module__.startswith(_ffi.__name__):
                fix(member)

    for value in list(vars(_ffi).values()):
        if inspect.isclass(value) and value.__module__.startswith(_ffi.__name__) and not issubclass(value, BaseException):
            fix(value)


_readable_reprs()

# The library's I/O runs on its own threads; stop them before the interpreter shuts down, so
# none is still calling into Python while it goes away.
atexit.register(_ffi.shutdown_runtime, 1000)
