"""Errors cross the boundary as typed exceptions carrying code, reason and messageId."""

from __future__ import annotations

import json

import pytest

from acp_inject import (
    AcpError,
    AgentCore,
    BreakPoint,
    ClientSession,
    ContentBlock,
    InjectCapabilities,
    InjectMode,
    RuntimeEvent,
    SteerInStream,
    default_agent_options,
    lines_for,
    text,
)

CAPS = InjectCapabilities(modes=[InjectMode.QUEUE, InjectMode.STEER], replace=True, steer_in_stream=[SteerInStream.FINISH])


def test_agent_error_answers_surface_as_protocol_exceptions() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    session = ClientSession("s1", CAPS)
    # A steer while idle: the agent answers -32010 no_running_turn.
    line = session.inject(InjectMode.STEER, [text("use auth_v2")])
    answers = lines_for(core.handle_line("c1", line), "c1")
    assert len(answers) == 1
    with pytest.raises(AcpError.Protocol) as err:
        session.receive(answers[0])
    assert (err.value.code, err.value.reason, err.value.message_id) == (-32010, "no_running_turn", None)
    assert session.snapshot().pending == []


def test_already_delivered_carries_the_message_id() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    session = ClientSession("s1", CAPS)

    def exchange(line: str) -> None:
        for answer in lines_for(core.handle_line("c1", line), "c1"):
            session.receive(answer)

    exchange(session.prompt([text("fix the bug")]))
    exchange(session.inject(InjectMode.STEER, [text("and the docs")]))
    steer_id = session.snapshot().pending[0].message_id
    assert steer_id is not None
    for answer in lines_for(core.runtime_event("s1", RuntimeEvent.BREAK_POINT(kind=BreakPoint.TOOL_RESULT)), "c1"):
        session.receive(answer)
    # The mirror knows it is delivered, so it refuses locally...
    with pytest.raises(AcpError.Rejected) as rejected:
        session.revoke(steer_id)
    assert rejected.value.reason == "unknown_message_id"
    # ...and the agent, asked directly, answers already_delivered with the id.
    raw = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "session/revoke_inject", "params": {"sessionId": "s1", "messageId": steer_id}})
    answer = json.loads(lines_for(core.handle_line("c1", raw), "c1")[0])
    assert answer["error"] == {"code": -32010, "message": "Inject precondition failed", "data": {"reason": "already_delivered", "messageId": steer_id}}


def test_local_rejections_are_typed() -> None:
    session = ClientSession("s1", InjectCapabilities(modes=[InjectMode.QUEUE], replace=False, steer_in_stream=[]))
    with pytest.raises(AcpError.Rejected) as e:
        session.inject(InjectMode.STEER, [text("x")])
    assert e.value.reason == "mode_not_supported"
    with pytest.raises(AcpError.Rejected) as e:
        session.replace("m_1", [text("x")])
    assert e.value.reason == "replace_not_supported"
    assert not session.snapshot().affordances.steer


def test_bad_input_raises_invalid_input_and_changes_nothing() -> None:
    session = ClientSession("s1", CAPS)
    before = session.snapshot_json()
    with pytest.raises(AcpError.InvalidInput):
        session.prompt([ContentBlock.OTHER(json="{not json")])
    with pytest.raises(AcpError.InvalidInput):
        session.prompt([ContentBlock.OTHER(json='{"type": 5}')])
    with pytest.raises(AcpError.InvalidInput):
        ClientSession("s1", InjectCapabilities(modes=[InjectMode.STEER], replace=False, steer_in_stream=[]))
    with pytest.raises(AcpError.InvalidInput):
        ClientSession.from_initialize_result("s1", '{"protocolVersion": "two"}')
    assert session.snapshot_json() == before
    # Garbage from the agent is counted, never raised.
    for line in ["{oops", "", "[]", "\u0000", '{"jsonrpc":"2.0","id":42,"result":{}}']:
        session.receive(line)
    assert session.ignored_lines() >= 4
    assert session.snapshot_json() == before


def test_host_errors_name_their_kind() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    with pytest.raises(AcpError.Host) as e:
        core.runtime_event("s1", RuntimeEvent.TURN_ENDED(stop_reason="end_turn", usage_json=None))
    assert e.value.kind == "no_turn_in_progress"
    with pytest.raises(AcpError.Host) as e:
        core.runtime_event("nope", RuntimeEvent.STREAM_STARTED())
    assert e.value.kind == "session_closed"
    with pytest.raises(AcpError.InvalidInput):
        core.runtime_event("s1", RuntimeEvent.TURN_ENDED(stop_reason="end_turn", usage_json="{bad"))


def test_malformed_lines_get_json_rpc_errors_not_exceptions() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    out = lines_for(core.handle_bytes("c1", b"{oops\n\xff\xfe\n" + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "nope"}).encode()), "c1")
    codes = [json.loads(line)["error"]["code"] for line in out]
    assert codes == [-32700, -32700, -32601]


def test_snapshot_restore_round_trips_through_the_binding() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    session = ClientSession("s1", CAPS)
    core.handle_line("c1", session.prompt([text("a")]))
    core.handle_line("c1", session.inject(InjectMode.QUEUE, [text("b")]))
    restored = AgentCore.restore(core.snapshot())
    assert [p.content for p in restored.pending("s1")] == [[text("b")]]
    with pytest.raises(AcpError.InvalidInput):
        AgentCore.restore('{"version": 99}')


def test_bulk_text_applies_every_line_and_returns_error_answers() -> None:
    session = ClientSession("s1", CAPS)
    line = session.inject(InjectMode.STEER, [text("x")])
    request_id = json.loads(line)["id"]
    answer = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32010, "message": "Inject precondition failed", "data": {"reason": "no_running_turn"}}}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "state_update", "state": "running"}}}
    errors = session.receive_text(json.dumps(update) + "\n\n" + json.dumps(answer) + "\n")
    assert [(e.code, e.reason) for e in errors] == [(-32010, "no_running_turn")]
    assert session.snapshot().state.name == "RUNNING"
