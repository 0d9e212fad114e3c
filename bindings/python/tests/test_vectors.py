"""Every conformance vector replays through the binding (AgentCore / ClientSession), and the
Python replay agrees with the Rust runner on every file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from acp_inject import run_conformance
from acp_inject.conformance import main, run_dirs, run_file

from .conftest import PROJECT_VECTORS


def test_vector(vector_file: Path) -> None:
    result = run_file(vector_file)
    assert result.mismatch is None, f"{result.name}: {result.mismatch}"


def test_project_vectors_exist() -> None:
    assert len(list(PROJECT_VECTORS.rglob("*.json"))) >= 90


def test_python_replay_agrees_with_the_rust_runner() -> None:
    py = run_dirs([str(PROJECT_VECTORS)])
    rust = run_conformance([str(PROJECT_VECTORS)])
    assert (py.passed, py.failed) == (rust.passed, rust.failed)
    assert rust.failed == 0, rust.rendered


def test_a_copied_vector_runs_from_anywhere_and_a_changed_one_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = PROJECT_VECTORS / "agent" / "steer-delivered-at-tool-result.json"
    shutil.copy(src, tmp_path / "copy.json")
    assert main([str(tmp_path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out

    vector = json.loads(src.read_text())
    text = json.dumps(vector).replace("use auth_v2", "use auth_v3", 1)
    (tmp_path / "copy.json").write_text(text)
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "0 passed, 1 failed" in out and "auth_v3" in out and "step" in out
    # The Rust runner sees the same failure.
    assert run_conformance([str(tmp_path)]).failed == 1
