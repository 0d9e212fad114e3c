"""The sans-IO client (``ClientCore``) against the agent core, in process: routing between
sessions on one connection, and a whole turn driven by a runtime loop written in Python."""

from __future__ import annotations

from typing import List

import pytest

from acp_inject import (
    Accepted,
    AgentMessageChunk,
    Answered,
    BreakPoint,
    BreakPointReached,
    CancelTurn,
    ClientCore,
    Deliver,
    ErrorReason,
    Event,
    InjectMode,
    InSession,
    ItemStatus,
    MessageRole,
    PendingItem,
    PermissionAnswered,
    PermissionRequested,
    ProtocolError,
    RequestKind,
    StartTurn,
    StopReason,
    text,
    text_of,
    TextContent,
    TurnEnd,
    TurnState,
)

from .wiring import Wire, allowed


def users(wire: Wire, session: str) -> List[str]:
    snap = wire.client.snapshot(session)
    assert snap is not None
    return [text_of(e.content) for e in snap.transcript if e.role == MessageRole.USER]


def answers(events: List[Event]) -> List[Answered]:
    return [e for e in events if isinstance(e, Answered)]


@pytest.mark.parametrize("order", ["as sent", "reversed"])
def test_an_idle_steer_on_s2_does_not_take_the_prompt_answer_of_s1(order: str) -> None:
    """Regression: two sessions on one connection, a prompt on s1 and a steer on the idle s2.
    Every agent line fed back (in the order the agent wrote them, or reversed): s2 must not
    take s1's answer, must show no phantom pending item, and must get its own
    ``no_running_turn`` error."""
    wire = Wire(("s1", "s2"))
    prompt = wire.client.prompt("s1", [text("fix the bug")])
    steer = wire.client.inject("s2", InjectMode.STEER, [text("use auth_v2")])
    lines = wire.send()
    events = wire.receive(lines if order == "as sent" else list(reversed(lines)))

    by_request = {str(a.request): a for a in answers(events)}
    assert set(by_request) == {str(prompt), str(steer)}
    s1_answer, s2_answer = by_request[str(prompt)], by_request[str(steer)]
    assert (s1_answer.kind, s1_answer.session_id) == (RequestKind.PROMPT, "s1")
    assert isinstance(s1_answer.outcome, Accepted) and s1_answer.outcome.message_id is not None
    assert (s2_answer.kind, s2_answer.session_id) == (RequestKind.INJECT, "s2")
    assert isinstance(s2_answer.outcome, ProtocolError)
    error = s2_answer.outcome
    assert (error.code, error.reason) == (-32010, ErrorReason.NO_RUNNING_TURN)

    s1, s2 = wire.client.snapshot("s1"), wire.client.snapshot("s2")
    assert s1 is not None and s2 is not None
    assert users(wire, "s1") == ["fix the bug"] and s1.state == TurnState.RUNNING and s1.pending == []
    assert s2.transcript == [] and s2.pending == [] and s2.state == TurnState.IDLE and s2.violations == []
    # Nothing reached s2 but its own item's failure.
    s2_events = [e.event for e in events if isinstance(e, InSession) and e.session_id == "s2"]
    assert all(isinstance(e, PendingItem) and e.status == ItemStatus.FAILED for e in s2_events) and s2_events
    assert wire.client.ignored_lines() == 0


def test_deliveries_stay_in_their_session() -> None:
    wire = Wire(("s1", "s2"))
    wire.client.prompt("s1", [text("one")])
    wire.client.prompt("s2", [text("two")])
    wire.exchange()
    wire.client.inject("s1", InjectMode.STEER, [text("steer one")])
    wire.client.inject("s2", InjectMode.QUEUE, [text("queue two")])
    wire.exchange()
    wire.runtime("s1", BreakPointReached(BreakPoint.TOOL_RESULT))
    assert users(wire, "s1") == ["one", "steer one"]
    assert users(wire, "s2") == ["two"]
    wire.runtime("s2", TurnEnd(stop_reason=StopReason.END_TURN, usage=None))
    assert users(wire, "s2") == ["two", "queue two"]
    assert users(wire, "s1") == ["one", "steer one"]
    for s in ("s1", "s2"):
        snap = wire.client.snapshot(s)
        assert snap is not None and snap.pending == [] and snap.violations == []


def test_a_runtime_loop_in_python_through_queue_steer_revoke_replace_cancel_and_permission() -> None:
    """The agent side driven as a runtime would: a turn with two tool results, the user acting
    meanwhile, a permission hold, then a cancel with a queued inject pending."""
    wire = Wire()
    c = wire.client
    c.prompt("s1", [text("fix the bug")])
    wire.exchange()
    delivered: List[str] = []

    def collect() -> None:
        for a in wire.actions:
            if isinstance(a, (StartTurn, Deliver)):
                delivered.extend(text_of(m.content) for m in a.input)
        wire.actions.clear()

    collect()
    wire.runtime("s1", _chunk(wire, "working"))
    queued = [c.inject("s1", InjectMode.QUEUE, [text(t)]) for t in ("then update the docs", "drop this one", "draft")]
    events = wire.exchange()
    ids = {str(a.request): str(a.outcome.message_id) for a in answers(events) if isinstance(a.outcome, Accepted)}
    docs, drop, draft = (ids[str(r)] for r in queued)
    c.revoke("s1", drop)
    c.replace("s1", draft, [text("final wording")])
    wire.exchange()
    assert c.item_status("s1", drop) == ItemStatus.REVOKED
    wire.runtime("s1", BreakPointReached(BreakPoint.TOOL_RESULT))
    # A steer during the permission prompt is held, not dropped (R-PERM-1).
    # The core sends the request (R-PERM-2); the client sees it and answers it.
    asked = wire.ask_permission("s1")
    requested = [e for e in wire.events if isinstance(e, PermissionRequested)]
    assert [str(e.request) for e in requested] == [str(asked)]
    snap = c.snapshot("s1")
    assert snap is not None and snap.state == TurnState.REQUIRES_ACTION
    c.inject("s1", InjectMode.STEER, [text("use auth_v2")])
    wire.exchange()
    wire.allow(asked)
    answered = [a for a in wire.actions if isinstance(a, PermissionAnswered)]
    assert [(str(a.request_id), a.outcome) for a in answered] == [(str(asked), allowed("allow"))]
    snap = c.snapshot("s1")
    assert snap is not None and snap.state == TurnState.RUNNING
    collect()
    assert "use auth_v2" not in delivered
    wire.runtime("s1", BreakPointReached(BreakPoint.TOOL_RESULT))
    collect()
    assert delivered == ["fix the bug", "use auth_v2"]
    wire.runtime("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=None))
    collect()
    # The queued messages open the next turn: not the revoked one, the replaced one with its new text.
    assert delivered[2:] == ["then update the docs", "final wording"]
    assert c.item_status("s1", docs) == ItemStatus.DELIVERED
    assert "drop this one" not in users(wire, "s1") and "draft" not in users(wire, "s1")

    # Cancel with a pending queue inject: the turn ends cancelled, the inject survives.
    c.inject("s1", InjectMode.QUEUE, [text("after the cancel")])
    wire.exchange()
    c.cancel("s1")
    wire.exchange()
    assert any(isinstance(a, CancelTurn) for a in wire.actions)
    wire.runtime("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=None))
    collect()
    assert delivered[-1] == "after the cancel"
    snap = c.snapshot("s1")
    assert snap is not None and snap.state == TurnState.RUNNING and snap.pending == [] and snap.violations == []
    texts = users(wire, "s1")
    assert texts.index("fix the bug") < texts.index("use auth_v2") < texts.index("final wording") < texts.index("after the cancel")


def _chunk(wire: Wire, words: str) -> AgentMessageChunk:
    return AgentMessageChunk(message_id=wire.agent.mint_agent_message_id(), content=text(words))


def test_transcript_shows_agent_chunks_between_user_messages() -> None:
    wire = Wire()
    wire.client.prompt("s1", [text("hi")])
    wire.exchange()
    wire.runtime("s1", _chunk(wire, "hello "))
    snap = wire.client.snapshot("s1")
    assert snap is not None
    assert [(e.role, text_of(e.content)) for e in snap.transcript] == [(MessageRole.USER, "hi"), (MessageRole.AGENT, "hello ")]
    assert isinstance(snap.transcript[1].content[0], TextContent)


def test_text_of_reads_one_block_or_a_list() -> None:
    assert text_of(text("hi")) == "hi"
    assert text_of([text("a"), text("b")]) == "ab"
    assert text_of([]) == ""
