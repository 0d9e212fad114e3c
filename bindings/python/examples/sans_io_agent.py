"""An agent that runs the sans-IO ``AgentCore`` with its own I/O: no transport, no asyncio.

The host's whole job is to move bytes and run turns. It reads whatever arrives on stdin,
hands the bytes to the core (which frames lines, answers every request, keeps the sessions,
the pending injects and the turn state) and writes the core's lines to stdout. The core's
actions tell it what to do: start a turn, deliver steers, cancel, and hand back the answer to
a permission request the core sent on the turn's behalf.

Each turn here streams a line, asks for permission, and ends after the answer::

    python examples/sans_io_agent.py          # then speak ACP v2 on stdin/stdout

Any ACP client drives it; ``tests/test_sans_io_host.py`` uses this package's own.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional

from acp_inject import (
    Action,
    AgentCore,
    AgentMessageChunk,
    CancelTurn,
    ConnectionRole,
    Line,
    Output,
    PermissionAnswered,
    PermissionAsk,
    PermissionOption,
    PermissionOptionKind,
    RuntimeAction,
    SelectedPermissionOutcome,
    StartTurn,
    StopReason,
    TextContent,
    TurnEnd,
    default_agent_config,
)

CONNECTION = "stdio"


class Host:
    """Moves bytes between stdio and the core, and plays the runtime of every session."""

    def __init__(self) -> None:
        self.core = AgentCore(default_agent_config())
        self.core.attach(CONNECTION, ConnectionRole.CONTROLLER)
        # The permission request each session's turn waits on (session -> request id text).
        self.waiting: Dict[str, str] = {}

    def write(self, outputs: List[Output]) -> None:
        """Writes the lines for our connection, then carries out the actions (which may cause
        more outputs, written in turn)."""
        actions = []
        chunks = []
        for o in outputs:
            if isinstance(o, Line) and CONNECTION in o.to:
                chunks.append(o.line.encode() + b"\n")
            elif isinstance(o, Action):
                actions.append((o.session, o.action))
        if chunks:
            os.write(sys.stdout.fileno(), b"".join(chunks))
        for session, action in actions:
            self.act(session, action)

    def say(self, session: str, text: str) -> None:
        message_id = self.core.mint_agent_message_id()
        chunk = AgentMessageChunk(message_id=message_id, content=TextContent(text=text))
        self.write(self.core.runtime_event(session, chunk))

    def end_turn(self, session: str, reason: StopReason) -> None:
        self.write(self.core.runtime_event(session, TurnEnd(stop_reason=reason)))

    def act(self, session: str, action: RuntimeAction) -> None:
        if isinstance(action, StartTurn):
            self.say(session, "I would like to run the tests.")
            options = [
                PermissionOption(option_id="allow", name="Allow", kind=PermissionOptionKind.ALLOW_ONCE),
                PermissionOption(option_id="reject", name="Reject", kind=PermissionOptionKind.REJECT_ONCE),
            ]
            ask = PermissionAsk(title="Run the tests?", description="runs `make test`", options=options)
            asked = self.core.request_permission(session, ask)
            self.waiting[session] = str(asked.request_id)
            self.write(asked.outputs)
        elif isinstance(action, PermissionAnswered):
            if self.waiting.get(session) != str(action.request_id):
                return
            del self.waiting[session]
            outcome = action.outcome
            chosen: Optional[str] = outcome.option_id if isinstance(outcome, SelectedPermissionOutcome) else None
            if chosen is None:
                # Cancelled (the client cancelled the turn, or went away): the cancel action
                # that follows ends the turn.
                return
            self.say(session, "Tests passed." if chosen == "allow" else "Not running them.")
            self.end_turn(session, StopReason.END_TURN)
        elif isinstance(action, CancelTurn):
            self.end_turn(session, StopReason.CANCELLED)
        # Session opened, resumed or closed, deliveries: nothing to set up in this example.

    def run(self) -> None:
        stdin = sys.stdin.fileno()
        while True:
            data = os.read(stdin, 65536)
            if not data:
                self.write(self.core.handle_end(CONNECTION))
                self.write(self.core.detach_and_drain(CONNECTION))
                return
            self.write(self.core.handle_bytes(CONNECTION, data))


if __name__ == "__main__":
    Host().run()
