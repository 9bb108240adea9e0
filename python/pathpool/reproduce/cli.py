"""``pathpool reproduce rsf|balia|khalili|all``: the seeds' experiments beside the published numbers."""

from __future__ import annotations

import argparse
import time

from pathpool.procpool import jobs_arg

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="run the seed papers' experiments and write a report beside the published numbers",
        description=(
            "Run the published experiments of the seed papers in the simulator (scenarios/rsf2020, "
            "scenarios/balia2016, scenarios/khalili) and write OUT/index.html, OUT/README.md, OUT/results/ "
            "and OUT/figures/. Runs are cached under OUT/cache/ and reused unless --force."
        ),
    )
    p.add_argument("paper", nargs="?", default="all", choices=["rsf", "balia", "khalili", "all"],
                   help="which paper's experiments (default: all)")
    p.add_argument("--seeds", type=int, default=10, help="seeds per configuration, 1..N (default 10)")
    p.add_argument("--out", default="report", help="output folder (default report/)")
    p.add_argument("--jobs", type=jobs_arg, default=None,
                   help="local worker processes, at least 1 (default: one per core)")
    p.add_argument("--dask", default=None, metavar="ADDRESS|local",
                   help="run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local' to start one")
    p.add_argument("--force", action="store_true", help="recompute runs already in the cache")
    p.add_argument("--delay-reading", choices=["rtt", "one-way"], default="rtt",
                   help="RSF: NetEm delay on the data direction only (RTT = delay, default) or both ways (RTT = 2 x delay)")
    p.add_argument("--buffer-reading", choices=["netem", "bdp"], default="netem",
                   help="RSF: NetEm's default 1000-packet queue (default) or one bandwidth-delay product")
    p.add_argument("--balia-reading", choices=["two-link", "single-bottleneck"], default="two-link",
                   help="Balia Tables III/V: two 2 Mbps links (default) or one 4 Mbps bottleneck for every path")
    p.add_argument("--khalili-reading", choices=["capped", "uncapped"], default="capped",
                   help="Khalili: type-1 users behind a shared 10 Mbps access (default) or not")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Table

    from pathpool.reproduce.experiments import Options
    from pathpool.reproduce.runner import reproduce

    console = Console(stderr=True)
    if args.seeds < 1:
        console.print("[red]--seeds must be >= 1[/red]")
        return 2
    try:
        options = Options(delay_reading=args.delay_reading, buffer_reading=args.buffer_reading,
                          balia_reading=args.balia_reading, khalili_reading=args.khalili_reading)
    except ValueError as e:
        console.print(f"[red]{e}[/red]")
        return 2
    t0 = time.perf_counter()
    # Not on a pipe or file: there a transient bar only leaves a stray blank line.
    with Progress(TextColumn("[bold]reproduce {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(args.paper, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        outcome = reproduce([args.paper], seeds=args.seeds, out=args.out, workers=args.jobs, dask=args.dask,
                            force=args.force, options=options, progress=progress)
    wall = time.perf_counter() - t0
    out = Console()
    counts = outcome.comparison[outcome.comparison["paper"].notna()]["verdict"].value_counts() if len(outcome.comparison) else {}
    t = Table(title=f"pathpool reproduce {args.paper}: {outcome.timing['jobs']} runs, {wall:.0f} s")
    t.add_column("verdict")
    t.add_column("published numbers", justify="right")
    t.add_column("claims", justify="right")
    claims = outcome.claims["verdict"].value_counts() if len(outcome.claims) else {}
    for v in ("reproduced", "same ordering only", "not reproduced"):
        t.add_row(v, str(int(counts.get(v, 0))), str(int(claims.get(v, 0))))
    out.print(t)
    out.print(f"report: {outcome.out / 'index.html'}  and  {outcome.out / 'README.md'}")
    return 0


