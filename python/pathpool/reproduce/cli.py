"""``pathpool reproduce rsf|balia|khalili|all``: the papers' experiments beside the published numbers."""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["register"]


def _default_out(paper: str) -> str:
    # `reproduce all` writes the report the repository commits; one paper alone must not
    # replace it with a partial one, so it gets a folder of its own.
    return "report" if paper == "all" else f"report-{paper}"


def caps_arg(text: str) -> tuple[int, ...]:
    """argparse type of ``--kernel-max-seeds``: one cap or increasing caps, ``10`` or ``10,48``
    (the first cap against ``--kernel-seeds`` is :func:`~pathpool.reproduce.runner.reproduce`'s
    check, before anything is written).

    Examples
    --------
    >>> caps_arg("10,48")
    (10, 48)
    """
    from pathpool.reproduce.runner import kernel_caps

    try:
        return kernel_caps([int(t) for t in text.split(",")], 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: integers >= 1, comma-separated and increasing (e.g. 10,48)") from None


def _seed_range(text: str) -> tuple[int, bool]:
    """``--seeds``: the seeds ``1-N`` (or ``1,2,...,N``) of each configuration -> (N, False); a bare
    integer, the older count form, -> (N, True) (deprecated: it reads as the one seed N elsewhere)."""
    from pathpool.cliutil import seeds_arg

    if text.strip().isdigit():
        n = int(text)
        if n < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
        return n, n > 1  # --seeds 1 is seed 1 either way
    seeds = seeds_arg(text)
    if seeds != list(range(1, len(seeds) + 1)):
        raise argparse.ArgumentTypeError(
            f"{text!r}: reproduce runs the seeds 1 to N of each configuration; write --seeds 1-N or -n N")
    return len(seeds), False


def _repetitions(args: argparse.Namespace) -> int:
    """Runs per configuration from -n/--repetitions or --seeds, saying once when the old form was used."""
    if args.seeds is None:
        return args.repetitions
    n, deprecated = args.seeds
    if deprecated:
        print(f"pathpool reproduce: --seeds {n} as a count is deprecated (--seeds is a list of seeds on every "
              f"command); write -n {n} or --seeds 1-{n}", file=sys.stderr)
    return n


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pathpool reproduce``."""
    from pathpool.cliutil import add_out, at_least, jobs_arg, positive_float
    p = subparsers.add_parser(
        "reproduce",
        description=(
            "Run the published experiments of the reproduced papers in the simulator and/or the real Linux kernel "
            "(--backend; the shipped scenarios rsf2020, balia2016, khalili) and write OUT/index.html, OUT/README.md, OUT/results/ "
            "and OUT/figures/. Runs are cached under OUT/cache/ (kernel: OUT/cache-linux/) and reused unless --force."
        ),
    )
    p.add_argument("paper", nargs="?", default="all", choices=["rsf", "balia", "khalili", "all"],
                   help="which paper's experiments (default: all)")
    p.add_argument("-n", "--repetitions", type=at_least(1), default=10, metavar="N",
                   help="runs per configuration, with the random seeds 1 to N (default 10)")
    p.add_argument("--seeds", type=_seed_range, default=None, metavar="LIST",
                   help="the same as a list of seeds, which must be 1 to N, e.g. 1-10")
    p.add_argument("--ci-target", type=float, default=0.0, metavar="F",
                   help="simulator (and the kernel with --kernel-max-seeds): give an experiment more seeds when a published quantity's 95%% CI "
                   "half-width is above F times its mean over the -n runs (two-stage, Stein; e.g. 0.05), up to "
                   "--max-repetitions; 0 (default) runs exactly -n")
    p.add_argument("--max-repetitions", "--max-seeds", dest="max_seeds", type=at_least(1), default=200, metavar="N",
                   help="cap of --ci-target's runs per configuration (default 200)")
    add_out(p, None, "output folder (default: report/ for all, report-PAPER/ for one paper, so that a "
            "single paper never overwrites the all-papers report)")
    p.add_argument("-j", "--jobs", type=jobs_arg, default=None, metavar="N",
                   help="local worker processes, at least 1 (default: one per core)")
    p.add_argument("--dask", default=None, metavar="ADDRESS|local",
                   help="run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local' to start one "
                   "(needs pip install 'pathpool[dask]')")
    p.add_argument("--force", action="store_true", help="recompute runs already in the cache")
    p.add_argument("--time-scale", type=positive_float, default=1.0, metavar="F",
                   help="multiply every duration and measurement window by F (default 1); for quick looks "
                   "only: with F != 1 the numbers are not the papers' experiments")
    p.add_argument("--delay-reading", choices=["rtt", "one-way"], default="rtt",
                   help="RSF: NetEm delay on the data direction only (RTT = delay, default) or both ways (RTT = 2 x delay)")
    p.add_argument("--buffer-reading", choices=["netem", "bdp"], default="netem",
                   help="RSF: NetEm's default 1000-packet queue (default) or one bandwidth-delay product")
    p.add_argument("--balia-reading", choices=["two-link", "single-bottleneck"], default="two-link",
                   help="Balia Tables III/V: two 2 Mbps links (default) or one 4 Mbps bottleneck for every path")
    p.add_argument("--ack-reading", choices=["quickack", "linux", "papers", "papers-rsf-bytes"], default="quickack",
                   help="quickack: an ACK per segment (default); linux: delayed ACKs, every flow per acknowledged "
                   "segment; papers: delayed ACKs, multipath per ACK as the papers' kernels, TCP as their Linux "
                   "(4.9 per segment for RSF, 3.11 per ACK for Balia/Khalili), RSF per ACK; papers-rsf-bytes: "
                   "the same with RSF per segment")
    p.add_argument("--backend", choices=["sim", "linux", "both"], default="sim",
                   help="sim: the simulator (default); linux: the real kernel on the namespace test bed with the "
                   "pp_* BPF controls (root; real time); both: side by side, with an agreement table")
    p.add_argument("--beds", type=at_least(1), default=None, metavar="N",
                   help="linux: test beds side by side (default: three per two cores)")
    p.add_argument("--kernel-seeds", type=at_least(1), default=None, metavar="N",
                   help="linux/both: the kernel runs only the first N repetitions (default: all of -n)")
    p.add_argument("--kernel-max-seeds", type=caps_arg, default=None, metavar="N[,N2...]",
                   help="linux/both with --ci-target F: the kernel's second stage; after the --kernel-seeds "
                   "repetitions, each kernel cell (experiment x algorithm) whose published quantity's 95%% CI "
                   "half-width is above F times its mean gets more repetitions by the simulator's rule (Stein), "
                   "at most N in all (at least --kernel-seeds); N,N2: then a third stage from the counts the "
                   "cells have, at most N2 (one stage per increasing cap, the last repeated while a cell is still "
                   "wide); cached and resumable like the first "
                   "(default: no kernel stage)")
    p.add_argument("--kernel-stage-only", action="append", default=None, metavar="PATTERN[=N]",
                   help="linux/both: the kernel's second stage only for these experiments (shell pattern as "
                   "--only; repeatable; default every selected experiment); PATTERN=N: their cells stop at N "
                   "repetitions, below --kernel-max-seeds (e.g. table5=10: long runs grow less)")
    p.add_argument("--kernel-cache-only", action="store_true",
                   help="linux/both: run no kernel job, take every one from the cache; if one is missing, stop "
                   "with one line before any run (assembling a report from cached runs)")
    p.add_argument("--kernel-x", type=float, action="append", default=None, metavar="X",
                   help="linux/both: the kernel runs only this value of a swept experiment (repeatable; e.g. "
                   "--only fig2 --kernel-x 4 for Fig. 2 at 4 MB); the simulator runs every value")
    p.add_argument("--kernel-start-jitter", choices=["off", "scenario"], default="off",
                   help="linux/both: off (default, what the cached kernel runs did): every kernel flow starts at "
                   "its scenario start; scenario: each flow also offset by the start jitter the simulator draws "
                   "for that seed (own cache entries)")
    p.add_argument("--kernel-send-jitter", choices=["off", "scenario"], default="off",
                   help="linux/both: off (default, what the cached kernel runs had): the test bed's hosts keep their "
                   "own timing noise (tens of microseconds); scenario: the bed holds each data packet a random time up "
                   "to its flows' send_jitter (0.5 ms by default) before its path's queue, as the simulator delays it "
                   "(own cache entries)")
    p.add_argument("--agreement-reading", choices=["linux", "scenario"], default="linux",
                   help="both: the simulator runs the agreement table compares with the kernel's: linux (default: "
                   "the kernel's experiments again in the simulator as the test bed runs them, upstream Linux's "
                   "MPTCP scheduler, send buffers, restart after idle and recovery, DSS option bytes; the "
                   "report's own columns kept as rows of reading scenario) or scenario (the "
                   "report's own simulator columns only)")
    p.add_argument("--kernel-max-duration", type=positive_float, default=None, metavar="S",
                   help="linux: cap on one kernel run in seconds (default 300; downloads still running count "
                   "as incomplete, as in the simulator)")
    p.add_argument("--only", action="append", default=None, metavar="PATTERN",
                   help="run only the experiments whose key or name matches (shell pattern, e.g. 'table2_s*' or "
                   "rsf/fig2; repeatable); their report is written to --out as usual")
    # Default linux: the papers' kernels all ran TLP and PRR, and the committed report uses it, so a
    # bare `pathpool reproduce` gives the report's numbers.
    p.add_argument("--recovery-reading", choices=["rfc6675", "linux"], default="linux",
                   help="loss recovery of every TCP/MPTCP flow: linux (RACK-TLP and PRR, Linux >= 4.18's "
                   "defaults; default) or rfc6675 (SACK recovery, DupThresh 3, the scenario files' own)")
    p.add_argument("--khalili-reading", choices=["capped", "uncapped"], default="capped",
                   help="Khalili: type-1 users behind a shared 10 Mbps access (default) or not")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from pathpool.errors import signals_deferred

    # SciPy's statistics, imported whole at once: a Ctrl-C during the initialisation of its
    # compiled HiGHS module turns into an ImportError traceback, or into a death by SIGINT after
    # the clean stop; held back for that import alone, it stops the command right after.
    with signals_deferred():
        import scipy.stats  # noqa: F401
    from rich.console import Console
    from rich.table import Table

    from pathpool.cliutil import dask_missing, fail, print_table, progress
    from pathpool.reproduce.experiments import PAPERS, Options, load_experiments, scenario_root
    from pathpool.reproduce.runner import KernelOptions, reproduce

    try:
        options = Options(delay_reading=args.delay_reading, buffer_reading=args.buffer_reading,
                          balia_reading=args.balia_reading, khalili_reading=args.khalili_reading,
                          ack_reading=args.ack_reading, recovery_reading=args.recovery_reading,
                          time_scale=args.time_scale)
    except ValueError as e:
        return fail(f"pathpool reproduce: {e}")
    if not 0 <= args.ci_target < 1:
        return fail(f"pathpool reproduce: --ci-target {args.ci_target}: must be in [0, 1) (0 = off)")
    if args.dask and (msg := dask_missing("pathpool reproduce")):
        return fail(msg)
    repetitions = _repetitions(args)
    if args.ci_target > 0 and args.max_seeds < repetitions:
        return fail(f"pathpool reproduce: --max-repetitions {args.max_seeds}: must be at least -n ({repetitions})")
    if args.kernel_max_seeds is not None and (args.backend == "sim" or args.ci_target <= 0):
        return fail("pathpool reproduce: --kernel-max-seeds needs --backend linux or both and --ci-target F > 0")
    if args.kernel_stage_only and args.kernel_max_seeds is None:
        return fail("pathpool reproduce: --kernel-stage-only needs --kernel-max-seeds")
    papers = list(PAPERS) if args.paper == "all" else [args.paper]
    try:
        found = load_experiments(papers)
    except (OSError, ValueError) as e:
        return fail(f"pathpool reproduce: cannot read the experiments: {e}")
    if not found:
        return fail(f"pathpool reproduce {args.paper}: no experiment found under {scenario_root()} "
                    f"({', '.join(PAPERS[p] for p in papers)}): nothing to run")
    out_dir = args.output or _default_out(args.paper)
    from pathpool.kernel.loader import KernelError

    t0 = time.perf_counter()
    try:
        with progress(f"reproduce {args.paper}: runs") as tick:
            kernel = KernelOptions(beds=args.beds, max_duration_s=args.kernel_max_duration,
                                   repetitions=args.kernel_seeds, xs=args.kernel_x,
                                   start_jitter=args.kernel_start_jitter, send_jitter=args.kernel_send_jitter,
                                   max_repetitions=args.kernel_max_seeds,
                                   stage_only=args.kernel_stage_only, cache_only=args.kernel_cache_only,
                                   agreement=args.agreement_reading)
            outcome = reproduce([args.paper], seeds=repetitions, out=out_dir, workers=args.jobs, dask=args.dask,
                                force=args.force, options=options, progress=tick, backend=args.backend,
                                only=args.only, ci_target=args.ci_target, max_seeds=args.max_seeds, kernel=kernel)
    except ValueError as e:
        return fail(f"pathpool reproduce: {e}")
    except KernelError as e:
        return fail(f"pathpool reproduce: {str(e).splitlines()[0] if str(e) else 'kernel backend failed'}")
    except OSError as e:
        # As `pathpool run`: writing failed (a full disk, a file system gone read-only), exit 1;
        # results/ is one unit, so it holds the previous complete set or none.
        from pathpool.errors import EXIT_FAILED

        return fail(f"pathpool reproduce: cannot write under {out_dir}: {e.strerror or e} (results/ holds the "
                    "previous complete set, if any)", EXIT_FAILED)
    wall = time.perf_counter() - t0
    out = Console()
    counts = outcome.comparison[outcome.comparison["paper"].notna()]["verdict"].value_counts() if len(outcome.comparison) else {}
    t = Table(title=f"pathpool reproduce {args.paper}: {outcome.timing['jobs']} runs, {wall:.0f} s")
    t.add_column("verdict")
    t.add_column("published numbers", justify="right")
    t.add_column("claims", justify="right")
    claims = outcome.claims["verdict"].value_counts() if len(outcome.claims) else {}
    for v in ("reproduced", "same ordering only", "not reproduced", "undecided"):
        t.add_row(v, str(int(counts.get(v, 0))), str(int(claims.get(v, 0))))
    print_table(t, out)
    if outcome.kernel is not None:
        k = outcome.kernel
        out.print(f"kernel: {k.jobs} runs in {k.wall_s:.0f} s; not expressible on the test bed: "
                  f"{k.skipped['experiment'].nunique() if len(k.skipped) else 0} experiment(s) (listed in the report)")
        if k.more_seeds:
            out.print(f"kernel second stage: {len(k.more_seeds)} cell(s) beyond {k.first_seeds} repetitions: "
                      + ", ".join(f"{c} {n}" for c, n in sorted(k.more_seeds.items())))
    out.print(f"report: {outcome.out / 'index.html'}  and  {outcome.out / 'README.md'}")
    return 0


