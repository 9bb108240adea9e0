"""The Rust/Python boundary: a Rust panic becomes SimulationError, never a dead interpreter;
the GIL is released while simulating."""

from __future__ import annotations

import threading

import pathpool
import pytest
from pathpool import SimulationError, _core


def test_rust_panic_becomes_simulation_error():
    with pytest.raises(SimulationError, match="Rust panic.*boom 42"):
        _core._panic_for_test("boom 42")
    # the interpreter and the extension are still usable afterwards
    with pytest.raises(SimulationError):
        _core._panic_for_test("again")
    assert isinstance(pathpool.algorithms(), list)


def test_progress_callback_exception_propagates(tiny_dict):
    class Stop(Exception):
        pass

    def cb(_fraction: float) -> None:
        raise Stop

    with pytest.raises(Stop):
        pathpool.run(tiny_dict, seeds=[1], progress=cb)


def test_gil_is_released_during_a_run(tiny_dict):
    """Another Python thread makes progress while the simulator runs."""
    import tomli_w

    longer = dict(tiny_dict, duration="20s")
    text = tomli_w.dumps(longer)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        out = _core.run_scenario(text, "<t>", 1)
    finally:
        done.set()
        t.join()
    assert out["stats"]["events"] > 0
    # with the GIL held for the whole run the counter could only move at the start/end switch
    assert ticks > 1000
