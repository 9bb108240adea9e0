"""Plots and atomic file output for the analysis (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pathpool.analysis.fluid import Trajectory
from pathpool.analysis.game import BestResponsePath, FlowTrajectory, GameSolution, RentSeekingGame
from pathpool.atomic import atomic_save_figure

__all__ = [
    "plot_extragradient_path",
    "plot_friendliness",
    "plot_game_dynamics",
    "plot_trajectory",
    "plot_utility_surfaces",
    "save_figure",
]


def save_figure(fig, base: str | Path) -> list[Path]:
    """Save ``fig`` as ``base.png`` and ``base.svg`` atomically and close it."""
    base = Path(base)
    out = []
    for ext in ("png", "svg"):
        out.append(atomic_save_figure(base.with_suffix(f".{ext}"), fig, dpi=120))
    plt.close(fig)
    return out


def plot_trajectory(traj: Trajectory, labels: list[str] | None = None, eq_x: np.ndarray | None = None,
                    title: str = ""):
    """Route rates over time, with the directly solved equilibrium as dashed lines."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for r in range(traj.x.shape[0]):
        lab = labels[r] if labels else f"route {r}"
        (line,) = ax.plot(traj.t, traj.x[r], label=lab)
        if eq_x is not None:
            ax.axhline(eq_x[r], ls="--", lw=0.8, color=line.get_color())
    ax.set_xlabel("time (s)")
    ax.set_ylabel("rate (packets/s)")
    ax.set_title(title or "fluid model (3)-(4); dashed: solution of (8)-(9)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def plot_extragradient_path(game: RentSeekingGame, sols: list[GameSolution], capacity, title: str = ""):
    """Extragradient iterates from several starts (K = 2 subflows of one connection) over the
    feasible set, converging to the normalized equilibrium (the solver, not a dynamics)."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    B = float(np.sum(capacity))
    for s in sols:
        ax.plot(s.path[:, 0], s.path[:, 1], "-", lw=0.8, alpha=0.8)
        ax.plot(s.path[0, 0], s.path[0, 1], "o", ms=3, color="grey")
    ax.plot(sols[0].lam.ravel()[0], sols[0].lam.ravel()[1], "k*", ms=12, label="normalized equilibrium")
    ax.plot([0, B], [B, 0], "k:", lw=0.8, label="capacity (7)")
    ax.set_xlabel(r"$\lambda_1$")
    ax.set_ylabel(r"$\lambda_2$")
    ax.set_title(title or "projected extragradient iterates")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def plot_game_dynamics(game: RentSeekingGame, capacity, lam_star: np.ndarray, flows: list[FlowTrajectory],
                       brs: list[BestResponsePath] | None = None, z=1.0, multipliers=None, title: str = ""):
    """Convergence of Rosen's projected flow and of best-response dynamics to the normalized
    equilibrium ``lam_star``.

    Panels: distance to ``lam_star`` over time (flow), over rounds (best response), and for two
    subflows of one connection the trajectories in the ``(lambda_1, lambda_2)`` plane over the
    feasible set, with the contour lines of ``rho = z_1 U_1 + z_2 U_2`` and, given the
    equilibrium ``multipliers``, the two priced best-response curves.
    """
    plane = game.N * game.K == 2 and game.mode == "subflow"
    brs = brs or []
    ncols = 1 + bool(brs) + plane
    fig, axes = plt.subplots(1, ncols, figsize=(5.0 * ncols, 4.4))
    axes = np.atleast_1d(axes)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = 1e-16 * float(np.sum(capacity))
    ax = axes[0]
    for k, f in enumerate(flows):
        ax.semilogy(f.t, np.maximum(f.distance(lam_star), floor), color=colors[k % len(colors)], lw=1)
    ax.set_xlabel("time")
    ax.set_ylabel(r"$|\lambda(t) - \lambda^*|$")
    ax.set_title("projected pseudo-gradient flow (Rosen)")
    if brs:
        ax = axes[1]
        for k, b in enumerate(brs):
            ax.semilogy(np.arange(b.rounds + 1), np.maximum(b.distance(lam_star), floor), "o-", ms=3,
                        color=colors[k % len(colors)], lw=1)
        ax.set_xlabel("round (every player once)")
        ax.set_ylabel(r"$|\lambda_k - \lambda^*|$")
        ax.set_title("best-response dynamics")
    if plane:
        ax = axes[-1]
        B = float(np.sum(capacity))
        ax.fill([0, B, 0], [0, 0, B], color="0.92", label="feasible set (7)")
        grid = np.linspace(B * 1e-3, B, 120)
        L1, L2 = np.meshgrid(grid, grid)
        zz = np.broadcast_to(np.asarray(z, float), (2,))
        rho = np.array([zz @ game.utilities([a, b]) for a, b in zip(L1.ravel(), L2.ravel())]).reshape(L1.shape)
        ax.contour(L1, L2, np.where(L1 + L2 <= B, rho, np.nan), levels=12, colors="0.6", linewidths=0.5)
        if multipliers is not None:
            br1 = [game.best_response([0.0, y], 0, z, B, multipliers=multipliers) for y in grid]
            br2 = [game.best_response([x, 0.0], 1, z, B, multipliers=multipliers) for x in grid]
            ax.plot(br1, grid, "--", color="tab:purple", lw=0.8, label=r"BR$_1(\lambda_2)$")
            ax.plot(grid, br2, "--", color="tab:brown", lw=0.8, label=r"BR$_2(\lambda_1)$")
        for k, f in enumerate(flows):
            c = colors[k % len(colors)]
            ax.plot(f.lam[:, 0], f.lam[:, 1], "-", color=c, lw=1.2)
            ax.plot(f.lam[0, 0], f.lam[0, 1], "o", color=c, ms=4)
        for k, b in enumerate(brs):
            ax.plot(b.lam[:, 0], b.lam[:, 1], ":", marker=".", color=colors[k % len(colors)], lw=0.8, ms=4)
        ls = np.ravel(lam_star)
        ax.plot(ls[0], ls[1], "k*", ms=13, label="normalized equilibrium", zorder=5)
        ax.set_xlim(0, 1.05 * B)
        ax.set_ylim(0, 1.05 * B)
        ax.set_xlabel(r"$\lambda_1$")
        ax.set_ylabel(r"$\lambda_2$")
        ax.set_title(r"flow (solid), best response (dotted); contours of $\rho$")
        ax.legend(fontsize="x-small", loc="upper right")
    fig.suptitle(title or f"rent-seeking game, $\\hat p$ = {game.p_hat:g}")
    fig.tight_layout()
    return fig


def plot_utility_surfaces(game: RentSeekingGame, capacity: float, n: int = 80, title: str = ""):
    """Utility surfaces ``U_1`` and ``U_2`` of the two-subflow game (6) over the feasible set."""
    if game.N * game.K != 2 or game.mode != "subflow":
        raise ValueError("utility surfaces are drawn for K = 2 subflows of one connection")
    B = float(capacity)
    g = np.linspace(B * 1e-3, B, n)
    L1, L2 = np.meshgrid(g, g)
    U = np.array([game.utilities([a, b]) for a, b in zip(L1.ravel(), L2.ravel())])
    feasible = (L1 + L2 <= B).ravel()
    fig = plt.figure(figsize=(10, 4.2))
    for i in range(2):
        ax = fig.add_subplot(1, 2, i + 1, projection="3d")
        Z = np.where(feasible, U[:, i], np.nan).reshape(L1.shape)
        ax.plot_surface(L1, L2, Z, cmap="viridis", linewidth=0, antialiased=True)
        ax.set_xlabel(r"$\lambda_1$")
        ax.set_ylabel(r"$\lambda_2$")
        ax.set_zlabel(f"$U_{i + 1}$")
        ax.set_title(f"$U_{i + 1}$ (Pokhrel & Williamson 2020 eq. 6), $\\hat p$ = {game.p_hat:g}")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_friendliness(df: pd.DataFrame, title: str = ""):
    """Bar chart of the MP flow's equilibrium share per algorithm."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = np.arange(len(df))
    ax.bar(x, df["mp_share"], label="fluid model")
    if "paper_mp_share" in df:
        ax.plot(x, df["paper_mp_share"], "rD", label="Peng et al. 2016 Table III")
    ax.set_xticks(x, df["algorithm"], rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("MP share of the bottleneck(s)")
    ax.set_title(title or "TCP-friendliness (less is friendlier)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
