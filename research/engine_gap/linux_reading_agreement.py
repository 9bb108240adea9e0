#!/usr/bin/env python3
"""Kernel runs of a published report beside the simulator under its Linux reading.

report/kernel's agreement table sets each kernel cell beside the simulator columns of the
report, which run the scenario files as the papers' out-of-tree kernels did (minimum-RTT
scheduler, no send buffer, no DSS option bytes, send and start jitter). ``pathpool reproduce
--backend both`` now compares the kernel with the simulator run as the test bed runs each
scenario (``--agreement-reading linux``, :func:`pathpool.kernel.mapping.as_testbed_runs`). The
kernel's runs do not depend on that reading, so the question "does the Linux reading close the
gap?" can be answered from the kernel runs already published, without hours of test-bed time:

    python research/engine_gap/linux_reading_agreement.py report/kernel/results OUT [-n 30]

reads ``linux_per_run.csv`` (the kernel's per-run metrics) and ``summary.csv`` (the report's
simulator columns) from the results folder, runs every kernel cell in the simulator under the
Linux reading at seeds 1..n (cached under ``OUT/cache``), and writes ``OUT/agreement.csv``
(both readings, :func:`pathpool.reproduce.compare.agreements`) and prints, per reading, the
counts the report prints for MPTCP connections' rates. The kernel runs must have been made with
the ACK reading ``quickack`` and ``--kernel-start-jitter off`` (report/kernel's were); the
reading options are those of ``make reproduce-kernel`` (``--recovery-reading linux``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
from pathpool.reproduce import compare as cmp
from pathpool.reproduce.experiments import Options, load_experiments
from pathpool.reproduce.report import agreement_counts, multipath_experiments
from pathpool.reproduce.runner import simulate_as_testbed
from pathpool.reproduce.verdict import summarise


def cells_of(per_run: pd.DataFrame) -> list[tuple[str, str, float]]:
    """The (experiment, algorithm, x) cells of a kernel per-run table, in its order (an unswept
    experiment's x is NaN: one NaN object, so its rows make one cell)."""
    xs = [math.nan if math.isnan(x) else x for x in per_run["x"].astype(float)]
    return list(dict.fromkeys(zip(per_run["experiment"], per_run["algorithm"], xs)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a reproduce results folder with linux_per_run.csv and summary.csv")
    ap.add_argument("out", type=Path, help="output folder (its cache/ is reused)")
    ap.add_argument("-n", "--repetitions", type=int, default=30, help="simulator seeds 1..N (default 30)")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="simulator workers")
    a = ap.parse_args(argv)
    kernel_runs = pd.read_csv(a.results / "linux_per_run.csv")
    sim_summary = pd.read_csv(a.results / "summary.csv")
    experiments = load_experiments(["rsf", "balia", "khalili"])
    ran = set(kernel_runs["experiment"])
    experiments = [e for e in experiments if e.key in ran]
    options = Options(recovery_reading="linux")
    a.out.mkdir(parents=True, exist_ok=True)
    _, beside = simulate_as_testbed(experiments, cells_of(kernel_runs), list(range(1, a.repetitions + 1)), a.out,
                                    options, start_jitter="off", workers=a.jobs)
    agreement = cmp.agreements([("linux", beside), ("scenario", sim_summary)], summarise(kernel_runs))
    agreement.to_csv(a.out / "agreement.csv", index=False)
    print(agreement_counts(agreement, multipath_experiments(experiments)).strip().replace(" Under", "\nUnder"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
