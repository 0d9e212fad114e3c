"""The values as Python users expect them: frozen, typed value classes with defaults, ``==`` and
``hash`` by value, ``match`` with keyword and positional patterns, ``msgspec.structs.asdict`` and
``replace``, an eval-able ``repr``, ``str`` enums that keep unknown values, JSON as ``dict``, one
flat union per stream, and the same values on both receive paths and across the FFI in both
directions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import msgspec
import pytest

import acp_inject as acp
from acp_inject import (
    AcpError,
    AgentMessageChunk,
    CallRejected,
    ClientCore,
    default_agent_config,
    IdleStateUpdate,
    InjectMode,
    PendingItem,
    SessionActivity,
    SessionUpdate,
    StopReason,
    text,
    TextContent,
    ToolCallStatus,
    ToolKind,
    TurnEnd,
    Usage,
)

from .wiring import Wire


def test_enums_are_their_wire_strings_one_style_for_all() -> None:
    members: List[str] = [InjectMode.QUEUE, StopReason.END_TURN, CallRejected.STEER_NOT_SUPPORTED]
    assert members == ["queue", "end_turn", "steer_not_supported"]
    # True at run time; mypy's strict equality keeps enum members and string literals apart.
    assert InjectMode.QUEUE == "queue"  # type: ignore[comparison-overlap]
    pending: str = ToolCallStatus.PENDING  # a str: compares, hashes and serializes as one
    assert {pending: 1}["pending"] == 1 and str(StopReason.END_TURN) == "end_turn"
    assert StopReason("end_turn") is StopReason.END_TURN and InjectMode("steer") is InjectMode.STEER
    assert repr(ToolCallStatus.IN_PROGRESS) == "ToolCallStatus.IN_PROGRESS"
    assert ToolKind("other") is ToolKind.OTHER  # a known kind, not the catch-all
    assert [m.value for m in acp.PlanEntryStatus] == ["pending", "in_progress", "completed", "cancelled"]
    with pytest.raises(ValueError):
        InjectMode("sometime")  # closed: no unknown modes


def test_unknown_open_enum_values_are_kept_not_rejected() -> None:
    x = StopReason("_vendor_stop")
    assert isinstance(x, StopReason) and x.value == "_vendor_stop" and x == "_vendor_stop" and not x.known
    assert x not in list(StopReason) and StopReason.END_TURN.known  # a peer cannot grow the class
    assert repr(x) == "StopReason('_vendor_stop')"
    with pytest.raises(ValueError):
        StopReason(3)


def test_records_are_values() -> None:
    u = Usage(total_tokens=150)
    assert (u.total_tokens, u.input_tokens, u.output_tokens, u.thought_tokens) == (150, 0, 0, None)
    assert u == Usage(150) and u != Usage(151) and hash(u) == hash(Usage(total_tokens=150))
    others: List[object] = [None, 150, "Usage", msgspec.structs.asdict(u)]
    assert all((u == other) is False and u != other for other in others)
    assert {u: "x"}[Usage(total_tokens=150)] == "x"
    assert msgspec.structs.asdict(u) == {
        "total_tokens": 150, "input_tokens": 0, "output_tokens": 0, "thought_tokens": None,
        "cached_read_tokens": None, "cached_write_tokens": None, "meta": None,
    }
    # replace keeps what it is not told to change.
    assert msgspec.structs.replace(Usage(total_tokens=1, input_tokens=5), total_tokens=2) == Usage(total_tokens=2, input_tokens=5)
    with pytest.raises(AttributeError):
        u.total_tokens = 3  # type: ignore[misc]
    assert Usage.__module__ == "acp_inject.values" and acp.Usage is acp.values.Usage


def test_json_members_are_dicts() -> None:
    u = Usage(total_tokens=1, meta={"a": 1, "b": [True, None, 1.5]})
    assert u.meta == {"a": 1, "b": [True, None, 1.5]}
    wire = Wire(("s1",))
    wire.client.prompt("s1", [text("one")])
    wire.exchange()
    wire.runtime("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=u))
    snap = wire.client.snapshot("s1")
    assert snap is not None and snap.usage == u, "a JSON member crosses the FFI both ways as a dict"


def test_repr_is_the_call_that_makes_the_value() -> None:
    u = Usage(total_tokens=150)
    assert repr(u) == (
        "Usage(total_tokens=150, input_tokens=0, output_tokens=0, thought_tokens=None, "
        "cached_read_tokens=None, cached_write_tokens=None, meta=None)"
    )
    item = PendingItem(message_id="m1", mode=acp.ItemMode.QUEUE, status=acp.ItemStatus.PENDING, content=[text("x")])
    ended = IdleStateUpdate(stop_reason=StopReason("_x"), usage=u)
    for value in (u, item, ended, TurnEnd(stop_reason=StopReason.END_TURN)):
        assert eval(repr(value), vars(acp)) == value, repr(value)


def test_match_with_keyword_and_positional_patterns_on_nested_values() -> None:
    def show(activity: SessionActivity) -> str:
        match activity:
            case AgentMessageChunk(content=TextContent(text=t)):
                return f"says {t}"
            case IdleStateUpdate(stop_reason=StopReason.END_TURN, usage=Usage(total)):
                return f"done after {total} tokens"
            case IdleStateUpdate(stop_reason=reason):
                return f"ended: {reason}"
            case PendingItem(status=acp.ItemStatus.DELIVERED, message_id=m):
                return f"delivered {m}"
            case _:
                return "other"

    assert show(AgentMessageChunk(message_id="a1", content=text("hi"))) == "says hi"
    assert show(IdleStateUpdate(stop_reason=StopReason.END_TURN, usage=Usage(total_tokens=7))) == "done after 7 tokens"
    assert show(IdleStateUpdate(stop_reason=StopReason.CANCELLED)) == "ended: cancelled"
    delivered = PendingItem(message_id="m1", mode=acp.ItemMode.STEER, status=acp.ItemStatus.DELIVERED, content=[])
    assert show(delivered) == "delivered m1"
    # Positional patterns follow the constructor's order.
    match AgentMessageChunk("a2", TextContent("yo")):
        case AgentMessageChunk(m, TextContent(t)):
            assert (m, t) == ("a2", "yo")
        case _:
            pytest.fail("positional pattern")


def test_one_flat_activity_union() -> None:
    # Updates, the state updates among them, items, violations and permission requests are all
    # activities, one level deep.
    for cls in (AgentMessageChunk, IdleStateUpdate, acp.RunningStateUpdate, PendingItem, acp.Violation, acp.PermissionRequested, acp.SessionClosed):
        assert cls in SessionActivity.__args__, cls
    assert isinstance(IdleStateUpdate(), SessionUpdate) and isinstance(IdleStateUpdate(), acp.StateUpdate)
    assert not isinstance(PendingItem(mode=acp.ItemMode.QUEUE, status=acp.ItemStatus.PENDING, content=[]), SessionUpdate)


def test_a_rejection_reason_compares_with_its_member() -> None:
    core = ClientCore()
    core.assume_agent(1, None)  # a v1 agent: no injects, so no steer
    core.open_session("s1")
    with pytest.raises(AcpError.Rejected) as caught:
        core.inject("s1", InjectMode.STEER, "now")
    assert caught.value.reason == CallRejected.STEER_NOT_SUPPORTED and caught.value.reason is CallRejected.STEER_NOT_SUPPORTED
    assert isinstance(caught.value, AcpError) and "steer_not_supported" in str(caught.value)


def test_a_value_of_the_wrong_type_is_a_typed_error_when_it_crosses() -> None:
    wire = Wire(("s1",))
    wire.client.prompt("s1", [text("one")])
    wire.exchange()
    with pytest.raises(AcpError.InvalidInput, match=r"total_tokens: expected an integer"):
        wire.agent.runtime_event("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=Usage(total_tokens="x")))  # type: ignore[arg-type]
    with pytest.raises(acp.InvalidArgument):
        wire.agent.runtime_event("s1", object())  # type: ignore[arg-type]


@pytest.mark.parametrize("per_line", [False, True])
def test_received_enums_are_members_and_unknown_ones_survive(per_line: bool) -> None:
    core = ClientCore(1 << 20)
    core.assume_capabilities(default_agent_config().inject)
    core.open_session("s1", None)
    for reason in ("cancelled", "_vendor_stop"):
        line = (
            '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            '{"sessionUpdate":"state_update","state":"idle","stopReason":"' + reason + '"}}}'
        )
        events = core.receive_line(line.encode()) if per_line else core.receive(line)
        assert [e.event for e in events if isinstance(e, acp.InSession)] == [IdleStateUpdate(stop_reason=StopReason(reason))]
        snap = core.snapshot("s1")
        assert snap is not None
        assert isinstance(snap.stop_reason, StopReason) and snap.stop_reason == reason, (per_line, snap.stop_reason)


@pytest.mark.parametrize("given", [StopReason.MAX_TOKENS, "max_tokens", StopReason("_vendor_stop"), "_vendor_stop"])
def test_a_member_or_a_plain_string_is_sent(given: StopReason) -> None:
    # A member, its string or an unknown string crosses the FFI into the agent core, onto the
    # wire and back through the client core as the same member.
    wire = Wire(("s1",))
    wire.client.prompt("s1", [text("one")])
    wire.exchange()
    wire.runtime("s1", TurnEnd(stop_reason=given, usage=Usage(total_tokens=7)))
    snap = wire.client.snapshot("s1")
    assert snap is not None and snap.violations == []
    assert isinstance(snap.stop_reason, StopReason) and snap.stop_reason == StopReason(given)
    assert snap.usage == Usage(total_tokens=7)


def test_an_unknown_update_kind_is_kept_whole() -> None:
    core = ClientCore()
    core.open_session("s1")
    line = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"_vendor_thing","x":[1]}}}'
    (event,) = core.receive_line(line)
    assert isinstance(event, acp.InSession)
    assert event.event == acp.OtherSessionUpdate(tag="_vendor_thing", raw={"sessionUpdate": "_vendor_thing", "x": [1]})


MYPY_SNIPPET = textwrap.dedent(
    """
    from acp_inject import AgentMessageChunk, SessionActivity, TextContent, Usage

    def show(a: SessionActivity) -> str:
        if isinstance(a, AgentMessageChunk) and isinstance(a.content, TextContent):
            return a.content.txt
        return ""

    Usage(total_tokens="150")
    """
)


def test_mypy_strict_rejects_a_misspelled_field_and_a_wrong_type(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    source = tmp_path / "snippet.py"
    source.write_text(MYPY_SNIPPET)
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": os.environ.get("MYPYPATH", "")},
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert '"TextContent" has no attribute "txt"' in ran.stdout, ran.stdout
    assert 'Argument "total_tokens" to "Usage" has incompatible type "str"; expected "int"' in ran.stdout, ran.stdout
