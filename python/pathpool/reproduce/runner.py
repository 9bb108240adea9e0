"""`pathpool reproduce`: build the jobs, run the sweep, compute metrics, compare, write the report."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pathpool.atomic import (
    atomic_directory,
    atomic_path,
    check_replaceable,
    directory_lock,
    ensure_directory,
)
from pathpool.procpool import check_jobs
from pathpool.reproduce import compare as cmp
from pathpool.reproduce import metrics
from pathpool.reproduce.experiments import PAPERS, Experiment, Options, build_jobs, load_experiments
from pathpool.reproduce.verdict import summarise
from pathpool.sim.scenario import override
from pathpool.sweep import Job, run_sweep

__all__ = ["TRACE", "Outcome", "reproduce", "trace_jobs"]

#: Tag of the time-series runs that explain the findings (not a published experiment).
TRACE = "rsf/trace"


@dataclasses.dataclass
class Outcome:
    """Everything one ``reproduce`` produced (also written under ``out``)."""

    experiments: list[Experiment]
    tables: dict[str, pd.DataFrame]
    per_run: pd.DataFrame
    summary: pd.DataFrame
    comparison: pd.DataFrame
    claims: pd.DataFrame
    seeds: list[int]
    options: Options
    timing: dict[str, float]
    out: Path


def trace_jobs(experiments: Sequence[Experiment], seed: int, options: Options) -> list[Job]:
    """Runs with time series that show what RSF-DB's factor min{1, (d - q)/q} does (seed 001
    eq. 1): scenario 2 of Table 2 with RSF-DB and LIA, windows and queues sampled every 100 ms."""
    out = []
    for e in experiments:
        if e.key == "rsf/table2_s2":
            for alg in ("rsf-db", "lia"):
                # The downloads end within a minute; sampling an idle network after that adds nothing.
                sc = e.scenario(alg, math.nan, options,
                                [override("metrics.interval", "100ms"), override("duration", 60.0 * options.time_scale)])
                out.append(Job(sc, seed, {"experiment": TRACE, "run_algorithm": alg, "x": math.nan}))
    return out




#: Stems of the tables ``reproduce`` writes to ``results/`` (plus ``series_seed<N>``).
RESULT_TABLES: tuple[str, ...] = ("per_run", "summary", "comparison", "claims", "flows", "subflows", "links", "series")


def is_results_folder(directory: Path) -> bool:
    """True if ``directory`` holds only what ``reproduce`` writes to ``results/`` (and hidden
    temporaries): such a folder may be replaced whole by a new run."""
    def ours(p: Path) -> bool:
        if p.name.startswith(".") or p.name == "timing.json":
            return True
        return p.suffix in (".parquet", ".csv") and (p.stem in RESULT_TABLES or p.stem.startswith("series_seed"))

    return all(ours(p) for p in directory.iterdir())


def write_table(df: pd.DataFrame, directory: Path, name: str, csv: bool = True) -> None:
    """``name.parquet`` (and ``name.csv``), each written atomically."""
    atomic_path(directory / f"{name}.parquet", lambda p: df.to_parquet(p, index=False))
    if csv:
        atomic_path(directory / f"{name}.csv", lambda p: df.to_csv(p, index=False))


def reproduce(
    papers: Sequence[str],
    *,
    seeds: int | Sequence[int] = 10,
    out: str | os.PathLike = "report",
    workers: int | None = None,
    dask: str | None = None,
    force: bool = False,
    options: Options = Options(),
    progress: Callable[[int, int], Any] | None = None,
    scenario_root: str | os.PathLike | None = None,
    report: bool = True,
) -> Outcome:
    """Run the published experiments of ``papers`` and write results and report under ``out``.

    Parameters
    ----------
    papers : sequence of str
        Any of ``rsf``, ``balia``, ``khalili`` (or ``all``).
    seeds : int or sequence of int
        A count n (seeds 1..n) or the seeds themselves.
    out : path
        Output folder: ``cache/``, ``results/``, ``figures/``, ``index.html``, ``README.md``.
    workers, dask, force
        Passed to :func:`pathpool.sweep.run_sweep`.
    options : Options
        Readings of the parameters the papers leave out.
    progress : callable, optional
        ``progress(done, total)``.

    Raises
    ------
    pathpool.errors.OutputError
        ``out`` cannot be used (a file, not writable, ``out/results`` holds other files than
        reproduce's, or another reproduce is writing it); checked before any run.
    ValueError
        ``workers`` below 1.
    pathpool.errors.ClusterError
        The Dask scheduler cannot be reached.
    """
    t0 = time.perf_counter()
    papers = list(PAPERS) if "all" in papers else list(dict.fromkeys(papers))
    seed_list = list(range(1, int(seeds) + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if workers is not None:
        check_jobs(workers, 1)
    out = ensure_directory(out)
    check_replaceable(out / "results", is_results_folder)
    # One reproduce per output folder at a time; the second is refused before simulating.
    with directory_lock(out / "results"):
        experiments = load_experiments(papers, scenario_root)
        jobs = build_jobs(experiments, seed_list, options) + trace_jobs(experiments, seed_list[0], options)
        tables = run_sweep(jobs, cache_dir=out / "cache", force=force, workers=workers, dask=dask, progress=progress)
        t_sim = time.perf_counter() - t0
        per_run = metrics.compute(tables, experiments, options)
        summary = summarise(per_run)
        comparison = cmp.compare(experiments, summary)
        claims = cmp.claims(summary, experiments)
        # results/ is one unit (old complete set or new complete set, whatever stops the run);
        # the report beside it is written while the new set is still being built.
        with atomic_directory(out / "results", is_results_folder) as res:
            write_table(per_run, res, "per_run")
            write_table(summary, res, "summary")
            write_table(comparison, res, "comparison")
            write_table(claims, res, "claims")
            for name in ("flows", "subflows", "links"):
                write_table(tables[name], res, name)
            if len(tables["series"]):
                # The long-form series are large: Parquet in full, CSV for the first seed only.
                write_table(tables["series"], res, "series", csv=False)
                s0 = tables["series"][tables["series"]["seed"] == seed_list[0]]
                write_table(s0, res, f"series_seed{seed_list[0]}", csv=True) if len(s0) else None
            timing = {"jobs": len(jobs), "simulate_s": t_sim, "total_s": math.nan}
            outcome = Outcome(experiments, tables, per_run, summary, comparison, claims, seed_list, options, timing,
                              out)
            if report:
                from pathpool.reproduce.report import write_report

                write_report(outcome)
            timing["total_s"] = time.perf_counter() - t0
            atomic_path(res / "timing.json", lambda p: Path(p).write_text(json.dumps(timing, indent=2)))
    return outcome
