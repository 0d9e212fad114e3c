"""A host that drives ``AgentCore`` with its own I/O (``examples/sans_io_agent.py``: plain
blocking reads of stdin, no transport crate) serves a whole turn with a permission request
that the core sends, routes and answers, to this package's client over real pipes."""

from __future__ import annotations

import asyncio
import sys
from typing import List

import acp_inject as acp
from acp_inject import MessageRole, TurnState, text_of

from .conftest import EXAMPLES

TIMEOUT = 60.0
HOST = [sys.executable, str(EXAMPLES / "sans_io_agent.py")]


async def turn(session: acp.Session, answer: str) -> List[str]:
    """Prompts, answers the permission request with ``answer``, waits for the turn's end;
    returns the agent's messages."""
    await session.prompt("please run the tests")
    asked: List[acp.RequestPermissionRequest] = []

    async def follow() -> None:
        while True:
            for activity in await session.next_events():
                if isinstance(activity, acp.PermissionRequested):
                    asked.append(activity.params)
                    session.allow(activity.request, answer)
            snap = session.snapshot()
            said = [text_of(e.content) for e in snap.transcript if e.role == MessageRole.AGENT]
            if asked and snap.state == TurnState.IDLE and len(said) >= 2:
                return

    await asyncio.wait_for(follow(), TIMEOUT)
    assert [a.title for a in asked] == ["Run the tests?"]
    assert [str(o.option_id) for o in asked[0].options] == ["allow", "reject"]
    snap = session.snapshot()
    return [text_of(e.content) for e in snap.transcript if e.role == MessageRole.AGENT]


async def session_through_the_core() -> None:
    async with acp.connect(HOST, name="sans-io-host-test") as agent:
        session = await agent.new_session("/tmp")
        said = await turn(session, "allow")
        assert said == ["I would like to run the tests.", "Tests passed."]
        said = await turn(session, "reject")
        assert said[-1] == "Not running them."
        # Cancel while the permission request is open: the core answers it cancelled and the
        # turn ends as cancelled.
        await session.prompt("once more")

        async def requested() -> None:
            while True:
                for activity in await session.next_events():
                    if isinstance(activity, acp.PermissionRequested):
                        return

        await asyncio.wait_for(requested(), TIMEOUT)
        assert session.snapshot().state == TurnState.REQUIRES_ACTION
        session.cancel()

        async def idle() -> None:
            while session.snapshot().state != TurnState.IDLE:
                await session.next_events()

        await asyncio.wait_for(idle(), TIMEOUT)
        assert session.snapshot().stop_reason == acp.StopReason.CANCELLED


def test_a_host_with_its_own_io_serves_a_permission_turn() -> None:
    asyncio.run(session_through_the_core())
