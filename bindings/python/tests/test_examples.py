"""The example client (``examples/client.py``) is a self-checking session that must pass
against any ACP v2 agent with session/inject: the reference agent, the example agent written
with this package (``examples/agent.py``), and an agent that shares no code with this toolkit
(``plain_agent.py``). Against an agent without inject it must say so and skip those steps."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import List

import pytest

from .conftest import EXAMPLES, plain_agent_command, reference_agent_command

CLIENT = EXAMPLES / "client.py"


def run_client(agent: List[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, str(CLIENT), "--", *agent], capture_output=True, text=True, timeout=300, env=env)


AGENTS = {
    "reference agent": lambda: reference_agent_command(20),
    "reference agent, permission asked": lambda: reference_agent_command(20, "--permission-on-tool", "1"),
    "example agent (Python)": lambda: [sys.executable, str(EXAMPLES / "agent.py"), "--delay-ms", "20"],
    "plain agent (no acp-inject code)": lambda: plain_agent_command("--delay-ms", "20"),
    "plain agent, permission asked": lambda: plain_agent_command("--delay-ms", "20", "--permission"),
}


@pytest.mark.parametrize("agent", list(AGENTS))
def test_example_client_passes(agent: str) -> None:
    ran = run_client(AGENTS[agent]())
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = ran.stdout
    assert "every step behaved per the rules" in out and "FAIL" not in out
    assert "ok    every accepted inject is delivered" in out
    assert "ok    cancel ends the turn as cancelled" in out
    assert "ok    nothing of session B reached session A" in out


def test_example_client_holds_the_queue_for_an_agent_without_inject() -> None:
    ran = run_client(plain_agent_command("--delay-ms", "20", "--no-inject"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = ran.stdout
    assert "ACP v2; inject: None" in out
    assert "offers no session/inject: queue, revoke and replace are held by this client" in out
    assert "ok    a steer is refused: steer_not_supported" in out
    assert "ok    the held messages go out one per turn, in order" in out
    assert "ok    cancel ends the turn as cancelled" in out and "every step behaved per the rules" in out


def test_example_client_without_an_agent_prints_usage() -> None:
    ran = subprocess.run([sys.executable, str(CLIENT)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "client.py" in ran.stderr


def test_example_client_fails_against_a_broken_agent() -> None:
    """A self-check that can fail: an agent that exits at once makes the client fail, not hang."""
    ran = run_client([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert ran.returncode != 0
