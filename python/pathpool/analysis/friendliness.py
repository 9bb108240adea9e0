"""TCP-friendliness in the fluid model (Peng et al. 2016 Section III-D, Theorem III.4, Table III).

Two test networks:

``fig1``
    Seed 004 Fig. 1 as the text describes it: "all paths traverse a single bottleneck link with
    capacity c, with all other links with capacities strictly higher than c"; one multipath
    (MP) flow with ``n`` paths and one single-path (SP) TCP NewReno flow.  Each MP path also has
    an access link of capacity ``10 c``.
``fig2``
    The two-link network of the Linux experiments (Fig. 2 / Table III): the MP flow uses link 1
    and link 2, ``n_sp`` SP flows use link 1 only.  The extraction lost Table III's parameters;
    we assume ``c1 = c2``, equal RTTs and one SP flow, which matches the published totals
    (MP + SP about 3.7 Mbps on two 2 Mbps links).

The friendlier an algorithm, the less its MP flow takes.  Theorem III.4 orders the algorithms
by ``phi``; the paper's ordering is EWTCP > Semicoupled > Max > Coupled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pathpool.analysis.algorithms import get_algorithm
from pathpool.analysis.fluid import Network, solve_equilibrium

__all__ = ["PAPER_TABLE_THREE", "fig1_network", "fig2_network", "friendliness"]

#: Seed 004 Table III (Mbps): MP-TCP and SP-TCP throughput in the Fig. 2 test bed.
PAPER_TABLE_THREE = pd.DataFrame(
    {
        "mp_mbps": [2.75, 2.65, 2.60, 2.52, 2.44, 2.61],
        "sp_mbps": [0.951, 1.07, 1.13, 1.22, 1.29, 1.12],
    },
    index=["ewtcp", "semicoupled", "max", "balia", "coupled", "olia"],
)


def fig1_network(algorithm: str, n_paths: int = 2, capacity: float = 1000.0,
                 tau: float | np.ndarray = 0.1, tau_sp: float = 0.1) -> Network:
    """Seed 004 Fig. 1: ``n_paths`` MP paths and one SP flow through one bottleneck.

    Parameters
    ----------
    algorithm : str
        The MP flow's algorithm.
    n_paths : int
        Number of MP paths.
    capacity : float
        Bottleneck capacity (packets/s); access links have ``10 * capacity``.
    tau : float or ndarray
        RTT(s) of the MP paths.
    tau_sp : float
        RTT of the SP flow.

    Returns
    -------
    Network
        Routes ``0..n_paths-1`` belong to source 0 (MP), route ``n_paths`` to source 1 (SP).
    """
    R = n_paths + 1
    routing = np.zeros((1 + n_paths, R))
    routing[0, :] = 1.0
    for i in range(n_paths):
        routing[1 + i, i] = 1.0
    caps = np.concatenate([[capacity], np.full(n_paths, 10 * capacity)])
    taus = np.concatenate([np.broadcast_to(np.asarray(tau, float), (n_paths,)), [tau_sp]])
    owner = np.array([0] * n_paths + [1])
    return Network(routing, caps, taus, owner, [algorithm, "reno"],
                   source_names=["MP", "SP"],
                   route_names=[f"MP{i + 1}" for i in range(n_paths)] + ["SP"])


def fig2_network(algorithm: str, c1: float = 1000.0, c2: float = 1000.0, tau: float = 0.1,
                 n_sp: int = 1) -> Network:
    """Two links; the MP flow on both, ``n_sp`` SP flows on link 1 (Peng et al. 2016 Fig. 2).

    Returns
    -------
    Network
        Routes: MP over link 1, MP over link 2, then the SP flows.
    """
    R = 2 + n_sp
    routing = np.zeros((2, R))
    routing[0, 0] = 1.0
    routing[1, 1] = 1.0
    routing[0, 2:] = 1.0
    owner = np.array([0, 0] + list(range(1, 1 + n_sp)))
    return Network(routing, [c1, c2], np.full(R, tau), owner, [algorithm] + ["reno"] * n_sp,
                   source_names=["MP"] + [f"SP{i + 1}" for i in range(n_sp)],
                   route_names=["MP1", "MP2"] + [f"SP{i + 1}" for i in range(n_sp)])


def friendliness(algorithms: list[str] | None = None, network: str = "fig1", **kwargs) -> pd.DataFrame:
    """Equilibrium throughput of the MP and SP flows for each algorithm.

    Parameters
    ----------
    algorithms : list of str, optional
        Default: ewtcp, semicoupled, max, lia, balia, generalized(0.5, 0.2), coupled, olia.
    network : {"fig1", "fig2"}
    **kwargs
        Passed to :func:`fig1_network` or :func:`fig2_network`.

    Returns
    -------
    pandas.DataFrame
        Sorted by decreasing MP throughput: ``algorithm``, ``mp_rate``, ``sp_rate`` (packets/s),
        ``mp_share`` (MP over total), ``residual``, and for ``fig2`` the paper's Table III
        share where it has the algorithm.
    """
    algorithms = algorithms or ["ewtcp(a=1)", "semicoupled(a=1)", "max", "lia", "balia",
                                "generalized(eta=0.5,beta=0.2)", "coupled", "olia"]
    build = {"fig1": fig1_network, "fig2": fig2_network}
    if network not in build:
        raise ValueError(f"friendliness: network={network!r}; allowed: 'fig1', 'fig2'")
    rows = []
    for name in algorithms:
        net = build[network](name, **kwargs)
        eq = solve_equilibrium(net)
        rates = eq.source_rates()
        mp, sp = rates[0], rates[1:].sum()
        row = {"algorithm": get_algorithm(name).title, "mp_rate": mp, "sp_rate": sp,
               "mp_share": mp / (mp + sp), "residual": eq.residual}
        key = get_algorithm(name).name
        if network == "fig2" and key in PAPER_TABLE_THREE.index and not get_algorithm(name).params.get("eta"):
            t = PAPER_TABLE_THREE.loc[key]
            row["paper_mp_share"] = t.mp_mbps / (t.mp_mbps + t.sp_mbps)
        rows.append(row)
    df = pd.DataFrame(rows).sort_values("mp_rate", ascending=False, kind="stable")
    return df.reset_index(drop=True)
