"""End to end over real stdio: the reference agent driven from the Python binding.

The agent binary is `$ACP_INJECT_AGENT`, or built here with cargo from this checkout."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO


def agent_binary() -> str:
    path = os.environ.get("ACP_INJECT_AGENT")
    if path:
        return path
    subprocess.run(["cargo", "build", "--quiet", "-p", "acp-inject-reference-agent"], cwd=REPO, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO, check=True, capture_output=True)
    return str(Path(json.loads(meta.stdout)["target_directory"]) / "debug" / "acp-inject-agent")


def test_live_session_shows_every_behaviour(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("live_demo", REPO / "bindings" / "python" / "examples" / "live_demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    code = demo.Demo(agent_binary(), 40).run()
    out = capsys.readouterr().out
    assert code == 0, out
    for shown in ["at a break-point", "after idle, opening the next turn", "revoked", "already_delivered",
                  "replaced", "survived the cancel", "after the permission decision (it was held, not dropped)"]:
        assert shown in out, f"the transcript does not show: {shown}\n{out}"
