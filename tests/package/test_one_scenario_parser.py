"""Rust validates a scenario once and hands Python the result: no Python module reads TOML itself,
except for two files that are not simulator scenarios."""

from __future__ import annotations

import ast
from pathlib import Path

import pathpool

#: TOML readers (writers such as tomli_w only render overrides and dicts for Rust to validate).
READERS = {"tomllib", "tomli", "toml", "tomlkit", "rtoml", "pytomlpp"}

#: Modules allowed to read TOML, and why: neither file is a simulator scenario.
ALLOWED = {
    "sweep_cli.py": "grid files (a scenario's name, seeds and the axes of a sweep)",
    "ratecontrol/stream.py": "Pluntke & Rio 2011's stream-model configuration, its own format",
}


def _readers(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found & READERS


def test_no_module_parses_scenario_toml():
    root = Path(pathpool.__file__).parent
    importing = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if _readers(p)}
    assert importing - set(ALLOWED) == set(), "these modules read TOML; use pathpool.load_scenario(...).spec"
    # The exceptions are real (a stale entry would hide a new reader under its name).
    assert importing == set(ALLOWED)
