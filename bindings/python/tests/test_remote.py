"""Over the network: the client connects by URL to the reference agent (``--listen``), over
WebSocket and over Streamable HTTP, through a relay the test can cut. A session with queue,
steer, revoke and replace; the network dropped mid-turn; a new connection that resumes the
session and finds the transcript and the pending list intact; every accepted message
delivered exactly once. Also an agent written in Python serving by address."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Callable, List, Tuple

import pytest

import acp_inject as acp
from acp_inject import AcpError, InjectMode, MirrorSnapshot, TurnState, text_of

from .conftest import REPO, reference_agent

RELAY = REPO / "bindings" / "test-support" / "relay.py"
TIMEOUT = 30.0


async def start(command: List[str]) -> Tuple[asyncio.subprocess.Process, str]:
    """Starts a program that prints one line (its address or URL) first; returns it and the line."""
    proc = await asyncio.create_subprocess_exec(*command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
    assert line, f"{command[0]} printed nothing"
    return proc, line


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), TIMEOUT)


def users(s: MirrorSnapshot) -> List[str]:
    return [text_of(e.content) for e in s.transcript if e.role == acp.MessageRole.USER]


def pending(s: MirrorSnapshot) -> List[Tuple[InjectMode, str]]:
    return [(p.mode, text_of(p.content)) for p in (s.agent_pending or [])]


async def until(session: acp.Session, what: str, done: Callable[[MirrorSnapshot], bool]) -> MirrorSnapshot:
    async def follow() -> MirrorSnapshot:
        while not done(session.snapshot()):
            await session.next_events()
        return session.snapshot()

    try:
        return await asyncio.wait_for(follow(), TIMEOUT)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out waiting for {what}: {session.snapshot()}") from None


async def survives_a_dropped_network(scheme: str) -> None:
    # Slow steps: the turn's first break-point (where the steer would be delivered) comes
    # seconds after it starts, long after the network is back.
    agent, url = await start([reference_agent(), "--listen", "127.0.0.1:0", "--delay-ms", "1500", "--chunks", "2", "--tools", "1"])
    port = url.split("://")[1].split("/")[0]
    relay, relayed = await start([sys.executable, str(RELAY), port])
    try:
        client = await acp.connect(f"{scheme}://{relayed}/acp", name="python-remote-test")
        session = await client.new_session("/tmp")
        await session.prompt("first")
        await until(session, "the turn to run", lambda s: s.state == TurnState.RUNNING)
        await session.inject("later")
        await session.inject("now", mode=InjectMode.STEER)
        gone = await session.inject("revoke me")
        await session.revoke(gone)
        old = await session.inject("old")
        await session.replace(old, "new")
        expected = [(InjectMode.STEER, "now"), (InjectMode.QUEUE, "later"), (InjectMode.QUEUE, "new")]
        before = await until(session, "the pending list", lambda s: pending(s) == expected)

        # The network goes away mid-turn, and comes back.
        assert relay.stdin is not None and relay.stdout is not None
        relay.stdin.write(b"cut\n")
        await relay.stdin.drain()
        assert (await relay.stdout.readline()).strip() == b"cut"
        # The connection outlives the cut: over WebSocket the client connects again and
        # resumes the session with replay; over Streamable HTTP it reopens the session's
        # stream from the last event it read. The session goes on as it was, and a call made
        # now is answered.
        assert isinstance((await session.status()).state, acp.RunningStateUpdate)
        after = await until(session, "the replay", lambda s: pending(s) == expected and s.state == TurnState.RUNNING)
        assert [(e.role, e.message_id, text_of(e.content)) for e in after.transcript] == [
            (e.role, e.message_id, text_of(e.content)) for e in before.transcript
        ]

        # The turn goes on; every accepted message is delivered once, the revoked one never.
        done = await until(session, "everything delivered", lambda s: s.state == TurnState.IDLE and not pending(s) and len(users(s)) == 4)
        assert users(done)[:2] == ["first", "now"] and sorted(users(done)[2:]) == ["later", "new"]
        assert done.violations == []
        await session.close()
        await client.close()
    finally:
        await stop(relay)
        await stop(agent)


def test_websocket_survives_a_dropped_network() -> None:
    asyncio.run(survives_a_dropped_network("ws"))


def test_streamable_http_survives_a_dropped_network() -> None:
    asyncio.run(survives_a_dropped_network("http"))


async def a_dropped_stream_loses_nothing() -> None:
    # Many small chunks, so the stream is dropped while the agent is writing.
    agent, url = await start([reference_agent(), "--listen", "127.0.0.1:0", "--delay-ms", "15", "--chunks", "60", "--tools", "0"])
    port = url.split("://")[1].split("/")[0]
    relay, relayed = await start([sys.executable, str(RELAY), port])

    def agent_text(s: MirrorSnapshot) -> str:
        return "".join(text_of(e.content) for e in s.transcript if e.role == acp.MessageRole.AGENT)

    try:
        client = await acp.connect(f"http://{relayed}/acp", name="python-remote-test")
        session = await client.new_session("/tmp")
        await session.prompt("stream")
        await until(session, "a few chunks", lambda s: len(agent_text(s)) > 20)
        # The relay gives up on this session's stream without telling the agent; the client
        # reopens it from the last event it read.
        assert relay.stdin is not None and relay.stdout is not None
        relay.stdin.write(f"drop-stream {session.id}\n".encode())
        await relay.stdin.drain()
        assert (await relay.stdout.readline()).strip() == b"dropped"
        done = await until(session, "the turn's end", lambda s: s.state == TurnState.IDLE and s.stop_reason is not None)
        # What the client saw is what the agent recorded: the replay on a fresh connection.
        check = await acp.connect(url, name="python-remote-check")
        replayed = (await check.resume(session.id, "/tmp", replay=True)).snapshot()
        assert agent_text(done) == agent_text(replayed) and len(agent_text(done)) > 60
        await check.close()
        await client.close()
    finally:
        await stop(relay)
        await stop(agent)


def test_a_dropped_session_stream_loses_nothing() -> None:
    asyncio.run(a_dropped_stream_loses_nothing())


async def a_cut_before_the_answer_leaves_one_copy(scheme: str) -> None:
    agent, url = await start([reference_agent(), "--listen", "127.0.0.1:0", "--delay-ms", "20", "--chunks", "20", "--tools", "0"])
    port = url.split("://")[1].split("/")[0]
    relay, relayed = await start([sys.executable, str(RELAY), port])
    assert relay.stdin is not None and relay.stdout is not None

    async def command(line: str) -> str:
        assert relay.stdin is not None and relay.stdout is not None
        relay.stdin.write(f"{line}\n".encode())
        await relay.stdin.drain()
        return (await relay.stdout.readline()).decode().strip()

    try:
        client = await acp.connect(f"{scheme}://{relayed}/acp", name="python-remote-test")
        session = await client.new_session("/tmp")
        # The network breaks after the agent accepted each, before its answer: the client
        # sends it again with its idempotency key (over WebSocket on a new socket, after
        # resuming the session), and the agent keeps one copy.
        assert await command("cut-answer session/prompt") == "armed"
        turn = await session.prompt("first")
        assert await command("answers-cut") == "cut 1"
        assert await command("cut-answer session/inject") == "armed"
        later = await session.inject("second", InjectMode.QUEUE)
        assert await command("answers-cut") == "cut 2"
        done = await until(session, "both turns", lambda s: s.state == TurnState.IDLE and len(users(s)) >= 2)
        assert users(done) == ["first", "second"]
        ids = [e.message_id for e in done.transcript if e.role == acp.MessageRole.USER]
        assert ids == [turn.message_id, later]
        # What the agent recorded: one copy of each, on a fresh connection's replay.
        check = await acp.connect(url, name="python-remote-check")
        assert users((await check.resume(session.id, "/tmp", replay=True)).snapshot()) == ["first", "second"]
        await check.close()
        await client.close()
    finally:
        await stop(relay)
        await stop(agent)


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_a_cut_between_acceptance_and_answer_leaves_one_copy(scheme: str) -> None:
    asyncio.run(a_cut_before_the_answer_leaves_one_copy(scheme))


class Echo(acp.Agent):
    async def run(self, turn: acp.Turn, messages: List[acp.UserInput]) -> None:
        turn.say("echo: " + " ".join(text_of(m.content) for m in messages))


async def python_agent_by_address() -> None:
    async with await acp.listen(Echo(), "127.0.0.1:0") as listening:
        assert listening.url.startswith("http://127.0.0.1:") and listening.url.endswith("/acp")
        for url in (listening.url, listening.url.replace("http", "ws", 1)):
            async with acp.connect(url) as client:
                session = await client.new_session("/tmp")
                await session.prompt("hello")
                done = await until(session, "the echo", lambda s: s.state == TurnState.IDLE and len(s.transcript) == 2)
                assert text_of(done.transcript[1].content) == "echo: hello"
        assert len(listening.sessions) == 2


def test_a_python_agent_serves_by_address() -> None:
    asyncio.run(python_agent_by_address())


SECRET = "s3cret-s3cret-s3cret"


async def refusals() -> None:
    # A public address without a token is refused before anything listens.
    with pytest.raises(AcpError.Config, match="without authentication"):
        await acp.listen(Echo(), "0.0.0.0:0")
    # An empty or short token is refused: it cannot stand for authentication.
    for weak in ("", "s3cret"):
        with pytest.raises(AcpError.Config, match="too short"):
            await acp.listen(Echo(), "0.0.0.0:0", token=weak)
    # With a token, clients must send it.
    async with await acp.listen(Echo(), "127.0.0.1:0", token=SECRET) as listening:
        for url in (listening.url.replace("http", "ws", 1), listening.url):
            with pytest.raises(AcpError.Disconnected, match="401"):
                await acp.connect(url, token="wrong")
        async with acp.connect(listening.url, token=SECRET) as client:
            await client.new_session("/tmp")
    # Nothing listens there any more.
    with pytest.raises(AcpError.Disconnected):
        await acp.connect(listening.url)
    with pytest.raises(TypeError, match="a command is a list"):
        acp.connect("my-agent")


def test_refusals_are_typed_errors() -> None:
    asyncio.run(refusals())


async def limits_in_force() -> None:
    # A zero limit is refused before anything listens, naming the limit.
    with pytest.raises(AcpError.Config, match="max_connections must be more than zero"):
        await acp.listen(Echo(), "127.0.0.1:0", limits=acp.ListenLimits(max_connections=0))
    # One client at a time: a second is turned away with 503 while the first is connected.
    async with await acp.listen(Echo(), "127.0.0.1:0", limits=acp.ListenLimits(max_connections=1)) as listening:
        ws = listening.url.replace("http", "ws", 1)
        async with acp.connect(listening.url) as first:
            await first.new_session("/tmp")
            for url in (ws, listening.url):
                with pytest.raises(AcpError.Disconnected, match="503"):
                    await acp.connect(url)
        # Its place is free again once it has gone (its close may take a moment to land).
        for attempt in range(50):
            try:
                async with acp.connect(ws) as again:
                    await again.new_session("/tmp")
                break
            except AcpError.Disconnected:
                if attempt == 49:
                    raise
                await asyncio.sleep(0.1)


def test_listen_limits_are_in_force() -> None:
    asyncio.run(limits_in_force())


ALICE, BOB = "alice-0123456789abcdef", "bob-0123456789abcdef00"


async def principals_apart() -> None:
    # A token per principal: each client sees its own principal's sessions only.
    async with await acp.listen(Echo(), "127.0.0.1:0", tokens={"alice": ALICE, "bob": BOB}) as listening:
        ws = listening.url.replace("http", "ws", 1)
        async with acp.connect(ws, token=ALICE) as alice:
            theirs = await alice.new_session("/tmp")
            bobs: List[str] = []
            for url in (ws, listening.url):
                async with acp.connect(url, token=BOB) as bob:
                    bobs.insert(0, (await bob.new_session("/tmp")).id)
                    listed = [s.session_id for s in (await bob.list_sessions()).sessions]
                    assert listed == bobs, listed
                    # Alice's session is unknown to bob, as one the agent never had.
                    with pytest.raises(AcpError.Protocol if url == ws else AcpError) as never:
                        await bob.resume("sess_never", "/tmp")
                    with pytest.raises(type(never.value)) as foreign:
                        await bob.resume(theirs.id, "/tmp")
                    assert str(foreign.value).replace(theirs.id, "ID") == str(never.value).replace("sess_never", "ID")
            assert [s.session_id for s in (await alice.list_sessions()).sessions] == [theirs.id]
            await theirs.prompt("still mine")
            await until(theirs, "the echo", lambda s: s.state == TurnState.IDLE and len(s.transcript) == 2)
        # A token shared by two principals, or a short one, is refused.
        for tokens in ({"a": ALICE, "b": ALICE}, {"a": "short"}):
            with pytest.raises(AcpError.Config):
                await acp.listen(Echo(), "127.0.0.1:0", tokens=tokens)


def test_principals_see_their_own_sessions_only() -> None:
    asyncio.run(principals_apart())
