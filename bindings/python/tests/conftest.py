"""Shared test setup: where the repository, the vectors and the programs the tests run are.

`cargo xtask test --stage python` passes the reference agent and the Rust conformance runner as
``ACP_INJECT_AGENT`` and ``ACP_INJECT_CONFORMANCE``; without them (a bare ``pytest``) they are
built here with cargo from this checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import List

import pytest

# The vector driver, imported first: it readies the test-only conformance component (tests that
# use ``VectorRun`` from ``acp_inject.acp_inject_ffi`` rely on that).
from .conformance import vector_files

REPO = Path(__file__).resolve().parents[3]
PROJECT_VECTORS = REPO / "spec" / "vectors"
EXAMPLES = REPO / "bindings" / "python" / "examples"
PLAIN_AGENT = Path(__file__).resolve().with_name("plain_agent.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vectors",
        action="append",
        default=[],
        help="extra directory of conformance vectors to replay (repeatable; also ACP_INJECT_VECTORS)",
    )


def vector_dirs(config: pytest.Config) -> List[Path]:
    dirs = [PROJECT_VECTORS] + [Path(d) for d in config.getoption("--vectors")]
    env = os.environ.get("ACP_INJECT_VECTORS")
    if env:
        dirs += [Path(d) for d in env.split(os.pathsep) if d]
    return dirs


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One test case per vector, named test_vector[<side>/<file>] (xtask counts these).
    if "vector_file" in metafunc.fixturenames:
        files = vector_files(vector_dirs(metafunc.config))
        metafunc.parametrize("vector_file", files, ids=[f"{p.parent.name}/{p.name}" for p in files])


def _cargo_bin(package: str, binary: str) -> str:
    subprocess.run(["cargo", "build", "--quiet", "-p", package, "--bin", binary], cwd=REPO, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO, check=True, capture_output=True)
    return str(Path(json.loads(meta.stdout)["target_directory"]) / "debug" / binary)


@lru_cache(maxsize=None)
def reference_agent() -> str:
    """The reference agent binary (``acp-inject-agent``)."""
    return os.environ.get("ACP_INJECT_AGENT") or _cargo_bin("acp-inject-reference-agent", "acp-inject-agent")


@lru_cache(maxsize=None)
def conformance_runner() -> str:
    """The Rust conformance runner (``acp-inject-conformance``): replays vectors through the
    Rust core directly, without the binding."""
    return os.environ.get("ACP_INJECT_CONFORMANCE") or _cargo_bin("acp-inject-conformance", "acp-inject-conformance")


def reference_agent_command(delay_ms: int = 20, *extra: str) -> List[str]:
    return [reference_agent(), "--delay-ms", str(delay_ms), *extra]


def plain_agent_command(*extra: str) -> List[str]:
    """The independent agent of ``plain_agent.py`` (no acp-inject code in it)."""
    return [sys.executable, str(PLAIN_AGENT), *extra]
