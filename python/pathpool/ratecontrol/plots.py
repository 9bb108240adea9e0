"""Figures of the streaming run in the style of Pluntke & Rio 2011, Figure 1."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from pathpool.atomic import atomic_save_figure


def plot_stream(result, out_dir: Path, stem: str = "fig1_stream") -> list[Path]:
    """Goodput, throughput, FEC ratio and per-path rates over time, with Pluntke & Rio 2011's levels overlaid.

    Parameters
    ----------
    result : StreamResult
        Output of :func:`pathpool.ratecontrol.run_stream`.
    out_dir : pathlib.Path
        Directory for ``<stem>.png`` and ``<stem>.svg`` (written atomically).
    stem : str
        File name without suffix.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    df, pf, cfg = result.intervals, result.paths, result.config
    pub = result.summary.get("published", {})
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax = axes[0]
    ax.plot(df.t, df.throughput_pps, lw=0.8, color="0.6", label="throughput (incl. FEC)")
    ax.plot(df.t, df.goodput_pps, lw=0.8, color="C0", label="receiver goodput (in time)")
    if pub:
        ax.hlines(pub["mptcp"]["goodput_pps"], 0, cfg.switch_at, colors="C3", linestyles="--",
                  label="Pluntke & Rio 2011 goodput")
        ax.hlines(pub["optimised"]["goodput_pps"], cfg.switch_at, cfg.duration, colors="C3", linestyles="--")
    ax.set_ylabel("packets/s")
    ax.legend(loc="lower right", fontsize=8)
    ax = axes[1]
    ax.plot(df.t, df.fec_ratio, lw=0.8, color="C1", label="FEC redundancy (n-k)/n")
    if pub:
        ax.hlines(pub["mptcp"]["fec_ratio"], 0, cfg.switch_at, colors="C3", linestyles="--", label="Pluntke & Rio 2011")
        ax.hlines(pub["optimised"]["fec_ratio"], cfg.switch_at, cfg.duration, colors="C3", linestyles="--")
    ax.set_ylabel("FEC ratio")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right", fontsize=8)
    ax = axes[2]
    for r, g in pf.groupby("path"):
        spec = cfg.paths[r]
        ax.plot(g.t, g.rate_pps, lw=0.8, label=f"path {r + 1} (p={spec.loss:g}, RTT={spec.rtt_mean * 1e3:g} ms)")
    ax.set_ylabel("rate (packets/s)")
    ax.set_xlabel("time (s)")
    ax.legend(loc="upper left", fontsize=8)
    for a in axes:
        a.axvline(cfg.switch_at, color="k", lw=0.8, ls=":")
    axes[0].set_title(f"MPTCP equation rates, then optimised controller from t = {cfg.switch_at:g} s "
                      f"(seed {cfg.seed})", fontsize=10)
    out_dir = Path(out_dir)
    paths = [atomic_save_figure(out_dir / f"{stem}.{ext}", fig, dpi=120, bbox_inches="tight") for ext in ("png", "svg")]
    plt.close(fig)
    return paths
