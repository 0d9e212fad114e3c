"""ACP v2 with ``session/inject`` (queue, steer, revoke, replace) from one shared Rust core.

Everything protocol-related runs in Rust; this package is the Python face of it:

- :func:`connect` starts an agent (a command) or reaches one by URL (``ws://``, ``http://``,
  with TLS too) and gives an asyncio :class:`Client`; its sessions (:class:`Session`) have
  ``await``-able calls and an ``async for`` event stream of flat values
  (``AgentMessageChunk``, ``ToolCallUpdate``, ``IdleStateUpdate``, ``PendingItem``, …).
- :class:`Agent` and :func:`run_agent` run an agent written in Python: implement
  :meth:`Agent.run`, the library serves the whole session surface over stdio, or over the
  network with :func:`listen` (``run_agent(agent, listen="127.0.0.1:8080")``).
- :class:`AgentCore` and :class:`ClientCore` are the sans-IO cores, for hosts with their own
  I/O; the tests replay every conformance vector through them.

The values (``ContentBlock``, ``SessionUpdate``, ``Usage``, ``StopReason``, …) are the classes of
:mod:`acp_inject.values`, generated from the same model as the Rust library's and the Kotlin
and Swift bindings': frozen ``msgspec`` structs with typed fields and defaults, ``str`` enums,
and unions of flat classes to ``match`` on. :func:`text` and :func:`text_of` build and read
text content.
"""

from __future__ import annotations

import atexit

from . import values
from ._core import AgentCore, ClientCore, default_agent_config, library_version
from ._errors import InvalidArgument
from .acp_inject_ffi import acp_inject_ffi as _ffi
from .agent import Agent, Listening, Turn, agent_config, listen, refused, run_agent, serve_stdio
from .client import Client, PermissionHandler, PromptTurn, Session, SessionList, connect, turn_ended
from .content import Content, text, text_of
from .values import *  # noqa: F401,F403  (every value type, enum and union)

__version__: str = library_version()

__all__ = [
    "Agent",
    "AgentCore",
    "Client",
    "ClientCore",
    "Content",
    "InvalidArgument",
    "Listening",
    "PermissionHandler",
    "PromptTurn",
    "Session",
    "SessionList",
    "Turn",
    "__version__",
    "agent_config",
    "connect",
    "default_agent_config",
    "library_version",
    "listen",
    "refused",
    "run_agent",
    "serve_stdio",
    "text",
    "text_of",
    "turn_ended",
    "values",
]
__all__ += values.__all__


# The library's I/O runs on its own threads; stop them before the interpreter shuts down, so
# none is still calling into Python while it goes away.
atexit.register(_ffi.shutdown_runtime, 1000)
