"""A small real session against the reference agent, through the installed wheel only.

    python session.py PATH/TO/acp-inject-agent

Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
queued message opened has ended (the mirror idle, nothing pending). Exits 1 (with the reason)
when anything is off.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Callable, List

import acp_inject as acp
from acp_inject import MirrorSnapshot, TurnState, text_of

EXPECTED = ["Fix the failing login test", "Use the auth_v2 module", "Then update the changelog"]


def users(snap: MirrorSnapshot) -> List[str]:
    return [text_of(e.content) for e in snap.transcript if e.role == acp.MessageRole.USER]


async def until(session: acp.Session, done: Callable[[MirrorSnapshot], bool]) -> MirrorSnapshot:
    while not done(session.snapshot()):
        await session.next_events()
    return session.snapshot()


async def main(agent_path: str) -> int:
    async with acp.connect([agent_path, "--delay-ms", "20", "--tools", "2"], name="consumer") as agent:
        session = await agent.new_session("/tmp")
        await session.prompt(EXPECTED[0])
        await asyncio.wait_for(until(session, lambda s: s.state == TurnState.RUNNING), 30)
        await session.inject(EXPECTED[1], mode="steer")
        await session.inject(EXPECTED[2], mode="queue")
        snap = await asyncio.wait_for(
            until(session, lambda s: s.state == TurnState.IDLE and not s.pending and len(users(s)) == len(EXPECTED)), 30
        )
        await session.close()
    problems = []
    if users(snap) != EXPECTED:
        problems.append(f"user messages {users(snap)}, expected {EXPECTED}")
    if snap.violations:
        problems.append(f"violations {snap.violations}")
    if problems:
        print("session failed: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"session ok: {len(snap.transcript)} transcript entries, user messages in order")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
