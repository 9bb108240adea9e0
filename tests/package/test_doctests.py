"""The Examples sections of the public API run as doctests (they use shipped scenarios only)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "pathpool.sim.runner",
    "pathpool.sim.results",
    "pathpool.sim.catalog",
    "pathpool.sim.scenario",
    "pathpool.sim.reference",
    "pathpool.errors",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything an example writes lands here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
