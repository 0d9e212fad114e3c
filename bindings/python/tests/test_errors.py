"""Bad input never crashes the interpreter: malformed, non-UTF-8, partial, huge and unknown
lines are answered or counted as the rules say, and wrong argument types into every exported
call raise a typed ``AcpError``."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, List

import pytest

import acp_inject
import msgspec

from acp_inject import (
    AcpError,
    AgentCore,
    BreakPoint,
    BreakPointReached,
    ClientCore,
    default_agent_config,
    Event,
    HostError,
    Ignored,
    InjectMode,
    InvalidArgument,
    Line,
    Output,
    StopReason,
    StreamStarted,
    text,
    TextContent,
    TurnEnd,
)
from acp_inject.acp_inject_ffi import acp_inject_ffi as generated

from .conformance import VectorRun

from .wiring import Wire, handshake


def errors(outputs: List[Output]) -> List[int]:
    codes = []
    for o in outputs:
        if isinstance(o, Line):
            message = json.loads(o.line)
            if "error" in message:
                codes.append(message["error"]["code"])
    return codes


def agent() -> AgentCore:
    core = AgentCore(default_agent_config())
    core.create_session("s1", "/work")
    handshake(core, "c1")
    return core


# ----- the agent core -----


def test_malformed_non_utf8_and_unknown_lines_get_json_rpc_errors() -> None:
    core = agent()
    unknown = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/frobnicate", "params": {}})
    not_a_request = json.dumps({"jsonrpc": "2.0", "id": 2})
    out = core.handle_bytes("c1", b"{oops\n\xff\xfe\n" + unknown.encode() + b"\n" + not_a_request.encode() + b"\n")
    assert errors(out) == [-32700, -32700, -32601, -32600]
    assert errors(core.handle_line("c1", "[1, 2")) == [-32700]
    assert errors(core.handle_text("c1", "nope\n" + unknown + "\n")) == [-32700, -32601]


def test_wrong_params_are_invalid_params() -> None:
    core = agent()
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/inject", "params": {"sessionId": "s1", "mode": "sideways", "content": []}})
    assert errors(core.handle_line("c1", line)) == [-32602]
    line = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": 7, "prompt": "text"}})
    assert errors(core.handle_line("c1", line)) == [-32602]


def test_a_partial_line_waits_for_its_end() -> None:
    core = agent()
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/status", "params": {"sessionId": "s1"}}).encode()
    assert core.handle_bytes("c1", line[:10]) == []
    assert core.handle_bytes("c1", line[10:-3]) == []
    out = core.handle_bytes("c1", line[-3:] + b"\n")
    assert [json.loads(o.line)["result"] for o in out if isinstance(o, Line)] == [{"status": "open", "state": {"state": "idle"}}]


def test_a_huge_line_is_refused_and_the_next_one_still_works() -> None:
    config = default_agent_config()
    core = AgentCore(msgspec.structs.replace(config, policy=msgspec.structs.replace(config.policy, max_line_bytes=1024)))
    core.create_session("s1", "/work")
    handshake(core, "c1")
    huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "x" * 100_000}]}})
    out = core.handle_bytes("c1", huge.encode() + b"\n")
    assert len(errors(out)) == 1 and errors(out)[0] < 0
    status = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/status", "params": {"sessionId": "s1"}})
    assert errors(core.handle_bytes("c1", status.encode() + b"\n")) == []


def test_host_errors_are_typed() -> None:
    core = agent()
    with pytest.raises(AcpError.Host) as e:
        core.runtime_event("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=None))
    assert e.value.error == HostError.NO_TURN_IN_PROGRESS
    with pytest.raises(AcpError.Host) as e:
        core.runtime_event("nope", StreamStarted())
    assert e.value.error == HostError.SESSION_CLOSED
    with pytest.raises(AcpError.Host):
        core.runtime_event("s1", BreakPointReached(BreakPoint.TOOL_RESULT))


def test_bad_snapshots_and_configs_are_typed() -> None:
    with pytest.raises(AcpError.InvalidInput):
        AgentCore.restore(default_agent_config(), '{"version": 99}')
    with pytest.raises(AcpError.InvalidInput):
        AgentCore.restore(default_agent_config(), "not json")
    config = default_agent_config()
    assert config.inject is not None
    with pytest.raises(AcpError.Config):
        AgentCore(msgspec.structs.replace(config, inject=msgspec.structs.replace(config.inject, modes=[])))
    with pytest.raises(AcpError):
        VectorRun("{")


# ----- the client core -----


def test_garbage_from_the_agent_is_counted_never_raised() -> None:
    wire = Wire()
    before = wire.client.snapshot("s1")
    events: List[Event] = []
    for line in ["{oops", "", "[]", "\u0000", "null", '{"jsonrpc":"2.0","id":42,"result":{}}', '{"jsonrpc":"2.0","method":"session/update"}']:
        events += wire.client.receive(line)
    events += wire.client.feed(b"\xff\xfe\x00garbage\n")
    assert wire.client.ignored_lines() >= 6
    assert all(isinstance(e, Ignored) for e in events)
    assert wire.client.snapshot("s1") == before


def test_partial_and_huge_lines_on_the_client() -> None:
    client = ClientCore(2048)
    client.assume_capabilities(default_agent_config().inject)
    client.open_session("s1", None)
    update = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "state_update", "state": "running"}}}).encode()
    assert client.feed(update[:7]) == [] and client.feed(update[7:]) == []
    assert len(client.feed(b"\n")) == 1
    huge = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "x" * 10_000}}}})
    assert [type(e) for e in client.feed(huge.encode() + b"\n")] == [Ignored]
    assert [type(e) for e in client.receive(huge)] == [Ignored]
    # A last line without a newline is read at the end of the stream.
    idle = update.replace(b'"running"', b'"idle"')
    assert client.feed(idle) == [] and len(client.finish()) == 1
    snap = client.snapshot("s1")
    assert snap is not None and snap.transcript == []


def test_local_rejections_are_typed() -> None:
    client = ClientCore(1 << 20)
    caps = default_agent_config().inject
    assert caps is not None
    client.assume_capabilities(msgspec.structs.replace(caps, modes=[InjectMode.QUEUE], steer_in_stream=[], pending=None))
    client.open_session("s1", None)
    with pytest.raises(AcpError.Rejected):
        client.inject("s1", InjectMode.STEER, [text("x")])
    with pytest.raises(AcpError.Rejected):
        client.replace("s1", "msg_1", [text("x")])
    with pytest.raises(AcpError.Rejected):
        client.revoke("s1", "never-issued")
    with pytest.raises(AcpError.Rejected):
        client.prompt("unknown-session", [text("x")])
    with pytest.raises(AcpError.Rejected):
        client.prompt("s1", [])
    assert client.take_outgoing() == []


def test_bad_mirror_json_is_typed() -> None:
    client = ClientCore(1 << 20)
    with pytest.raises(AcpError.InvalidInput):
        client.open_session("s1", "{not a mirror")


# ----- wrong types into every exported call -----

core = agent()
client = ClientCore(1 << 20)
WRONG: List[Callable[[], Any]] = [
    lambda: AgentCore(None),  # type: ignore[arg-type]
    lambda: AgentCore.open(default_agent_config(), 5),  # type: ignore[arg-type]
    lambda: AgentCore.restore(None, "{}"),  # type: ignore[arg-type]
    lambda: core.attach(5, None),  # type: ignore[arg-type]
    lambda: core.attach_to_session("c1", None),  # type: ignore[arg-type]
    lambda: core.attached(b"s1"),  # type: ignore[arg-type]
    lambda: core.create_session("s2", 5),  # type: ignore[arg-type]
    lambda: core.detach(None),  # type: ignore[arg-type]
    lambda: core.forget_session(1.5),  # type: ignore[arg-type]
    lambda: core.handle_bytes("c1", "not bytes"),  # type: ignore[arg-type]
    lambda: core.handle_line("c1", b"bytes"),  # type: ignore[arg-type]
    lambda: core.handle_text(None, "x"),  # type: ignore[arg-type]
    lambda: core.history(5),  # type: ignore[arg-type]
    lambda: core.pending(["s1"]),  # type: ignore[arg-type]
    lambda: core.runtime_event("s1", "break_point"),  # type: ignore[arg-type]
    lambda: core.runtime_event("s1", "not an update"),  # type: ignore[arg-type]
    lambda: core.runtime_event("s1", TextContent(text="a content block is no event")),  # type: ignore[arg-type]
    lambda: core.turn(5),  # type: ignore[arg-type]
    lambda: core.is_live(5),  # type: ignore[arg-type]
    lambda: ClientCore(-1),
    lambda: ClientCore("big"),  # type: ignore[arg-type]
    lambda: ClientCore(1 << 80),
    lambda: client.assume_capabilities("queue"),  # type: ignore[arg-type]
    lambda: client.open_session(5, None),  # type: ignore[arg-type]
    lambda: client.initialize("me", True),  # type: ignore[arg-type]
    lambda: client.new_session("/w", 5, []),  # type: ignore[arg-type]
    lambda: client.list_sessions(5, None),  # type: ignore[arg-type]
    lambda: client.resume(5, "/w", True),  # type: ignore[arg-type]
    lambda: client.prompt("s1", 5),  # type: ignore[arg-type]
    lambda: client.prompt("s1", [5]),  # type: ignore[list-item]
    lambda: client.prompt("s1", [TextContent(text=5)]),  # type: ignore[arg-type]
    lambda: client.inject("s1", "sideways", [text("x")]),
    lambda: client.revoke("s1", 5),  # type: ignore[arg-type]
    lambda: client.replace("s1", "m", None),  # type: ignore[arg-type]
    lambda: client.cancel(None),  # type: ignore[arg-type]
    lambda: client.close(5),  # type: ignore[arg-type]
    lambda: client.status(5),  # type: ignore[arg-type]
    lambda: client.answer_permission("1", None),  # type: ignore[arg-type]
    lambda: client.receive(b"bytes"),  # type: ignore[arg-type]
    lambda: client.receive("surrogate \ud800"),
    lambda: client.receive_text(None),  # type: ignore[arg-type]
    lambda: client.feed("str"),  # type: ignore[arg-type]
    lambda: client.feed(5),  # type: ignore[arg-type]
    lambda: client.snapshot(5),  # type: ignore[arg-type]
    lambda: client.item_status("s1", None),  # type: ignore[arg-type]
    lambda: client.mirror_json(5),  # type: ignore[arg-type]
    lambda: client.prompt("s1", [acp_inject.text(5)]),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", range(len(WRONG)))
def test_wrong_argument_types_raise_typed_errors(call: int) -> None:
    with pytest.raises(AcpError.InvalidInput) as e:
        WRONG[call]()
    # Also a TypeError/ValueError, for code that catches those.
    assert isinstance(e.value, (InvalidArgument, AcpError.InvalidInput))
    # The objects still work afterwards.
    assert client.ignored_lines() >= 0 and core.session_ids() == ["s1"]


def test_the_generated_module_itself_raises_pythons_own_errors() -> None:
    """The package wraps the generated module, which stays UniFFI's, unpatched: a wrong argument
    there is Python's ``TypeError`` / ``ValueError``, raised before any call, and a failed call
    its ``FfiError`` carrying the encoded error."""
    with pytest.raises(TypeError):
        generated.shutdown_runtime("soon")
    with pytest.raises((TypeError, ValueError, AttributeError)):
        generated.AgentCore(None)
    with pytest.raises(generated.FfiError.Failed) as failed:
        generated.AgentCore(b"\xc1")
    assert "config" in failed.value.message
    assert acp_inject.AgentCore is not generated.AgentCore and not issubclass(acp_inject.AgentCore, generated.AgentCore)

    async def go() -> None:
        with pytest.raises(TypeError):
            await generated.connect(5, b"")

    asyncio.run(go())


def test_async_calls_with_wrong_types_raise_typed_errors() -> None:
    async def go() -> None:
        with pytest.raises(AcpError.InvalidInput):
            async with acp_inject.connect(["x"], steer_fallback=5):  # type: ignore[arg-type]
                pass

    asyncio.run(go())


def test_invalid_argument_is_every_kind_of_error_it_stands_for() -> None:
    with pytest.raises(TypeError):
        client.receive(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ClientCore(-1)
    with pytest.raises(AcpError):
        client.receive(5)  # type: ignore[arg-type]
