"""Every conformance vector replays through the binding: ``AgentCore`` / ``ClientCore`` driven
from Python step by step, the shared Rust engine comparing what came out (one test case per
vector file, named ``test_vector[<side>/<file>]``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conformance import main, run_text, vector_files
from .conftest import PROJECT_VECTORS


def test_vector(vector_file: Path) -> None:
    name, mismatch = run_text(vector_file.read_text())
    assert mismatch is None, f"{name}: {mismatch}"


def test_every_project_vector_is_collected() -> None:
    files = vector_files([PROJECT_VECTORS])
    assert len(files) >= 116
    assert {f.parent.name for f in files} == {"agent", "client"}


def test_a_copied_vector_runs_from_anywhere_and_a_changed_one_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = PROJECT_VECTORS / "agent" / "steer-delivered-at-tool-result.json"
    shutil.copy(src, tmp_path / "copy.json")
    assert main([str(tmp_path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out

    text = json.dumps(json.loads(src.read_text())).replace("use auth_v2", "use auth_v3", 1)
    (tmp_path / "copy.json").write_text(text)
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "0 passed, 1 failed" in out and "auth_v3" in out


def test_an_unreadable_vector_is_a_failure_not_a_crash() -> None:
    name, mismatch = run_text("{not json")
    assert name == "(unreadable)" and mismatch
    name, mismatch = run_text(json.dumps({"name": "x", "side": "sideways", "steps": []}))
    assert mismatch


def test_main_without_directories_explains_itself(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ACP_INJECT_VECTORS", raising=False)
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
