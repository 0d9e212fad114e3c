"""The wire values as Python users expect them: open enums are ``str`` enum members (values,
not calls), unknown values are kept, constructors take keywords with defaults, on both receive
paths and across the FFI in both directions."""

from __future__ import annotations

import pytest

import acp_inject as acp
from acp_inject import ClientCore, RuntimeEvent, StopReason, ToolCallStatus, ToolKind, Usage, default_agent_config, text

from acp_inject.acp_inject_ffi import RunningStateUpdate

from .wiring import Wire


def test_members_are_their_wire_strings() -> None:
    pending: str = ToolCallStatus.PENDING  # a str: compares, hashes and serializes as one
    assert pending == "pending" and {pending: 1}["pending"] == 1
    assert isinstance(StopReason.END_TURN, str) and str(StopReason.END_TURN) == "end_turn"
    assert StopReason("end_turn") is StopReason.END_TURN
    assert repr(ToolCallStatus.IN_PROGRESS) == "<ToolCallStatus.IN_PROGRESS: 'in_progress'>"
    # `other` is a known tool kind; anything else is kept.
    assert ToolKind("other") is ToolKind.OTHER
    assert [m.value for m in acp.PlanEntryStatus] == ["pending", "in_progress", "completed", "cancelled"]


def test_unknown_values_are_kept_not_rejected() -> None:
    x = StopReason("_vendor_stop")
    assert isinstance(x, StopReason) and x.value == "_vendor_stop" and x == "_vendor_stop"
    assert x not in list(StopReason)  # not added to the class: a peer cannot grow it
    with pytest.raises(ValueError):
        StopReason(3)


def test_match_takes_members_as_value_patterns() -> None:
    def name(reason: StopReason) -> str:
        match reason:
            case StopReason.END_TURN:
                return "done"
            case StopReason.CANCELLED:
                return "cancelled"
            case _:
                return f"other: {reason}"

    assert [name(StopReason.CANCELLED), name(StopReason("_x"))] == ["cancelled", "other: _x"]


def test_usage_needs_only_its_total() -> None:
    u = Usage(total_tokens=150)
    assert (u.total_tokens, u.input_tokens, u.output_tokens, u.thought_tokens) == (150, 0, 0, None)
    assert str(u).startswith("Usage(total_tokens=150, input_tokens=0, output_tokens=0")


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
        if per_line:
            core.receive_line(line.encode())
        else:
            core.receive(line)
        snap = core.snapshot("s1")
        assert snap is not None
        got = snap.stop_reason
        assert isinstance(got, StopReason) and got == reason, (per_line, got)


@pytest.mark.parametrize("given", [StopReason.MAX_TOKENS, "max_tokens", StopReason("_vendor_stop"), "_vendor_stop"])
def test_a_member_or_a_plain_string_is_sent(given: StopReason) -> None:
    # Lowered through the enum: a member, its string or an unknown string crosses the FFI into
    # the agent core, onto the wire and back through the client core as the same member.
    wire = Wire(("s1",))
    wire.client.prompt("s1", [text("one")])
    wire.exchange()
    wire.runtime("s1", RuntimeEvent.TURN_ENDED(stop_reason=given, usage=Usage(total_tokens=7)))
    snap = wire.client.snapshot("s1")
    assert snap is not None and snap.violations == []
    assert isinstance(snap.stop_reason, StopReason) and snap.stop_reason == StopReason(given)
    assert snap.usage is not None and (snap.usage.total_tokens, snap.usage.input_tokens) == (7, 0)


def test_records_and_variants_show_their_fields() -> None:
    u = Usage(total_tokens=150)
    assert repr(u) == (
        "Usage(total_tokens=150, input_tokens=0, output_tokens=0, thought_tokens=None, "
        "cached_read_tokens=None, cached_write_tokens=None, meta=None)"
    )
    assert eval(repr(u), vars(acp)) == u  # the text is the call that makes it
    item = acp.PendingItem(message_id="m1", mode=acp.ItemMode.QUEUE, status=acp.ItemStatus.PENDING, content=[text("x")], superseded=[], held=False)
    # A tuple variant shows its values, a variant with named fields its fields, nested too.
    assert repr(acp.SessionActivity.EVENT(acp.SessionEvent.ITEM(item))).startswith(
        "SessionActivity.EVENT(SessionEvent.ITEM(PendingItem(message_id='m1', mode=<ItemMode.QUEUE: 1>,"
    )
    assert "content=[ContentBlock.TEXT(TextContent(text='x', annotations=None, meta=None))]" in repr(item)
    ended = RuntimeEvent.TURN_ENDED(stop_reason=StopReason.END_TURN)
    assert repr(ended) == "RuntimeEvent.TURN_ENDED(stop_reason=<StopReason.END_TURN: 'end_turn'>, usage=None, error=None)"
    # Every generated class already has it: installing again changes nothing.
    assert acp._repr.install(acp._ffi.acp_inject_ffi) == 0


def test_values_received_across_the_ffi_show_their_fields() -> None:
    wire = Wire(("s1",))
    wire.client.prompt("s1", [text("one")])
    wire.exchange()
    wire.runtime("s1", RuntimeEvent.TURN_ENDED(stop_reason=StopReason.END_TURN, usage=Usage(total_tokens=7)))
    snap = wire.client.snapshot("s1")
    assert snap is not None
    assert repr(snap.usage).startswith("Usage(total_tokens=7, input_tokens=0,")
    assert repr(snap).startswith("MirrorSnapshot(") and "stop_reason=<StopReason.END_TURN: 'end_turn'>" in repr(snap)


def test_the_activity_helpers_unwrap_what_they_name() -> None:
    item = acp.PendingItem(message_id="m1", mode=acp.ItemMode.STEER, status=acp.ItemStatus.DELIVERED, content=[], superseded=[], held=False)
    idle = acp.IdleStateUpdate(stop_reason=StopReason.CANCELLED)
    state = acp.SessionUpdate.STATE_UPDATE(acp.StateUpdate.IDLE(idle))
    of_item = acp.SessionActivity.EVENT(acp.SessionEvent.ITEM(item))
    of_state = acp.SessionActivity.EVENT(acp.SessionEvent.UPDATE(state))
    assert (acp.item_of(of_item), acp.update_of(of_item), acp.turn_ended(of_item)) == (item, None, None)
    assert (acp.item_of(of_state), acp.update_of(of_state), acp.turn_ended(of_state)) == (None, state, idle)
    running = acp.SessionActivity.EVENT(acp.SessionEvent.UPDATE(acp.SessionUpdate.STATE_UPDATE(acp.StateUpdate.RUNNING(RunningStateUpdate()))))
    assert acp.update_of(running) is not None and acp.turn_ended(running) is None
    closed = acp.SessionActivity.EVENT(acp.SessionEvent.CLOSED())
    assert (acp.item_of(closed), acp.update_of(closed), acp.turn_ended(closed)) == (None, None, None)
