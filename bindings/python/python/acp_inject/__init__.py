"""ACP v2 ``session/inject`` semantics (queue, steer, revoke, replace) from one shared Rust core.

The classes come from the UniFFI binding of ``acp-inject-core`` (``acp_inject_ffi``); this
module re-exports them and adds a few helpers where the generated API is awkward in Python.
No protocol logic lives here: :class:`AgentCore` and :class:`ClientSession` run the Rust
state machine, one FFI crossing per line (or per batch of lines).

Agent side::

    core = AgentCore(default_agent_options())
    core.create_session("s1")
    for out in core.handle_line("c1", line_from_client):
        ...  # AgentOutput.LINE (send) or AgentOutput.ACTION (drive the model)

Client side::

    session = ClientSession("s1", capabilities)
    send(session.prompt([text("fix the bug")]))
    session.receive(line_from_agent)      # raises AcpError.Protocol on an error answer
    snapshot = session.snapshot()
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from .acp_inject_ffi import (
    AcpError,
    Affordances,
    AgentCore,
    AgentOptions,
    AgentOutput,
    BreakPoint,
    ClearStyle,
    ClientSession,
    ClientSnapshot,
    ConformanceReport,
    ContentBlock,
    InjectCapabilities,
    InjectMode,
    InternalError,
    ItemMode,
    ItemStatus,
    PendingInject,
    PendingItem,
    ProtocolError,
    QueueDrain,
    RevokeReplace,
    Role,
    RuntimeAction,
    RuntimeEvent,
    SteerInStream,
    TranscriptEntry,
    TranscriptRole,
    TurnState,
    UserInput,
    VectorFailure,
    Violation,
    default_agent_options,
    library_version,
    run_conformance,
)

__all__ = [
    "AcpError", "Affordances", "AgentCore", "AgentOptions", "AgentOutput", "BreakPoint", "ClearStyle",
    "ClientSession", "ClientSnapshot", "ConformanceReport", "ContentBlock", "InjectCapabilities",
    "InjectMode", "InternalError", "ItemMode", "ItemStatus", "PendingInject", "PendingItem",
    "ProtocolError", "QueueDrain", "RevokeReplace", "Role", "RuntimeAction", "RuntimeEvent",
    "SteerInStream", "TranscriptEntry", "TranscriptRole", "TurnState", "UserInput", "VectorFailure",
    "Violation", "default_agent_options", "library_version", "run_conformance",
    "text", "lines_for", "actions_of", "__version__",
]

__version__: str = library_version()


def text(value: str) -> ContentBlock:
    """A text content block."""
    return ContentBlock.TEXT(text=value)


def lines_for(outputs: Iterable[AgentOutput], connection: str) -> List[str]:
    """The JSON-RPC lines among ``outputs`` that go to ``connection``: its responses and
    every notification (notifications have ``to is None`` and go to all connections)."""
    return [
        o.line
        for o in outputs
        if isinstance(o, AgentOutput.LINE) and (o.to is None or o.to == connection)
    ]


def actions_of(outputs: Iterable[AgentOutput], session: Optional[str] = None) -> List[Tuple[str, RuntimeAction]]:
    """The runtime actions among ``outputs`` as ``(session, action)`` pairs, in order."""
    return [
        (o.session, o.action)
        for o in outputs
        if isinstance(o, AgentOutput.ACTION) and (session is None or o.session == session)
    ]
