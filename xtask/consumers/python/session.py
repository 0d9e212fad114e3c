"""A small real session against the reference agent, through the installed wheel only.

    python session.py PATH/TO/acp-inject-agent

Prompt, then a steer and a queued message as soon as the turn runs; done when the turn the
queued message opened has answered and ended (the mirror idle, nothing pending). Exits 1 (with the reason) when anything is off.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Dict

from acp_inject import ClientSession, InjectMode, TranscriptRole, TurnState, text

EXPECTED = ["Fix the failing login test", "Use the auth_v2 module", "Then update the changelog"]

agent = subprocess.Popen([sys.argv[1], "--delay-ms", "20", "--tools", "2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
assert agent.stdin is not None and agent.stdout is not None


def send(line: str) -> None:
    agent.stdin.write(line + "\n")  # type: ignore[union-attr]
    agent.stdin.flush()  # type: ignore[union-attr]


def call(request_id: int, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
    send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
    for line in agent.stdout:  # type: ignore[union-attr]
        message = json.loads(line)
        if message.get("id") == request_id:
            return message["result"]  # type: ignore[no-any-return]
    sys.exit(f"the agent exited before answering {method}")


init = call(1, "initialize", {"protocolVersion": 2, "info": {"name": "consumer", "version": "1"}})
session_id = call(2, "session/new", {"cwd": "/tmp"})["sessionId"]
session = ClientSession.from_initialize_result(session_id, json.dumps(init))

send(session.prompt([text(EXPECTED[0])]))
sent_more = False
snap, users = session.snapshot(), []
for line in agent.stdout:
    session.receive(line.rstrip("\n"))  # raises AcpError.Protocol on an error answer
    snap = session.snapshot()
    if not sent_more and snap.state == TurnState.RUNNING:
        send(session.inject(InjectMode.STEER, [text(EXPECTED[1])]))
        send(session.inject(InjectMode.QUEUE, [text(EXPECTED[2])]))
        sent_more = True
    users = [e.content[0].text for e in snap.transcript if e.role == TranscriptRole.USER]  # type: ignore[attr-defined]
    # Done once the turn the queued message opened has answered and ended.
    answered = bool(snap.transcript) and snap.transcript[-1].role == TranscriptRole.AGENT
    if sent_more and snap.state == TurnState.IDLE and not snap.pending and len(users) == len(EXPECTED) and answered:
        break

agent.stdin.close()
code = agent.wait(timeout=10)
problems = []
if users != EXPECTED:
    problems.append(f"user messages {users}, expected {EXPECTED}")
if snap.violations:
    problems.append(f"violations {snap.violations}")
if code != 0:
    problems.append(f"the agent exited with {code}")
if problems:
    sys.exit("session failed: " + "; ".join(problems))
print(f"session ok: {len(snap.transcript)} transcript entries, user messages in order, agent exit 0")
