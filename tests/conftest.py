"""Fixtures shared by every test area."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The source tree (scenarios/, crates/, python/ ...)."""
    return REPO_ROOT


@dataclasses.dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``pathpool ARGS...`` in this process; returns exit code, stdout and stderr."""
    from pathpool.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse errors
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli_subprocess() -> Callable[..., CliResult]:
    """Run the installed ``pathpool`` entry point in a fresh interpreter (to see what a user
    sees: exit status, stderr, no traceback)."""

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "pathpool.cli", *[str(a) for a in args]],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=300, check=False
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run
