"""Per-line speed: a streaming client receiving agent lines one at a time.

    python bindings/python/bench/bench_per_line.py [--lines 20000] [--rounds 7] [--json]

Both sides get the same lines, one at a time, as bytes (what a reader of the agent's stdout
gets from ``readline()``), and each call returns typed values:

- ours: ``ClientCore.receive_line(line)`` applies the line to the client's state (routing, the
  session's transcript and turn state) and returns its typed events (``InSession`` with the
  ``AgentMessageChunk``, ``ToolCallUpdate``, …) in one foreign call of the package's own C
  functions, the events coming back in the boundary encoding (MessagePack) that msgspec reads in
  C straight into the package's value classes; ``ClientCore.feed(line)`` (any chunk of bytes)
  takes the same path; ``ClientCore.receive(line)`` (a ``str``) does the same through UniFFI's
  calling convention;
- the official Python SDK (``agent-client-protocol``, pydantic models): its client's path for an
  incoming line, ``json.loads`` then ``SessionNotification.model_validate(params)``: parsing
  into its typed models only, no state.

The stream holds the update kinds the official package's (v1) models and v2 share in the same
wire shape (agent message, thought and user message chunks, tool call updates), so both sides
accept every line (checked before measuring). Rounds interleave the contenders; figures are
medians. The profile rows split our per-line cost: an ignored line (``receive_line(b"")``:
the crossing, plus Rust's parse error and one small event; no line yields nothing; beside it
``receive("")``, the same through UniFFI's convention), decoding the typed events from the
bytes Rust returns, and the whole stream in one call (``receive_text``: no per-line crossing,
events for every line), against the official SDK's per-line cost.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from importlib.metadata import version
from typing import Any, Callable, Dict, List

from acp.schema import SessionNotification

from acp_inject import ClientCore, InSession, _core, default_agent_config

SESSION = "sess_1"


def shared_stream(n: int) -> List[bytes]:
    """``n`` session/update lines, newline-terminated, of the kinds both SDKs read alike."""
    words = "the parser now streams tokens instead of buffering whole files lexer tests pass".split()
    lines: List[bytes] = []
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
        message = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": u}}
        lines.append(json.dumps(message).encode() + b"\n")
    return lines


def client() -> ClientCore:
    core = ClientCore(16 << 20)
    core.assume_capabilities(default_agent_config().inject)
    core.open_session(SESSION, None)
    return core


def timed(fn: Callable[[], None], into: List[float]) -> None:
    start = time.perf_counter()
    fn()
    into.append(time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print one JSON object (for cargo xtask bench)")
    args = ap.parse_args()
    lines = shared_stream(args.lines)
    texts = [line.decode() for line in lines]
    blob = "".join(texts)

    # Both sides accept every line, and ours yields one typed session event per line.
    for line in lines:
        SessionNotification.model_validate(json.loads(line)["params"])
    check = client()
    per_line = [check.receive_line(line) for line in lines]
    assert all(len(e) == 1 and isinstance(e[0], InSession) for e in per_line) and check.ignored_lines() == 0
    again = client()
    assert [again.feed(line) for line in lines] == per_line, "receive_line and feed disagree"
    sample = per_line[0]

    def ours_line() -> None:
        core = client()
        for line in lines:
            core.receive_line(line)

    def ours_feed() -> None:
        core = client()
        for line in lines:
            core.feed(line)

    def ours_receive() -> None:
        core = client()
        for text in texts:
            core.receive(text)

    def official() -> None:
        for line in lines:
            SessionNotification.model_validate(json.loads(line)["params"])

    def crossing() -> None:
        core = client()
        for _ in lines:
            core.receive_line(b"")

    def feed_crossing() -> None:
        core = client()
        for _ in lines:
            core.receive("")

    # Profile only: decoding the typed events from the bytes Rust returned (captured once per
    # line through the package's own C function, then read as receive_line reads it).
    capture, out = client(), _core._output
    encoded = []
    for line in lines:
        n = _core._receive_into(capture._line_port(), line, len(line), out.address, out.size)
        assert n >= 0, "a line's events fit the buffer"
        encoded.append(bytes(out.buffer[:n]))
    decoder = _core._events_decoder
    assert [decoder.decode(data) for data in encoded] == per_line

    def decode() -> None:
        for data in encoded:
            decoder.decode(data)

    def bulk() -> None:
        client().receive_text(blob)

    def loads() -> None:
        for line in lines:
            json.loads(line)

    contenders: Dict[str, Callable[[], None]] = {
        "ours_line": ours_line, "ours_feed": ours_feed, "ours_receive": ours_receive, "official": official,
        "crossing": crossing, "feed_crossing": feed_crossing,
        "decode": decode, "bulk": bulk, "json_loads": loads,
    }
    t: Dict[str, List[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            timed(fn, t[name])
    n = len(lines)
    us = {k: statistics.median(v) / n * 1e6 for k, v in t.items()}
    result = {
        "lines": n,
        "bytes_per_line": len(blob.encode()) // n,
        "rounds": args.rounds,
        "python": platform.python_version(),
        "official_version": version("agent-client-protocol"),
        "ours_line_us": us["ours_line"],
        "ours_feed_us": us["ours_feed"],
        "ours_receive_us": us["ours_receive"],
        "official_us": us["official"],
        "ratio": us["official"] / us["ours_line"],
        "ratio_feed": us["official"] / us["ours_feed"],
        "ratio_receive": us["official"] / us["ours_receive"],
        "ratio_bulk": us["official"] / us["bulk"],
        "encoded_bytes_per_line": sum(map(len, encoded)) // n,
        "crossing_us": us["crossing"],
        "feed_crossing_us": us["feed_crossing"],
        "decode_us": us["decode"],
        "bulk_us": us["bulk"],
        "json_loads_us": us["json_loads"],
        "sample_event": repr(sample[0])[:200],
    }
    if args.json:
        print(json.dumps(result))
        return
    for k, v in result.items():
        print(f"{k:<18} {v:,.2f}" if isinstance(v, float) else f"{k:<18} {v}")
    print(f"ours (receive_line) / official per line: {result['ratio']:.2f}x")


if __name__ == "__main__":
    main()
