"""The package's faster hot paths for the generated runtime (``acp_inject._fastpath``) decode
exactly what the generated code decodes, errors included."""

from __future__ import annotations

import json
from typing import Any, Iterator, List

import pytest

from acp_inject import AcpError, BreakPoint, InjectMode, RuntimeEvent, StopReason, _fastpath, text

from .wiring import Wire


@pytest.fixture
def generated_runtime() -> Iterator[None]:
    _fastpath.uninstall()
    try:
        yield
    finally:
        assert _fastpath.install()


def session_run() -> List[Any]:
    """A session with every kind of client event: answers, items, updates, failures, ignored
    lines, snapshots, and a typed error raised from Rust."""
    wire = Wire(("s1", "s2"))
    c = wire.client
    seen: List[Any] = []
    c.prompt("s1", [text("fix the bug ✓")])
    seen += wire.exchange()
    c.inject("s1", InjectMode.STEER, [text("use auth_v2")])
    c.inject("s1", InjectMode.QUEUE, [text("then the docs")])
    c.inject("s2", InjectMode.STEER, [text("idle: refused")])
    seen += wire.exchange()
    seen += wire.runtime("s1", RuntimeEvent.BREAK_POINT(BreakPoint.TOOL_RESULT))
    seen += wire.runtime("s1", RuntimeEvent.PERMISSION_REQUESTED())
    seen += wire.runtime("s1", RuntimeEvent.PERMISSION_RESOLVED())
    seen += wire.runtime("s1", RuntimeEvent.TURN_ENDED(stop_reason=StopReason.MAX_TOKENS(), usage=None))
    for line in ["{oops", json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "_x", "a": [1, 2.5, None]}}})]:
        seen += c.receive(line)
    seen += c.feed(b"\xff\n")
    seen += [c.snapshot("s1"), c.snapshot("s2"), c.mirror_json("s1"), c.ignored_lines(), wire.agent.history("s1"), wire.agent.pending("s1")]
    with pytest.raises(AcpError.Rejected) as e:
        c.revoke("s1", "never-issued")
    seen.append(e.value.reason)
    return seen


def test_the_fast_paths_are_installed() -> None:
    assert _fastpath.install()


def test_fast_and_generated_decoding_agree(generated_runtime: None) -> None:
    generated = session_run()
    assert _fastpath.install()
    fast = session_run()
    _fastpath.uninstall()
    assert len(fast) == len(generated) > 20
    for a, b in zip(fast, generated):
        assert a == b
