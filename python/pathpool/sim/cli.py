"""CLI commands of the simulator: ``run``, ``algorithms``, ``validate``, ``bench``.

Exit codes: 0 success, 1 the simulator failed, 2 bad input (scenario, seeds, arguments). A bad
scenario prints exactly one line ``FILE:LINE:COL: FIELD: MESSAGE (allowed: ...)`` on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from pathpool.cliutil import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    add_out,
    fail,
    jobs_arg,
    positive_float,
    positive_int,
    print_table,
    progress,
    scenario_arg,
    seeds_arg,
)
from pathpool.errors import OutputError, ScenarioError, SimulationError

__all__ = ["load_with_overrides", "register", "seeds_arg"]

EXIT_SIM_FAILED = EXIT_FAILED

BENCH_SCENARIO = "bench/bench"


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _mbps(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / 1e6:.3f}"


def _summary_table(summary: dict[str, Any], files: set[str]):
    """The per-flow table; ``files`` names the flows that transfer a file (the others are bulk
    and never complete, so a "done 0/2" beside them would read as a failure)."""
    from rich.table import Table

    n_seeds = len(summary["seeds"])
    table = Table(title=f"{summary['scenario']}: goodput over {n_seeds} seed{'s' if n_seeds != 1 else ''} (Mbit/s)")
    table.add_column("flow")
    table.add_column("kind")
    table.add_column("algorithm")
    table.add_column("sf", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("sd", justify="right")
    if files:
        table.add_column("done", justify="right")
        table.add_column("FCT s", justify="right")
    for f in summary["flows"]:
        ct = f["completion_time_s_mean"]
        row = [f["flow"], f["kind"], f["algorithm"], str(f["n_subflows"]), _mbps(f["goodput_bps_mean"]),
               _mbps(f["goodput_bps_std"])]
        if files:
            row += ([f"{f['completed']}/{f['seeds']}", "-" if ct is None else f"{ct:.3f}"] if f["flow"] in files
                    else ["-", "-"])
        table.add_row(*row)
    return table


# -- run ---------------------------------------------------------------------------------------


def load_with_overrides(path: str, overrides: list[str] | None, allow_large: bool = False):
    """Load and validate a scenario with ``--set FIELD=VALUE`` overrides applied before validation.

    The overrides go to :func:`pathpool.load_scenario` unchanged: Rust applies the dotted paths and
    validates once, so an override is checked exactly as the file's own value would be.
    ``allow_large`` (``--allow-large``) skips the run-cost limits (SCENARIOS.md, "Limits").
    """
    from pathpool.sim.scenario import load_scenario

    return load_scenario(path, overrides=list(overrides or ()), allow_large=allow_large)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.backend == "linux":
        from pathpool.kernel.cli import run_linux_command

        unsupported = [opt for opt, used in (("--set", args.set), ("--json", args.json)) if used]
        if unsupported:
            return fail(f"pathpool run --backend linux: {', '.join(unsupported)} not supported (allowed with "
                        "--backend sim)")
        return run_linux_command(args)
    from pathpool.atomic import check_replaceable, directory_lock
    from pathpool.sim.results import is_result_set
    from pathpool.sim.runner import run

    try:
        scenario = load_with_overrides(args.scenario, args.set, args.allow_large)
        out = Path(args.output) if args.output else Path("results") / scenario.name
        # The output place is checked, and locked against a second writer, before the run rather
        # than after minutes of simulation.
        check_replaceable(out, is_result_set)
        with directory_lock(out):
            # A bar on a terminal; off one, plain periodic lines as `sweep` and `reproduce` print
            # (fed by seed completions in the parent when there are workers: see runner._run_pool).
            show = not (args.no_progress or args.json)
            plain = show and not sys.stderr.isatty()
            with progress(f"run {scenario.name}: seeds", enabled=plain) as tick:
                n = len(scenario.seeds if args.seeds is None else args.seeds)
                how = (lambda f: tick(round(f * n, 2), n)) if plain else show
                results = run(scenario, seeds=args.seeds, progress=how, jobs=args.jobs)
            try:
                files = results.write(out)
            except OSError as e:
                return fail(f"{out}: cannot write results: {e}", EXIT_SIM_FAILED)
    except (ScenarioError, OutputError) as e:
        return fail(str(e), EXIT_BAD_INPUT)
    except SimulationError as e:
        return fail(f"{args.scenario}: simulation failed: {e}", EXIT_SIM_FAILED)
    if args.json:
        sys.stdout.write(json.dumps({"out": str(out), "files": [str(f) for f in files], **results.summary},
                                    indent=2, default=str) + "\n")
    elif not args.quiet:
        summary = results.summary
        console = _console()
        transfers = {f["name"] for f in scenario.spec["flows"] if f["app"] == "file"}
        print_table(_summary_table(summary, transfers), console)
        jain = ", ".join(
            f"{s['seed']}: {'-' if s['jain_index'] is None else format(s['jain_index'], '.4f')}"
            for s in summary["per_seed"]
        )
        console.print(f"Jain index of flow goodputs per seed: {jain}", soft_wrap=True)
        t = summary["totals"]
        console.print(
            f"{t['data_packets']} data packets, {t['events']} events simulated in {results.wall_s:.2f} s wall; "
            f"wrote {len(files)} files to {out}",
            soft_wrap=True,
        )
    return 0


# -- algorithms --------------------------------------------------------------------------------


def _cmd_algorithms(args: argparse.Namespace) -> int:
    from rich.table import Table

    from pathpool.sim.catalog import algorithms

    algos = algorithms()
    if args.json:
        sys.stdout.write(json.dumps(algos, indent=2) + "\n")
        return 0
    table = Table(title="pathpool algorithms", show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("coupled")
    table.add_column("parameters (default; allowed)")
    table.add_column("source")
    for a in algos:
        params = "\n".join(f"{p['name']} = {p['default']}; {p['allowed']}" for p in a["params"]) or "-"
        table.add_row(a["name"], "yes" if a["coupled"] else "no", params, a["source"])
    _console().print(table)
    if args.verbose:
        console = _console()
        for a in algos:
            console.print(f"\n[bold]{a['name']}[/bold]: {a['summary']}", markup=True)
            console.print(a["formula"], markup=False)
            for p in a["params"]:
                console.print(f"  {p['name']}: {p['doc']}", markup=False)
    return 0


# -- validate ----------------------------------------------------------------------------------


def _cmd_validate(args: argparse.Namespace) -> int:
    from pathpool.sim.scenario import load_scenario

    code = 0
    for path in args.scenarios:
        try:
            sc = load_scenario(path, allow_large=args.allow_large)
        except ScenarioError as e:
            fail(str(e), EXIT_BAD_INPUT)
            code = EXIT_BAD_INPUT
            continue
        seeds = ",".join(str(s) for s in sc.seeds)
        sys.stdout.write(f"ok {path}: {sc.name}, {sc.duration_s:g} s, seeds {seeds}\n")
    return code


# -- bench -------------------------------------------------------------------------------------


def _cmd_bench(args: argparse.Namespace) -> int:
    import statistics

    from rich.table import Table

    from pathpool import _core
    from pathpool.sim.scenario import load_scenario

    path = args.scenario or scenario_arg(BENCH_SCENARIO)
    try:
        sc = load_scenario(path)
    except ScenarioError as e:
        return fail(str(e), EXIT_BAD_INPUT)
    seed = args.seed if args.seed is not None else sc.seeds[0]
    rows = []
    for r in range(args.repeat):
        t0 = time.perf_counter()
        # The simulation runs on this thread (the GIL released), so the thread's CPU time is the
        # simulation's plus the conversion of its tables: a figure other jobs on the machine
        # disturb far less than wall time.
        c0 = time.thread_time()
        try:
            raw = _core.run_scenario(sc.text, sc.origin, seed)
        except SimulationError as e:
            return fail(f"{path}: simulation failed: {e}", EXIT_SIM_FAILED)
        cpu = max(time.thread_time() - c0, 1e-9)
        outer = time.perf_counter() - t0
        st = raw["stats"]
        # RunStats.wall_s times the simulation alone (no conversion to Python objects).
        wall = st["wall_s"] if st["wall_s"] > 0 else outer
        rows.append(
            {
                "repeat": r + 1,
                "seed": seed,
                "simulated_s": st["simulated_s"],
                "wall_s": wall,
                "wall_with_export_s": outer,
                "cpu_s": cpu,
                "data_packets": st["data_packets"],
                "events": st["events"],
                "data_packets_per_cpu_s": st["data_packets"] / cpu,
                "data_packets_per_s": st["data_packets"] / wall,
                "events_per_s": st["events"] / wall,
            }
        )
    best = max(rows, key=lambda x: x["data_packets_per_s"])
    median_pps = statistics.median(x["data_packets_per_s"] for x in rows)
    median_cpu = statistics.median(x["data_packets_per_cpu_s"] for x in rows)
    if args.json:
        doc = {
            "scenario": sc.name,
            "origin": sc.origin,
            "runs": rows,
            "best_data_packets_per_s": best["data_packets_per_s"],
            "median_data_packets_per_s": median_pps,
            "median_data_packets_per_cpu_s": median_cpu,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 0
    table = Table(title=f"bench: {sc.name} ({sc.origin}), seed {seed}, one core")
    for col in ("run", "simulated s", "wall s", "CPU s", "data packets", "data packets/CPU s", "events/s"):
        table.add_column(col, justify="right")
    for x in rows:
        table.add_row(
            str(x["repeat"]),
            f"{x['simulated_s']:g}",
            f"{x['wall_s']:.3f}",
            f"{x['cpu_s']:.3f}",
            f"{x['data_packets']:,}",
            f"{x['data_packets_per_cpu_s']:,.0f}",
            f"{x['events_per_s']:,.0f}",
        )
    console = _console()
    print_table(table, console)
    console.print(
        f"simulated data packets per CPU-second: median {median_cpu:,.0f}; per wall-clock second: "
        f"median {median_pps:,.0f} (over {len(rows)} run{'s' if len(rows) != 1 else ''}). Compare with "
        "another simulator only side by side on one machine (bench/htsim.sh)."
    )
    return 0


# -- registration ------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``run``, ``validate``, ``algorithms`` and ``bench`` to the ``pathpool`` command."""
    p = subparsers.add_parser(
        "run",
        description="Run SCENARIO for each seed and write flows/subflows/links/series (Parquet and CSV), "
        "scenario.toml, summary.json and timing.json to DIR, each file atomically.",
    )
    p.add_argument("scenario", metavar="SCENARIO", type=scenario_arg,
                   help="scenario TOML file, or a shipped one by name (`pathpool scenarios list`)")
    add_out(p, None, "results directory (default: results/<scenario name>)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one scenario field before validation, as a dotted path with TOML value "
                   "or unit string, e.g. links.bottleneck_a.rate=20Mbps; '~FIELD' removes a field (it takes "
                   "its default) or an array element, e.g. --set '~paths.p1.ack_delay' --set '~links.c'; "
                   "repeatable, applied in order")
    p.add_argument("--allow-large", action="store_true",
                   help="run even beyond the run-cost limits (about 1e10 simulator events or 4 GiB per seed; "
                   "SCENARIOS.md, Limits)")
    p.add_argument("--seeds", type=seeds_arg, metavar="LIST", help="seeds, e.g. 1,2,5-8 (default: the scenario's seeds)")
    p.add_argument(
        "-j", "--jobs", type=jobs_arg, default=None, metavar="N",
        help="worker processes (default: one per core, at most one per seed); results do not depend on it",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary table")
    p.add_argument("--json", action="store_true",
                   help="print the run's summary (summary.json plus the files written) as JSON on stdout")
    p.add_argument(
        "--backend", choices=("sim", "linux"), default="sim",
        help="sim: the packet-level simulator (default); linux: the real kernel on a namespace test bed "
        "(root; see `pathpool testbed --help`)",
    )
    p.add_argument(
        "--max-duration", type=positive_float, default=10.0, metavar="S",
        help="linux backend: cap on the run's real time, seconds (default 10)",
    )
    p.set_defaults(func=_cmd_run)

    p = subparsers.add_parser("validate")
    p.add_argument("scenarios", metavar="SCENARIO", nargs="+", type=scenario_arg,
                   help="scenario TOML files or shipped names")
    p.add_argument("--allow-large", action="store_true",
                   help="run even beyond the run-cost limits (about 1e10 simulator events or 4 GiB per seed; "
                   "SCENARIOS.md, Limits)")
    p.set_defaults(func=_cmd_validate)

    p = subparsers.add_parser("algorithms")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each formula and parameter doc")
    p.set_defaults(func=_cmd_algorithms)

    p = subparsers.add_parser("bench")
    p.add_argument("scenario", metavar="SCENARIO", nargs="?", type=scenario_arg,
                   help=f"scenario TOML file or shipped name (default: the shipped {BENCH_SCENARIO})")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N", help="runs (default 1)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the scenario's first)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_bench)
