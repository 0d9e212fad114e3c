"""Replays conformance vectors through the Python binding (``python -m acp_inject.conformance DIR…``).

This runner drives :class:`AgentCore` and :class:`ClientSession` exactly as a Python host
would, so a passing vector proves the behaviour survives the FFI boundary; it implements only
the vector format (captures and comparison), never the protocol. Directories come from the
command line or, when none is given, ``ACP_INJECT_VECTORS`` (``os.pathsep``-separated).
Prints ``N passed, N failed`` and each failure's first mismatch, like ``cargo xtask conformance``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import (
    AcpError,
    AgentCore,
    AgentOutput,
    BreakPoint,
    ClearStyle,
    ClientSession,
    ContentBlock,
    InjectCapabilities,
    InjectMode,
    QueueDrain,
    RevokeReplace,
    Role,
    RuntimeAction,
    RuntimeEvent,
    SteerInStream,
    default_agent_options,
)

_CAPTURE = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*$")


class Mismatch(Exception):
    """The first difference between a vector and what the binding did."""


@dataclass
class Result:
    name: str
    file: str
    mismatch: Optional[str] = None


@dataclass
class Report:
    results: List[Result] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.mismatch is None)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    def render(self) -> str:
        out = [f"FAILED {r.name} ({r.file})\n  {r.mismatch}" for r in self.results if r.mismatch is not None]
        out.append(f"{self.passed} passed, {self.failed} failed")
        return "\n".join(out) + "\n"


class Captures:
    def __init__(self) -> None:
        self.bound: Dict[str, Any] = {}

    def match(self, expected: Any, actual: Any, at: str) -> None:
        if isinstance(expected, str) and _CAPTURE.match(expected):
            name = expected[1:]
            if name in self.bound:
                if self.bound[name] != actual or type(self.bound[name]) is not type(actual):
                    raise Mismatch(f"{at}: ${name} is bound to {self.bound[name]!r}, got {actual!r}")
                return
            if not isinstance(actual, (str, int, float)) or isinstance(actual, bool):
                raise Mismatch(f"{at}: ${name} must capture a string or number, got {actual!r}")
            for other, value in self.bound.items():
                if value == actual and type(value) is type(actual):
                    raise Mismatch(f"{at}: ${name} would bind {actual!r}, already bound to ${other}")
            self.bound[name] = actual
            return
        if isinstance(expected, str) and expected.startswith("$$"):
            expected = expected[1:]
        if isinstance(expected, dict) and isinstance(actual, dict):
            for k, v in expected.items():
                if k not in actual:
                    raise Mismatch(f"{at}: missing member `{k}` (expected {json.dumps(v)})")
                self.match(v, actual[k], f"{at}.{k}")
            for k in actual:
                if k not in expected:
                    raise Mismatch(f"{at}: unexpected member `{k}`: {json.dumps(actual[k])}")
            return
        if isinstance(expected, list) and isinstance(actual, list):
            if len(expected) != len(actual):
                raise Mismatch(f"{at}: expected {len(expected)} items, got {len(actual)}: {json.dumps(actual)}")
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, f"{at}[{i}]")
            return
        if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
            raise Mismatch(f"{at}: expected {json.dumps(expected)}, got {json.dumps(actual)}")

    def substitute(self, value: Any) -> Any:
        if isinstance(value, str):
            if _CAPTURE.match(value):
                if value[1:] not in self.bound:
                    raise Mismatch(f"capture {value} is used before it is bound")
                return self.bound[value[1:]]
            return value[1:] if value.startswith("$$") else value
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        return value


def _capabilities(vector: Dict[str, Any]) -> Optional[InjectCapabilities]:
    inject = (vector.get("capabilities") or {}).get("inject")
    if inject is None:
        return None
    return InjectCapabilities(
        modes=[InjectMode[m.upper()] for m in inject["modes"]],
        replace=bool((inject.get("pending") or {}).get("replace", False)),
        steer_in_stream=[SteerInStream[m.upper()] for m in inject.get("steerInStream", [])],
    )



def _action_json(action: RuntimeAction) -> Dict[str, Any]:
    if isinstance(action, RuntimeAction.START_TURN):
        return {"action": "start_turn", "messageIds": [m.message_id for m in action.messages]}
    if isinstance(action, RuntimeAction.DELIVER):
        return {
            "action": "deliver",
            "messageIds": [m.message_id for m in action.messages],
            "content": [json.loads(m.content_json) for m in action.messages],
        }
    if isinstance(action, RuntimeAction.INTERRUPT_STREAM):
        return {"action": "interrupt_stream"}
    if isinstance(action, RuntimeAction.CANCEL_TURN):
        return {"action": "cancel_turn"}
    if isinstance(action, RuntimeAction.DROPPED):
        return {
            "action": "dropped",
            "injects": [
                {"messageId": d.message_id, "mode": d.mode.name.lower(), "content": json.loads(d.content_json)}
                for d in action.injects
            ],
        }
    raise Mismatch(f"unknown action {action!r}")


def _runtime_event(rt: Dict[str, Any]) -> RuntimeEvent:
    event = rt.get("event")
    simple = {
        "stream_started": RuntimeEvent.STREAM_STARTED,
        "stream_finished": RuntimeEvent.STREAM_FINISHED,
        "permission_requested": RuntimeEvent.PERMISSION_REQUESTED,
        "permission_resolved": RuntimeEvent.PERMISSION_RESOLVED,
        "paused": RuntimeEvent.PAUSED,
        "resumed": RuntimeEvent.RESUMED,
        "close": RuntimeEvent.CLOSE,
    }
    if event in simple:
        return simple[event]()
    if event == "break_point":
        return RuntimeEvent.BREAK_POINT(kind=BreakPoint[rt.get("kind", "tool_result").upper()])
    if event == "turn_ended":
        usage = rt.get("usage")
        return RuntimeEvent.TURN_ENDED(
            stop_reason=rt.get("stopReason", "end_turn"), usage_json=None if usage is None else json.dumps(usage)
        )
    if event == "update":
        return RuntimeEvent.UPDATE(update_json=json.dumps(rt["update"]))
    if event == "clear_agent_message":
        return RuntimeEvent.CLEAR_AGENT_MESSAGE(message_id=rt["messageId"])
    raise Mismatch(f"unknown runtime event {event!r}")


def _replay_agent(vector: Dict[str, Any]) -> None:
    options = default_agent_options()
    options.inject = _capabilities(vector)
    policy = vector.get("policy") or {}
    if "queueDrain" in policy:
        options.queue_drain = QueueDrain[policy["queueDrain"].upper()]
    if "steerInStream" in policy:
        options.steer_in_stream = SteerInStream[policy["steerInStream"].upper()]
    if "revokeReplace" in policy:
        options.revoke_replace = RevokeReplace[policy["revokeReplace"].upper()]
    if "rememberIds" in policy:
        options.remember_ids = int(policy["rememberIds"])
    if "clearStyle" in policy:
        options.clear_style = ClearStyle[policy["clearStyle"].upper()]
    core = AgentCore(options)
    core.create_session("s1")
    core.attach("c1", Role.CONTROLLER)
    for o in vector.get("observers", []):
        core.attach(o, Role.OBSERVER)
    captures = Captures()
    outputs: List[AgentOutput] = []

    def expect(expected: List[Any]) -> None:
        msgs = [e for e in expected if "action" not in e]
        acts = [e for e in expected if "action" in e]
        lines = [o for o in outputs if isinstance(o, AgentOutput.LINE)]
        got_acts = [_action_json(o.action) for o in outputs if isinstance(o, AgentOutput.ACTION)]
        outputs.clear()
        if len(msgs) != len(lines):
            raise Mismatch(f"expected {len(msgs)} messages, got {len(lines)}: {' | '.join(o.line for o in lines)}")
        for i, (e, o) in enumerate(zip(msgs, lines)):
            e = dict(e)
            want_to = e.pop("to", None)
            actual = json.loads(o.line)
            if want_to is not None and o.to != want_to:
                raise Mismatch(f"message {i}: expected to {want_to}, sent to {o.to}")
            if want_to is None and o.to is not None and "id" not in e:
                raise Mismatch(f"message {i}: a notification must go to every connection, sent to {o.to}")
            err = actual.get("error")
            if isinstance(err, dict) and isinstance(err.get("data"), dict):
                exp_data = (e.get("error") or {}).get("data")
                if not (isinstance(exp_data, dict) and "detail" in exp_data):
                    err["data"].pop("detail", None)
                    if not err["data"] and exp_data is None:
                        del err["data"]
            captures.match(e, actual, f"message {i}")
        if len(acts) != len(got_acts):
            raise Mismatch(f"expected {len(acts)} actions, got {len(got_acts)}: {got_acts}")
        for i, (e, a) in enumerate(zip(acts, got_acts)):
            captures.match(e, a, f"action {i}")

    for i, step in enumerate(vector["steps"]):
        at = f"step {i}"
        try:
            if "client" in step:
                line = json.dumps(captures.substitute(step["client"]))
                outputs.extend(core.handle_line(step.get("from", "c1"), line))
            elif "runtime" in step:
                rt = step["runtime"]
                want = step.get("hostError")
                try:
                    outputs.extend(core.runtime_event(rt.get("sessionId", "s1"), _runtime_event(rt)))
                    if want is not None:
                        raise Mismatch(f"expected host error {want}, the event was accepted")
                except AcpError.Host as e:
                    if want != e.kind:
                        raise Mismatch(f"expected host error {want}, got {e.kind}") from None
            elif "expect" in step:
                expect(step["expect"])
            elif "expectHistory" in step:
                history = [
                    {"messageId": u.message_id, "content": json.loads(u.content_json)} for u in core.history("s1")
                ]
                captures.match(step["expectHistory"], history, "history")
            else:
                raise Mismatch(f"unknown step {json.dumps(step)}")
        except Mismatch as m:
            raise Mismatch(f"{at}: {m}") from None
    try:
        expect([])
    except Mismatch as m:
        raise Mismatch(f"end of vector: {m}") from None


def _call(session: ClientSession, call: Dict[str, Any]) -> str:
    op = call.get("op")
    blocks: List[ContentBlock] = [ContentBlock.OTHER(json=json.dumps(b)) for b in call.get("content", [])]
    if op == "prompt":
        return session.prompt(blocks)
    if op == "inject":
        return session.inject(InjectMode[call["mode"].upper()], blocks)
    if op == "revoke":
        return session.revoke(call["messageId"])
    if op == "replace":
        return session.replace(call["messageId"], blocks)
    if op == "cancel":
        return session.cancel()
    if op == "status":
        return session.status()
    raise Mismatch(f"unknown op {op!r}")


def _replay_client(vector: Dict[str, Any]) -> None:
    session = ClientSession(vector.get("sessionId", "s1"), _capabilities(vector))
    captures = Captures()
    last_error: Optional[Dict[str, Any]] = None
    for i, step in enumerate(vector["steps"]):
        at = f"step {i}"
        try:
            if "call" in step:
                call = captures.substitute(step["call"])
                try:
                    line = _call(session, call)
                except AcpError.Rejected as r:
                    if step.get("rejects") != r.reason:
                        raise Mismatch(f"the call was rejected ({r.reason})") from None
                    continue
                if "rejects" in step:
                    raise Mismatch(f"expected rejection {step['rejects']}, it sent {line}")
                captures.match(step["sends"], json.loads(line), "sends")
            elif "receive" in step:
                last_error = None
                try:
                    session.receive(json.dumps(captures.substitute(step["receive"])))
                except AcpError.Protocol as e:
                    last_error = {"code": e.code, "reason": e.reason}
                    if e.message_id is not None:
                        last_error["messageId"] = e.message_id
            elif "expectState" in step:
                snap = json.loads(session.snapshot_json())
                for k, v in step["expectState"].items():
                    captures.match(v, snap.get(k), f"state.{k}")
            elif "expectError" in step:
                if last_error is None:
                    raise Mismatch("expected an error, the last receive surfaced none")
                expected = step["expectError"]
                actual = {k: v for k, v in last_error.items() if k in expected or k == "reason"}
                if "reason" not in expected and actual.get("reason") is None:
                    actual.pop("reason", None)
                captures.match(expected, actual, "expectError")
            elif "expectItem" in step:
                item = captures.substitute(step["expectItem"])
                status = session.item_status(item["messageId"])
                got = None if status is None else status.name.lower()
                if got != item.get("status"):
                    raise Mismatch(f"item {item['messageId']} has status {got}, expected {item.get('status')}")
            else:
                raise Mismatch(f"unknown step {json.dumps(step)}")
        except Mismatch as m:
            raise Mismatch(f"{at}: {m}") from None


def run_file(path: Path) -> Result:
    try:
        vector = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return Result(str(path), str(path), f"unreadable: {e}")
    result = Result(vector.get("name", "(unnamed)"), str(path))
    try:
        side = vector.get("side")
        if side == "agent":
            _replay_agent(vector)
        elif side == "client":
            _replay_client(vector)
        else:
            raise Mismatch(f"unknown side {side!r}")
    except Mismatch as m:
        result.mismatch = str(m)
    except AcpError as e:
        result.mismatch = f"unexpected {e!r}"
    return result


def vector_files(dirs: Sequence[str]) -> List[Path]:
    files: List[Path] = []
    for d in dirs:
        p = Path(d)
        files.extend([p] if p.is_file() else p.rglob("*.json"))
    return sorted(files)


def run_dirs(dirs: Sequence[str]) -> Report:
    return Report([run_file(f) for f in vector_files(dirs)])


def default_dirs() -> List[str]:
    env = os.environ.get("ACP_INJECT_VECTORS")
    return [d for d in env.split(os.pathsep) if d] if env else []


def main(argv: Sequence[str]) -> int:
    dirs = list(argv) or default_dirs()
    if not dirs:
        print("usage: python -m acp_inject.conformance DIR… (or set ACP_INJECT_VECTORS)", file=sys.stderr)
        return 2
    report = run_dirs(dirs)
    sys.stdout.write(report.render())
    if not report.results:
        print("no vector files found", file=sys.stderr)
        return 1
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
