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

Refused before anything runs, in one line (exit 2): two axes that name one field (``flows.0.algorithm``
and ``flows.mptcp.algorithm``: the later would overwrite the other in every point), an axis whose
values are of more than one type (``[1, "2s"]``), a seed listed twice (in the grid or ``--seeds``),
more than :data:`MAX_RUNS` runs (points x seeds, counted before the grid is expanded), an ``OUT``
that holds files other than a sweep's (named), and an ``OUT`` another sweep is writing.

``OUT`` is one unit: the new tables are written beside it and swapped in whole, so it holds the
previous sweep's output or this one's, never a mix; a full disk leaves the previous one and ends
with one line (exit 1). Cache entries hold no axis labels: grids with different axes that share a
run share its entry, and each labels the rows with its own axes.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from pathpool.sim.scenario import override

__all__ = ["Grid", "load_grid", "register", "run_grid"]


#: Most runs (points x seeds) one sweep may have, as a scenario may have at most this many seeds.
MAX_RUNS = 100_000


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
        twice = _listed_twice(seeds)
        if twice is not None:
            raise GridError(f"{origin}: seeds: seed {twice} is listed twice (allowed: distinct integers)")
    axes = doc.get("axes", {})
    if not isinstance(axes, dict):
        raise GridError(f"{origin}: axes: not a table (allowed: FIELD = [values...])")
    for name, values in axes.items():
        if not isinstance(values, list):
            raise GridError(f"{origin}: axes.{name}: not a list (allowed: a list of values)")
        if not values:
            raise GridError(f"{origin}: axes.{name}: empty, the sweep would run nothing (allowed: at least one value)")
        kinds = {_kind(v) for v in values}
        if None in kinds:
            raise GridError(f"{origin}: axes.{name}: values must be scalars (allowed: strings, numbers, booleans)")
        if len(kinds) > 1:
            raise GridError(f"{origin}: axes.{name}: values of more than one type ({', '.join(sorted(kinds))}); "
                            "an axis's values are all of one type (allowed: all strings such as \"2s\", all "
                            "numbers, or all booleans)")
    _check_fields(origin, scenario, list(axes))
    points = math.prod(len(v) for v in axes.values())
    runs = points * (len(seeds) if seeds is not None else 1)
    if runs > MAX_RUNS:
        raise GridError(f"{origin}: axes: {points} points" + (f" x {len(seeds)} seeds" if seeds else "")
                        + f" = {runs} runs; at most {MAX_RUNS} runs in one sweep (allowed: fewer axis values "
                        "or seeds, or several sweeps)")
    return Grid(origin, scenario, seeds, dict(axes))


def _listed_twice(seeds: Any) -> int | None:
    seen: set[int] = set()
    for s in seeds:
        if s in seen:
            return int(s)
        seen.add(s)
    return None


def _kind(v: Any) -> str | None:
    # A column of a table holds one type; bool is an int to Python but not to Arrow.
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return None


def _field_keys(field: str) -> list[str]:
    """The keys of a dotted override path, as the scenario loader splits them (``flows[0].mss``
    is ``flows.0.mss``)."""
    keys = []
    for part in field.strip().split("."):
        keys += [k.strip() for k in part.replace("]", "").split("[")]
    return keys


def field_of(doc: dict[str, Any], field: str) -> tuple[Any, ...]:
    """The field an override path names in scenario ``doc``: elements of arrays of tables
    (``links``, ``paths``, ``flows``) by index whether the path names them by name or index.

    Examples
    --------
    >>> doc = {"flows": [{"name": "mptcp"}, {"name": "tcp"}]}
    >>> field_of(doc, "flows.tcp.algorithm") == field_of(doc, "flows[1].algorithm")
    True
    """
    keys = _field_keys(field)
    out: list[Any] = []
    node: Any = doc
    i = 0
    while i < len(keys):
        key = keys[i]
        out.append(key)
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, list) and i + 1 < len(keys) and value and all(isinstance(x, dict) for x in value):
            sel = keys[i + 1]
            # As the loader picks: digits are an index, anything else a name.
            pos = (int(sel) if int(sel) < len(value) else None) if sel.isdigit() else next(
                (j for j, x in enumerate(value) if x.get("name") == sel), None)
            if pos is None:
                return (*out, *keys[i + 1:])  # the loader names what is missing
            out.append(pos)
            node = value[pos]
            i += 2
            continue
        node = value
        i += 1
    return tuple(out)


def _check_fields(origin: str, scenario: str, names: list[str]) -> None:
    """Refuse two axes that set one field (or a field and a part of it): the later override
    would win in every point and the rows would carry the other axis's values as labels."""
    try:
        doc = tomllib.loads(Path(scenario).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        doc = {}  # the scenario loader reports it, with its name
    fields = [(name, field_of(doc, name)) for name in names]
    for k, (a, fa) in enumerate(fields):
        for b, fb in fields[k + 1:]:
            n = min(len(fa), len(fb))
            if fa[:n] == fb[:n]:
                shown = ".".join(str(x) for x in (fa if len(fa) <= len(fb) else fb))
                raise GridError(f"{origin}: axes: \"{a.strip()}\" and \"{b.strip()}\" name the same field "
                                f"({shown}); the later would overwrite the other in every point (allowed: one "
                                "axis per field)")


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


#: What a sweep output folder holds (besides ``cache/``, ``plots/`` and hidden files).
OUTPUT_FILES = frozenset({*(f"{t}.{ext}" for t in ("flows", "subflows", "links", "summary") for ext in ("parquet", "csv")),
                          "series.parquet", "grid.json", "manifest.json"})


def _sweep_entry(p: Path) -> bool:
    from pathpool.plot import is_plots_folder

    if p.name.startswith(".") or p.name in OUTPUT_FILES:
        return True
    if p.name == "cache":
        return p.is_dir() and not p.is_symlink()
    return p.name == "plots" and is_plots_folder(p)


def run_grid(grid: Grid, out: str | Path, *, seeds: list[int] | None = None, workers: int | None = None,
             dask: str | None = None, force: bool = False, progress=None) -> dict[str, Any]:
    """Run a grid and write ``flows``, ``subflows``, ``links`` (Parquet + CSV), ``series.parquet``,
    ``summary`` (per point and flow: mean and sd of goodput over seeds), ``grid.json`` and
    ``manifest.json`` (every file's size and SHA-256, checked by ``pathpool plot``) to ``out``.

    ``out`` is one unit: the new tables are built beside it and put in its place in one step,
    so it holds the previous sweep's complete output or this one's, never a mix (a full disk
    or a kill leaves the previous one). It keeps ``cache/`` (every run, reused by later sweeps:
    rows are labelled by the sweep that reads them) and ``plots/`` (until replaced); any other
    file in it is refused, naming it. One sweep writes a folder at a time: a second is refused.

    Returns
    -------
    dict of str to pandas.DataFrame
        The merged tables and ``summary``.

    Raises
    ------
    GridError
        ``seeds`` lists a seed twice, or the sweep has more than :data:`MAX_RUNS` runs.
    pathpool.errors.OutputError
        ``out`` cannot be used (a file, foreign files in it, not writable) or another sweep is
        writing it.
    OSError
        Writing failed (e.g. the disk is full); ``out`` is as it was.
    """
    from pathpool.atomic import atomic_directory, check_replaceable, directory_lock, only
    from pathpool.manifest import write_manifest
    from pathpool.sweep import run_sweep

    if seeds is not None:
        twice = _listed_twice(seeds)
        if twice is not None:
            raise GridError(f"{grid.origin}: seeds: seed {twice} is listed twice (allowed: distinct integers)")
    n_seeds = len(seeds or grid.seeds or _base_seeds(grid))
    points = math.prod(len(v) for v in grid.axes.values())
    if points * n_seeds > MAX_RUNS:
        raise GridError(f"{grid.origin}: axes: {points} points x {n_seeds} seeds = {points * n_seeds} runs; at most "
                        f"{MAX_RUNS} runs in one sweep (allowed: fewer axis values or seeds, or several sweeps)")
    jobs = jobs_of(grid, seeds)
    out = Path(out)
    ours = only(_sweep_entry)
    check_replaceable(out, ours)
    with directory_lock(out):
        tables = run_sweep(jobs, cache_dir=out / "cache", force=force, workers=workers, dask=dask, progress=progress)
        keys = list(grid.axes)
        flows = tables["flows"]
        summary = (flows.groupby([*keys, "flow"], sort=False, dropna=False)["goodput_bps"]
                   .agg(goodput_bps_mean="mean", goodput_bps_std="std", seeds="count").reset_index())
        cache = out / "cache"
        with atomic_directory(out, ours) as tmp:
            for name in ("flows", "subflows", "links"):
                tables[name].to_parquet(tmp / f"{name}.parquet", index=False)
                tables[name].to_csv(tmp / f"{name}.csv", index=False)
            if len(tables["series"]):
                tables["series"].to_parquet(tmp / "series.parquet", index=False)
            summary.to_parquet(tmp / "summary.parquet", index=False)
            summary.to_csv(tmp / "summary.csv", index=False)
            (tmp / "grid.json").write_text(json.dumps(
                {"grid": grid.origin, "scenario": grid.scenario, "axes": grid.axes, "points": points,
                 "runs": len(jobs)}, indent=2) + "\n")
            write_manifest(tmp, "sweep")
            # Last, once every file is written: the cache goes with the new output (a rename,
            # nothing copied). Only a failure of the swap itself, after this, costs the cache
            # (runs to do again), never the results.
            if cache.is_dir():
                os.rename(cache, tmp / "cache")
    return {**tables, "summary": summary}


def _base_seeds(grid: Grid) -> tuple[int, ...]:
    from pathpool.sim.cli import load_with_overrides

    return tuple(load_with_overrides(grid.scenario, []).seeds)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pathpool.cliutil import EXIT_FAILED, dask_missing, fail, progress
    from pathpool.errors import OutputError, ScenarioError, SimulationError

    if args.dask and (msg := dask_missing("pathpool sweep")):
        return fail(msg)
    if args.seeds is not None and _listed_twice(args.seeds) is not None:
        return fail(f"pathpool sweep: --seeds: seed {_listed_twice(args.seeds)} is listed twice (allowed: distinct "
                    "integers)")
    out = Path(args.output or Path("results") / f"sweep-{Path(args.grid).stem}")
    try:
        grid = load_grid(args.grid)
        with progress(f"sweep {Path(args.grid).name}: runs", enabled=not args.json) as tick:
            res = run_grid(grid, out, seeds=args.seeds, workers=args.jobs, dask=args.dask, force=args.force,
                           progress=tick)
    except (GridError, ScenarioError, OutputError) as e:
        return fail(str(e))
    except SimulationError as e:
        return fail(f"{args.grid}: simulation failed: {e}", EXIT_FAILED)
    except OSError as e:
        # As `pathpool run`: the runs were done, writing them failed (exit 1); the folder holds
        # what it held before.
        return fail(f"{out}: cannot write the sweep's output: {e.strerror or e}; {out} is unchanged",
                    EXIT_FAILED)
    summary = res["summary"]
    if args.json:
        sys.stdout.write(json.dumps({"out": str(out), "summary": json.loads(summary.to_json(orient="records"))},
                                    indent=2) + "\n")
        return 0
    from rich.table import Table

    from pathpool.cliutil import print_table

    t = Table(title=f"sweep {grid.origin}: {len(grid.points())} points -> {out}")
    for c in summary.columns:
        t.add_column(str(c), justify="right" if c not in ("flow",) else "left")
    for row in summary.itertuples(index=False):
        t.add_row(*[f"{v / 1e6:.3f} Mb/s" if isinstance(v, float) and "goodput" in f else str(v)
                    for f, v in zip(summary.columns, row)])
    print_table(t)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pathpool sweep``."""
    from pathpool.cliutil import add_out, jobs_arg, seeds_arg
    p = subparsers.add_parser(
        "sweep",
        description="Run every combination of the axes in GRID (a TOML file: scenario, seeds, [axes] of "
        "dotted scenario fields, one axis per field, the values of an axis of one type) for every seed, on "
        "local cores or Dask, cached under OUT/cache, and write tidy tables keyed by the swept values, and "
        f"manifest.json, to OUT. At most {MAX_RUNS} runs (points x seeds). OUT is replaced whole (previous "
        "output or new, never a mix) and may hold only a sweep's files, cache/ and plots/; one sweep writes "
        "it at a time.",
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
