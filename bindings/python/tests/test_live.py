"""The asyncio client against the reference agent over real stdio: two sessions on one
connection at once, calls on both in flight together, nothing misrouted."""

from __future__ import annotations

import asyncio
import os
from typing import Callable, List

import pytest

import acp_inject as acp
from acp_inject import AcpError, ErrorReason, InjectMode, MirrorSnapshot, TurnState, text_of

from .conftest import reference_agent_command

TIMEOUT = 60.0


def users(snap: MirrorSnapshot) -> List[str]:
    return [text_of(e.content) for e in snap.transcript if e.role == acp.MessageRole.USER]


async def until(session: acp.Session, done: Callable[[MirrorSnapshot], bool]) -> MirrorSnapshot:
    async def follow() -> None:
        while not done(session.snapshot()):
            for activity in await session.next_events():
                if isinstance(activity, acp.PermissionRequested):
                    session.allow(activity.request, str(activity.params.options[0].option_id))

    await asyncio.wait_for(follow(), TIMEOUT)
    return session.snapshot()


def running(s: MirrorSnapshot) -> bool:
    return s.state != TurnState.IDLE


async def two_sessions() -> None:
    async with acp.connect(reference_agent_command(40, "--tools", "3"), name="two-sessions-test") as agent:
        a, b = await asyncio.gather(agent.new_session("/tmp"), agent.new_session("/tmp"))
        assert a.id != b.id

        # While A's prompt is being accepted, B is idle: B's steer gets B's own error.
        steer_b = asyncio.ensure_future(b.inject("too early", mode="steer"))
        await a.prompt("A: long task")
        with pytest.raises(AcpError.Protocol) as refused:
            await steer_b
        assert refused.value.error.reason == ErrorReason.NO_RUNNING_TURN
        assert b.snapshot().pending == [] and b.snapshot().transcript == []

        # Both sessions busy; in B: inject, revoke and replace, all racing A's own calls.
        await b.prompt("B: other task")
        await asyncio.gather(until(a, running), until(b, running))
        results = await asyncio.gather(
            b.inject("B: steer", mode=InjectMode.STEER),
            a.inject("A: queued", mode="queue"),
            b.inject("B: revoke me", mode="queue"),
            b.inject("B: draft", mode="queue"),
            a.status(),
        )
        steer_id, queued_a, gone, draft = results[0], results[1], results[2], results[3]
        assert results[4].status == acp.SessionStatus.OPEN
        assert len({steer_id, queued_a, gone, draft}) == 4
        await asyncio.gather(b.revoke(gone), b.replace(draft, "B: final"), a.status(), b.status())
        pending_b = [text_of(p.content) for p in b.snapshot().pending]
        assert "B: revoke me" not in pending_b and "B: draft" not in pending_b

        done_a, done_b = await asyncio.gather(
            until(a, lambda s: s.state == TurnState.IDLE and not s.pending and "A: queued" in users(s)),
            until(b, lambda s: s.state == TurnState.IDLE and not s.pending and "B: final" in users(s)),
        )
        assert users(done_a) == ["A: long task", "A: queued"]
        assert users(done_b)[0] == "B: other task"
        assert sorted(users(done_b)[1:]) == ["B: final", "B: steer"]
        assert done_a.violations == [] and done_b.violations == []
        assert not any(u.startswith("B") for u in users(done_a)) and not any(u.startswith("A") for u in users(done_b))
        assert [t for t in (done_a.transcript + done_b.transcript) if "revoke me" in text_of(t.content) or "draft" in text_of(t.content)] == []
        assert agent.ignored() == []


def test_two_sessions_at_once_on_one_connection() -> None:
    asyncio.run(two_sessions())


async def cancel_and_close() -> None:
    async with acp.connect(reference_agent_command(40)) as agent:
        s = await agent.new_session("/tmp")
        await s.prompt("cancel me")
        await until(s, running)
        await s.inject("survives the cancel", mode="queue")
        s.cancel()
        snap = await until(s, lambda s: "survives the cancel" in users(s))
        assert users(snap) == ["cancel me", "survives the cancel"]
        await until(s, lambda s: s.state == TurnState.IDLE)
        status = await s.status()
        assert status.status == acp.SessionStatus.OPEN and isinstance(status.state, acp.IdleStateUpdate)
        await s.close()
        status = await s.status()
        assert (status.status, status.state) == (acp.SessionStatus.SAVED, None)
        with pytest.raises(AcpError.Protocol) as gone:
            await s.prompt("after close")
        assert gone.value.error.reason == ErrorReason.SESSION_NOT_FOUND
        listed = [info.session_id async for info in agent.sessions()]
        assert s.id in listed


def test_cancel_keeps_pending_injects_and_close_ends_the_session() -> None:
    asyncio.run(cancel_and_close())


def test_an_agent_that_cannot_start_is_a_typed_error() -> None:
    async def go() -> None:
        await acp.connect(["/nonexistent/agent-binary"])

    with pytest.raises(AcpError.Disconnected):
        asyncio.run(go())


async def a_turn_followed_from_its_handle() -> None:
    asked: List[str] = []

    async def allow_first(request: acp.RequestPermissionRequest) -> str:
        asked.append(request.title or "")
        return str(request.options[0].option_id)

    command = reference_agent_command(30, "--tools", "2", "--permission-on-tool", "1")
    async with acp.connect(command, name="turn-handle-test", on_permission=allow_first) as agent:
        session = await agent.new_session("/tmp")
        turn = await session.prompt("fix the bug")
        assert turn.message_id is not None and not turn.ended
        steered = await session.inject("use auth_v2", mode="steer")
        queued = await session.inject("then the docs", mode="queue")
        seen: List[acp.SessionUpdate] = []
        async for update in turn:
            seen.append(update)
        assert turn.ended
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        assert stop == acp.StopReason.END_TURN
        delivered = [u.message_id for u in seen if isinstance(u, acp.UserMessage)]
        # The prompt opened the turn; the steer was delivered inside it; the queued message was
        # not (it opens the next turn).
        assert delivered[0] == turn.message_id and steered in delivered and queued not in delivered, delivered
        assert isinstance(seen[-1], acp.IdleStateUpdate)
        assert any(isinstance(u, acp.AgentMessageChunk) for u in seen)
        assert asked, "the handler answered the agent's permission request"

        # The queued message's turn, from the session's own stream: it was not consumed above.
        snap = await until(session, lambda s: queued in [e.message_id for e in s.transcript] and s.state == TurnState.IDLE and not s.pending)
        assert users(snap) == ["fix the bug", "use auth_v2", "then the docs"]

        listed = await agent.sessions()
        assert session.id in [info.session_id for info in listed]
        assert [info.session_id async for info in agent.sessions()] == [info.session_id for info in listed]


def test_a_turn_is_followed_from_its_handle_with_permissions_answered_by_a_handler() -> None:
    asyncio.run(a_turn_followed_from_its_handle())


async def a_session_followed_through_its_flat_activity() -> None:
    async with acp.connect(reference_agent_command(5), name="helpers-test") as agent:
        session = await agent.new_session()  # in the current directory
        turn = await session.prompt("first")
        queued = await session.inject("second")
        fates: List[tuple[str | None, acp.ItemStatus]] = []
        stops: List[acp.StopReason | None] = []
        chunks = 0
        async for activity in session.events():
            match activity:
                case acp.PendingItem(message_id=m, status=status):
                    fates.append((m, status))
                case acp.AgentMessageChunk():
                    chunks += 1
                case acp.IdleStateUpdate(stop_reason=reason):
                    stops.append(reason)
                    if (queued, acp.ItemStatus.DELIVERED) in fates:
                        break
        assert stops == [acp.StopReason.END_TURN] * 2 and chunks > 0, (stops, chunks)
        assert (turn.message_id, acp.ItemStatus.DELIVERED) in fates and (queued, acp.ItemStatus.PENDING) in fates
        listed = await agent.sessions()
        assert [info.cwd for info in listed if info.session_id == session.id] == [os.getcwd()]


def test_a_session_is_followed_by_matching_its_activity_in_the_current_directory() -> None:
    asyncio.run(asyncio.wait_for(a_session_followed_through_its_flat_activity(), TIMEOUT))
