"""Property tests (hypothesis).

(a) Random operation sequences (prompt, queue and steer injects, revoke, replace, cancel,
close, break-points, streams, permission holds, pauses, turn ends) are run through the
binding's ``AgentCore``, under a random queue-drain and steer-in-stream policy. Two checks:

- the rule invariants, from what came out: an accepted inject is delivered at most once, never
  after a successful revoke, with its last accepted content (a replace wins), in first-in
  first-out order within its mode, and ends up exactly one of delivered, revoked, pending or
  handed back on close;
- the Rust core's results for the same sequence: every run is written as a conformance vector
  whose expectations are exactly what the binding produced, and the Rust runner
  (``acp-inject-conformance``, which drives the Rust core directly, no binding) replays them
  all. A vector passes only when the Rust core emits the same lines and actions, so the
  binding and the core agree on every generated sequence.

(b) Arbitrary strings, bytes and values of the wrong type into every exported call: the only
exceptions are typed ``AcpError``s, and the objects keep working.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_inject import (
    AcpError,
    Action,
    AgentConfig,
    AgentCore,
    BreakPoint,
    BreakPointReached,
    CancelledPermissionOutcome,
    CancelTurn,
    ClientCore,
    CloseSession,
    ConnectionRole,
    ContentBlock,
    default_agent_config,
    Deliver,
    Implementation,
    InjectMode,
    InterruptStream,
    Line,
    ModelPaused,
    ModelResumed,
    Output,
    PendingInject,
    PermissionAnswered,
    PermissionAsk,
    PermissionOption,
    PermissionOptionKind,
    ReleaseSession,
    RequestId,
    RuntimeAction,
    RuntimeEvent,
    SelectedPermissionOutcome,
    StartTurn,
    StopReason,
    StreamFinished,
    StreamStarted,
    text,
    TextContent,
    TurnEnd,
    TurnStarted,
    UserInput,
)
from acp_inject.values import decode

from .conformance import VectorRun

from .conftest import conformance_runner
from .wiring import handshake

Json = Dict[str, Any]
Op = Tuple[Any, ...]

# ----- (a) operation sequences -----

WORDS = st.sampled_from(["fix the bug", "use auth_v2", "then the docs", "stop", "añadir 🚀", "x"])
RUNTIME: Dict[str, Tuple[Json, RuntimeEvent]] = {
    "break_point tool_result": ({"event": "break_point", "kind": "tool_result"}, BreakPointReached(BreakPoint.TOOL_RESULT)),
    "break_point model_step": ({"event": "break_point", "kind": "model_step"}, BreakPointReached(BreakPoint.MODEL_STEP)),
    "stream_started": ({"event": "stream_started"}, StreamStarted()),
    "stream_finished": ({"event": "stream_finished"}, StreamFinished()),
    "request_permission": (
        {"event": "request_permission", "title": "run the tests?", "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]},
        PermissionAsk(title="run the tests?", options=[PermissionOption(option_id="allow", name="Allow", kind=PermissionOptionKind.ALLOW_ONCE)]),
    ),
    "paused": ({"event": "paused"}, ModelPaused()),
    "resumed": ({"event": "resumed"}, ModelResumed()),
    "turn_started": ({"event": "turn_started"}, TurnStarted()),
    "turn_ended end_turn": ({"event": "turn_ended", "stopReason": "end_turn"}, TurnEnd(stop_reason=StopReason.END_TURN, usage=None)),
    "turn_ended max_tokens": ({"event": "turn_ended", "stopReason": "max_tokens"}, TurnEnd(stop_reason=StopReason.MAX_TOKENS, usage=None)),
    "close": ({"event": "close"}, CloseSession()),
}
OPS = st.one_of(
    st.tuples(st.just("prompt"), WORDS),
    st.tuples(st.just("inject"), st.sampled_from(["queue", "steer", "queue", "steer"]), WORDS),
    st.tuples(st.just("inject"), st.sampled_from(["queue", "steer"]), WORDS),
    st.tuples(st.just("revoke"), st.integers(0, 30)),
    st.tuples(st.just("replace"), st.integers(0, 30), WORDS),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("status")),
    st.tuples(st.just("runtime"), st.sampled_from(sorted(RUNTIME))),
    st.tuples(st.just("runtime"), st.sampled_from(["break_point tool_result", "turn_ended end_turn"])),
    st.tuples(st.just("close request")),
    st.tuples(st.just("answer permission"), st.sampled_from(["allow", "cancelled"])),
)
POLICIES = st.tuples(st.sampled_from(["batch", "one_per_turn"]), st.sampled_from(["finish", "interrupt"]))


def block_json(block: ContentBlock) -> Json:
    assert isinstance(block, TextContent)
    return {"type": "text", "text": block.text}


def blocks_json(content: List[ContentBlock]) -> List[Json]:
    return [block_json(b) for b in content]


def inputs_ids(inputs: List[UserInput]) -> List[str]:
    return [str(m.message_id) for m in inputs]


def request_id_json(rid: RequestId) -> Any:
    """A request id as JSON: the core mints strings (`permission-N`)."""
    assert isinstance(rid, str), rid
    return rid


def action_json(action: RuntimeAction) -> Json:
    """A runtime action as conformance vectors write it (spec/vectors/README.md)."""
    if isinstance(action, StartTurn):
        return {"action": "start_turn", "messageIds": inputs_ids(action.input)}
    if isinstance(action, Deliver):
        return {"action": "deliver", "messageIds": inputs_ids(action.input), "content": [blocks_json(m.content) for m in action.input]}
    if isinstance(action, InterruptStream):
        return {"action": "interrupt_stream"}
    if isinstance(action, CancelTurn):
        return {"action": "cancel_turn"}
    if isinstance(action, PermissionAnswered):
        outcome = action.outcome
        if isinstance(outcome, SelectedPermissionOutcome):
            answered: Json = {"outcome": "selected", "optionId": str(outcome.option_id)}
        else:
            assert isinstance(outcome, CancelledPermissionOutcome), outcome
            answered = {"outcome": "cancelled"}
        return {"action": "permission_answered", "requestId": request_id_json(action.request_id), "outcome": answered}
    if isinstance(action, ReleaseSession):
        dropped = [{"messageId": str(p.message_id), "mode": p.mode.value, "content": blocks_json(p.content)} for p in action.dropped]
        return {"action": "closed", "turnCancelled": action.turn_cancelled, "dropped": dropped}
    raise AssertionError(f"unexpected action {action}")




@dataclass
class Ledger:
    """What the rules say about every accepted inject, checked as the run goes."""

    accepted: Dict[str, Tuple[str, List[Json]]] = field(default_factory=dict)  # id -> (mode, last accepted content)
    order: List[str] = field(default_factory=list)  # acceptance order
    revoked: set[str] = field(default_factory=set)
    delivered: List[str] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)

    def user_message(self, message_id: str, content: List[Json]) -> None:
        assert message_id not in self.delivered, f"{message_id} delivered twice (R-DELIV-2)"
        assert message_id not in self.revoked, f"{message_id} delivered after a successful revoke (R-REVOKE-1)"
        assert message_id not in self.dropped, f"{message_id} delivered after it was handed back on close"
        if message_id in self.accepted:
            assert content == self.accepted[message_id][1], f"{message_id} delivered with stale content (R-REPLACE-1)"
        self.delivered.append(message_id)

    def check_fifo(self) -> None:
        for mode in ("queue", "steer"):
            injects = [m for m in self.order if self.accepted[m][0] == mode]
            got = [m for m in self.delivered if m in injects]
            assert got == [m for m in injects if m in got], f"{mode} injects delivered out of order (R-QUEUE-1/R-STEER-1): {got}"

    def check_accounted(self, pending: List[PendingInject]) -> None:
        still = {str(p.message_id) for p in pending}
        for m in self.order:
            states = [m in self.delivered, m in self.revoked, m in still, m in self.dropped]
            assert states.count(True) == 1, f"{m} is {states} (delivered, revoked, pending, dropped): R-DELIV-2"


def replay(policy: Tuple[str, str], ops: List[Op]) -> Json:
    """Runs ``ops`` through the binding's ``AgentCore``; returns the vector recording them
    with the binding's outputs as its expectations."""
    drain, in_stream = policy
    vector: Json = {
        "name": f"generated: {len(ops)} operations, {drain}, steer in stream {in_stream}",
        "rules": ["R-DELIV-2"],
        "side": "agent",
        "capabilities": {"inject": {"modes": ["queue", "steer"], "pending": {"replace": True}, "steerInStream": [in_stream]}},
        "policy": {"queueDrain": drain, "steerInStream": in_stream},
        "steps": [],
    }
    # The configuration the Rust runner derives from the same header.
    setup = VectorRun(json.dumps(vector)).agent_setup()
    assert setup is not None
    core = AgentCore(decode(AgentConfig, setup.config))
    assert core.create_session(setup.session, setup.cwd)
    for c in setup.connections:
        core.attach(c.id, decode(ConnectionRole, c.role))
        core.attach_to_session(c.id, setup.session)
        handshake(core, c.id)  # as the Rust runner's setup does
    session = setup.session
    steps: List[Json] = vector["steps"]
    ledger = Ledger()
    issued: List[str] = []
    open_requests: List[str] = []  # the agent's permission requests not yet answered (R-PERM-2)
    request = 0

    def record(outputs: List[Output]) -> None:
        expect: List[Json] = []
        for o in outputs:
            if isinstance(o, Line):
                message = json.loads(o.line)
                expect.append(message)
                update = message.get("params", {}).get("update", {})
                if message.get("method") == "session/update" and update.get("sessionUpdate") == "user_message":
                    ledger.user_message(update["messageId"], update["content"])
                if message.get("method") == "session/request_permission":
                    open_requests.append(message["id"])
            elif isinstance(o, Action):
                expect.append(action_json(o.action))
                if isinstance(o.action, PermissionAnswered):
                    rid = request_id_json(o.action.request_id)
                    assert rid in open_requests, f"{rid} answered twice, or never asked (R-PERM-2)"
                    open_requests.remove(rid)
                if isinstance(o.action, ReleaseSession):
                    ledger.dropped |= {str(p.message_id) for p in o.action.dropped}
        steps.append({"expect": expect})

    def send(method: str, params: Json, notification: bool = False) -> Optional[Json]:
        nonlocal request
        request += 1
        message: Json = {"jsonrpc": "2.0", "method": method, "params": dict(params, sessionId=session)}
        if not notification:
            message["id"] = request
        steps.append({"client": message})
        outputs = core.handle_line("c1", json.dumps(message))
        record(outputs)
        answers = [json.loads(o.line) for o in outputs if isinstance(o, Line) and '"id"' in o.line]
        answers = [a for a in answers if a.get("id") == request]
        return answers[0] if answers else None

    for op in ops:
        kind = op[0]
        if kind == "prompt":
            send("session/prompt", {"prompt": [{"type": "text", "text": op[1]}]})
        elif kind == "inject":
            content = [{"type": "text", "text": op[2]}]
            answer = send("session/inject", {"mode": op[1], "content": content})
            assert answer is not None
            if "result" in answer:
                mid = answer["result"]["messageId"]
                assert mid not in ledger.accepted, "an id issued twice (R-ID-1)"
                ledger.accepted[mid] = (op[1], content)
                ledger.order.append(mid)
                issued.append(mid)
        elif kind == "revoke":
            target = issued[op[1] % len(issued)] if issued else "msg_999"
            answer = send("session/revoke_inject", {"messageId": target})
            assert answer is not None
            if answer.get("result") == {}:
                ledger.revoked.add(target)
        elif kind == "replace":
            target = issued[op[1] % len(issued)] if issued else "msg_999"
            content = [{"type": "text", "text": op[2]}]
            answer = send("session/replace_inject", {"messageId": target, "content": content})
            assert answer is not None
            if "result" in answer:
                assert target not in ledger.delivered and target not in ledger.revoked
                ledger.accepted[target] = (ledger.accepted[target][0], content)
        elif kind == "cancel":
            send("session/cancel", {}, notification=True)
        elif kind == "status":
            send("session/status", {})
        elif kind == "close request":
            send("session/close", {})
        elif kind == "answer permission":
            # The client answers the oldest open request (or a stale id, which is ignored).
            rid = open_requests[0] if open_requests else "permission-0"
            outcome: Json = {"outcome": "selected", "optionId": "allow"} if op[1] == "allow" else {"outcome": "cancelled"}
            message = {"jsonrpc": "2.0", "id": rid, "result": {"outcome": outcome}}
            steps.append({"client": message})
            record(core.handle_line("c1", json.dumps(message)))
        elif kind == "runtime":
            wire, event = RUNTIME[op[1]]
            step: Json = {"runtime": wire}
            steps.append(step)
            try:
                outputs = core.runtime_event(session, event)
            except AcpError.Host as e:
                step["hostError"] = e.error.value  # the vectors name host errors by their wire string
                outputs = []
            record(outputs)
    ledger.check_fifo()
    ledger.check_accounted(core.pending(session))
    return vector


@pytest.mark.parametrize("seed_batch", ["run"])
def test_agent_core_through_the_binding_matches_the_rust_core(seed_batch: str, tmp_path: Path) -> None:
    written: List[Path] = []

    @settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(policy=POLICIES, ops=st.lists(OPS, min_size=1, max_size=40))
    def run(policy: Tuple[str, str], ops: List[Op]) -> None:
        vector = replay(policy, ops)
        path = tmp_path / f"generated-{len(written):04}.json"
        path.write_text(json.dumps(vector, ensure_ascii=False))
        written.append(path)

    run()
    assert len(written) >= 100
    report = tmp_path / "report.json"
    ran = subprocess.run([conformance_runner(), str(tmp_path), "--json", str(report)], capture_output=True, text=True, timeout=600)
    result = json.loads(report.read_text())
    assert result["failed"] == 0, f"the Rust core disagrees with the binding: {result['failures'][:3]}\n{ran.stdout[-2000:]}"
    assert result["passed"] == len(written) and ran.returncode == 0


def test_a_generated_vector_that_disagrees_is_caught(tmp_path: Path) -> None:
    """The comparison can fail: a recorded expectation changed by hand makes the Rust runner
    report a mismatch."""
    vector = replay(("batch", "finish"), [("prompt", "fix the bug"), ("inject", "steer", "stop"), ("runtime", "break_point tool_result")])
    text_of_vector = json.dumps(vector)
    assert '"stop"' in text_of_vector
    (tmp_path / "bad.json").write_text(text_of_vector.replace('"text": "stop"}]]', '"text": "go on"}]]'))
    ran = subprocess.run([conformance_runner(), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0 and "0 passed, 1 failed" in ran.stdout


# ----- (b) arbitrary input into every exported call -----

ANY_VALUE = st.one_of(
    st.text(), st.binary(), st.integers(), st.none(), st.floats(allow_nan=True), st.booleans(),
    st.lists(st.text(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
STRINGS = st.one_of(st.text(), st.text(alphabet=st.characters(codec="utf-8")), st.sampled_from(["", "s1", "\x00", "{}", "[]", '{"jsonrpc":"2.0"}']))


def fresh() -> Tuple[AgentCore, ClientCore]:
    core = AgentCore(default_agent_config())
    core.create_session("s1", "/work")
    core.attach("c1", ConnectionRole.CONTROLLER)
    core.attach_to_session("c1", "s1")
    handshake(core, "c1")
    client = ClientCore(1 << 16)
    client.assume_capabilities(default_agent_config().inject)
    client.open_session("s1", None)
    return core, client


CALLS: Dict[str, Callable[[AgentCore, ClientCore, Any, Any], Any]] = {
    "ClientCore.receive": lambda a, c, x, y: c.receive(x),
    "ClientCore.feed": lambda a, c, x, y: c.feed(x),
    "ClientCore.receive_line": lambda a, c, x, y: c.receive_line(x),
    "ClientCore.receive_text": lambda a, c, x, y: c.receive_text(x),
    "ClientCore.open_session": lambda a, c, x, y: c.open_session(x, y),
    "ClientCore.prompt": lambda a, c, x, y: c.prompt(x, [text(y) if isinstance(y, str) else y]),
    "ClientCore.inject": lambda a, c, x, y: c.inject(x, InjectMode.QUEUE, [text(y) if isinstance(y, str) else y]),
    "ClientCore.revoke": lambda a, c, x, y: c.revoke(x, y),
    "ClientCore.replace": lambda a, c, x, y: c.replace(x, y, [text("z")]),
    "ClientCore.cancel": lambda a, c, x, y: c.cancel(x),
    "ClientCore.close": lambda a, c, x, y: c.close(x),
    "ClientCore.status": lambda a, c, x, y: c.status(x),
    "ClientCore.resume": lambda a, c, x, y: c.resume(x, y, True),
    "ClientCore.new_session": lambda a, c, x, y: c.new_session(x, [y], []),
    "ClientCore.list_sessions": lambda a, c, x, y: c.list_sessions(x, y),
    "ClientCore.initialize": lambda a, c, x, y: c.initialize(Implementation(name=x, title=y, version="1"), True),
    "ClientCore.snapshot": lambda a, c, x, y: c.snapshot(x),
    "ClientCore.item_status": lambda a, c, x, y: c.item_status(x, y),
    "ClientCore.mirror_json": lambda a, c, x, y: c.mirror_json(x),
    "ClientCore()": lambda a, c, x, y: ClientCore(x),
    "AgentCore.handle_line": lambda a, c, x, y: a.handle_line(y, x),
    "AgentCore.handle_bytes": lambda a, c, x, y: a.handle_bytes("c1", x),
    "AgentCore.handle_text": lambda a, c, x, y: a.handle_text("c1", x),
    "AgentCore.create_session": lambda a, c, x, y: a.create_session(x, y),
    "AgentCore.attach": lambda a, c, x, y: a.attach(x, ConnectionRole.OBSERVER),
    "AgentCore.attach_to_session": lambda a, c, x, y: a.attach_to_session(x, y),
    "AgentCore.attached": lambda a, c, x, y: a.attached(x),
    "AgentCore.detach": lambda a, c, x, y: a.detach(x),
    "AgentCore.forget_session": lambda a, c, x, y: a.forget_session(x),
    "AgentCore.history": lambda a, c, x, y: a.history(x),
    "AgentCore.pending": lambda a, c, x, y: a.pending(x),
    "AgentCore.turn": lambda a, c, x, y: a.turn(x),
    "AgentCore.runtime_event": lambda a, c, x, y: a.runtime_event(x, TurnStarted()),
    "AgentCore.restore": lambda a, c, x, y: AgentCore.restore(default_agent_config(), x),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_arbitrary_input_raises_only_typed_errors(call: str) -> None:
    core, client = fresh()

    @settings(max_examples=60, deadline=None, database=None)
    @given(x=st.one_of(STRINGS, ANY_VALUE), y=st.one_of(STRINGS, ANY_VALUE))
    def run(x: Any, y: Any) -> None:
        try:
            CALLS[call](core, client, x, y)
        except AcpError:
            pass

    run()
    # Both objects still answer.
    assert isinstance(core.session_ids(), list)
    client.take_outgoing()
    assert client.ignored_lines() >= 0


@settings(max_examples=200, deadline=None, database=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=20))
def test_arbitrary_byte_streams_are_answered_or_counted(chunks: List[bytes]) -> None:
    """Any byte stream, in any chunking: the agent answers each complete line it cannot use
    with a JSON-RPC error line, the client counts it; neither raises."""
    core, client = fresh()
    for chunk in chunks:
        for o in core.handle_bytes("c1", chunk):
            if isinstance(o, Line):
                json.loads(o.line)
        client.feed(chunk)
    client.finish()
