"""Our Python client against claude-agent-acp (the ACP agent around Claude Code), offline.

    python drive.py --protocol v1|v2 --mock-log FILE --workdir DIR -- AGENT_COMMAND [ARGS...]

The agent runs against the mock of the Anthropic Messages API (mock-anthropic.mjs), whose log
of requests shows what reached the model; the caller starts the mock and gives the agent its
environment in the command (`env VAR=… node …/dist/index.js`: xtask/src/shipping.rs). On one
connection, then on a second agent process:

- a prompt, answered with a reply that quotes it (the model saw it);
- a steer mid-turn: on v1 through the steering extension the agent advertises
  (`_session/steering`), on v2 (where the agent advertises no way to steer) through the
  client's `cancel_and_resend` fallback; the steer's text must reach the model's next request;
- two queued messages held by this client mid-turn, one revoked and one replaced: only the
  replacement reaches the model, once the turn has ended;
- a prompt cancelled mid-stream (`cancelled`);
- on a new agent process, the session resumed with replay (its history back in the
  transcript), then prompted again.

Exits 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from typing import Callable, List, Optional

import acp_inject as acp
from acp_inject import InjectMode, MirrorSnapshot, StopReason, TurnState, text_of

TIMEOUT = 120.0

# Markers are unique to the run, so that the mock's log, which may hold earlier runs, cannot
# answer for this one.
RUN = secrets.token_hex(4)


def mark(name: str) -> str:
    return f"{name}-{RUN}"


class Checks:
    def __init__(self) -> None:
        self.failed: List[str] = []

    def expect(self, ok: bool, what: str) -> None:
        print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
        if not ok:
            self.failed.append(what)


def model_saw(log: str, marker: str) -> bool:
    """Whether any request the mock received carried ``marker`` in a user message."""
    try:
        lines = open(log, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        return False
    for line in lines:
        body = json.loads(line).get("body", {})
        for message in body.get("messages", []) if isinstance(body, dict) else []:
            if message.get("role") == "user" and marker in json.dumps(message.get("content")):
                return True
    return False


def said(snapshot: MirrorSnapshot, role: acp.MessageRole, marker: str) -> bool:
    return any(e.role == role and marker in text_of(e.content) for e in snapshot.transcript)


async def until(session: acp.Session, what: str, done: Callable[[MirrorSnapshot], bool]) -> MirrorSnapshot:
    """Reads the session's activity until ``done`` holds for its snapshot."""

    async def read() -> MirrorSnapshot:
        while not done(session.snapshot()):
            await session.next_events()
        return session.snapshot()

    try:
        return await asyncio.wait_for(read(), TIMEOUT)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out waiting for {what}: {session.snapshot()}") from None


async def first_chunk(turn: acp.PromptTurn) -> None:
    """Reads the turn until the agent has started answering."""
    async for update in turn:
        if isinstance(update, acp.AgentMessageChunk):
            return


def settled(marker: str) -> Callable[[MirrorSnapshot], bool]:
    """Idle, nothing of ours pending, and ``marker`` answered: the user message carrying it
    is followed by an agent message."""

    def check(s: MirrorSnapshot) -> bool:
        if s.state != TurnState.IDLE or s.pending:
            return False
        at = [i for i, e in enumerate(s.transcript) if e.role == acp.MessageRole.USER and marker in text_of(e.content)]
        return bool(at) and any(e.role == acp.MessageRole.AGENT for e in s.transcript[at[-1] + 1 :])

    return check


async def first_connection(command: List[str], protocol: int, log: str, workdir: str, checks: Checks) -> str:
    async with acp.connect(command, steer_fallback=acp.SteerFallback.CANCEL_AND_RESEND, handshake_timeout=90) as client:
        agent = client.agent
        checks.expect(agent.protocol_version == protocol, f"initialize: {agent.info.name} {agent.info.version}, protocol {agent.protocol_version}")
        steering = ((agent.meta or {}).get("steering") or {}).get("supported") is True
        # The agent serves the steering extension on v1 and does not advertise it on v2.
        checks.expect(steering == (protocol == 1), f"the steering extension is advertised: {steering}")
        session = await client.new_session(workdir)
        print(f"session/new: {session.id}", flush=True)

        # A prompt, its turn to the end.
        turn = await session.prompt(f"{mark('PROMPT-ONE')} first question")
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        checks.expect(stop == StopReason.END_TURN, f"the prompt's turn ended {stop}")
        checks.expect(model_saw(log, mark("PROMPT-ONE")), "the model saw the prompt")
        checks.expect(said(session.snapshot(), acp.MessageRole.AGENT, mark("PROMPT-ONE")), "the agent's reply quotes it")

        # A steer mid-turn.
        turn = await session.prompt(f"{mark('PROMPT-TWO')} a long task")
        await asyncio.wait_for(first_chunk(turn), TIMEOUT)
        steer_id = await session.inject(f"{mark('STEER-MARK')} use the v2 API", InjectMode.STEER)
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        snap = await until(session, "the steer's turn to end", settled(mark("STEER-MARK")))
        checks.expect(model_saw(log, mark("STEER-MARK")), f"the steer reached the model (id {steer_id})")
        checks.expect(said(snap, acp.MessageRole.USER, mark("STEER-MARK")), "the steer is in the transcript")
        checks.expect(said(snap, acp.MessageRole.AGENT, mark("STEER-MARK")), "the model's reply quotes the steer")
        if protocol == 1:
            checks.expect(stop == StopReason.END_TURN, f"steered through the extension, the turn went on and ended {stop}")
        else:
            checks.expect(stop == StopReason.CANCELLED, f"steered by cancel_and_resend, the turn ended {stop} and the steer opened the next")

        # Two queued messages held by this client: one revoked, one replaced.
        turn = await session.prompt(f"{mark('PROMPT-THREE')} another long task")
        await asyncio.wait_for(first_chunk(turn), TIMEOUT)
        alpha = await session.inject(f"{mark('QUEUED-ALPHA')} first", InjectMode.QUEUE)
        beta = await session.inject(f"{mark('QUEUED-BETA')} second", InjectMode.QUEUE)
        await session.revoke(beta)
        await session.replace(alpha, f"{mark('QUEUED-GAMMA')} edited")
        held = [text_of(p.content) for p in session.snapshot().pending if p.held]
        checks.expect(held == [f"{mark('QUEUED-GAMMA')} edited"], f"held while the turn runs: {held}")
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        checks.expect(stop == StopReason.END_TURN, f"the turn the messages were queued in ended {stop}")
        await until(session, "the queued message's turn to end", settled(mark("QUEUED-GAMMA")))
        checks.expect(model_saw(log, mark("QUEUED-GAMMA")), "the replaced message reached the model after the turn")
        checks.expect(not model_saw(log, mark("QUEUED-ALPHA")), "the content it replaced never did")
        checks.expect(not model_saw(log, mark("QUEUED-BETA")), "the revoked message never did")

        # A prompt cancelled mid-stream.
        turn = await session.prompt(f"{mark('PROMPT-FOUR')} cancel me")
        await asyncio.wait_for(first_chunk(turn), TIMEOUT)
        session.cancel()
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        checks.expect(stop == StopReason.CANCELLED, f"the cancelled turn ended {stop}")
        return session.id


async def second_connection(command: List[str], session_id: str, log: str, workdir: str, checks: Checks) -> None:
    async with acp.connect(command, handshake_timeout=90) as client:
        session = await client.resume(session_id, workdir, replay=True)
        snap = session.snapshot()
        checks.expect(said(snap, acp.MessageRole.USER, mark("PROMPT-ONE")), f"resumed on a new agent process: {len(snap.transcript)} messages replayed")
        turn = await session.prompt(f"{mark('PROMPT-FIVE')} after resume")
        stop = await asyncio.wait_for(turn.finished(), TIMEOUT)
        checks.expect(stop == StopReason.END_TURN and model_saw(log, mark("PROMPT-FIVE")), f"prompted after the resume: {stop}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=["v1", "v2"], required=True)
    parser.add_argument("--mock-log", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else args.command
    protocol = 1 if args.protocol == "v1" else 2
    checks = Checks()
    try:
        session_id = await first_connection(command, protocol, args.mock_log, args.workdir, checks)
        await second_connection(command, session_id, args.mock_log, args.workdir, checks)
    except Exception as e:  # a step that could not run at all
        checks.expect(False, f"{type(e).__name__}: {e}")
    if checks.failed:
        print(f"{len(checks.failed)} check(s) failed", flush=True)
        return 1
    print(f"our Python client against claude-agent-acp ({args.protocol}): every check passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
