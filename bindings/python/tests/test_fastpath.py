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
    asked = wire.ask_permission("s1")
    seen += wire.events[-1:]
    seen += wire.allow(asked)
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


def test_the_flat_readers_are_installed_over_their_own_generated_module() -> None:
    from acp_inject import _readers
    from acp_inject.acp_inject_ffi import acp_inject_ffi

    generated: Any = acp_inject_ffi

    assert _readers.ACTIVE
    assert len(_readers.READERS) > 200
    # The event converters read through their flat readers.
    for name in ["_UniffiFfiConverterSequenceTypeEvent", "_UniffiFfiConverterTypeEvent", "_UniffiFfiConverterTypeSessionUpdate"]:
        assert name in _readers.READERS
        assert getattr(generated, name).read is not _readers._ORIGINAL[name]


def lowered_events() -> List[bytes]:
    """Every event of a session run, as the bytes Rust returns (the generated writer)."""
    import ctypes

    from acp_inject import Event
    from acp_inject.acp_inject_ffi import acp_inject_ffi

    generated: Any = acp_inject_ffi

    seen = session_run()
    events = [[e] for e in seen if isinstance(e, Event)] + [[e for e in seen if isinstance(e, Event)]]
    out = []
    for batch in events:
        buf = generated._UniffiFfiConverterSequenceTypeEvent.lower(batch)
        out.append(ctypes.string_at(buf.data, buf.len))
        buf.free()
    return out


def test_a_truncated_buffer_is_an_internal_error_not_a_wrong_value() -> None:
    from acp_inject.acp_inject_ffi import acp_inject_ffi

    generated: Any = acp_inject_ffi

    InternalError = generated.InternalError
    batches = [b for b in lowered_events() if len(b) > 8]
    assert len(batches) > 10
    converter = generated._UniffiFfiConverterSequenceTypeEvent
    for data in batches:
        for cut in range(1, len(data), max(1, len(data) // 17)):
            stream = generated._UniffiRustBufferStream(ctypes_buffer(data[:cut]), cut)
            with pytest.raises((InternalError, AcpError.Internal)):
                value = converter.read(stream)
                if stream.remaining() != 0:
                    raise InternalError("junk after the value")
                raise AssertionError(f"a cut at {cut} of {len(data)} bytes decoded to {value}")


def ctypes_buffer(data: bytes) -> Any:
    import ctypes

    return ctypes.cast(ctypes.create_string_buffer(data, len(data) or 1), ctypes.c_void_p)


def test_flat_readers_stay_out_over_a_different_generated_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_inject import ClientCore, _readers

    _fastpath.uninstall()
    try:
        monkeypatch.setattr(_readers, "SOURCE_SHA256", "0" * 64)
        assert _fastpath.install()
        assert not _readers.ACTIVE and not _readers._ORIGINAL
        core = ClientCore(1 << 20)
        core.open_session("s1", None)
        line = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {
            "sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "hi"}}}})
        assert core.receive_line(line) == core.receive_line(line)
        assert len(core.receive_line(line)) == 1
    finally:
        _fastpath.uninstall()
        monkeypatch.undo()
        assert _fastpath.install()
    assert _readers.ACTIVE
