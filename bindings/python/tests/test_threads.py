"""The exported objects are usable from several threads at once: no deadlock, no lost or
duplicated delivery (the core serialises calls; this proves the binding keeps that true)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Set

from acp_inject import AgentCore, AgentOutput, BreakPoint, RuntimeAction, RuntimeEvent, AcpError, default_agent_options

THREADS = 8
PER_THREAD = 200


def test_one_agent_driven_from_eight_threads() -> None:
    core = AgentCore(default_agent_options())
    core.create_session("s1")
    first = core.handle_line("c1", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}}))
    assert any(isinstance(o, AgentOutput.ACTION) for o in first)
    accepted: Set[str] = set()
    revoked: Set[str] = set()
    delivered: List[str] = []
    lock = threading.Lock()

    def record(outputs: List[AgentOutput]) -> None:
        with lock:
            for o in outputs:
                if isinstance(o, AgentOutput.ACTION) and isinstance(o.action, (RuntimeAction.DELIVER, RuntimeAction.START_TURN)):
                    delivered.extend(m.message_id for m in o.action.messages)

    def worker(n: int) -> None:
        conn = f"c{n}"
        for i in range(PER_THREAD):
            req = n * 100_000 + i * 2
            line = json.dumps({"jsonrpc": "2.0", "id": req, "method": "session/inject", "params": {"sessionId": "s1", "mode": "steer" if i % 2 else "queue", "content": [{"type": "text", "text": f"{n}-{i}"}]}})
            outs = core.handle_line(conn, line)
            record(outs)
            answer = next(json.loads(o.line) for o in outs if isinstance(o, AgentOutput.LINE) and o.to == conn)
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
                answer = json.loads(next(o.line for o in rev if isinstance(o, AgentOutput.LINE) and o.to == conn))
                if answer.get("result") == {}:
                    with lock:
                        revoked.add(mid)
            if i % 5 == 0:
                try:
                    record(core.runtime_event("s1", RuntimeEvent.BREAK_POINT(kind=BreakPoint.TOOL_RESULT)))
                except AcpError.Host:
                    pass
            if i % 17 == 0:
                try:
                    record(core.runtime_event("s1", RuntimeEvent.TURN_ENDED(stop_reason="end_turn", usage_json=None)))
                except AcpError.Host:
                    pass

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(worker, n) for n in range(1, THREADS + 1)]
        for f in futures:
            f.result(timeout=120)

    pending = {p.message_id for p in core.pending("s1")}
    delivered_set = set(delivered)
    assert len(delivered) == len(delivered_set), "a message was delivered twice"
    assert not (delivered_set & revoked), "a revoked message was delivered"
    assert len(accepted) > THREADS * PER_THREAD // 2
    # Every accepted inject is exactly one of: delivered, revoked, still pending.
    for mid in accepted:
        assert [mid in delivered_set, mid in revoked, mid in pending].count(True) == 1, mid
