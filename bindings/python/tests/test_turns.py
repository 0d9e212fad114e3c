"""A turn's reader and the session's stream share one stream: what follows the turn's end in
the batch that ended it is the session's (the next turn's user message, a held item going
out, its ``running``), whatever reads next."""

from __future__ import annotations

import asyncio
from typing import Any, List

import acp_inject as acp
from acp_inject import AgentMessageChunk, IdleStateUpdate, ItemMode, ItemStatus, PendingItem, RunningStateUpdate, StopReason, UserMessage, text
from acp_inject.client import PromptTurn, Session
from acp_inject.values import encode


class Batches:
    """A session object of the library, handing out scripted batches."""

    def __init__(self, batches: List[List[acp.SessionActivity]]) -> None:
        self.batches = batches

    def id(self) -> str:
        return "s1"

    async def next_events(self) -> bytes:
        return encode(self.batches.pop(0))


def session_of(batches: List[List[acp.SessionActivity]]) -> Session:
    return Session(Batches(batches))


def test_what_follows_the_turns_end_in_its_batch_stays_in_the_session_stream() -> None:
    held = PendingItem(message_id="m2", mode=ItemMode.QUEUE, status=ItemStatus.SENDING, content=[text("second")], held=True)
    after = [UserMessage(message_id="m2", content=[text("second")]), held, RunningStateUpdate()]
    batches: List[List[Any]] = [
        [UserMessage(message_id="m1", content=[text("first")]), AgentMessageChunk(message_id="a1", content=text("hi"))],
        [AgentMessageChunk(message_id="a1", content=text(" there")), IdleStateUpdate(stop_reason=StopReason.END_TURN), *after],
        [IdleStateUpdate(stop_reason=StopReason.END_TURN)],
    ]

    async def go() -> None:
        session = session_of(batches)
        turn = PromptTurn(session, "m1")
        seen = [u async for u in turn]
        assert [type(u) for u in seen] == [UserMessage, AgentMessageChunk, AgentMessageChunk, IdleStateUpdate]
        assert turn.ended and await turn.finished() == StopReason.END_TURN
        # Nothing of the next turn was lost: the session's stream hands it out next, in order.
        assert await session.next_events() == after
        assert await session.next_events() == [IdleStateUpdate(stop_reason=StopReason.END_TURN)]

    asyncio.run(go())


def test_a_turn_read_with_finished_leaves_the_rest_too() -> None:
    batches: List[List[Any]] = [[UserMessage(message_id="m1"), IdleStateUpdate(stop_reason=StopReason.CANCELLED), UserMessage(message_id="m2")]]

    async def go() -> None:
        session = session_of(batches)
        turn = PromptTurn(session, "m1")
        assert await turn.finished() == StopReason.CANCELLED
        assert [u async for u in turn] == [UserMessage(message_id="m1"), IdleStateUpdate(stop_reason=StopReason.CANCELLED)]
        assert await session.next_events() == [UserMessage(message_id="m2")]

    asyncio.run(go())
