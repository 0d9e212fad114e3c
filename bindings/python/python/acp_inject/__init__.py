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
from types import ModuleType

from . import acp_inject_ffi as _ffi
from ._errors import InvalidArgument, checked, checked_methods
from ._lines import ClientCore  # the generated ClientCore with receive_line, the per-line path
from .acp_inject_ffi import (
    AcpError,
    Activity,
    AgentConfig,
    AgentInfo,
    AgentMessageChunk,
    AgentThoughtChunk,
    Answer,
    BreakPoint,
    CallRejected,
    ClearStyle,
    ConnectionRole,
    ContentBlock,
    Event,
    HistoryEntry,
    HostError,
    IdleStateUpdate,
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
    SessionStatusResponse,
    SessionUpdate,
    SetupSupport,
    StateUpdate,
    SteerFallback,
    SteerInStream,
    TextContent,
    ToolCallContent,
    ToolCallContentBlock,
    ToolCallUpdate,
    TranscriptEntry,
    Turn as TurnPhase,
    TurnEnd,
    TurnState,
    Usage,
    UserInput,
    Violation,
)
from .enums import (
    ErrorReason,
    PermissionOptionKind,
    PlanEntryPriority,
    PlanEntryStatus,
    Role,
    SessionStatus,
    StopReason,
    ToolCallStatus,
    ToolKind,
)
from .agent import Agent, Listening, Turn, listen, run_agent, serve_stdio
from .client import Client, PermissionHandler, PromptTurn, Session, SessionList, connect, item_of, turn_ended, update_of
from .content import text, text_of
from . import _repr


@checked_methods
class AgentCore(_ffi.AgentCore):
    """The sans-IO agent core (see the generated ``AgentCore``); an argument of the wrong type
    raises :class:`InvalidArgument`."""


default_agent_config = checked(_ffi.default_agent_config, "default_agent_config")
library_version = checked(_ffi.library_version, "library_version")

__version__: str = library_version()

# The generated records and variants print their fields (see ``_repr``).
_repr.install(*(m for m in vars(_ffi).values() if isinstance(m, ModuleType) and m.__name__.startswith(f"{_ffi.__name__}.")))

__all__ = [
    "AcpError", "Activity", "Agent", "AgentConfig", "AgentCore", "AgentInfo", "AgentMessageChunk",
    "AgentThoughtChunk", "Answer", "BreakPoint", "CallRejected", "ClearStyle", "Client", "ClientCore",
    "ConnectionRole", "ContentBlock", "ErrorReason", "Event", "HistoryEntry", "HostError", "Implementation",
    "IdleStateUpdate", "InitializeResponse", "InjectCapabilities", "InvalidArgument", "InjectMode", "ItemMode", "ItemStatus", "MessageRole",
    "MirrorSnapshot", "Output", "PendingCapabilities", "PendingInject", "PendingItem", "PermissionAsk", "PermissionOption",
    "PermissionOptionKind", "PlanEntryPriority", "PlanEntryStatus", "PermissionRequestSent", "PlanEntry", "Policy", "ProtocolError", "QueueDrain", "RequestId", "RequestKind", "Role",
    "RequestPermissionOutcome", "RequestPermissionRequest", "RevokeReplace", "RuntimeAction", "RuntimeEvent",
    "PermissionHandler", "PromptTurn", "Session", "SessionActivity", "SessionList", "SessionEvent", "SessionInfo", "SessionSetup", "SessionStatus", "SessionStatusResponse", "SessionUpdate",
    "SetupSupport", "StateUpdate", "SteerFallback", "SteerInStream", "StopReason", "TextContent", "ToolCallContent", "ToolCallContentBlock",
    "ToolCallStatus", "ToolCallUpdate", "ToolKind", "TranscriptEntry", "Turn", "TurnEnd", "TurnState",
    "Usage", "UserInput", "Violation", "__version__", "connect", "default_agent_config",
    "item_of", "library_version", "listen", "Listening", "run_agent", "serve_stdio", "text", "text_of", "turn_ended", "update_of",
]


# The library's I/O runs on its own threads; stop them before the interpreter shuts down, so
# none is still calling into Python while it goes away.
atexit.register(_ffi.shutdown_runtime, 1000)
