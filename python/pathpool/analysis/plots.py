"""Plots and atomic file output for the analysis (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pathpool.analysis.fluid import Trajectory  # noqa: E402
from pathpool.atomic import atomic_path  # noqa: E402
from pathpool.analysis.game import GameSolution, RentSeekingGame  # noqa: E402

__all__ = ["write_csv", "save_figure", "plot_trajectory", "plot_game_dynamics",
           "plot_utility_surfaces", "plot_friendliness"]




def write_csv(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to ``path`` as CSV atomically (temporary file, then rename)."""
    return atomic_path(Path(path), lambda tmp: df.to_csv(tmp, index=False))


def save_figure(fig, base: str | Path) -> list[Path]:
    """Save ``fig`` as ``base.png`` and ``base.svg`` atomically and close it."""
    base = Path(base)
    out = []
    for ext in ("png", "svg"):
        out.append(atomic_path(base.with_suffix(f".{ext}"), lambda tmp, e=ext: fig.savefig(tmp, format=e, dpi=120)))
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


def plot_game_dynamics(game: RentSeekingGame, sols: list[GameSolution], capacity, title: str = ""):
    """Extragradient iterates from several starts (K = 2 subflows of one connection) over the
    feasible set, converging to the normalized equilibrium."""
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
        ax.set_title(f"$U_{i + 1}$ (seed 001 eq. 6), $\\hat p$ = {game.p_hat:g}")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_friendliness(df: pd.DataFrame, title: str = ""):
    """Bar chart of the MP flow's equilibrium share per algorithm."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = np.arange(len(df))
    ax.bar(x, df["mp_share"], label="fluid model")
    if "paper_mp_share" in df:
        ax.plot(x, df["paper_mp_share"], "rD", label="seed 004 Table III")
    ax.set_xticks(x, df["algorithm"], rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("MP share of the bottleneck(s)")
    ax.set_title(title or "TCP-friendliness (less is friendlier)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
