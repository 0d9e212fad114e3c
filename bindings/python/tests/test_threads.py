"""The library's objects are usable from several threads at once: no deadlock, no lost or
duplicated delivery, no misrouted answer (each object serialises its calls inside; this shows
the binding keeps that true)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Set

from acp_inject import (
    AcpError,
    Action,
    AgentCore,
    Answered,
    BreakPoint,
    BreakPointReached,
    ClientCore,
    ConnectionRole,
    default_agent_config,
    Deliver,
    InjectMode,
    Line,
    Output,
    StartTurn,
    StopReason,
    text,
    text_of,
    TurnEnd,
)

from .wiring import Wire, handshake

THREADS = 8
PER_THREAD = 150


def test_one_agent_core_driven_from_eight_threads() -> None:
    core = AgentCore(default_agent_config())
    core.create_session("s1", "/work")
    for n in range(1, THREADS + 1):
        core.attach(f"c{n}", ConnectionRole.CONTROLLER)
        core.attach_to_session(f"c{n}", "s1")
        handshake(core, f"c{n}")
    prompt = {"jsonrpc": "2.0", "id": 0, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}}
    assert any(isinstance(o, Action) for o in core.handle_line("c1", json.dumps(prompt)))
    accepted: Set[str] = set()
    revoked: Set[str] = set()
    delivered: List[str] = []
    lock = threading.Lock()

    def record(outputs: List[Output]) -> None:
        with lock:
            for o in outputs:
                if isinstance(o, Action) and isinstance(o.action, (Deliver, StartTurn)):
                    delivered.extend(m.message_id for m in o.action.input)

    def answer_to(outputs: List[Output], conn: str) -> dict:  # type: ignore[type-arg]
        return next(json.loads(o.line) for o in outputs if isinstance(o, Line) and o.to == [conn] and '"id"' in o.line)

    def worker(n: int) -> None:
        conn = f"c{n}"
        for i in range(PER_THREAD):
            req = n * 100_000 + i * 2
            line = json.dumps({"jsonrpc": "2.0", "id": req, "method": "session/inject", "params": {"sessionId": "s1", "mode": "steer" if i % 2 else "queue", "content": [{"type": "text", "text": f"{n}-{i}"}]}})
            outs = core.handle_line(conn, line)
            record(outs)
            answer = answer_to(outs, conn)
            assert answer["id"] == req, "an answer went to the wrong request"
            if "error" in answer:
                # A steer that raced a turn end meets an idle session (R-STEER-2).
                assert answer["error"]["data"]["reason"] == "no_running_turn", answer
                continue
            mid = answer["result"]["messageId"]
            with lock:
                accepted.add(mid)
            if i % 3 == 0:
                rev = core.handle_line(conn, json.dumps({"jsonrpc": "2.0", "id": req + 1, "method": "session/revoke_inject", "params": {"sessionId": "s1", "messageId": mid}}))
                record(rev)
                if answer_to(rev, conn).get("result") == {}:
                    with lock:
                        revoked.add(mid)
            try:
                if i % 5 == 0:
                    record(core.runtime_event("s1", BreakPointReached(BreakPoint.TOOL_RESULT)))
                if i % 17 == 0:
                    record(core.runtime_event("s1", TurnEnd(stop_reason=StopReason.END_TURN, usage=None)))
            except AcpError.Host:
                pass  # the turn had ended under another thread

    with ThreadPoolExecutor(THREADS) as pool:
        for f in [pool.submit(worker, n) for n in range(1, THREADS + 1)]:
            f.result(timeout=300)

    pending = {p.message_id for p in core.pending("s1")}
    delivered_set = set(delivered)
    assert len(delivered) == len(delivered_set), "a message was delivered twice"
    assert not (delivered_set & revoked), "a revoked message was delivered"
    assert len(accepted) > THREADS * PER_THREAD // 2
    for mid in accepted:
        assert [mid in delivered_set, mid in revoked, mid in pending].count(True) == 1, mid


def test_one_client_core_used_from_several_threads() -> None:
    """Calls, receives and snapshots from several threads at once on one ClientCore: every
    request gets a distinct id, every answer reaches its own session."""
    sessions = [f"s{n}" for n in range(THREADS)]
    wire = Wire(sessions)
    client, agent = wire.client, wire.agent
    lock = threading.Lock()  # the agent side of the wire is one ordered stream
    ids: List[str] = []

    def worker(n: int) -> None:
        s = sessions[n]
        for i in range(40):
            with lock:
                request = client.prompt(s, [text(f"{s} turn {i}")]) if i == 0 else client.inject(s, InjectMode.QUEUE, [text(f"{s} {i}")])
                ids.append(str(request))
                lines: List[str] = []
                for line in client.take_outgoing():
                    lines += wire.agent_lines(agent.handle_line("c1", line))
            for line in lines:
                for e in client.receive(line):
                    if isinstance(e, Answered):
                        assert e.session_id is not None
            snap = client.snapshot(s)
            assert snap is not None and snap.violations == []

    with ThreadPoolExecutor(THREADS) as pool:
        for f in [pool.submit(worker, n) for n in range(THREADS)]:
            f.result(timeout=300)
    assert len(ids) == len(set(ids)), "two requests shared an id"
    for s in sessions:
        snap = client.snapshot(s)
        assert snap is not None
        pending = [text_of(p.content) for p in snap.pending]
        assert all(t.startswith(f"{s} ") for t in pending), (s, pending)
        assert all(text_of(e.content).startswith(f"{s} ") for e in snap.transcript)
    assert client.ignored_lines() == 0

