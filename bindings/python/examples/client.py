"""A scripted client session against any ACP agent, v1 or v2, checking the inject rules as it goes.

    python bindings/python/examples/client.py -- AGENT_COMMAND [ARGS…]
    python bindings/python/examples/client.py URL          (ws://, wss://, http://, https://)

It prompts, steers and queues mid-turn, revokes, replaces, cancels, and runs two sessions at
once on the one connection, printing the transcript and the pending list as they change. It
exits 0 only when every step behaved as the rules say. Against an agent that offers no
session/inject (every ACP v1 agent) the queue is held by this client: queue, revoke and
replace still work, and steer is refused as the agent cannot take input mid-turn; the run says
which steps the agent's version allowed. Permission requests are allowed, by a handler the
library calls as they arrive.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Callable, Dict, List, Optional, Union

import acp_inject as acp
from acp_inject import InjectMode, MirrorSnapshot, SessionActivity, TurnState, text_of

TIMEOUT = 60.0


class Checks:
    def __init__(self) -> None:
        self.failed: List[str] = []

    def expect(self, ok: bool, what: str) -> None:
        print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
        if not ok:
            self.failed.append(what)


_last_pending: Dict[str, List[str]] = {}
# Per session: a user message was delivered and no state_update has followed it yet. Upstream
# order is `user_message` first, then `state_update running`, so between the two an idle
# mirror with nothing pending is a turn about to start, not a finished one.
_opening: Dict[str, bool] = {}


async def allow(request: acp.RequestPermissionRequest) -> str:
    """Every permission request is allowed (the library calls this as requests arrive, even
    while the script awaits something else)."""
    print(f"permission asked: {request.title} -> allowing", flush=True)
    return next((o for o in request.options if "allow" in str(o.kind).lower()), request.options[0]).option_id


def show(name: str, activity: SessionActivity, session: acp.Session) -> None:
    """Prints what changed: a transcript line, a state, or the pending list."""
    match activity:
        case acp.PendingItem():  # one of our messages changed: show the pending list if it did
            pending = [f"{p.mode}:{text_of(p.content)!r}" for p in session.snapshot().pending]
            if _last_pending.get(name) != pending:
                _last_pending[name] = pending
                print(f"[{name}] pending now: {pending}", flush=True)
        case acp.UserMessage(message_id=m, content=content):
            _opening[name] = True
            print(f"[{name}] user  {m}: {text_of(content or None)}", flush=True)
        case acp.IdleStateUpdate() | acp.RunningStateUpdate() | acp.RequiresActionStateUpdate() | acp.UnknownStateUpdate():
            _opening[name] = False
            print(f"[{name}] state {type(activity).__name__.removesuffix('StateUpdate').lower()}", flush=True)


async def until(name: str, session: acp.Session, done: Callable[[MirrorSnapshot], bool]) -> bool:
    """Follows the session's events until `done` holds for its snapshot (or the timeout)."""
    async def follow() -> None:
        while not done(session.snapshot()):
            for activity in await session.next_events():
                show(name, activity, session)
    try:
        await asyncio.wait_for(follow(), TIMEOUT)
        return True
    except asyncio.TimeoutError:
        return False


def finished(name: str, snap: MirrorSnapshot) -> bool:
    """The session is idle and no turn is about to start (see `_opening`)."""
    return snap.state == TurnState.IDLE and not _opening.get(name, False)


def users(snap: MirrorSnapshot) -> List[str]:
    return [text_of(e.content) for e in snap.transcript if e.role == acp.MessageRole.USER]


async def main(target: Union[str, List[str]]) -> int:
    checks = Checks()
    async with acp.connect(target, name="acp-inject-example-client", on_permission=allow) as agent:
        inject = agent.inject
        version = agent.agent.protocol_version
        print(f"agent: {agent.agent.info.name} {agent.agent.info.version}, ACP v{version}; inject: {inject}", flush=True)
        a = await agent.new_session("/tmp")
        print(f"session A: {a.id}")

        await a.prompt("Refactor the login module")
        checks.expect(await until("A", a, lambda s: s.state != TurnState.IDLE), "the prompt starts a turn")
        if inject is None:
            print(f"the agent (ACP v{version}) offers no session/inject: queue, revoke and replace are held by this "
                  "client and sent as prompts when each turn ends; steer is not offered", flush=True)
            try:
                await a.inject("use auth_v2", mode="steer")
                checks.expect(False, "a steer is refused when the agent cannot take input mid-turn")
            except acp.AcpError.Rejected as e:
                checks.expect(e.reason == acp.CallRejected.STEER_NOT_SUPPORTED, f"a steer is refused: {e.reason}")
            await a.inject("then update the docs", mode="queue")
            gone = await a.inject("revoke me", mode="queue")
            await a.revoke(gone)
            checks.expect("revoke me" not in [text_of(p.content) for p in a.snapshot().pending], "a revoked message leaves the pending list")
            draft = await a.inject("draft", mode="queue")
            await a.replace(draft, "final text")
            checks.expect(all(p.held for p in a.snapshot().pending), "what is queued is held by this client")
            wanted = ["Refactor the login module", "then update the docs", "final text"]
            ok = await until("A", a, lambda s: users(s) == wanted and finished("A", s) and not s.pending)
            checks.expect(ok, f"the held messages go out one per turn, in order: {wanted}")
        else:
            modes = inject.modes
            if InjectMode.STEER in modes:
                await a.inject("use auth_v2", mode="steer")
            if InjectMode.QUEUE in modes:
                await a.inject("then update the docs", mode="queue")
                gone = await a.inject("revoke me", mode="queue")
                await a.revoke(gone)
                checks.expect("revoke me" not in [text_of(p.content) for p in a.snapshot().pending], "a revoked inject leaves the pending list")
                if inject.pending is not None and inject.pending.replace:
                    draft = await a.inject("draft", mode="queue")
                    await a.replace(draft, "final text")
            wanted = ["use auth_v2"] if InjectMode.STEER in modes else []
            if InjectMode.QUEUE in modes:
                wanted.append("then update the docs")
                if inject.pending is not None and inject.pending.replace:
                    wanted.append("final text")
            ok = await until("A", a, lambda s: all(w in users(s) for w in wanted) and finished("A", s) and not s.pending)
            checks.expect(ok, f"every accepted inject is delivered: {wanted}")
        seen = users(a.snapshot())
        checks.expect("revoke me" not in seen and "draft" not in seen, "revoked and replaced content is never delivered")

        # Cancel a running turn: it ends cancelled.
        await a.prompt("Write the migration guide")
        await until("A", a, lambda s: s.state != TurnState.IDLE)
        a.cancel()
        ok = await until("A", a, lambda s: s.state == TurnState.IDLE)
        reason = a.snapshot().stop_reason
        checks.expect(ok and reason == acp.StopReason.CANCELLED, f"cancel ends the turn as cancelled ({reason})")

        # Two sessions at once on the one connection.
        b = await agent.new_session("/tmp")
        print(f"session B: {b.id}")
        await asyncio.gather(a.prompt("Session A: add tests"), b.prompt("Session B: fix the build"))
        ok_a, ok_b = await asyncio.gather(
            until("A", a, lambda s: "Session A: add tests" in users(s) and finished("A", s)),
            until("B", b, lambda s: "Session B: fix the build" in users(s) and finished("B", s)),
        )
        checks.expect(ok_a and ok_b, "both sessions ran their turns")
        checks.expect(not any(u.startswith("Session B") for u in users(a.snapshot())), "nothing of session B reached session A")
        checks.expect(users(b.snapshot()) == ["Session B: fix the build"], "session B holds only its own message")

        print("\ntranscript of A:")
        for entry in a.snapshot().transcript:
            print(f"  {entry.role:7} {entry.message_id}: {text_of(entry.content)[:80]}")
    print(f"\n{len(checks.failed)} check(s) failed" if checks.failed else "\nevery step behaved per the rules")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    # One argument with a scheme is the agent's URL; anything else is its command.
    sys.exit(asyncio.run(main(argv[0] if len(argv) == 1 and "://" in argv[0] else argv)))
