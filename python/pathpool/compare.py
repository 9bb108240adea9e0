"""``pathpool compare``: the simulator and the Linux kernel side by side on one scenario.

Either runs both backends on a scenario (``pathpool compare SCENARIO -o DIR``: the simulator
over its seeds, the Linux test bed ``--linux-runs`` times, both for the same duration), or
reads two result directories (``pathpool compare --sim DIR1 --linux DIR2 -o DIR``). Writes
``comparison.csv``, ``comparison.md`` and a bar plot ``comparison.png`` / ``comparison.svg``.

Per flow and per subflow (matched by flow name and path name) and per metric:

- ``goodput_mbps``: the ``goodput_bps`` column, Mbit/s;
- ``retrans_pct``: retransmitted / sent data packets, percent. This is the loss measure both
  backends report the same way (the kernel has no cumulative count of loss marks, the
  simulator's drop counters have no kernel equivalent);
- ``rtt_ms``: mean RTT sample (flow: mean over its subflows weighted by sent packets).

Each side gives the mean over its runs (seeds) and the half-width of a 95 % Student-t
confidence interval (NaN with one run); ``diff_pct`` is ``(linux - sim) / sim``. The rates are
defined once for both backends (:mod:`pathpool.metrics`).

A scenario field that the two backends cannot read the same way (the table in
:mod:`pathpool.kernel.mapping`; e.g. an MPTCP flow's ``option_bytes = 0``: no DSS option in the
simulator, 28 bytes of it on every kernel segment) is printed as one warning line per field,
with what to write for both to agree when there is a way, and listed in ``comparison.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["METRICS", "command", "compare_dirs", "compare_results", "differences_of", "write_comparison"]

#: metric -> (unit, description)
METRICS: dict[str, tuple[str, str]] = {
    "goodput_mbps": ("Mbit/s", "goodput"),
    "retrans_pct": ("%", "retransmitted / sent packets"),
    "rtt_ms": ("ms", "mean RTT"),
}
COLUMNS = ["level", "flow", "subflow", "path", "metric", "unit", "sim_mean", "sim_ci95", "sim_n",
           "linux_mean", "linux_ci95", "linux_n", "diff_pct"]


def _ci95(x: np.ndarray) -> float:
    """Half-width of the 95 % t-interval of the finite values of ``x`` (NaN with fewer than 2)."""
    from pathpool.stats import t_half_width

    return t_half_width(x[np.isfinite(x)])


def _per_run(flows: pd.DataFrame, subflows: pd.DataFrame) -> pd.DataFrame:
    """One row per (seed, level, flow, subflow, path) with the three metrics."""
    rows = []
    for r in subflows.to_dict("records"):
        sent = float(r["sent_packets"])
        rows.append({
            "seed": r["seed"], "level": "subflow", "flow": r["flow"], "subflow": str(int(r["subflow"])),
            "path": r["path"], "goodput_mbps": r["goodput_bps"] / 1e6,
            "retrans_pct": 100.0 * r["retransmitted_packets"] / sent if sent > 0 else math.nan,
            "rtt_ms": r["mean_rtt_s"] * 1e3, "_sent": sent,
        })
    sub = pd.DataFrame(rows)
    for r in flows.to_dict("records"):
        sent = float(r["sent_packets"])
        rtt = math.nan
        if len(sub):
            mine = sub[(sub["seed"] == r["seed"]) & (sub["flow"] == r["flow"])]
            ok = mine[np.isfinite(mine["rtt_ms"]) & (mine["_sent"] > 0)]
            if len(ok):
                rtt = float(np.average(ok["rtt_ms"], weights=ok["_sent"]))
        rows.append({
            "seed": r["seed"], "level": "flow", "flow": r["flow"], "subflow": "", "path": "",
            "goodput_mbps": r["goodput_bps"] / 1e6,
            "retrans_pct": 100.0 * r["retransmitted_packets"] / sent if sent > 0 else math.nan,
            "rtt_ms": rtt, "_sent": sent,
        })
    return pd.DataFrame(rows)


def compare_results(sim: Any, linux: Any) -> pd.DataFrame:
    """Side-by-side table of two :class:`pathpool.Results` (simulator, Linux backend).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`; flows first (in the simulator's order), each followed by its
        subflows, three metrics each. An entity only one side has gets NaN on the other.
    """
    a = _per_run(sim.flows, sim.subflows)
    b = _per_run(linux.flows, linux.subflows)
    keys = ["level", "flow", "subflow", "path"]
    order: list[tuple] = []
    flow_order = list(dict.fromkeys(list(sim.flows["flow"]) + list(linux.flows["flow"])))
    for f in flow_order:
        order.append(("flow", f, "", ""))
        subs = pd.concat([a[(a["level"] == "subflow") & (a["flow"] == f)],
                          b[(b["level"] == "subflow") & (b["flow"] == f)]])
        for s, p in sorted({(s, p) for s, p in zip(subs["subflow"], subs["path"])},
                           key=lambda t: (int(t[0]), t[1])):
            order.append(("subflow", f, s, p))
    out = []
    for key in order:
        sel_a = a[(a[keys] == pd.Series(key, index=keys)).all(axis=1)] if len(a) else a
        sel_b = b[(b[keys] == pd.Series(key, index=keys)).all(axis=1)] if len(b) else b
        for m, (unit, _doc) in METRICS.items():
            xa = sel_a[m].to_numpy(dtype=float) if len(sel_a) else np.array([])
            xb = sel_b[m].to_numpy(dtype=float) if len(sel_b) else np.array([])
            ma = float(np.nanmean(xa)) if np.isfinite(xa).any() else math.nan
            mb = float(np.nanmean(xb)) if np.isfinite(xb).any() else math.nan
            out.append({
                "level": key[0], "flow": key[1], "subflow": key[2], "path": key[3], "metric": m,
                "unit": unit, "sim_mean": ma, "sim_ci95": _ci95(xa), "sim_n": int(np.isfinite(xa).sum()),
                "linux_mean": mb, "linux_ci95": _ci95(xb), "linux_n": int(np.isfinite(xb).sum()),
                "diff_pct": 100.0 * (mb - ma) / ma if ma and math.isfinite(ma) and math.isfinite(mb)
                else math.nan,
            })
    return pd.DataFrame(out, columns=COLUMNS)


def _backend(directory: Path) -> str:
    try:
        return json.loads((directory / "summary.json").read_text()).get("backend", "sim")
    except (OSError, ValueError):
        return "?"


def compare_dirs(sim_dir: str | os.PathLike, linux_dir: str | os.PathLike) -> pd.DataFrame:
    """:func:`compare_results` of two result directories written by ``pathpool run``.

    Raises
    ------
    ValueError
        If a directory is not a results directory, or the backends are not sim and linux.
    """
    from pathpool.sim.results import read_results

    res = []
    for want, d in (("sim", Path(sim_dir)), ("linux", Path(linux_dir))):
        if not (d / "summary.json").is_file():
            raise ValueError(f"{d}: no summary.json; expected a directory written by `pathpool run`")
        got = _backend(d)
        if got != want:
            raise ValueError(f"{d}: results of backend {got!r}, expected {want!r} "
                             f"(summary.json field \"backend\"; absent = sim)")
        res.append(read_results(d))
    return compare_results(*res)


def differences_of(linux_dir: str | os.PathLike) -> list[Any]:
    """The scenario fields the two backends read differently for the Linux results in
    ``linux_dir`` (its scenario.toml mapped again, for the duration it ran):
    :attr:`pathpool.kernel.mapping.TestbedPlan.differences`."""
    from pathpool.kernel.mapping import map_scenario, start_offsets
    from pathpool.kernel.run import START_OFFSETS_KEY

    d = Path(linux_dir)
    summary = json.loads((d / "summary.json").read_text())
    duration = summary["testbed"]["duration_s"]
    # Runs that started their flows at the simulator's draws: the start jitter was the same.
    offsets = (start_offsets(d / "scenario.toml", summary["seeds"][0])
               if summary["testbed"].get(START_OFFSETS_KEY) else None)
    # Runs whose paths held their packets (jitter_ms recorded) had the send jitter; older ones did not.
    jitter = any(p.get("jitter_ms", 0) > 0 for p in summary["testbed"].get("paths", []))
    return map_scenario(d / "scenario.toml", max_duration_s=duration, start_offsets=offsets,
                        send_jitter=jitter).differences


def _fmt(x: float, ci: float = math.nan) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.3g} ± {ci:.2g}" if math.isfinite(ci) else f"{x:.3g}"


def _label(r: dict) -> str:
    return r["flow"] if r["level"] == "flow" else f"{r['flow']}/{r['subflow']} ({r['path']})"


def markdown(table: pd.DataFrame, title: str = "", differences: Sequence[Any] = ()) -> str:
    """The comparison as a markdown table (mean ± 95 % CI half-width), then the scenario fields
    the backends read differently (:class:`pathpool.kernel.mapping.Difference`), if any."""
    lines = [f"# {title}", ""] if title else []
    lines += ["| flow / subflow | metric | sim | linux | linux - sim |", "|---|---|---:|---:|---:|"]
    for r in table.to_dict("records"):
        d = f"{r['diff_pct']:+.0f} %" if math.isfinite(r["diff_pct"]) else "-"
        lines.append(f"| {_label(r)} | {r['metric']} ({r['unit']}) | {_fmt(r['sim_mean'], r['sim_ci95'])} "
                     f"| {_fmt(r['linux_mean'], r['linux_ci95'])} | {d} |")
    n_sim = int(table["sim_n"].max()) if len(table) else 0
    n_lin = int(table["linux_n"].max()) if len(table) else 0
    lines += ["", (f"sim: mean ± 95 % CI over {n_sim} seed(s); linux: over {n_lin} run(s). "
              "retrans_pct = retransmitted / sent data packets.")]
    if differences:
        lines += ["", "## Where the two backends do not run the same scenario", ""]
        lines += [f"- {d.line()}" for d in differences]
    return "\n".join(lines) + "\n"


def plot(table: pd.DataFrame, stem: Path, title: str = "") -> list[Path]:
    """Grouped bars of goodput per flow and subflow, sim (95 % CI) vs linux; PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pathpool.atomic import atomic_write

    g = table[table["metric"] == "goodput_mbps"].reset_index(drop=True)
    x = np.arange(len(g))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(g) + 2), 3.6))
    wdt = 0.38
    err = lambda s: np.nan_to_num(g[s].to_numpy(dtype=float), nan=0.0)
    ax.bar(x - wdt / 2, g["sim_mean"], wdt, yerr=err("sim_ci95"), capsize=3, label="simulator")
    ax.bar(x + wdt / 2, g["linux_mean"], wdt, yerr=err("linux_ci95"), capsize=3, label="Linux kernel")
    ax.set_xticks(x, [_label(r) for r in g.to_dict("records")], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("goodput (Mbit/s)")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = []
    for ext in ("png", "svg"):
        out.append(atomic_write(stem.with_suffix(f".{ext}"),
                                lambda fh, e=ext: fig.savefig(fh, format=e, dpi=120)))
    plt.close(fig)
    return out


def write_comparison(table: pd.DataFrame, out_dir: str | os.PathLike, title: str = "",
                     differences: Sequence[Any] = ()) -> list[Path]:
    """Write comparison.csv, comparison.md, comparison.png and comparison.svg (atomically)."""
    from pathpool.atomic import atomic_write, atomic_write_text

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    files = [atomic_write(d / "comparison.csv",
                          lambda fh: table.to_csv(fh, index=False, lineterminator="\n")),
             atomic_write_text(d / "comparison.md", markdown(table, title, differences))]
    files += plot(table, d / "comparison", title)
    return files


def _rich_table(table: pd.DataFrame, title: str):
    from rich.table import Table

    t = Table(title=title)
    for c in ("flow / subflow", "metric", "sim (mean ± CI)", "linux", "diff"):
        t.add_column(c, justify="left" if c in ("flow / subflow", "metric") else "right")
    for r in table.to_dict("records"):
        d = f"{r['diff_pct']:+.0f} %" if math.isfinite(r["diff_pct"]) else "-"
        t.add_row(_label(r), r["metric"], _fmt(r["sim_mean"], r["sim_ci95"]),
                  _fmt(r["linux_mean"], r["linux_ci95"]), d)
    return t


def command(a: argparse.Namespace) -> int:
    """Run ``pathpool compare`` with parsed arguments (parser: :mod:`pathpool.compare_cli`); exit status."""
    from rich.console import Console
    from rich.markup import escape

    from pathpool.cliutil import print_table
    from pathpool.errors import ScenarioError, fail

    console = Console(highlight=False)
    warn = Console(highlight=False, stderr=True, soft_wrap=True)

    def warn_differences(diffs: Sequence[Any]) -> None:
        # Loud, and before the numbers: a difference below may explain any of them.
        for d in diffs:
            warn.print(f"[bold yellow]warning:[/bold yellow] the backends differ on {escape(d.line())}")

    out = Path(a.output)
    if a.sim or a.linux:
        if not (a.sim and a.linux) or a.scenario:
            return fail("give either SCENARIO, or both --sim DIR and --linux DIR", 2)
        try:
            table = compare_dirs(a.sim, a.linux)
            diffs = differences_of(a.linux)
        except (ValueError, OSError, ScenarioError) as e:
            return fail(str(e), 2)
        warn_differences(diffs)
        title = f"{json.loads((Path(a.sim) / 'summary.json').read_text())['scenario']}: simulator vs Linux"
    else:
        if not a.scenario:
            return fail("give SCENARIO, or --sim DIR and --linux DIR", 2)
        from pathpool.kernel.loader import KernelError
        from pathpool.kernel.mapping import as_testbed_runs, map_scenario
        from pathpool.kernel.run import jittered, run_linux, seed_plan
        from pathpool.sim.runner import run
        from pathpool.sim.scenario import load_scenario

        try:
            sc = load_scenario(a.scenario)
            if a.as_testbed:   # the same test-bed plan; the simulator then reads it as the bed runs
                sc = load_scenario(sc, as_testbed_runs(sc))
            plan = map_scenario(sc, max_duration_s=a.max_duration)
            seeds = list(a.seeds or list(sc.seeds))[: a.linux_runs]
            seeds += [max(seeds, default=0) + 1 + k for k in range(a.linux_runs - len(seeds))]
            # run_linux starts each run's flows at the simulator's start-jitter draws for its seed.
            diffs = (seed_plan(sc, seeds[0], a.max_duration) if jittered(sc) else plan).differences
        except ScenarioError as e:
            return fail(str(e), 2)
        warn_differences(diffs)
        # Same duration on both sides (the test bed's is capped): an override, as --set does.
        sim_sc = load_scenario(sc, overrides=[f"duration={plan.duration_s!r}"])
        console.print(f"[dim]simulator: {plan.duration_s:g} s x {len(a.seeds or sc.seeds)} seeds[/dim]")
        sim_res = run(sim_sc, seeds=a.seeds)
        sim_res.write(out / "sim")
        try:
            lin_res = run_linux(sc, seeds=seeds, max_duration_s=a.max_duration, output=out / "linux",
                                progress=lambda m: console.print(f"[dim]linux: {m}[/dim]"))
        except KernelError as e:
            return fail(f"{a.scenario}: linux backend: {e}", 1)
        table = compare_results(sim_res, lin_res)
        title = f"{sc.name}: simulator vs Linux {os.uname().release}"
    files = write_comparison(table, out, title, diffs)
    print_table(_rich_table(table, title), console)
    console.print(f"wrote {', '.join(f.name for f in files)} to {out}")
    return 0
