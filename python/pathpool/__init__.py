"""pathpool: multipath congestion control, from theory to a running Linux kernel.

The Python API of the simulator::

    import pathpool
    res = pathpool.run("examples/two_paths", seeds=[1, 2])   # a shipped scenario, or a TOML file
    res.flows        # pandas DataFrame, one row per flow per seed
    res.write("results/example")

Names are imported on first use, so ``import pathpool`` stays cheap (worker processes rely on it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathpool._core import __version__
from pathpool._lazy import lazy_exports
from pathpool.errors import PathpoolError, ScenarioError, SimulationError

if TYPE_CHECKING:
    from pathpool.sim.catalog import algorithms
    from pathpool.sim.reference import scenario_schema
    from pathpool.sim.results import Results, jain_index, read_results
    from pathpool.sim.runner import run
    from pathpool.sim.scenario import Scenario, load_scenario

_LAZY = {
    "run": "pathpool.sim.runner",
    "load_scenario": "pathpool.sim.scenario",
    "Scenario": "pathpool.sim.scenario",
    "Results": "pathpool.sim.results",
    "read_results": "pathpool.sim.results",
    "jain_index": "pathpool.sim.results",
    "algorithms": "pathpool.sim.catalog",
    "scenario_schema": "pathpool.sim.reference",
}

__all__ = [
    "PathpoolError",
    "Results",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "algorithms",
    "jain_index",
    "load_scenario",
    "read_results",
    "run",
    "scenario_schema",
]


# Imported on first use, so that `import pathpool` and `pathpool --help` stay cheap.
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
