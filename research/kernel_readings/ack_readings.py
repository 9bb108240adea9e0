"""The ACK-reading table of report/kernel/README.md (how the papers' kernels counted ACKs).

Reads, from ``report/kernel/results/ack_readings/``, each reading's simulator comparison
(``READING_comparison.csv``: paper, mean, CI, n per Table 2 row) and, where the kernel ran it, the
kernel's summary (``READING_kernel_summary.csv``), and prints one Markdown table: per Table 2 row
the paper, every reading's mean [95% CI] on each engine, and RSF's ratio over LIA/OLIA/BALIA.

``papers-rsf-bytes`` on the kernel is not a run of its own: its coupled flows are the ``papers``
plans and its RSF flow the ``linux`` plan (per-segment counting, delayed ACKs), the same
test-bed plans and so the same cache entries (:meth:`pathpool.reproduce.kernel.KernelJob.key`).

    python research/kernel_readings/ack_readings.py [SCENARIO ...]     # default: every scenario present
    python research/kernel_readings/ack_readings.py --shift [SCENARIO ...]   # per-ACK cost and RSF's ratio
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parents[2] / "report" / "kernel" / "results" / "ack_readings"
READINGS = ("quickack", "linux", "papers", "papers-rsf-bytes")
COUPLED = ("lia", "olia", "balia")


def _load() -> tuple[pd.DataFrame, pd.DataFrame]:
    sim, ker = [], []
    for r in READINGS:
        c = pd.read_csv(HERE / f"{r}_comparison.csv")
        c = c[c["metric"] == "throughput_mbps"].rename(columns={"table": "experiment"})
        sim.append(c.assign(reading=r))
        k = HERE / f"{r}_kernel_summary.csv"
        if k.exists():
            s = pd.read_csv(k)
            ker.append(s[s["metric"] == "throughput_mbps"].assign(reading=r))
    kernel = pd.concat(ker) if ker else pd.DataFrame(columns=["experiment", "algorithm", "reading"])
    if "papers-rsf-bytes" not in set(kernel["reading"]):
        both = kernel[kernel["reading"].isin(["papers", "linux"])]
        rsf = both["algorithm"].str.startswith("rsf")
        pick = both[(rsf & (both["reading"] == "linux")) | (~rsf & (both["reading"] == "papers"))]
        # Only where both halves ran: a row of the variant never mixes a run with a missing one.
        have = pick.groupby("experiment")["reading"].nunique()
        pick = pick[pick["experiment"].isin(have[have == 2].index)]
        kernel = pd.concat([kernel, pick.assign(reading="papers-rsf-bytes")])
    return pd.concat(sim), kernel


def _cell(df: pd.DataFrame, exp: str, alg: str, reading: str) -> str:
    row = df[(df["experiment"] == exp) & (df["algorithm"] == alg) & (df["reading"] == reading)]
    if not len(row):
        return ""
    r = row.iloc[0]
    return f"{r['mean']:.3g} [{r['lo']:.3g}, {r['hi']:.3g}] n={int(r['n'])}"


def _mean(df: pd.DataFrame, exp: str, alg: str, reading: str) -> float:
    row = df[(df["experiment"] == exp) & (df["algorithm"] == alg) & (df["reading"] == reading)]
    return float(row["mean"].iloc[0]) if len(row) else float("nan")


def _experiments(sim: pd.DataFrame, scenarios: list[str] | None) -> list[str]:
    exps = list(dict.fromkeys(sim["experiment"]))
    return [e for e in exps if e.split("/")[-1] in scenarios] if scenarios else exps


def _paper_ratio(sim: pd.DataFrame, exp: str, num: str, den: str) -> float:
    """The paper's ``num`` / ``den`` throughput in experiment ``exp``."""
    def paper(a: str) -> float:
        return sim[(sim["experiment"] == exp) & (sim["algorithm"] == a)]["paper"].iloc[0]
    return paper(num) / paper(den)


def table(scenarios: list[str] | None = None) -> str:
    """The Markdown table (throughputs, then RSF's ratios) for ``scenarios`` (e.g. ``table2_s2``)."""
    sim, kernel = _load()
    exps = _experiments(sim, scenarios)
    kr = [r for r in READINGS if r in set(kernel["reading"])]
    head = (["row", "paper"] + [f"sim {r}" for r in READINGS] + [f"kernel {r}" for r in kr])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratio_lines: list[str] = []
    for e in exps:
        algs = list(dict.fromkeys(sim[sim["experiment"] == e]["algorithm"]))
        for a in algs:
            p = sim[(sim["experiment"] == e) & (sim["algorithm"] == a)]["paper"].iloc[0]
            cells = [f"{e.split('/')[-1]} {a}", f"{p:g}"]
            cells += [_cell(sim, e, a, r) for r in READINGS] + [_cell(kernel, e, a, r) for r in kr]
            lines.append("| " + " | ".join(cells) + " |")
        rsf = next((a for a in algs if a.startswith("rsf")), None)
        for c in COUPLED:
            if rsf is None or c not in algs or rsf == "rsf-lb" and "rsf-db" in algs:
                continue
            pp = _paper_ratio(sim, e, rsf, c)
            cells = [f"{e.split('/')[-1]} {rsf}/{c}", f"{pp:.2f}"]
            cells += [f"{_mean(sim, e, rsf, r) / _mean(sim, e, c, r):.2f}" for r in READINGS]
            cells += [f"{_mean(kernel, e, rsf, r) / _mean(kernel, e, c, r):.2f}"
                      if _mean(kernel, e, c, r) == _mean(kernel, e, c, r) else "" for r in kr]
            ratio_lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ratio_lines)


def shift(scenarios: list[str] | None = None) -> str:
    """Per scenario, engine and coupled algorithm: what per-ACK counting costs (``papers`` against
    ``linux``, both delayed ACKs) and how RSF's ratio over the coupled algorithm moves from
    ``linux`` to ``papers`` and ``papers-rsf-bytes``, beside the paper's; only where both readings ran."""
    sim, kernel = _load()
    exps = _experiments(sim, scenarios)
    head = ["scenario", "engine", "coupled", "coupled papers/linux", "RSF papers/linux", "RSF/coupled linux",
            "papers", "papers-rsf-bytes", "paper", "papers-rsf-bytes nearer the paper than linux"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in exps:
        algs = list(dict.fromkeys(sim[sim["experiment"] == e]["algorithm"]))
        rsf = "rsf-db" if "rsf-db" in algs else next((a for a in algs if a.startswith("rsf")), None)
        for engine, df in (("simulator", sim), ("kernel", kernel)):
            for c in COUPLED:
                if rsf is None or c not in algs:
                    continue
                m = {r: (_mean(df, e, rsf, r), _mean(df, e, c, r)) for r in READINGS}
                if any(math.isnan(v) for v in m["linux"] + m["papers"]):
                    continue
                pp = _paper_ratio(sim, e, rsf, c)
                ratio = {r: m[r][0] / m[r][1] for r in ("linux", "papers", "papers-rsf-bytes")}
                # A move under 1% is noise for this question (scenarios 0 and 1: the ratio stays 1.00).
                moved = abs(ratio["papers-rsf-bytes"] / ratio["linux"] - 1) >= 0.01
                nearer = abs(math.log(ratio["papers-rsf-bytes"] / pp)) < abs(math.log(ratio["linux"] / pp))
                lines.append("| " + " | ".join([
                    e.split("/")[-1], engine, c, f"{m['papers'][1] / m['linux'][1] - 1:+.0%}",
                    f"{m['papers'][0] / m['linux'][0] - 1:+.0%}", f"{ratio['linux']:.2f}", f"{ratio['papers']:.2f}",
                    f"{ratio['papers-rsf-bytes']:.2f}", f"{pp:.2f}",
                    ("yes" if nearer else "no") if moved else "unchanged"]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--shift"]:
        print(shift(args[1:] or None))
    else:
        print(table(args or None))
