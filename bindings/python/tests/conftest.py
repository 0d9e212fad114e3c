from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[3]
PROJECT_VECTORS = REPO / "spec" / "vectors"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vectors",
        action="append",
        default=[],
        help="extra directory of conformance vectors to replay (repeatable; also ACP_INJECT_VECTORS)",
    )


def vector_dirs(config: pytest.Config) -> List[str]:
    dirs = [str(PROJECT_VECTORS)]
    dirs += config.getoption("--vectors")
    env = os.environ.get("ACP_INJECT_VECTORS")
    if env:
        dirs += [d for d in env.split(os.pathsep) if d]
    return dirs


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "vector_file" in metafunc.fixturenames:
        from acp_inject.conformance import vector_files

        files = vector_files(vector_dirs(metafunc.config))
        metafunc.parametrize("vector_file", files, ids=[f"{p.parent.name}/{p.name}" for p in files])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from acp_inject.conformance import run_dirs

    report = run_dirs(vector_dirs(terminalreporter.config))
    terminalreporter.write_sep("=", "conformance vectors through the Python binding")
    terminalreporter.write(report.render())
