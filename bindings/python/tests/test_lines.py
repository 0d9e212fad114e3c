"""``ClientCore.receive_line``, the one-call per-line path, gives exactly what UniFFI's
``receive`` gives: the same events and the same state, line for line, and typed errors."""

from __future__ import annotations

import threading
from typing import List

import pytest

from acp_inject import AcpError, ClientCore, Event, InjectMode, InSession, InvalidArgument, default_agent_config, text, text_of

from .wiring import Wire


def _core() -> ClientCore:
    core = ClientCore(1 << 20)
    core.assume_capabilities(default_agent_config().inject)
    core.open_session("s1", None)
    return core


def _session_lines() -> List[str]:
    """The agent's lines of a session with answers, user messages, chunks and an error."""
    wire = Wire(("s1",))
    c = wire.client
    c.prompt("s1", [text("fix the bug ✓")])
    lines = wire.send()
    c.inject("s1", InjectMode.STEER, [text("use auth_v2")])
    c.inject("s1", InjectMode.QUEUE, [text("then the docs")])
    lines += wire.send()
    return lines


def _chunk(i: int, words: str) -> str:
    return (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        f'{{"sessionUpdate":"agent_message_chunk","messageId":"a{i}","content":{{"type":"text","text":"{words}"}}}}}}}}'
    )


@pytest.mark.parametrize("ending", ["", "\n", "\r\n"])
def test_the_same_events_and_state_as_receive(ending: str) -> None:
    lines = _session_lines() + [_chunk(i, "word " * i) for i in range(50)] + ["not json", "{}"]
    fast, fast_str, slow = _core(), _core(), _core()
    # The requests the lines answer, sent by each, so the answers match.
    for core in (fast, fast_str, slow):
        core.prompt("s1", [text("fix the bug ✓")])
        core.inject("s1", InjectMode.STEER, [text("use auth_v2")])
        core.inject("s1", InjectMode.QUEUE, [text("then the docs")])
        core.take_outgoing()
        core.take_events()
    for line in lines:
        expected = slow.receive(line)
        assert fast.receive_line((line + ending).encode()) == expected, line
        assert fast_str.receive_line(line + ending) == expected, line
    assert fast.snapshot("s1") == fast_str.snapshot("s1") == slow.snapshot("s1")
    assert fast.ignored_lines() == fast_str.ignored_lines() == slow.ignored_lines() > 0


def test_events_larger_than_the_buffer_spill_and_arrive_whole() -> None:
    core = _core()
    words = "x" * 300_000
    events = core.receive_line(_chunk(1, words).encode())
    assert len(events) == 1 and isinstance(events[0], InSession)
    snap = core.snapshot("s1")
    assert snap is not None and text_of(snap.transcript[-1].content) == words


def test_bad_input_is_a_typed_error_and_changes_nothing() -> None:
    core = _core()
    before = core.snapshot("s1")
    with pytest.raises(AcpError.InvalidInput, match="not UTF-8"):
        core.receive_line(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"\xff}')
    for wrong in (None, 3, ["line"], object()):
        with pytest.raises(InvalidArgument):
            core.receive_line(wrong)  # type: ignore[arg-type]
    assert core.snapshot("s1") == before
    other = _core()
    assert core.receive_line(bytearray(_chunk(1, "ok").encode())) == other.receive(_chunk(1, "ok"))
    assert core.receive_line(memoryview(_chunk(2, "ok").encode())) == other.receive(_chunk(2, "ok"))


def test_many_threads_at_once_each_with_its_own_buffer() -> None:
    core = _core()
    failures: List[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(200):
                size = 40_000 if i % 50 == 0 else 10  # some spill past the thread's buffer
                events = core.receive_line(_chunk(t * 1000 + i, "w" * size))
                assert len(events) == 1 and isinstance(events[0], InSession)
        except BaseException as e:  # noqa: BLE001 (reported below)
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []
    snap = core.snapshot("s1")
    assert snap is not None and len(snap.transcript) == 8 * 200


def test_feed_and_receive_text_in_any_chunking_give_what_receive_gives() -> None:
    lines = [_chunk(i, "word " * i) for i in range(30)] + ["not json", '{"jsonrpc":"2.0","id":99,"result":{}}']
    slow = _core()
    expected = [e for line in lines for e in slow.receive(line)]
    blob = "".join(line + "\n" for line in lines)
    for size in (1, 7, 64, len(blob)):
        fed = _core()
        events = []
        data = blob.encode()
        for at in range(0, len(data), size):
            events += fed.feed(data[at : at + size])
        assert events == expected, size
        assert fed.snapshot("s1") == slow.snapshot("s1")
    assert _core().receive_text(blob) == expected
    assert _core().feed(bytearray(blob.encode())) == expected
    for wrong in (None, "text", 3):
        with pytest.raises(InvalidArgument):
            _core().feed(wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        _core().receive_text("surrogate \ud800")


def test_the_package_wraps_the_generated_module_and_leaves_it_alone() -> None:
    import acp_inject
    from acp_inject.acp_inject_ffi import acp_inject_ffi as generated

    # The package's classes hold the generated objects; they are not the generated classes.
    assert acp_inject.ClientCore is not generated.ClientCore and not issubclass(acp_inject.ClientCore, generated.ClientCore)
    assert acp_inject.Usage.__module__ == "acp_inject.values"
    # The generated classes keep the methods UniFFI wrote (nothing was assigned into them).
    for cls in (generated.ClientCore, generated.AgentCore, generated.Session):
        for name, member in vars(cls).items():
            if callable(member) and not name.startswith("__"):
                assert getattr(member, "__module__", generated.__name__) == generated.__name__, (cls, name)
