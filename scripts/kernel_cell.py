#!/usr/bin/env python3
"""Kernel cells of ``pathpool reproduce`` to many repetitions: where their 95% CIs sit against
the tolerance (the rule: "a verdict never depends on a CI made wide by few seeds").

The report's kernel second stage (``--ci-target F --kernel-max-seeds N``) grows every wide cell of
the staged experiments up to one cap; a single cell whose CI still contains a tolerance boundary
at that cap (Balia Table III's OLIA MP-TCP row: 10 repetitions, 2.07 [1.91, 2.24] Mbit/s
against the boundary 0.85 x 2.61 = 2.22) would need the cap raised for all of them, hours of
real time. This script runs just that cell, the report's own plans (the simulator jobs
``pathpool reproduce`` builds, planned for the test bed by the same
:func:`pathpool.reproduce.kernel.plan_jobs`, so the same cache keys), and places each published
quantity of it with the report's verdict code:

    flock /run/pathpool-kernel.lock python scripts/kernel_cell.py run balia/table3 olia \\
        --seeds 1-30 --beds 3 -o OUT
    python scripts/kernel_cell.py table balia/table3 olia --seeds 1-30 -o OUT --csv PER_RUN.csv
    python scripts/kernel_cell.py table balia/table3 olia --seeds 1-30 --per-run PER_RUN.csv

``table`` reads the runs from ``OUT``'s kernel cache only (it refuses if one is missing), or
their metrics from a per-run CSV that an earlier ``table --csv`` wrote (the cache stays on the
machine that ran them; report/kernel/results/cells/ keeps the CSVs of the cells run so far), and
prints, per published quantity: paper value, mean [95% CI], n, half-width / mean, the tolerance
boundaries, where the CI lies (``inside``, ``below``, ``above`` the band, or ``across`` a
boundary), Stein's count for a half-width of 5%, and the verdict the report's code
(:func:`pathpool.reproduce.compare.compare`) gives. A verdict outside the band needs the
ordering of the whole row, which a few algorithms cannot give: the row's other algorithms are a
report's summaries (``--others``, default the committed report/kernel's ``linux_summary.csv``)
with the cells run here replaced by the new runs (several algorithms, ``lia,olia``, when the
row's open pair is theirs).
Readings are the report's: ``--recovery-reading linux``, the quickack ACK reading and the
other defaults of :class:`pathpool.reproduce.experiments.Options`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OTHERS = REPO / "report" / "kernel" / "results" / "linux_summary.csv"


def seed_range(text: str) -> list[int]:
    """``"1-30"`` -> 1..30; ``"4,7,9"`` -> those; each at least 1.

    >>> seed_range("2-4"), seed_range("5,1")
    ([2, 3, 4], [5, 1])
    """
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 1 or b < a:
            raise argparse.ArgumentTypeError(f"--seeds {text!r}: ranges A-B with 1 <= A <= B, or a list")
        out += range(a, b + 1)
    return out


def options():
    from pathpool.reproduce.experiments import Options

    return Options(recovery_reading="linux")


def experiment(key: str):
    """The shipped experiment ``key`` (``paper/name``)."""
    from pathpool.reproduce.experiments import load_experiments

    paper = key.split("/", 1)[0]
    found = [e for e in load_experiments([paper]) if e.key == key] if "/" in key else []
    if not found:
        raise SystemExit(f"kernel_cell.py: experiment {key!r} not found (use paper/name, e.g. balia/table3)")
    return found[0]


def cell_jobs(exp, algorithms: list[str], seeds: list[int], opts=None):
    """The kernel jobs of the cells of ``algorithms``: the experiment's simulator jobs for them
    and ``seeds``, planned for the test bed exactly as ``pathpool reproduce`` plans them."""
    from pathpool.reproduce.experiments import build_jobs
    from pathpool.reproduce.kernel import DEFAULT_MAX_DURATION_S, plan_jobs

    opts = opts or options()
    for a in algorithms:
        if a not in exp.algorithms:
            raise SystemExit(f"kernel_cell.py: {exp.key} has no algorithm {a!r} "
                             f"(allowed: {', '.join(exp.algorithms)})")
    jobs = [j for j in build_jobs([exp], seeds, opts) if j.tags["run_algorithm"] in algorithms]
    runnable, skipped = plan_jobs(jobs, opts.ack_reading, DEFAULT_MAX_DURATION_S)
    if skipped:
        raise SystemExit(f"kernel_cell.py: not expressible on the test bed: {skipped}")
    return runnable


def position(paper: float, lo: float, hi: float, rel: float) -> str:
    """Where the CI [lo, hi] lies against the band paper x (1 -+ rel).

    >>> position(2.61, 1.91, 2.24, 0.15), position(2.61, 2.3, 2.9, 0.15), position(2.61, 1.5, 2.0, 0.15)
    ('across', 'inside', 'below')
    """
    low, high = paper * (1 - rel), paper * (1 + rel)
    if hi < low:
        return "below"
    if lo > high:
        return "above"
    if low <= lo and hi <= high:
        return "inside"
    return "across"


def placed(exp, algorithms: list[str], cell: pd.DataFrame, others: pd.DataFrame) -> pd.DataFrame:
    """One row per published quantity of ``algorithms``: each cell's mean and CI against the paper.

    ``cell`` is :func:`pathpool.reproduce.verdict.summarise` of the cell's runs; ``others`` a
    report's summary (its ``linux_summary.csv``) for the row's other algorithms, whose intervals
    the ordering needs: the verdict is :func:`pathpool.reproduce.compare.compare`'s on ``others``
    with this cell's rows replaced by ``cell``'s.
    """
    from pathpool.reproduce.compare import compare
    from pathpool.reproduce.runner import stein_count
    from pathpool.reproduce.verdict import TOLERANCE

    rel = TOLERANCE["rel"]
    mine = (others["experiment"] == exp.key) & others["algorithm"].isin(algorithms)
    rows = compare([exp], pd.concat([others[~mine], cell], ignore_index=True))
    rows = rows[rows["algorithm"].isin(algorithms) & rows["paper"].notna()].copy()
    rows["halfwidth"] = (rows["hi"] - rows["lo"]) / 2 / rows["mean"].abs()
    rows["band_lo"], rows["band_hi"] = rows["paper"] * (1 - rel), rows["paper"] * (1 + rel)
    rows["position"] = [position(p, lo, hi, rel) for p, lo, hi in zip(rows["paper"], rows["lo"], rows["hi"],
                                                                         strict=True)]
    rows["stein_5pct"] = [stein_count(int(n), h, TOLERANCE["max_halfwidth"], 10**6)
                          for n, h in zip(rows["n"], rows["halfwidth"], strict=True)]
    return rows[["algorithm", "metric", "paper", "mean", "lo", "hi", "n", "halfwidth", "band_lo", "band_hi", "position",
                 "stein_5pct", "ordering_agrees", "verdict"]].reset_index(drop=True)


def run(args: argparse.Namespace) -> None:
    from pathpool.reproduce.kernel import cache_root, run_kernel_jobs

    kjobs = cell_jobs(experiment(args.experiment), args.algorithms, args.seeds)
    run_kernel_jobs(kjobs, cache_root(Path(args.out)), beds=args.beds,
                    progress=lambda d, n: print(f"runs {d}/{n}", file=sys.stderr, flush=True))


def table(args: argparse.Namespace) -> None:
    from pathpool.kernel.loader import KernelError
    from pathpool.reproduce import metrics
    from pathpool.reproduce.kernel import cache_root, run_kernel_jobs
    from pathpool.reproduce.verdict import summarise

    exp = experiment(args.experiment)
    others = pd.read_csv(args.others) if Path(args.others).exists() else summarise(pd.DataFrame(
        columns=["experiment", "algorithm", "x", "metric", "value"]))
    if args.per_run:
        # The runs' metrics as kept (the cache is per machine): the seeds asked for, each present.
        per_run = pd.read_csv(args.per_run)
        per_run = per_run[(per_run["experiment"] == exp.key) & per_run["algorithm"].isin(args.algorithms)
                          & per_run["seed"].isin(args.seeds)]
        for a in args.algorithms:
            missing = sorted(set(args.seeds) - set(per_run.loc[per_run["algorithm"] == a, "seed"]))
            if missing:
                raise SystemExit(f"kernel_cell.py table: {args.per_run}: no {a} run of seed(s) {missing}")
    else:
        try:
            tables = run_kernel_jobs(cell_jobs(exp, args.algorithms, args.seeds), cache_root(Path(args.out)),
                                     cache_only=True)
        except KernelError as e:
            raise SystemExit(f"kernel_cell.py table: {e}") from None
        per_run = metrics.compute(tables, [exp], options())
    summary = summarise(per_run)
    out = placed(exp, args.algorithms, summary, others)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(out.round(4).to_string(index=False))
    if args.csv:
        per_run.to_csv(args.csv, index=False)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "table"])
    p.add_argument("experiment", help="paper/name, e.g. balia/table3")
    p.add_argument("algorithms", type=lambda t: t.split(","),
                   help="the experiment's algorithms to run, comma-separated, e.g. olia or lia,olia")
    p.add_argument("--seeds", type=seed_range, default=seed_range("1-30"), help="e.g. 1-30 (default) or 4,7")
    p.add_argument("--beds", type=int, default=3, help="run: test beds side by side (default 3)")
    p.add_argument("-o", "--out", default=None, help="folder whose cache-linux/ holds the runs (run; table "
                   "without --per-run)")
    p.add_argument("--per-run", default=None, help="table: the runs' metrics from a per-run CSV (as --csv "
                   "writes) instead of the cache")
    p.add_argument("--others", default=str(DEFAULT_OTHERS),
                   help="table: a report's linux_summary.csv, the row's other algorithms for the ordering "
                   "(default the committed report/kernel's)")
    p.add_argument("--csv", default=None, help="table: also write the cell's per-run metrics here")
    args = p.parse_args()
    if args.out is None and (args.command == "run" or not args.per_run):
        p.error("-o/--out is needed (table: or --per-run)")
    from pathpool.errors import run_command

    # Through run_command, SIGTERM unwinds the test beds (namespaces, senders, the loader) as
    # Ctrl-C does; killed by the default handler, they outlived the script.
    return run_command(lambda: {"run": run, "table": table}[args.command](args), name="kernel_cell.py")


if __name__ == "__main__":
    sys.exit(main())
