"""The seeds' figures redrawn from our runs (matplotlib, Agg), with the paper's points overlaid
where the text gives them. Each figure is written as PNG (200 dpi) and PDF (vector); the PNG bytes
are returned for embedding in the HTML report."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pathpool.atomic import atomic_path, atomic_write_bytes
from pathpool.reproduce.compare import published

__all__ = ["TABLE2_AT", "draw_all"]

#: Where a Table 2 row sits on its figure's x axis, under our reading (see the scenario files).
TABLE2_AT = {"rsf/fig2": (2, 4.0), "rsf/fig4": (4, 40.0), "rsf/fig5": (5, 60.0), "rsf/fig6": (6, 1.0)}

_COLORS = {"tcp": "black", "lia": "tab:blue", "olia": "tab:orange", "balia": "tab:green", "rsf-db": "tab:red",
           "rsf-lb": "tab:purple", "ewtcp": "tab:brown", "semicoupled": "tab:pink", "max": "tab:olive",
           "coupled": "tab:cyan"}


#: Raster resolution of the PNGs: sharp on a high-density screen and in print.
PNG_DPI = 200


def _save(fig, outdir: Path, name: str) -> tuple[str, bytes]:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI)
    atomic_write_bytes(outdir / f"{name}.png", buf.getvalue(), mkdir=True)
    # No creation date: the same results redraw to the same PDF bytes.
    atomic_path(outdir / f"{name}.pdf",
                lambda tmp: fig.savefig(tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None}))
    plt.close(fig)
    return name, buf.getvalue()


def _sweep_fig(summary: pd.DataFrame, exp: str, metric: str, xlabel: str, ylabel: str, title: str,
               kernel_summary: pd.DataFrame | None = None):
    s = summary[(summary["experiment"] == exp) & (summary["metric"] == metric)]
    k = None
    if kernel_summary is not None and len(kernel_summary):
        k = kernel_summary[(kernel_summary["experiment"] == exp) & (kernel_summary["metric"] == metric)]
    who = "simulator" if k is not None and len(k) else "ours"
    fig, ax = plt.subplots(figsize=(8.4, 4.0))
    for alg, g in s.groupby("algorithm", sort=False):
        g = g.sort_values("x")
        c = _COLORS.get(alg)
        ax.plot(g["x"], g["mean"], "o-", color=c, label=f"{alg} ({who}, {_n_text(g['n'])})")
        ax.fill_between(g["x"], g["lo"], g["hi"], color=c, alpha=0.2)
        kg = k[k["algorithm"] == alg].sort_values("x") if k is not None else None
        if kg is not None and len(kg):
            # The kernel ran only some x (--kernel-x): points with their CI, no line between them.
            km, kl, kh = (kg[col].to_numpy(dtype=float) for col in ("mean", "lo", "hi"))
            ax.errorbar(kg["x"], km, yerr=_err(km, kl, kh), fmt="s", ms=7, mfc="white", color=c, capsize=3,
                        label=f"{alg} (Linux kernel, {_n_text(kg['n'])})")
    if exp in TABLE2_AT:
        row, x = TABLE2_AT[exp]
        t2 = published("rsf2020_table2.csv")
        t2 = t2[t2["scenario_id"] == row]
        algs = set(s["algorithm"])
        for _, r in t2.iterrows():
            a = r["algorithm"]
            target = [b for b in algs if b.startswith("rsf")] if a == "rsf" else [a]
            for b in target:
                if b in algs:
                    ax.plot([x], [r["throughput_mbps"]], marker="*", ms=13, color=_COLORS.get(b), mec="k", ls="none")
        ax.plot([], [], "k*", ms=11, ls="none", label=f"paper, Table 2 row {row} (at our reading of x)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the lines, not on them
    return fig


def _n_text(ns) -> str:
    """``n=30`` or ``n=3-30``: the runs behind the bars of one series (0 and NaN left out)."""
    ns = sorted({int(v) for v in ns if math.isfinite(float(v)) and v > 0})
    if not ns:
        return ""
    return f"n={ns[0]}" if len(ns) == 1 else f"n={ns[0]}-{ns[-1]}"


def _err(mean: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Error bars from a CI; a missing bound (one run) draws none."""
    return np.nan_to_num(np.vstack([mean - lo, hi - mean]))


def _grouped_bars(ax, algs: list[str], sim: pd.DataFrame, kernel: pd.DataFrame | None,
                  paper: np.ndarray) -> list[tuple[object, str]]:
    """Bars per row: the simulator's (the algorithm's colour), the kernel's beside it where it
    ran (same colour, dotted) and the paper's (hatched) where it gives a value. ``sim`` and
    ``kernel`` have ``mean, lo, hi, n`` per row (kernel rows NaN where it did not run); a
    ``kernel`` frame keeps its slot even when all NaN, so that the panels of one figure line up.
    Returns the legend entries of the series drawn, so that no entry promises a missing one."""
    idx = np.arange(len(algs))
    colors = [_COLORS.get(a, "gray") for a in algs]
    has_kernel = kernel is not None
    has_paper = bool(np.isfinite(paper).any())
    series = 1 + has_kernel + has_paper
    width = 0.8 / series if series > 1 else 0.6
    offsets = (np.arange(series) - (series - 1) / 2) * width
    mean, lo, hi = (sim[k].to_numpy(dtype=float) for k in ("mean", "lo", "hi"))
    ax.bar(idx + offsets[0], mean, width, yerr=_err(mean, lo, hi), color=colors)
    who = "simulator" if has_kernel else "ours"
    n = _n_text(sim["n"]) if "n" in sim else ""
    entries = [(plt.Rectangle((0, 0), 1, 1, color="gray"), f"{who} (95% CI{', ' + n if n else ''})")]
    if has_kernel:
        km, kl, kh = (kernel[k].to_numpy(dtype=float) for k in ("mean", "lo", "hi"))
        ok = np.isfinite(km)
        ax.bar(idx[ok] + offsets[1], km[ok], width, yerr=_err(km, kl, kh)[:, ok],
               color=[c for c, o in zip(colors, ok) if o], alpha=0.55, hatch="..", edgecolor="k", lw=0.5)
        if ok.any():
            kn = _n_text(kernel["n"][ok])
            entries.append((plt.Rectangle((0, 0), 1, 1, facecolor="lightgray", hatch="..", edgecolor="k"),
                            f"Linux kernel (95% CI{', ' + kn if kn else ''})"))
    if has_paper:
        ok = np.isfinite(paper)
        ax.bar(idx[ok] + offsets[-1], paper[ok], width, color="white", edgecolor="k", hatch="//")
        entries.append((plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="k", hatch="//"), "paper"))
    return entries


def _bars(rows: list[tuple[str, str, float, float, float, float]], ylabel: str, title: str,
          kernel: list[tuple[float, float, float, float]] | None = None, n: list[float] | None = None):
    """rows: (label, algorithm, ours mean, lo, hi, paper or nan); kernel: (mean, lo, hi, n) per
    row (NaN where the kernel did not run) or None; n: the simulator's runs per row."""
    fig, ax = plt.subplots(figsize=(max(6.0, (0.55 + 0.3 * (kernel is not None)) * len(rows) + 2), 4.0))
    sim = pd.DataFrame([r[2:5] for r in rows], columns=["mean", "lo", "hi"], dtype=float)
    if n is not None:
        sim["n"] = n
    k = pd.DataFrame(kernel, columns=["mean", "lo", "hi", "n"], dtype=float) if kernel is not None else None
    if k is not None and not np.isfinite(k["mean"].to_numpy()).any():
        k = None   # the kernel ran none of these rows: the simulator's bars alone, as "ours"
    paper = np.array([r[5] for r in rows], dtype=float)
    entries = _grouped_bars(ax, [r[1] for r in rows], sim, k, paper)
    ax.set_xticks(np.arange(len(rows)), [r[0] for r in rows], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    # One series alone needs no legend; a "paper" entry without a published value would promise one.
    if len(entries) > 1:
        ax.legend(*zip(*entries), fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def _kernel_rows(comparison: pd.DataFrame) -> list[tuple[float, float, float, float]] | None:
    """The kernel's (mean, lo, hi, n) beside each comparison row, or None when it ran none."""
    if "linux_mean" not in comparison or not np.isfinite(comparison["linux_mean"].to_numpy(dtype=float)).any():
        return None
    return [(r.linux_mean, r.linux_lo, r.linux_hi, r.linux_n) for r in comparison.itertuples()]


def _summary_bars(summary: pd.DataFrame, kernel_summary: pd.DataFrame | None, exp: str, metric: str,
                  ylabel: str, title: str):
    """Bars of one summary metric per algorithm, the kernel's beside them where it ran."""
    s = summary[(summary["experiment"] == exp) & (summary["metric"] == metric)]
    if not len(s):
        return None
    rows = [(r.algorithm, r.algorithm, r.mean, r.lo, r.hi, math.nan) for r in s.itertuples()]
    kernel = None
    if kernel_summary is not None and len(kernel_summary):
        k = kernel_summary[(kernel_summary["experiment"] == exp) & (kernel_summary["metric"] == metric)]
        k = k.set_index("algorithm")
        if len(k):
            kernel = [tuple(k.loc[a, ["mean", "lo", "hi", "n"]]) if a in k.index else (math.nan,) * 4
                      for a in s["algorithm"]]
    return _bars(rows, ylabel, title, kernel=kernel, n=list(s["n"]))


def _comparison_bars(comparison: pd.DataFrame, table: str, ylabel: str, title: str):
    c = comparison[comparison["table"] == table]
    rows = [(f"{r.algorithm} {r.metric.replace('_mbps', '')}", r.algorithm, r.mean, r.lo, r.hi, r.paper)
            for r in c.itertuples()]
    return _bars(rows, ylabel, title, kernel=_kernel_rows(c), n=list(c["n"])) if rows else None


def _series(tables: dict[str, pd.DataFrame], exp: str, alg: str, seed: int) -> pd.DataFrame:
    s = tables["series"]
    if not len(s):
        return s
    return s[(s["experiment"] == exp) & (s["run_algorithm"] == alg) & (s["seed"] == seed)]


def draw_all(outcome) -> list[tuple[str, str, bytes]]:
    """Every figure we can draw from what was run: list of (name, caption, png bytes)."""
    out: list[tuple[str, str, bytes]] = []
    d = outcome.out / "figures"
    summary, comparison, tables = outcome.summary, outcome.comparison, outcome.tables
    keys = {e.key for e in outcome.experiments}
    seed = outcome.seeds[0]
    ksum = outcome.kernel.summary if outcome.kernel is not None else None
    kcap = (" Where the Linux kernel ran: its mean beside the simulator's (dotted bars or open squares, 95% CI, "
            "its own n)." if ksum is not None and len(ksum) else "")
    # Time-series figures draw the simulator's first seed only: in a report with kernel runs the
    # caption says so, so that no reader takes a trace for the kernel's.
    scap = (" Simulator only: the kernel's runs of this experiment are in the tables and bar figures, not "
            "drawn here." if ksum is not None and len(ksum) else "")

    def add(fig, name, caption):
        if fig is not None:
            n, png = _save(fig, d, name)
            out.append((n, caption, png))

    t2 = comparison[comparison["table"].str.startswith("rsf/table2")]
    if len(t2):
        add(_table2_fig(t2), "rsf_table2",
            "Seed 001 Table 2, one panel per scenario: our mean per-connection throughput (bars, 95% CI) beside "
            "the paper's (hatched)." + kcap)
    sweeps = {
        "rsf/fig2": ("File size (MB)", "Fig. 2: scenario 2 (10 Mbps, 150 ms, 2% loss)"),
        "rsf/fig4": ("Second path bandwidth (Mbps)", "Fig. 4: 20 Mbps + varied, 150 ms, 4% loss, 10 MB"),
        "rsf/fig5": ("Second path delay (ms)", "Fig. 5: 20 Mbps, 3% loss, 20 ms + varied, 10 MB"),
        "rsf/fig6": ("Second path loss (%)", "Fig. 6: 20 Mbps, 150 ms, 3% + varied loss, 10 MB"),
    }
    for exp, (xl, title) in sweeps.items():
        if exp in keys:
            add(_sweep_fig(summary, exp, "throughput_mbps", xl, "Mbps per connection", title, ksum),
                exp.replace("/", "_"),
                f"Seed 001 {title}. Lines: our mean over seeds, band: 95% CI; stars: the paper's Table 2 numbers "
                "placed at our reading of the row's x (the figure's own points are not in the text)." + kcap)
    if "rsf/fig3" in keys:
        fig = _summary_bars(summary, ksum, "rsf/fig3", "jain", "Jain's index of the 5 connections",
                            "Fig. 3: fairness, scenario 2, 4 MB")
        if fig is not None:
            fig.axes[0].set_ylim(0.8, 1.01)
        add(fig, "rsf_fig3", "Seed 001 Fig. 3: Jain's fairness index over the five connections (the paper gives no "
            "number, only 'close to unity')." + kcap)
    tr = _series(tables, "rsf/trace", "rsf-db", seed)
    if len(tr):
        add(_trace_fig(tables, outcome), "rsf_trace_rsfdb",
            "What RSF-DB's factor min{1, (d - q)/q} does in scenario 2 (Pokhrel & Williamson 2020 eq. 1, d = 100 ms): the bottleneck's "
            "queueing delay q stays far below d, so the factor is 1 and RSF-DB is uncoupled Reno on each subflow; "
            "LIA's coupled windows for contrast (first seed)." + scap)
    if "balia/table3" in keys:
        add(_comparison_bars(comparison, "balia/table3", "Mbps", "Balia Table III: friendliness"), "balia_table3",
            "Seed 004 Table III: aggregate throughput of the MP-TCP user and of the SP-TCP user, ours and the paper's."
            + kcap)
    if "balia/table4" in keys:
        add(_comparison_bars(comparison, "balia/table4", "Mbps", "Balia Table IV: WiFi + 3G"), "balia_table4",
            "Seed 004 Table IV: MP-TCP throughput over WiFi and 3G, ours and the paper's." + kcap)
    if "balia/table5" in keys:
        add(_table5_fig(tables, outcome, seed), "balia_fig4_table5",
            "Seed 004 Fig. 4 / Table V: the MP-TCP flow's second-path window while one SP-TCP flow shares that "
            "path from 40 s to 80 s (first seed)." + scap)
        for metric, yl in (("recovery_s", "seconds after the SP flow left"), ("sptcp_mbps", "SP-TCP Mbps, 40-80 s")):
            add(_summary_bars(summary, ksum, "balia/table5", metric, yl, f"Balia Table V: {metric}"),
                f"balia_table5_{metric}",
                f"Seed 004 Table V ({metric}); the paper's numbers were lost in extraction, only its ordering claims "
                "remain." + kcap)
    if "balia/fig3" in keys:
        add(_fig3(tables, outcome, seed), "balia_fig3",
            "Seed 004 Fig. 3: aggregate window of a Balia MP-TCP flow (two subflows, one link) and the window of one "
            "TCP Reno flow alone on the same link (first seed)." + scap)
        add(_summary_bars(summary, ksum, "balia/fig3", "window_cv", "std/mean of the aggregate window",
                          "Window oscillation"), "balia_fig3_cv",
            "Seed 004 Fig. 3: coefficient of variation of the aggregate congestion window, 20-120 s, every algorithm "
            "and Reno ('tcp')." + kcap)
    for n in ("khalili/n1_5", "khalili/n1_15"):
        if n in keys:
            add(_comparison_bars(comparison, n, "aggregate Mbps", f"Khalili scenario, {n.split('/')[1]}"),
                n.replace("/", "_"), f"Seed 002 Khalili slides ({n}): type-1 and type-2 aggregate throughput, ours and "
                "the slides' (RSF-DB and RSF-LB are ours only)." + kcap)
    return out


def _table2_fig(t2: pd.DataFrame):
    """Small multiples, one panel per Table 2 scenario, each on its own y scale (they differ 10x);
    the kernel's bars beside the simulator's where it ran (``linux_*`` columns)."""
    tables = list(dict.fromkeys(t2["table"]))
    # One panel more than there are scenarios: the legend gets its own, never over a bar.
    ncol = min(4, len(tables) + 1)
    nrow = math.ceil((len(tables) + 1) / ncol)
    has_kernel = _kernel_rows(t2) is not None
    fig, axes = plt.subplots(nrow, ncol, figsize=((3.2 + 0.8 * has_kernel) * ncol, 2.9 * nrow), squeeze=False)
    legend: dict[str, object] = {}
    for ax, table in zip(axes.flat, tables, strict=False):
        c = t2[t2["table"] == table]
        kernel = None
        if has_kernel:
            kernel = c[["linux_mean", "linux_lo", "linux_hi", "linux_n"]].set_axis(["mean", "lo", "hi", "n"], axis=1)
        entries = _grouped_bars(ax, list(c["algorithm"]), c[["mean", "lo", "hi", "n"]], kernel,
                                c["paper"].to_numpy(dtype=float))
        for handle, label in entries:  # one legend for the figure; n may differ per panel
            legend.setdefault(label.split(" (")[0], (handle, label))
        ax.set_xticks(np.arange(len(c)), c["algorithm"], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"scenario {table[-1]}: {c['group'].iloc[0]}", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(tables):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("Mbps per connection", fontsize=8)
    n_all = {k: _n_text(t2[col]) for k, col in (("simulator", "n"), ("ours", "n"), ("Linux kernel", "linux_n"))
             if col in t2}
    order = ["simulator", "ours", "Linux kernel", "paper"]
    keys = sorted(legend, key=order.index)
    handles = [legend[k][0] for k in keys]
    labels = [f"{k} (95% CI, {n_all[k]})" if n_all.get(k) else legend[k][1] for k in keys]
    axes.flat[-1].legend(handles, labels, loc="center", fontsize=9)
    who = "the simulator, the Linux kernel" if has_kernel else "ours"
    fig.suptitle(f"RSF-MPTCP Table 2 (Pokhrel & Williamson 2020): {who} and the paper", fontsize=11)
    return fig


def _trace_fig(tables, outcome):
    seed = outcome.seeds[0]
    exp = next(e for e in outcome.experiments if e.key == "rsf/table2_s2")
    d = float(exp.spec["params"]["rsf-db"]["d"])
    rate = {ln["name"]: ln["rate_bps"] for ln in exp.base.spec["links"]}

    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    for alg, ls in (("rsf-db", "-"), ("lia", ":")):
        s = _series(tables, "rsf/trace", alg, seed)
        cw = s[(s["entity"] == "subflow") & (s["metric"] == "cwnd") & (s["id"] == "conn-0/0")]
        axes[0].plot(cw["time_s"], cw["value"], ls, label=f"{alg}: conn-0 subflow 0")
    axes[0].set_ylabel("cwnd (segments)")
    axes[0].legend(fontsize=8)
    s = _series(tables, "rsf/trace", "rsf-db", seed)
    q = s[(s["entity"] == "link") & (s["metric"] == "queue_bytes") & (s["id"] == "path1")]
    qd = q["value"].to_numpy() * 8 / rate["path1"]
    axes[1].plot(q["time_s"], qd * 1e3, label="queueing delay q at path 1 (RSF-DB run)")
    axes[1].axhline(d * 1e3, color="r", ls="--", label="target d = 100 ms")
    axes[1].set_ylabel("ms")
    axes[1].legend(fontsize=8)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(qd > 0, np.minimum(1.0, (d - qd) / qd), 1.0)
    axes[2].plot(q["time_s"], factor)
    axes[2].set_ylim(min(-0.1, float(np.nanmin(factor)) - 0.1) if len(factor) else -0.1, 1.1)
    axes[2].set_ylabel("min{1,(d-q)/q}")
    axes[2].set_xlabel("time (s)")
    axes[0].set_title("RSF-DB in Table 2 scenario 2 (10 Mbps, 150 ms, 2% loss, 4 MB)", fontsize=10)
    return fig


def _table5_fig(tables, outcome, seed):
    e = next(x for x in outcome.experiments if x.key == "balia/table5")
    fig, ax = plt.subplots(figsize=(7, 4))
    for alg in e.algorithms:
        s = _series(tables, "balia/table5", alg, seed)
        cw = s[(s["entity"] == "subflow") & (s["metric"] == "cwnd") & (s["id"] == "mp/1")]
        ax.plot(cw["time_s"], cw["value"], lw=0.8, color=_COLORS.get(alg), label=alg)
    for t in e.spec["sp_window"]:
        ax.axvline(t * outcome.options.time_scale, color="k", ls="--", lw=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("second-path cwnd (segments)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Responsiveness: SP-TCP on path 2 from 40 s to 80 s", fontsize=10)
    return fig


def _fig3(tables, outcome, seed):
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for alg, label in (("balia", "Balia MP-TCP: aggregate of 2 subflows"), ("tcp", "TCP Reno alone")):
        s = _series(tables, "balia/fig3", alg, seed)
        cw = s[(s["entity"] == "subflow") & (s["metric"] == "cwnd")]
        agg = cw.groupby("time_s")["value"].sum()
        ax.plot(agg.index, agg.to_numpy(), lw=0.8, color=_COLORS.get(alg), label=label)
        if alg == "balia":
            for sid, g in cw.groupby("id"):
                ax.plot(g["time_s"], g["value"], lw=0.5, alpha=0.6, label=f"Balia {sid}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (segments)")
    ax.legend(fontsize=7)
    ax.set_title("Window oscillation on one 10 Mbps link", fontsize=10)
    return fig
