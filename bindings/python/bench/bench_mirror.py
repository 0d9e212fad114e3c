"""Client-mirror throughput through the Python binding.

    python bindings/python/bench/bench_mirror.py [--lines 100000] [--repeat 5]

Applies a recorded mixed stream of agent lines (message chunks, tool call updates, user
messages, state updates; deterministic, generated here) to a fresh ClientSession, and reports,
as the median of --repeat runs measured in the same process:
- bulk: the whole stream in one `receive_text` crossing (parse + full mirror state in Rust),
  and the same as bytes (`receive_bytes`: UniFFI lifts bytes one by one, so it costs more);
- per line: one `receive` crossing per line;
- `json.loads` of the same lines (the floor for any pure-Python parser);
- one no-op crossing (`library_version()`), for the per-call overhead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable, List

from acp_inject import ClientSession, InjectCapabilities, InjectMode, SteerInStream, library_version


def record_stream(n: int) -> List[str]:
    lines: List[str] = []
    turn = 0
    i = 0
    while len(lines) < n:
        turn += 1
        def update(u: dict) -> None:  # type: ignore[type-arg]
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": u}}))
        update({"sessionUpdate": "user_message", "messageId": f"u{turn}", "content": [{"type": "text", "text": f"request number {turn}: please fix the failing test"}]})
        update({"sessionUpdate": "state_update", "state": "running"})
        for k in range(40):
            i += 1
            update({"sessionUpdate": "agent_message_chunk", "messageId": f"a{turn}", "content": {"type": "text", "text": f"token {i} of the answer "}})
            if k % 10 == 9:
                tc = f"call_{turn}_{k}"
                update({"sessionUpdate": "tool_call_update", "toolCallId": tc, "title": "Run tests", "kind": "execute", "status": "in_progress"})
                update({"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "completed",
                        "content": [{"type": "content", "content": {"type": "text", "text": "all 42 tests passed"}}]})
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                "usage": {"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200}})
    return lines[:n]


def session() -> ClientSession:
    caps = InjectCapabilities(modes=[InjectMode.QUEUE, InjectMode.STEER], replace=True, steer_in_stream=[SteerInStream.FINISH])
    return ClientSession("s1", caps)


def median_seconds(fn: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    lines = record_stream(args.lines)
    blob = ("\n".join(lines) + "\n").encode()
    n = len(lines)

    text_blob = blob.decode()

    def bulk() -> None:
        s = session()
        assert s.receive_text(text_blob) == []
        assert s.ignored_lines() == 0

    def bulk_bytes() -> None:
        s = session()
        assert s.receive_bytes(blob) == []

    def per_line() -> None:
        s = session()
        for line in lines:
            s.receive(line)

    def loads() -> None:
        for line in lines:
            json.loads(line)

    calls = 200_000

    def noop() -> None:
        for _ in range(calls):
            library_version()

    t_bulk = median_seconds(bulk, args.repeat)
    t_bytes = median_seconds(bulk_bytes, args.repeat)
    t_line = median_seconds(per_line, args.repeat)
    t_json = median_seconds(loads, args.repeat)
    t_noop = median_seconds(noop, args.repeat) / calls
    mb = len(blob) / 1e6
    print(f"stream: {n} lines, {mb:.1f} MB ({len(blob) / n:.0f} B/line); median of {args.repeat} runs")
    print(f"{'bulk receive_text (parse + mirror)':<40} {n / t_bulk:>12,.0f} lines/s {mb / t_bulk:>8.1f} MB/s  {t_bulk / n * 1e6:6.2f} us/line")
    print(f"{'bulk receive_bytes (parse + mirror)':<40} {n / t_bytes:>12,.0f} lines/s {mb / t_bytes:>8.1f} MB/s  {t_bytes / n * 1e6:6.2f} us/line")
    print(f"{'per-line receive (parse + mirror)':<40} {n / t_line:>12,.0f} lines/s {mb / t_line:>8.1f} MB/s  {t_line / n * 1e6:6.2f} us/line")
    print(f"{'json.loads only (no state)':<40} {n / t_json:>12,.0f} lines/s {mb / t_json:>8.1f} MB/s  {t_json / n * 1e6:6.2f} us/line")
    print(f"{'one no-op crossing (library_version)':<40} {t_noop * 1e6:>12.2f} us")
    print(f"per-line crossing overhead: {(t_line - t_bulk) / n * 1e6:.2f} us; bulk vs json.loads: {t_json / t_bulk:.2f}x")


if __name__ == "__main__":
    main()
