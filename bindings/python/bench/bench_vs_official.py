"""Our client mirror through the binding vs the official ACP Python SDK's own parse path.

    python bindings/python/bench/bench_vs_official.py [--lines 100000] [--rounds 7] [--json]

The official package (`agent-client-protocol` 0.12.x, pydantic; its released models are v1)
parses an incoming line as `json.loads` + `SessionNotification.model_validate(params)`.
The stream holds only the update kinds both versions share with the same wire shape
(agent/user message and thought chunks, tool call updates), so both sides read identical
lines. Ours does more: `ClientSession.receive_text` parses AND applies every line to the
full mirror (transcript upserts/appends, tool state ignored, turn state). Rounds interleave
the two; figures are medians.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable, Dict, List

import acp
from acp.schema import SessionNotification

from acp_inject import ClientSession, InjectCapabilities, InjectMode, SteerInStream, library_version


def shared_stream(n: int) -> List[str]:
    words = "the parser now streams tokens instead of buffering whole files lexer tests pass".split()
    lines: List[str] = []
    i = 0
    while len(lines) < n:
        i += 1
        text = " ".join(words[(i + k) % len(words)] for k in range(3 + i % 12))
        kind = i % 10
        if kind < 5:
            u: Dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "messageId": f"a{i // 40}", "content": {"type": "text", "text": text}}
        elif kind < 7:
            u = {"sessionUpdate": "agent_thought_chunk", "messageId": f"t{i // 40}", "content": {"type": "text", "text": text}}
        elif kind < 8:
            u = {"sessionUpdate": "user_message_chunk", "messageId": f"u{i // 400}", "content": {"type": "text", "text": text}}
        else:
            u = {"sessionUpdate": "tool_call_update", "toolCallId": f"call_{i // 25}", "kind": "execute",
                 "status": ["pending", "in_progress", "completed"][i % 3],
                 "content": [{"type": "content", "content": {"type": "text", "text": text}}]}
        lines.append(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_1", "update": u}}))
    return lines


def median_time(fn: Callable[[], None], rounds: List[float]) -> None:
    t = time.perf_counter()
    fn()
    rounds.append(time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    lines = shared_stream(args.lines)
    blob = "\n".join(lines) + "\n"
    caps = InjectCapabilities(modes=[InjectMode.QUEUE, InjectMode.STEER], replace=True, steer_in_stream=[SteerInStream.FINISH])

    # Both sides must accept every line, or the comparison means nothing.
    for line in lines[:2000]:
        SessionNotification.model_validate(json.loads(line)["params"])
    check = ClientSession("sess_1", caps)
    assert check.receive_text(blob) == [] and check.ignored_lines() == 0

    def ours() -> None:
        s = ClientSession("sess_1", caps)
        s.receive_text(blob)

    def official() -> None:
        for line in lines:
            SessionNotification.model_validate(json.loads(line)["params"])

    def loads() -> None:
        for line in lines:
            json.loads(line)

    calls = 100_000

    def crossing() -> None:
        for _ in range(calls):
            library_version()

    t: Dict[str, List[float]] = {"ours": [], "official": [], "loads": [], "crossing": []}
    for _ in range(args.rounds):
        median_time(ours, t["ours"])
        median_time(official, t["official"])
        median_time(loads, t["loads"])
        median_time(crossing, t["crossing"])
    n = len(lines)
    m = {k: statistics.median(v) for k, v in t.items()}
    result = {
        "lines": n,
        "bytes_per_line": len(blob) // n,
        "rounds": args.rounds,
        "python": platform.python_version(),
        "official_version": getattr(acp, "__version__", "0.12.x"),
        "ours_lines_per_s": n / m["ours"],
        "official_lines_per_s": n / m["official"],
        "json_loads_lines_per_s": n / m["loads"],
        "ours_us_per_line": m["ours"] / n * 1e6,
        "official_us_per_line": m["official"] / n * 1e6,
        "crossing_us": m["crossing"] / calls * 1e6,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:<24} {v:,.2f}" if isinstance(v, float) else f"{k:<24} {v}")
        print(f"ours / official: {result['ours_lines_per_s'] / result['official_lines_per_s']:.2f}x")


if __name__ == "__main__":
    main()
