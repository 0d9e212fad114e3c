"""An in-process wire between the sans-IO cores: a ``ClientCore`` talking to an ``AgentCore``
through their lines, with the agent runtime played by the test (break-points, turn ends)."""

from __future__ import annotations

import json
from typing import List, Optional, Sequence

from acp_inject import (
    Action,
    AgentCore,
    ClientCore,
    ConnectionRole,
    default_agent_config,
    Event,
    InjectCapabilities,
    Line,
    Output,
    PermissionAsk,
    PermissionOption,
    PermissionOptionKind,
    RequestId,
    RequestPermissionOutcome,
    RuntimeAction,
    RuntimeEvent,
    SelectedPermissionOutcome,
)
import msgspec


def handshake(agent: AgentCore, conn: str) -> None:
    """``conn``'s ``initialize``, its answer checked and dropped: an agent serves nothing else
    before it (R-INIT-2)."""
    line = json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "tests", "version": "0"}}})
    out = [o for o in agent.handle_line(conn, line) if isinstance(o, Line)]
    assert len(out) == 1 and "result" in json.loads(out[0].line), out


def allowed(option_id: str) -> RequestPermissionOutcome:
    """The outcome of a permission request answered with ``option_id``."""
    return SelectedPermissionOutcome(option_id=option_id)


class Wire:
    """One client connection (``c1``) to an agent core holding ``sessions``, all idle."""

    def __init__(self, sessions: Sequence[str] = ("s1",), inject: Optional[InjectCapabilities] = None) -> None:
        config = default_agent_config()
        if inject is not None:
            config = msgspec.structs.replace(config, inject=inject)
        self.agent = AgentCore(config)
        self.client = ClientCore(1 << 20)
        self.client.assume_capabilities(config.inject)
        self.agent.attach("c1", ConnectionRole.CONTROLLER)
        handshake(self.agent, "c1")
        for s in sessions:
            assert self.agent.create_session(s, "/work")
            assert self.agent.attach_to_session("c1", s)
            self.client.open_session(s, None)
        self.actions: List[RuntimeAction] = []
        self.events: List[Event] = []

    def agent_lines(self, outputs: List[Output]) -> List[str]:
        """The lines of ``outputs`` for ``c1``; the runtime actions are kept in ``actions``."""
        lines = []
        for o in outputs:
            if isinstance(o, Line):
                if "c1" in o.to:
                    lines.append(o.line)
            elif isinstance(o, Action):
                self.actions.append(o.action)
        return lines

    def send(self) -> List[str]:
        """Sends what the client queued; returns the agent's lines, not yet received."""
        self.events += self.client.take_events()
        lines: List[str] = []
        for line in self.client.take_outgoing():
            lines += self.agent_lines(self.agent.handle_line("c1", line))
        return lines

    def receive(self, lines: Sequence[str]) -> List[Event]:
        events: List[Event] = []
        for line in lines:
            events += self.client.receive(line)
        self.events += events
        return events

    def exchange(self) -> List[Event]:
        """Sends and receives everything, in order."""
        return self.receive(self.send())

    def runtime(self, session: str, event: RuntimeEvent) -> List[Event]:
        return self.receive(self.agent_lines(self.agent.runtime_event(session, event)))

    def ask_permission(self, session: str, title: str = "run the tests?") -> RequestId:
        """The runtime asks for permission; the core sends the request, the client receives it."""
        option = PermissionOption(option_id="allow", name="Allow", kind=PermissionOptionKind.ALLOW_ONCE)
        asked = self.agent.request_permission(session, PermissionAsk(title=title, options=[option]))
        self.receive(self.agent_lines(asked.outputs))
        return asked.request_id

    def allow(self, request: RequestId, option_id: str = "allow") -> List[Event]:
        """The client answers the agent's permission request; the answer is exchanged."""
        self.client.answer_permission(request, allowed(option_id))
        return self.exchange()
