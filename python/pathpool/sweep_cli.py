"""``pathpool sweep GRID.toml``: a parameter study over one scenario, as ns-3 and OMNeT++ users run them.

A grid file names a base scenario, the seeds and the axes; every combination of axis values is one
*point*, and every point runs for every seed::

    scenario = "examples/two_paths"          # a file (relative to this grid file) or a shipped name
    seeds = [1, 2, 3]                        # or "1-3"; default: the scenario's own seeds

    [axes]                                   # dotted scenario field = list of values
    "links.bottleneck_a.rate" = ["10Mbps", "20Mbps"]
    "flows.mptcp.algorithm" = ["lia", "olia", "balia"]

Each point's values are handed to :func:`pathpool.load_scenario` as overrides (``FIELD=VALUE``,
exactly as ``pathpool run --set``), so Rust applies and validates them once and every point is
checked before anything runs. The runs go through :func:`pathpool.sweep.run_sweep`, the engine
and cache ``pathpool reproduce`` uses: local cores or ``--dask``, cached per run under
``OUT/cache/``, merged in grid order whatever the schedule. The output tables are keyed by the
swept values: one column per axis (named by its field), then ``seed``, then the simulator's columns.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

from pathpool.sim.scenario import override

__all__ = ["Grid", "load_grid", "register", "run_grid"]


class GridError(ValueError):
    """A grid file is invalid; ``str()`` is one line naming file, field and allowed values."""


@dataclasses.dataclass(frozen=True)
class Grid:
    """A parsed grid file.

    Attributes
    ----------
    origin : str
        The grid file.
    scenario : str
        Path of the base scenario.
    seeds : tuple of int or None
        Seeds of every point (``None``: the scenario's).
    axes : dict of str to list
        Dotted scenario field -> values, in file order.
    """

    origin: str
    scenario: str
    seeds: tuple[int, ...] | None
    axes: dict[str, list[Any]]

    def points(self) -> list[dict[str, Any]]:
        """Every combination of axis values, the first axis varying slowest.

        Examples
        --------
        >>> Grid("g.toml", "s.toml", None, {"a": [1, 2], "b": ["x"]}).points()
        [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}]
        """
        names = list(self.axes)
        return [dict(zip(names, combo)) for combo in itertools.product(*self.axes.values())]


def overrides(point: dict[str, Any]) -> list[str]:
    """The ``FIELD=VALUE`` overrides of one grid point.

    Examples
    --------
    >>> overrides({"links.a.rate": "20Mbps", "flows.f.algorithm": "olia", "duration": 5})
    ['links.a.rate="20Mbps"', 'flows.f.algorithm="olia"', 'duration=5']
    """
    return [override(k, v) for k, v in point.items()]


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (see the module docstring for its fields).

    Raises
    ------
    GridError
        One line: ``FILE: FIELD: what is wrong (allowed: ...)``.
    """
    origin = str(path)
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GridError(f"{origin}: no such file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise GridError(f"{origin}: cannot read the grid: {e}") from None
    unknown = sorted(set(doc) - {"scenario", "seeds", "axes"})
    if unknown:
        raise GridError(f"{origin}: {unknown[0]}: unknown field (allowed: scenario, seeds, axes)")
    sc = doc.get("scenario")
    if not isinstance(sc, str) or not sc:
        raise GridError(f"{origin}: scenario: missing or not a string (allowed: a scenario file or a shipped name)")
    from pathpool.cliutil import scenario_arg

    local = Path(path).parent / sc
    scenario = str(local) if local.exists() else scenario_arg(sc)
    seeds = doc.get("seeds")
    if seeds is not None:
        from pathpool.sim.runner import parse_seeds

        try:
            if isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
                seeds = tuple(seeds)
            elif isinstance(seeds, str):
                seeds = tuple(parse_seeds(seeds))
            else:
                raise ValueError("not a list of integers or a range string")
        except ValueError as e:
            raise GridError(f"{origin}: seeds: {e} (allowed: a list of integers or \"1,2,5-8\")") from None
        if not seeds:
            raise GridError(f"{origin}: seeds: empty, the sweep would run nothing (allowed: at least one seed)")
    axes = doc.get("axes", {})
    if not isinstance(axes, dict):
        raise GridError(f"{origin}: axes: not a table (allowed: FIELD = [values...])")
    for name, values in axes.items():
        if not isinstance(values, list):
            raise GridError(f"{origin}: axes.{name}: not a list (allowed: a list of values)")
        if not values:
            raise GridError(f"{origin}: axes.{name}: empty, the sweep would run nothing (allowed: at least one value)")
        if any(isinstance(v, (dict, list)) for v in values):
            raise GridError(f"{origin}: axes.{name}: values must be scalars (allowed: strings, numbers, booleans)")
    return Grid(origin, scenario, seeds, dict(axes))


def jobs_of(grid: Grid, seeds: list[int] | None = None) -> list:
    """Validate every point (through the Rust overrides) and expand it into sweep jobs.

    Returns
    -------
    list of pathpool.sweep.Job
        Points in grid order, each with its seeds; tags are the point's axis values.
    """
    from pathpool.sim.cli import load_with_overrides
    from pathpool.sweep import Job

    out = []
    for point in grid.points():
        sc = load_with_overrides(grid.scenario, overrides(point))
        for seed in seeds or grid.seeds or sc.seeds:
            out.append(Job(scenario=sc, seed=int(seed), tags=dict(point)))
    return out


def run_grid(grid: Grid, out: str | Path, *, seeds: list[int] | None = None, workers: int | None = None,
             dask: str | None = None, force: bool = False, progress=None) -> dict[str, Any]:
    """Run a grid and write ``flows``, ``subflows``, ``links`` (Parquet + CSV), ``series.parquet``,
    ``summary.csv`` (per point and flow: mean and sd of goodput over seeds) and ``grid.json`` to ``out``.

    Returns
    -------
    dict of str to pandas.DataFrame
        The merged tables and ``summary``.
    """
    from pathpool.atomic import atomic_write_json
    from pathpool.reproduce.runner import write_table
    from pathpool.sweep import run_sweep

    jobs = jobs_of(grid, seeds)
    out = Path(out)
    tables = run_sweep(jobs, cache_dir=out / "cache", force=force, workers=workers, dask=dask, progress=progress)
    keys = list(grid.axes)
    flows = tables["flows"]
    summary = (flows.groupby([*keys, "flow"], sort=False, dropna=False)["goodput_bps"]
               .agg(goodput_bps_mean="mean", goodput_bps_std="std", seeds="count").reset_index())
    for name in ("flows", "subflows", "links"):
        write_table(tables[name], out, name)
    if len(tables["series"]):
        write_table(tables["series"], out, "series", csv=False)
    write_table(summary, out, "summary")
    atomic_write_json(out / "grid.json", {"grid": grid.origin, "scenario": grid.scenario, "axes": grid.axes,
                                          "points": len(grid.points()), "runs": len(jobs)})
    return {**tables, "summary": summary}


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pathpool.cliutil import EXIT_FAILED, fail, progress
    from pathpool.errors import ScenarioError, SimulationError

    try:
        grid = load_grid(args.grid)
        out = Path(args.output or Path("results") / f"sweep-{Path(args.grid).stem}")
        with progress(f"sweep {Path(args.grid).name}: runs", enabled=not args.json) as tick:
            res = run_grid(grid, out, seeds=args.seeds, workers=args.jobs, dask=args.dask, force=args.force,
                           progress=tick)
    except (GridError, ScenarioError) as e:
        return fail(str(e))
    except SimulationError as e:
        return fail(f"{args.grid}: simulation failed: {e}", EXIT_FAILED)
    summary = res["summary"]
    if args.json:
        sys.stdout.write(json.dumps({"out": str(out), "summary": json.loads(summary.to_json(orient="records"))},
                                    indent=2) + "\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"sweep {grid.origin}: {len(grid.points())} points -> {out}")
    for c in summary.columns:
        t.add_column(str(c), justify="right" if c not in ("flow",) else "left")
    for row in summary.itertuples(index=False):
        t.add_row(*[f"{v / 1e6:.3f} Mb/s" if isinstance(v, float) and "goodput" in f else str(v)
                    for f, v in zip(summary.columns, row)])
    Console().print(t)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pathpool sweep``."""
    from pathpool.cliutil import add_out, jobs_arg, seeds_arg
    p = subparsers.add_parser(
        "sweep",
        description="Run every combination of the axes in GRID (a TOML file: scenario, seeds, [axes] of "
        "dotted scenario fields) for every seed, on local cores or Dask, cached under OUT/cache, and write "
        "tidy tables keyed by the swept values to OUT.",
    )
    p.add_argument("grid", metavar="GRID", help="grid TOML file")
    add_out(p, None, "output directory (default: results/sweep-<grid name>)")
    p.add_argument("--seeds", type=seeds_arg, metavar="LIST", help="seeds, e.g. 1-5 (default: the grid's)")
    p.add_argument("-j", "--jobs", type=jobs_arg, default=None, metavar="N",
                   help="local worker processes, at least 1 (default: one per core)")
    p.add_argument("--dask", default=None, metavar="ADDRESS|local",
                   help="run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local' to start one")
    p.add_argument("--force", action="store_true", help="recompute runs already in the cache")
    p.add_argument("--json", action="store_true", help="print the summary table as JSON on stdout")
    p.set_defaults(func=_cmd_sweep)
