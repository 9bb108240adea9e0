"""`pathpool reproduce`: build the jobs, run the sweep, compute metrics, compare, write the report."""

from __future__ import annotations

import dataclasses
import itertools
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
    only,
)
from pathpool.procpool import check_jobs
from pathpool.reproduce import compare as cmp
from pathpool.reproduce import metrics
from pathpool.reproduce.experiments import PAPERS, Experiment, Options, build_jobs, load_experiments
from pathpool.reproduce.verdict import summarise
from pathpool.sim.scenario import override
from pathpool.sweep import Job, run_sweep

__all__ = ["AGREEMENT_READINGS", "TRACE", "KernelOptions", "Outcome", "kernel_repetitions_needed", "reproduce",
           "seeds_needed", "simulate_as_testbed", "stein_count", "trace_jobs"]

#: Tag of the time-series runs that explain the findings (not a published experiment).
TRACE = "rsf/trace"


#: Jobs per piece of the ``ci_target`` stage (memory: one piece's time series at a time).
SECOND_STAGE_CHUNK = 500

#: ``--backend`` values.
BACKENDS = ("sim", "linux", "both")

#: ``--agreement-reading`` (:attr:`KernelOptions.agreement`): the simulator runs the agreement
#: table compares with the kernel's, and what each means (the report prints the chosen one).
AGREEMENT_READINGS: dict[str, str] = {
    "linux": "the simulator under its Linux reading, each scenario written as the test bed runs it "
             "(upstream Linux's MPTCP scheduler, send buffers, restart after idle, RACK-TLP and PRR, "
             "subflows joining after their MP_JOIN handshakes, begun when the receiver's first byte arrives, "
             "the 28 bytes of DSS option, the segments Linux cuts short where a write or a data fragment ends, "
             "the autotuned receive window, whole-segment windows after each reduction, the bed sender's 64 KiB "
             "writes whenever the socket polls writable; "
             "the scenario's send jitter kept, its start jitter only where the kernel's runs had it, else the spread "
             "the bed's senders take to come up)",
    "scenario": "the simulator as the report's own columns run it (the scenario files and the readings above)",
}


@dataclasses.dataclass
class KernelSide:
    """What the Linux backend produced (:mod:`pathpool.reproduce.kernel`).

    Attributes
    ----------
    tables, per_run, summary, comparison, claims
        As :class:`Outcome`'s, for the experiments the test bed ran.
    skipped : DataFrame
        ``experiment, algorithm, reason``: what the test bed cannot express.
    agreement : DataFrame
        Simulator vs kernel per (experiment, algorithm, x, metric) when both ran
        (:func:`pathpool.reproduce.compare.agreement`), column ``sim_reading`` naming the
        simulator runs of each row (:data:`AGREEMENT_READINGS`; the chosen reading's rows
        first); empty otherwise.
    wall_s : float
        Wall time of the kernel runs (cached ones included at ~0).
    jobs : int
        Kernel jobs (runs) planned, both stages.
    start_jitter : str
        ``--kernel-start-jitter``: ``off`` or ``scenario``.
    send_jitter : str
        ``--kernel-send-jitter``: ``off`` or ``scenario``.
    first_seeds : int
        Repetitions of the first stage (``kernel_seeds``).
    more_seeds : dict
        Cells the second stage grew (:func:`cell_name` -> repetitions in all).
    """

    tables: dict[str, pd.DataFrame]
    per_run: pd.DataFrame
    summary: pd.DataFrame
    comparison: pd.DataFrame
    claims: pd.DataFrame
    skipped: pd.DataFrame
    agreement: pd.DataFrame
    wall_s: float
    jobs: int
    start_jitter: str = "off"
    send_jitter: str = "off"
    first_seeds: int = 0
    more_seeds: dict[str, int] = dataclasses.field(default_factory=dict)
    #: The simulator runs beside the kernel's under the agreement reading ``linux`` (their
    #: ``flows``/``subflows``/``links`` tables; empty under ``scenario``).
    beside_tables: dict[str, pd.DataFrame] = dataclasses.field(default_factory=dict)
    #: :attr:`KernelOptions.agreement`.
    agreement_reading: str = "scenario"


@dataclasses.dataclass
class Outcome:
    """Everything one ``reproduce`` produced (also written under ``out``).

    With ``backend = "linux"`` the main tables are the kernel's; with ``"both"`` they are the
    simulator's and ``comparison`` gains the kernel's columns (``linux_mean``, ``linux_lo``,
    ``linux_hi``, ``linux_n``, ``linux_verdict``); ``kernel`` holds the rest.
    """

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
    backend: str = "sim"
    kernel: KernelSide | None = None
    #: Experiments the ``ci_target`` stage gave more seeds: key -> seeds in all.
    more_seeds: dict[str, int] = dataclasses.field(default_factory=dict)


def trace_jobs(experiments: Sequence[Experiment], seed: int, options: Options) -> list[Job]:
    """Runs with time series that show what RSF-DB's factor min{1, (d - q)/q} does (Pokhrel &
    Williamson 2020, eq. 1): scenario 2 of Table 2 with RSF-DB and LIA, windows and queues sampled every 100 ms."""
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
RESULT_TABLES: tuple[str, ...] = ("per_run", "summary", "comparison", "claims", "flows", "subflows", "links", "series",
                                  "linux_per_run", "linux_summary", "linux_comparison", "linux_claims",
                                  "linux_flows", "linux_subflows", "linux_skipped", "agreement", "as_testbed_flows",
                                  "as_testbed_subflows")


def _results_entry(p: Path) -> bool:
    from pathpool.plot import is_plots_folder

    if p.name in ("timing.json", "manifest.json") or (p.name == "plots" and is_plots_folder(p)):
        return True
    return p.suffix in (".parquet", ".csv") and (p.stem in RESULT_TABLES or p.stem.startswith("series_seed"))


#: True if a directory holds only what ``reproduce`` writes to ``results/`` (and hidden
#: temporaries, and ``plots/`` of ``pathpool plot``): such a folder may be replaced whole by a
#: new run.
is_results_folder = only(_results_entry)


def write_table(df: pd.DataFrame, directory: Path, name: str, csv: bool = True) -> None:
    """``name.parquet`` (and ``name.csv``), each written atomically."""
    atomic_path(directory / f"{name}.parquet", lambda p: df.to_parquet(p, index=False))
    if csv:
        atomic_path(directory / f"{name}.csv", lambda p: df.to_csv(p, index=False))


@dataclasses.dataclass(frozen=True)
class KernelOptions:
    """How :func:`reproduce` runs the experiments on the real kernel (``backend`` ``"linux"`` or
    ``"both"``; ignored with ``"sim"``). The CLI's ``--kernel-*`` options and ``--beds``.

    Attributes
    ----------
    beds : int, optional
        Test beds side by side (default :func:`pathpool.reproduce.kernel.default_beds`).
    max_duration_s : float, optional
        Cap on one kernel run's real time, in seconds (default
        :data:`pathpool.reproduce.kernel.DEFAULT_MAX_DURATION_S`).
    repetitions : int, optional
        The kernel runs only the first ``repetitions`` seeds, the simulator all of them (default:
        all on both); kernel runs take real time, simulator runs do not.
    xs : sequence of float, optional
        The kernel runs only these values of a swept experiment (e.g. Fig. 2 at 4 MB; the
        simulator runs all); experiments without a sweep are not affected. Default: all.
    start_jitter : {"off", "scenario"}
        ``off`` (default; the cached kernel runs): every kernel flow starts at its scenario
        ``start``. ``scenario``: also offset by the start jitter the simulator draws for the
        seed (:func:`pathpool.reproduce.kernel.plan_jobs`); these runs get their own cache keys.
        The simulator's runs beside the kernel's (agreement reading ``linux``) start their flows
        the same way.
    send_jitter : {"off", "scenario"}
        ``off`` (default; the cached kernel runs): the test bed's hosts keep their own timing
        noise, tens of microseconds. ``scenario``: each data packet is held a random time up to
        its flows' ``send_jitter`` before its path's queue, as the simulator delays it
        (:attr:`pathpool.kernel.testbed.PathSpec.jitter_ms`); these runs get their own cache keys.
    max_repetitions : int or sequence of int, optional
        With ``ci_target > 0``: the kernel's second stage. After the first ``repetitions``, each
        kernel cell (experiment, algorithm, swept value: one kernel run is one algorithm's) whose
        widest published quantity has a 95% CI half-width above ``ci_target`` times its mean gets
        more repetitions by the same rule as the simulator (:func:`kernel_repetitions_needed`),
        at most ``max_repetitions`` in all; they continue the seed numbering, run in the same beds
        and are cached like the first. None (default): no kernel stage. Must be at least the
        first stage's count. A sequence of increasing caps runs one more stage per cap, each
        counting the repetitions every cell has by then (Stein's rule from 10 repetitions rather
        than from 3: a first stage of 3 asks for far more than needed, so a low first cap and a
        higher second one grow only the cells still wide at the first cap). With two or more
        caps the last stage repeats (at most :data:`MAX_REPEATS` times) while a cell below the
        last cap is still wide.
    stage_only : sequence of str, optional
        Patterns as ``only``: the kernel's later stages for these experiments only (the others
        keep their first-stage repetitions); default every selected experiment. ``PATTERN=N``
        also caps the matching experiments' cells at N repetitions below ``max_repetitions``
        (:func:`stage_pattern`; Balia Table V's 160 s runs at 10 while Table III's grow to 48).
    cache_only : bool
        Take every kernel run from the cache and run none: if one is missing, raise before any
        run (assembling a report from the cache under the shared kernel lock).
    agreement : {"linux", "scenario"}
        ``backend = "both"``: the simulator runs the agreement table sets beside the kernel's
        (:data:`AGREEMENT_READINGS`). ``linux`` (default): the kernel's experiments run once more
        in the simulator as the test bed runs them (:func:`pathpool.kernel.mapping.as_testbed_runs`:
        upstream Linux's MPTCP scheduler, send buffers, restart after idle and recovery, the DSS
        option bytes), same seeds as the simulator's first stage; the
        table also keeps the report's own simulator columns as rows of reading ``scenario``.
        ``scenario``: only those (the scenario files as the papers' columns read them).
    """

    beds: int | None = None
    max_duration_s: float | None = None
    repetitions: int | None = None
    xs: Sequence[float] | None = None
    start_jitter: str = "off"
    send_jitter: str = "off"
    max_repetitions: int | Sequence[int] | None = None
    stage_only: Sequence[str] | None = None
    cache_only: bool = False
    agreement: str = "linux"

    def __post_init__(self) -> None:
        if self.agreement not in AGREEMENT_READINGS:
            raise ValueError(f"agreement = {self.agreement!r} is not allowed (allowed: "
                             f"{', '.join(AGREEMENT_READINGS)})")


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
    backend: str = "sim",
    only: Sequence[str] | None = None,
    ci_target: float = 0.0,
    max_seeds: int = 200,
    kernel: KernelOptions = KernelOptions(),
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
        ``progress(done, total)`` (simulator runs, then kernel runs).
    scenario_root : path, optional
        Where the papers' scenario folders are (default: the shipped ones).
    report : bool
        Write ``index.html`` and ``README.md`` beside ``results/`` (default True).
    backend : {"sim", "linux", "both"}
        Where the experiments run: the simulator (default), the real kernel on the namespace
        test bed (root; :mod:`pathpool.reproduce.kernel`), or both side by side.
    only : sequence of str, optional
        Shell patterns (``fnmatch``) on the experiment keys (``rsf/table2_s1``) or names
        (``table2_s*``): run just those experiments (e.g. a kernel run split into pieces).
    ci_target : float
        Simulator: after the ``seeds`` runs, an experiment whose widest 95% CI of a published
        quantity (:data:`pathpool.reproduce.compare.AGREEMENT_METRICS`) has a half-width above
        ``ci_target`` times its mean gets more seeds, as many as that width says it needs
        (:func:`seeds_needed`, Stein's two-stage rule), at most ``max_seeds`` in all; 0 (default)
        runs exactly ``seeds``. The kernel only with ``kernel.max_repetitions``.
    max_seeds : int
        Cap of the second stage (default 200).
    kernel : KernelOptions
        How the kernel backend runs (beds, run cap, repetitions, its later stages, cache only).

    Raises
    ------
    pathpool.errors.OutputError
        ``out`` cannot be used (a file, not writable, ``out/results`` holds other files than
        reproduce's, or another reproduce is writing it); checked before any run.
    ValueError
        ``workers`` below 1.
    pathpool.errors.ClusterError
        The Dask scheduler cannot be reached.
    pathpool.kernel.loader.KernelError
        ``backend`` includes linux but this is not root, or the kernel lacks MPTCP/BTF; or a
        kernel run failed (checked before any run for the first two).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend = {backend!r} (allowed: {', '.join(BACKENDS)})")
    use_sim, use_linux = backend in ("sim", "both"), backend in ("linux", "both")
    beds = kernel.beds
    if use_linux:
        from pathpool.reproduce import kernel as kb

        if not kernel.cache_only:
            kb.check_kernel()
        beds = kb.default_beds() if beds is None else beds
        if beds < 1:
            raise ValueError(f"beds = {beds}: must be at least 1")
    t0 = time.perf_counter()
    papers = list(PAPERS) if "all" in papers else list(dict.fromkeys(papers))
    seed_list = list(range(1, int(seeds) + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if workers is not None:
        check_jobs(workers, 1)
    kseed_list = seed_list[:kernel.repetitions] if kernel.repetitions else seed_list
    caps = () if kernel.max_repetitions is None else kernel_caps(
        (kernel.max_repetitions,) if isinstance(kernel.max_repetitions, int) else kernel.max_repetitions,
        len(kseed_list))
    stage_patterns = ([stage_pattern(p, len(kseed_list)) for p in kernel.stage_only]
                      if kernel.stage_only else None)
    # Patterns that match nothing are refused before the output folder is made.
    experiments = select(load_experiments(papers, scenario_root), only)
    staged = (_stage_ceilings(experiments, stage_patterns) if use_linux and ci_target > 0 and caps else {})
    kernel_max_s = kernel.max_duration_s
    out = ensure_directory(out)
    check_replaceable(out / "results", is_results_folder)
    # One reproduce per output folder at a time; the second is refused before simulating.
    with directory_lock(out / "results"):
        base_jobs = build_jobs(experiments, seed_list, options)
        jobs = base_jobs + trace_jobs(experiments, seed_list[0], options) if use_sim else []
        planned = None
        if use_linux:
            from pathpool.reproduce import kernel as kb

            kernel_max_s = kb.DEFAULT_MAX_DURATION_S if kernel_max_s is None else kernel_max_s
            kseeds = set(kseed_list)
            kx = None if kernel.xs is None else {float(x) for x in kernel.xs}
            planned = kb.plan_jobs([j for j in base_jobs if j.seed in kseeds and (
                kx is None or math.isnan(j.tags["x"]) or j.tags["x"] in kx)], options.ack_reading,
                                   kernel_max_s, kernel.start_jitter, kernel.send_jitter)
        # One progress count over both engines: simulator runs first, then the simulator's runs
        # beside the kernel's (agreement reading linux), then kernel runs.
        n_k = len(planned[0]) if planned else 0
        n_beside = 0
        k_progress = (lambda d, t: progress(len(jobs) + n_beside + d, len(jobs) + n_beside + t)) if progress else None
        tables, per_run, more_seeds = {}, None, {}
        if use_sim:
            tables, per_run, jobs, more_seeds = _simulate(
                experiments, jobs, seed_list, out, options, force=force, workers=workers, dask=dask,
                progress=progress, n_kernel=n_k, ci_target=ci_target, max_seeds=max_seeds)
        beside = None
        if use_sim and planned is not None and kernel.agreement == "linux":
            cells = [(kj.job.tags["experiment"], kj.job.tags["run_algorithm"], kj.job.tags["x"]) for kj in planned[0]]
            n_beside = len(unique_cells(cells)) * len(seed_list)
            beside = simulate_as_testbed(experiments, cells, seed_list, out, options,
                                         start_jitter=kernel.start_jitter, force=force,
                                         workers=workers, dask=dask,
                                         progress=(lambda d, t: progress(len(jobs) + d, len(jobs) + t + n_k))
                                         if progress else None)
        t_sim = time.perf_counter() - t0
        ks = None
        if planned is not None:
            stage = KernelStage(staged, kseed_list, ci_target, caps, kernel_max_s) if staged else None
            ks = _run_kernel(experiments, *planned, out, options, force=force, beds=beds, progress=k_progress,
                             start_jitter=kernel.start_jitter, send_jitter=kernel.send_jitter, stage=stage,
                             cache_only=kernel.cache_only)
        if use_sim:
            summary = summarise(per_run)
            comparison = cmp.compare(experiments, summary)
            claims = cmp.claims(summary, experiments)
        else:
            assert ks is not None
            tables, per_run, summary, comparison, claims = ks.tables, ks.per_run, ks.summary, ks.comparison, ks.claims
        if use_sim and ks is not None:
            comparison = cmp.with_kernel(comparison, ks.comparison)
            tables_beside, summary_beside = beside if beside is not None else ({}, None)
            ks.beside_tables, ks.agreement_reading = tables_beside, kernel.agreement
            ks.agreement = cmp.agreements([(kernel.agreement, summary_beside), ("scenario", summary)]
                                          if summary_beside is not None else [("scenario", summary)], ks.summary)
        timing = {"jobs": len(jobs) if use_sim else ks.jobs if ks else 0, "simulate_s": t_sim, "total_s": math.nan,
                  "kernel_jobs": ks.jobs if ks else 0, "kernel_s": ks.wall_s if ks else 0.0}
        outcome = Outcome(experiments, tables, per_run, summary, comparison, claims, seed_list, options, timing,
                          out, backend=backend, kernel=ks, more_seeds=more_seeds)
        _write_results(outcome, report, t0)
    return outcome


def _simulate(experiments: Sequence[Experiment], jobs: list[Job], seed_list: list[int], out: Path,
              options: Options, *, force: bool, workers: int | None, dask: str | None,
              progress: Callable[[int, int], Any] | None, n_kernel: int, ci_target: float,
              max_seeds: int) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, list[Job], dict[str, int]]:
    """The simulator's runs: ``jobs``, then (``ci_target > 0``) the second stage's extra seeds of
    the experiments still wide. Returns the tables, the per-run metrics, every job run and the
    seeds each grown experiment ended with."""
    sim_progress = (lambda d, t: progress(d, t + n_kernel)) if progress else None
    tables = run_sweep(jobs, cache_dir=out / "cache", force=force, workers=workers, dask=dask,
                       progress=sim_progress)
    per_run = metrics.compute(tables, experiments, options)
    if ci_target <= 0:
        return tables, per_run, jobs, {}
    more_seeds = {e.key: n for e, n in seeds_needed(per_run, experiments, len(seed_list), ci_target, max_seeds)}
    extra = {k: list(range(max(seed_list) + 1, max(seed_list) + 1 + n - len(seed_list)))
             for k, n in more_seeds.items()}
    more_exps = [e for e in experiments if e.key in extra]
    jobs2 = [j for e in more_exps for j in e.jobs(extra[e.key], options)]
    # In chunks, each chunk's metrics computed and its time series dropped before the next: the
    # extra seeds' series (Balia Table V: ~27 M rows at 162 seeds) are read for their metrics
    # but not kept, so memory stays that of the first stage.
    kept = []
    for c in range(0, len(jobs2), SECOND_STAGE_CHUNK):
        chunk = jobs2[c:c + SECOND_STAGE_CHUNK]
        done = len(jobs) + c
        t2 = run_sweep(chunk, cache_dir=out / "cache", force=force, workers=workers, dask=dask,
                       progress=(lambda d, t, done=done: progress(done + d, len(jobs) + len(jobs2) + n_kernel))
                       if progress else None)
        per_run = pd.concat([per_run, metrics.compute(t2, more_exps, options)], ignore_index=True)
        t2.pop("series", None)
        kept.append(t2)
    for t2 in kept:
        tables = _merge_tables(tables, t2)
    return tables, per_run, jobs + jobs2, more_seeds


def unique_cells(cells: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Cells (experiment key, algorithm, x) without repeats, in order. NaN (an unswept
    experiment's x) never equals NaN: one NaN object makes equal cells one key."""
    return list(dict.fromkeys((k, a, math.nan if math.isnan(x) else float(x)) for k, a, x in cells))


def simulate_as_testbed(experiments: Sequence[Experiment], cells: Sequence[tuple[str, str, float]],
                        seed_list: Sequence[int], out: Path, options: Options, *, start_jitter: str = "off",
                        force: bool = False,
                        workers: int | None = None, dask: str | None = None,
                        progress: Callable[[int, int], Any] | None = None
                        ) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The simulator beside the kernel (agreement reading ``linux``): each cell (experiment key,
    algorithm, x) at ``seed_list``, its scenario with :func:`pathpool.kernel.mapping.as_testbed_runs`
    applied, cached under ``out/cache``: the send jitter kept, the start jitter as the kernel's
    runs had it (``start_jitter``, :class:`KernelOptions`: ``"off"``, every flow at its
    written start; ``"scenario"``, at the simulator's draws). Returns their tables (without the
    series) and their summary."""
    from pathpool.kernel.mapping import as_testbed_runs
    from pathpool.sim.scenario import load_scenario

    cells = unique_cells(cells)
    by_key = {e.key: e for e in experiments}
    jobs: list[Job] = []
    for key, alg, x in cells:
        e = by_key[key]
        sc = e.scenario(alg, x, options)
        sc = load_scenario(sc, as_testbed_runs(sc, start_jitter=start_jitter != "off"))
        jobs.extend(Job(sc, int(s), e.tags(alg, x)) for s in seed_list)
    if not jobs:
        return {}, summarise(metrics.compute({}, [], options))
    tables = run_sweep(jobs, cache_dir=out / "cache", force=force, workers=workers, dask=dask, progress=progress)
    exps = [by_key[k] for k in dict.fromkeys(c[0] for c in cells)]
    per_run = metrics.compute(tables, exps, options)
    tables.pop("series", None)
    return tables, summarise(per_run)


def _write_results(outcome: Outcome, report: bool, t0: float) -> None:
    """``results/`` as one unit (the old complete set or the new one, whatever stops the run),
    the report beside it written while the new set is still being built."""
    ks, tables, res_dir = outcome.kernel, outcome.tables, outcome.out / "results"
    use_sim = outcome.backend in ("sim", "both")
    with atomic_directory(res_dir, is_results_folder) as res:
        write_table(outcome.per_run, res, "per_run")
        write_table(outcome.summary, res, "summary")
        write_table(outcome.comparison, res, "comparison")
        write_table(outcome.claims, res, "claims")
        for name in ("flows", "subflows", "links"):
            write_table(tables[name], res, name)
        if ks is not None and use_sim:
            for name, df in (("per_run", ks.per_run), ("summary", ks.summary),
                             ("comparison", ks.comparison), ("claims", ks.claims),
                             ("flows", ks.tables.get("flows", pd.DataFrame())),
                             ("subflows", ks.tables.get("subflows", pd.DataFrame()))):
                write_table(df, res, f"linux_{name}")
            write_table(ks.agreement, res, "agreement")
            # The simulator's runs beside the kernel's (agreement reading linux), for diagnostics.
            for name in ("flows", "subflows"):
                if name in ks.beside_tables:
                    write_table(ks.beside_tables[name], res, f"as_testbed_{name}")
        if ks is not None:
            write_table(ks.skipped, res, "linux_skipped")
        if len(tables.get("series", ())):
            # The long-form series are large: Parquet in full, CSV for the first seed only.
            first = outcome.seeds[0]
            write_table(tables["series"], res, "series", csv=False)
            s0 = tables["series"][tables["series"]["seed"] == first]
            write_table(s0, res, f"series_seed{first}", csv=True) if len(s0) else None
        if report:
            from pathpool.reproduce.report import write_report

            write_report(outcome)
        outcome.timing["total_s"] = time.perf_counter() - t0
        atomic_path(res / "timing.json", lambda p: Path(p).write_text(json.dumps(outcome.timing, indent=2)))
        from pathpool.manifest import write_manifest

        write_manifest(res, "reproduce results")


def _merge_tables(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Two sweeps' tables as one (rows of ``a`` first); empty frames are skipped so that the
    columns' dtypes are those of the runs."""
    out = {}
    for k in {*a, *b}:
        parts = [df for df in (a.get(k), b.get(k)) if df is not None and len(df)]
        out[k] = pd.concat(parts, ignore_index=True) if parts else a.get(k, b.get(k))
    return out


def _widest(per_run: pd.DataFrame, by: list[str], with_n: bool = False) -> Any:
    """Widest relative 95% CI half-width of a published quantity per group of ``by``: over the
    metrics of :data:`pathpool.reproduce.compare.AGREEMENT_METRICS` with a non-zero mean and
    n >= 2 (a zero mean has no relative width; bookkeeping such as ``incomplete`` is no result).
    With ``with_n``, also the n of each group's widest quantity (same index)."""
    summary = summarise(per_run)
    cells = summary[summary["metric"].isin(cmp.AGREEMENT_METRICS) & (summary["mean"] != 0) & (summary["n"] >= 2)]
    rel = (cells["hi"] - cells["lo"]) / 2 / cells["mean"].abs()
    keys = [cells[k] for k in by]
    if not with_n:
        return rel.groupby(keys, dropna=False).max()
    widest = rel.groupby(keys, dropna=False).idxmax()
    return (rel.groupby(keys, dropna=False).max(),
            pd.Series(cells.loc[widest.to_numpy(), "n"].to_numpy(), index=widest.index))


def kernel_caps(caps: Sequence[int], first: int) -> tuple[int, ...]:
    """The kernel stages' caps (``kernel_max_seeds``), checked: increasing, the first at least
    the first stage's ``first`` repetitions.

    Raises
    ------
    ValueError
        Otherwise, in one line naming the caps and the rule.

    Examples
    --------
    >>> kernel_caps([10, 48], 5)
    (10, 48)
    >>> kernel_caps([3, 10], 5)
    Traceback (most recent call last):
    ...
    ValueError: --kernel-max-seeds 3,10: increasing integers, the first at least --kernel-seeds (5)
    """
    caps = tuple(int(c) for c in caps)
    if not caps or caps[0] < max(first, 1) or any(b <= a for a, b in itertools.pairwise(caps)):
        raise ValueError(f"--kernel-max-seeds {','.join(map(str, caps))}: increasing integers, the first at "
                         f"least --kernel-seeds ({first})")
    return caps


def stage_pattern(text: str, first: int = 1) -> tuple[str, int | None]:
    """One ``--kernel-stage-only`` entry: ``PATTERN`` or ``PATTERN=N`` (the matching experiments'
    cells stop at N repetitions, N at least the first stage's ``first``).

    Raises
    ------
    ValueError
        N is not an integer of at least ``first`` (one line, naming the entry).

    Examples
    --------
    >>> stage_pattern("table5=10")
    ('table5', 10)
    >>> stage_pattern("table2_s*")
    ('table2_s*', None)
    """
    pattern, eq, n = text.rpartition("=")
    if not eq:
        return text, None
    try:
        cap = int(n)
    except ValueError:
        cap = 0
    if not pattern or cap < max(first, 1):
        raise ValueError(f"--kernel-stage-only {text!r}: PATTERN or PATTERN=N with N an integer of at least "
                         f"--kernel-seeds ({first})")
    return pattern, cap


def _stage_ceilings(experiments: Sequence[Experiment],
                    patterns: Sequence[tuple[str, int | None]] | None) -> dict[str, float]:
    """Experiment key -> the most repetitions its kernel stage may give a cell (inf: the caps
    alone; the smallest N of the patterns naming it)."""
    if patterns is None:
        return {e.key: math.inf for e in experiments}
    out: dict[str, float] = {}
    for pattern, cap in patterns:
        for e in select(experiments, [pattern], "--kernel-stage-only"):
            out[e.key] = min(out.get(e.key, math.inf), math.inf if cap is None else cap)
    return out


def stein_count(n0: int, h: float, target: float, cap: int) -> int:
    """Stein's two-stage count: ``ceil(n0 * (h / target)**2)`` at most ``cap``, never below n0."""
    if math.isnan(h) or h <= target:
        return n0
    return max(n0, min(cap, math.ceil(n0 * (h / target) ** 2)))


def seeds_needed(per_run: pd.DataFrame, experiments: Sequence[Experiment],
                 n0: int, target: float, cap: int) -> list[tuple[Experiment, int]]:
    """The experiments whose published quantities need more than ``n0`` seeds for a 95% CI
    half-width of at most ``target`` times the mean, with the seed count each needs.

    Stein's two-stage rule: the half-width shrinks as 1/sqrt(n), so an experiment whose widest
    relative half-width over ``n0`` seeds is h needs ``ceil(n0 * (h / target)**2)`` seeds
    (the t quantile's change from n0 to n is ignored, which errs towards more seeds), capped at
    ``cap``. Cells with a zero mean have no relative width and are left out; only the metrics in
    :data:`pathpool.reproduce.compare.AGREEMENT_METRICS` count (not bookkeeping such as
    ``incomplete``).

    Examples
    --------
    An experiment whose widest cell has a half-width of 10% of its mean over 30 seeds needs
    30 * (0.10 / 0.05)**2 = 120 seeds for 5%.
    """
    rel = _widest(per_run, ["experiment"])
    out = []
    for e in experiments:
        n = stein_count(n0, rel.get(e.key, math.nan), target, cap)
        if n > n0:
            out.append((e, n))
    return out


def kernel_repetitions_needed(per_run: pd.DataFrame, n0: int | None, target: float,
                              cap: int) -> dict[tuple[str, str, float], int]:
    """The kernel cells that need more repetitions than they have, with the count each needs.

    A kernel run is one algorithm's, so the cell is (experiment, algorithm, x) rather than the
    simulator's experiment (:func:`seeds_needed`): a cell whose widest published quantity has a
    95% CI half-width h above ``target`` times its mean over its n repetitions needs
    ``ceil(n * (h / target)**2)`` (Stein's rule, as the simulator's stage), at most ``cap``.
    n is ``n0`` for every cell (the first stage), or with ``n0 = None`` each cell's own count
    in ``per_run`` (its widest quantity's n: a later stage, after cells grew differently).

    Examples
    --------
    Three runs of 9, 10 and 11 Mbit/s: mean 10, half-width t(0.975, 2) * 1 / sqrt(3) = 2.484
    (24.8%); for 5%, ceil(3 * (0.2484 / 0.05)**2) = 75 repetitions, or the cap.
    """
    rel, count = _widest(per_run, ["experiment", "algorithm", "x"], with_n=True)
    out = {}
    # same groups in the same order (NaN x would not look up by key)
    for ((exp, alg, x), h), c in zip(rel.items(), count.to_numpy(), strict=True):
        have = int(c) if n0 is None else n0
        n = stein_count(have, h, target, cap)
        if n > have:
            out[(str(exp), str(alg), float(x))] = n
    return out


def cell_name(cell: tuple[str, str, float]) -> str:
    """``experiment algorithm`` (and ``x=X`` for a swept experiment's point)."""
    exp, alg, x = cell
    return f"{exp} {alg}" + ("" if math.isnan(x) else f" x={x:g}")


def select(experiments: Sequence[Experiment], only: Sequence[str] | None,
           option: str = "--only") -> list[Experiment]:
    """The experiments whose key or name matches one of the ``only`` patterns (all if None).

    Raises
    ------
    ValueError
        A pattern matches no experiment (named, with the keys there are).
    """
    if not only:
        return list(experiments)
    from fnmatch import fnmatchcase

    for pat in only:
        if not any(fnmatchcase(e.key, pat) or fnmatchcase(e.name, pat) for e in experiments):
            raise ValueError(f"{option} {pat!r} matches no experiment (allowed: {', '.join(e.key for e in experiments)})")
    return [e for e in experiments if any(fnmatchcase(e.key, p) or fnmatchcase(e.name, p) for p in only)]


#: How often the kernel's last stage repeats at most while a cell still asks for more.
MAX_REPEATS = 8


@dataclasses.dataclass(frozen=True)
class KernelStage:
    """The kernel's later stages (:func:`reproduce`'s ``kernel_max_seeds``)."""

    experiments: dict[str, float]  # experiment keys they may grow -> most repetitions of a cell
    first: list[int]            # the first stage's seeds
    target: float               # ci_target
    caps: tuple[int, ...]       # kernel_max_seeds: one cap per stage after the first
    max_s: float                # kernel_max_s


def _stage_jobs(experiments: Sequence[Experiment], stage: KernelStage, per_run: pd.DataFrame,
                options: Options, cap: int, later: bool) -> tuple[list[Job], dict[str, int]]:
    """The extra kernel jobs one stage asks for, and the cells it grows (name -> repetitions).

    The second stage counts every cell at the first stage's n0; a later one (``later``) each
    cell at the repetitions it has by then. The extra seeds continue the cell's numbering (4,
    5, ... after 1..3), so runs made earlier with a larger ``--kernel-seeds`` are found in the
    cache."""
    rows = per_run[per_run["experiment"].isin(list(stage.experiments))]
    need: dict[tuple[str, str, float], int] = {}
    for exp, sub in rows.groupby("experiment"):
        need |= kernel_repetitions_needed(sub, None if later else len(stage.first), stage.target,
                                          int(min(cap, stage.experiments[str(exp)])))
    by_key = {e.key: e for e in experiments}
    jobs: list[Job] = []
    for (exp, alg, x), n in need.items():
        seeds_so_far = rows.loc[_cell_rows(rows, exp, alg, x), "seed"]
        have = seeds_so_far.nunique() if later else len(stage.first)
        seeds = list(range(int(seeds_so_far.max()) + 1, int(seeds_so_far.max()) + 1 + n - have))
        jobs += [j for j in by_key[exp].jobs(seeds, options) if j.tags["run_algorithm"] == alg
                 and (j.tags["x"] == x or (math.isnan(j.tags["x"]) and math.isnan(x)))]
    return jobs, {cell_name(c): n for c, n in need.items()}


def _cell_rows(rows: pd.DataFrame, exp: str, alg: str, x: float) -> pd.Series:
    """Which rows of a per-run table are the cell's (NaN x matches NaN)."""
    same_x = rows["x"].isna() if math.isnan(x) else (rows["x"] - x).abs() < 1e-9
    return (rows["experiment"] == exp) & (rows["algorithm"] == alg) & same_x


def _run_kernel(experiments: Sequence[Experiment], kjobs: Sequence[Any], skipped: Sequence[Any], out: Path,
                options: Options, *, force: bool, beds: int, progress: Callable[[int, int], Any] | None,
                start_jitter: str = "off", send_jitter: str = "off", stage: KernelStage | None = None,
                cache_only: bool = False) -> KernelSide:
    """Run (or read from the cache) and summarise the planned kernel jobs, then the second
    stage's (``stage``) if any."""
    from pathpool.reproduce import kernel as kb

    t0 = time.perf_counter()
    ktables = kb.run_kernel_jobs(kjobs, kb.cache_root(out), force=force, beds=beds, progress=progress,
                                 cache_only=cache_only)
    ran = {kj.job.tags["experiment"] for kj in kjobs}
    kexps = [e for e in experiments if e.key in ran]
    per_run = metrics.compute(ktables, kexps, options) if kexps else metrics.compute({}, [], options)
    more: dict[str, int] = {}
    n_jobs = len(kjobs)
    # One stage per cap; with several, the last one repeated while a cell still asks for more
    # (at most MAX_REPEATS times): Stein's count from 10 or 16 runs is an estimate, and a cell
    # it grew can still be wide (RSF s1 LIA: 16 asked from 10, 6.4% at 16). One cap alone is
    # the second stage as it always was.
    caps = [] if stage is None or not len(per_run) else (
        [*stage.caps, *[stage.caps[-1]] * MAX_REPEATS] if len(stage.caps) > 1 else list(stage.caps))
    for k, cap in enumerate(caps):
        assert stage is not None
        jobs2, grown = _stage_jobs(kexps, stage, per_run, options, cap, later=k > 0)
        more.update(grown)
        kjobs2, _ = kb.plan_jobs(jobs2, options.ack_reading, stage.max_s, start_jitter, send_jitter)
        if not kjobs2:
            break
        n1 = n_jobs
        t2 = kb.run_kernel_jobs(kjobs2, kb.cache_root(out), force=force, beds=beds, cache_only=cache_only,
                                progress=(lambda d, t, n1=n1: progress(n1 + d, n1 + t)) if progress else None)
        per_run = pd.concat([per_run, metrics.compute(t2, kexps, options)], ignore_index=True)
        ktables = _merge_tables(ktables, t2)
        n_jobs += len(kjobs2)
    summary = summarise(per_run)
    skipped_df = pd.DataFrame([dataclasses.asdict(s) for s in skipped], columns=["experiment", "algorithm", "reason"])
    return KernelSide(tables=ktables, per_run=per_run, summary=summary, comparison=cmp.compare(kexps, summary),
                      claims=cmp.claims(summary, kexps), skipped=skipped_df, agreement=pd.DataFrame(),
                      wall_s=time.perf_counter() - t0, jobs=n_jobs, start_jitter=start_jitter, send_jitter=send_jitter,
                      first_seeds=len({kj.job.seed for kj in kjobs}), more_seeds=more)
