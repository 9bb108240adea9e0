"""The start-jitter table of python/pathpool/reproduce/README.md (``--kernel-start-jitter``).

Reads, from ``results/start_jitter/`` beside this file, the kernel's per-run metrics of the same
experiments and seeds with every flow starting at its scenario ``start`` (``off_per_run.csv``, the
cached runs of the report) and at the simulator's drawn start for that seed
(``scenario_per_run.csv``), and prints one Markdown table: per row and metric, both means with
their 95% t-based CIs and n, the difference in percent and whether the CIs overlap.

    python research/kernel_readings/start_jitter.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pathpool.reproduce.verdict import summarise

HERE = Path(__file__).resolve().parents[2] / "report" / "kernel" / "results" / "start_jitter"
READINGS = ("off", "scenario")
#: Per-run bookkeeping, not a measured quantity.
SKIP = {"incomplete", "jain"}


def table() -> str:
    """The Markdown table, one line per experiment, algorithm and metric."""
    s = {r: summarise(pd.read_csv(HERE / f"{r}_per_run.csv")).set_index(["experiment", "algorithm", "metric"])
         for r in READINGS}
    off, on = s["off"], s["scenario"]
    head = ["experiment", "algorithm", "metric", "jitter off: mean [95% CI] n", "jitter on: mean [95% CI] n",
            "on / off - 1", "CIs overlap"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in off.index:
        if key[2] in SKIP or key not in on.index:
            continue
        a, b = off.loc[key], on.loc[key]
        overlap = "yes" if a["lo"] <= b["hi"] and b["lo"] <= a["hi"] else "no"
        cells = [key[0], key[1], key[2],
                 f"{a['mean']:.3g} [{a['lo']:.3g}, {a['hi']:.3g}] {int(a['n'])}",
                 f"{b['mean']:.3g} [{b['lo']:.3g}, {b['hi']:.3g}] {int(b['n'])}",
                 f"{100 * (b['mean'] / a['mean'] - 1):+.1f}%", overlap]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
