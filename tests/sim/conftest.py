"""Small scenarios for the simulator-facing tests (each runs in well under a second)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import tomli_w

# Two disjoint paths; an MPTCP flow over both shares path "a" with a TCP flow; a little random
# loss on "b" so that seeds matter.
TINY: dict[str, Any] = {
    "name": "tiny",
    "duration": "3s",
    "seeds": [1, 2],
    "metrics": {"interval": "250ms"},
    "links": [
        {"name": "la", "rate": "10Mbps", "delay": "10ms", "buffer": 50},
        {"name": "lb", "rate": "5Mbps", "delay": "30ms", "buffer": 50, "loss": "0.5%"},
    ],
    "paths": [
        {"name": "a", "links": ["la"]},
        {"name": "b", "links": ["lb"]},
    ],
    "flows": [
        {"name": "mp", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia"},
        {"name": "tcp", "kind": "tcp", "path": "a", "algorithm": "reno"},
    ],
}


@pytest.fixture(scope="session")
def tiny_scenario() -> dict[str, Any]:
    """The tiny scenario as a dict, for session/module-scoped fixtures (do not modify)."""
    return copy.deepcopy(TINY)


@pytest.fixture
def tiny_dict() -> dict[str, Any]:
    """The tiny scenario as a dict (a fresh copy each time)."""
    return copy.deepcopy(TINY)


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    """The tiny scenario as a TOML file."""
    p = tmp_path / "tiny.toml"
    p.write_text(tomli_w.dumps(TINY), encoding="utf-8")
    return p
