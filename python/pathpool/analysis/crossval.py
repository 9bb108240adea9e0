"""Cross-validation of the fluid model against the packet-level simulator.

Three networks, each built twice: as a fluid :class:`~pathpool.analysis.fluid.Network` and as a
scenario dict for :func:`pathpool.run`.

``two_paths``
    One MPTCP connection over two disjoint paths with Bernoulli loss 1 % (RTT 40 ms) and 2 %
    (RTT 80 ms).
``shared``
    One MPTCP connection (two subflows, RTTs 40 and 60 ms) and one TCP Reno flow (RTT 50 ms)
    through one bottleneck with Bernoulli loss 1 %.
``khalili``
    Khalili's two-link network (Walid et al. 2014): C1 = C2 = 10 Mbps drop-tail, N1 multipath users on
    both links, N2 single-path TCP users on link 2 (RTT 100 ms; the slides do not give it).

Why random-loss links.  The fluid model's price is the per-packet loss probability.  On a link
with Bernoulli loss and far more capacity than the flows use (100 Mbps, 1000-packet buffers, so
no queue builds) the price is exactly the configured loss rate and the RTT is the propagation
RTT, so the fluid equilibrium is a prediction with no fitted mapping.  On a congested drop-tail
link the price is whatever loss the queue produces; the fluid model then predicts only how the
capacity is divided (the Khalili network), which is the quantity compared there.

What to expect.  The fluid model (3) averages ``x^2`` as ``(mean x)^2``; a Reno sawtooth at
per-packet loss ``p`` averages ``sqrt(3/(2p))/tau`` instead of ``sqrt(2/p)/tau``, a factor
``sqrt(3)/2 = 0.866``.  Tables therefore carry both the raw fluid rate and the rate times that
factor ("sawtooth-calibrated"), and shares (fractions of the aggregate), where it cancels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pathpool.analysis.algorithms import get_algorithm
from pathpool.analysis.fluid import Network, solve_equilibrium

__all__ = [
    "CROSSVAL_ALGORITHMS",
    "MSS_BYTES",
    "NETWORKS",
    "SAWTOOTH_FACTOR",
    "compare",
    "fluid_network",
    "fluid_prediction",
    "scenario",
]

#: Payload bytes per packet in the simulator (``DEFAULT_MSS``); 1500-byte packets on the wire.
MSS_BYTES = 1448
WIRE_BYTES = 1500
#: Mean of a deterministic AIMD sawtooth relative to the fluid model's equilibrium.
SAWTOOTH_FACTOR = float(np.sqrt(3.0) / 2.0)
NETWORKS = ("two_paths", "shared", "khalili")
#: Algorithms of the cross-validation, with explicit parameters (EWTCP with a = 1, uncoupled
#: Reno increases; pathpool-cc's default, used by both the simulator and the fluid model, is
#: a = 1/n^2).
CROSSVAL_ALGORITHMS = ("lia", "olia", "balia", "ewtcp(a=1)", "coupled")

_TWO = {"loss": (0.01, 0.02), "rtt": (0.040, 0.080)}
_SHARED = {"loss": 0.01, "rtt_mp": (0.040, 0.060), "rtt_sp": 0.050}
_KHALILI = {"capacity_bps": 10e6, "rtt": 0.100, "n1": 5, "n2": 5}


def _split(name: str) -> tuple[str, dict]:
    alg = get_algorithm(name)
    return alg.name, dict(alg.params)


def fluid_network(network: str, algorithm: str, n1: int | None = None, n2: int | None = None) -> Network:
    """The fluid-model network of one cross-validation case.

    Parameters
    ----------
    network : {"two_paths", "shared", "khalili"}
    algorithm : str
        Algorithm of the multipath flow(s); single-path flows run Reno.
    n1, n2 : int, optional
        Khalili's numbers of multipath and single-path users (default 5 and 5).

    Returns
    -------
    Network
    """
    if network == "two_paths":
        return Network(np.eye(2), [np.inf, np.inf], _TWO["rtt"], [0, 0], [algorithm],
                       loss=_TWO["loss"], source_names=["mptcp"], route_names=["a", "b"])
    if network == "shared":
        taus = list(_SHARED["rtt_mp"]) + [_SHARED["rtt_sp"]]
        return Network(np.ones((1, 3)), [np.inf], taus, [0, 0, 1], [algorithm, "reno"],
                       loss=[_SHARED["loss"]], source_names=["mptcp", "tcp"],
                       route_names=["mp1", "mp2", "sp"])
    if network == "khalili":
        n1 = _KHALILI["n1"] if n1 is None else n1
        n2 = _KHALILI["n2"] if n2 is None else n2
        c = _KHALILI["capacity_bps"] / (8 * WIRE_BYTES)
        R = 2 * n1 + n2
        routing = np.zeros((2, R))
        for u in range(n1):
            routing[0, 2 * u] = 1
            routing[1, 2 * u + 1] = 1
        routing[1, 2 * n1:] = 1
        owner = [u for u in range(n1) for _ in range(2)] + list(range(n1, n1 + n2))
        names = [f"mp{u}" for u in range(n1)] + [f"sp{u}" for u in range(n2)]
        routes = [f"mp{u}.{l}" for u in range(n1) for l in (1, 2)] + [f"sp{u}" for u in range(n2)]
        return Network(routing, [c, c], _KHALILI["rtt"], owner, [algorithm] * n1 + ["reno"] * n2,
                       source_names=names, route_names=routes)
    raise ValueError(f"unknown cross-validation network {network!r}; allowed: {', '.join(NETWORKS)}")


def fluid_prediction(network: str, algorithm: str, **kw) -> pd.DataFrame:
    """Expected per-flow and per-subflow rates of the fluid model.

    Parameters
    ----------
    network : {"two_paths", "shared", "khalili"}
    algorithm : str
    **kw
        ``n1``, ``n2`` for the Khalili network.

    Returns
    -------
    pandas.DataFrame
        One row per subflow (``flow``, ``subflow``, ``path``) plus one per flow with
        ``subflow = -1``: ``fluid_pps`` (packets/s), ``fluid_mbps`` (1500-byte packets),
        ``calibrated_pps`` (times :data:`SAWTOOTH_FACTOR`), ``share`` (of all traffic), and
        ``price`` (route loss probability).
    """
    net = fluid_network(network, algorithm, **kw)
    eq = solve_equilibrium(net)
    rows = []
    total = eq.x.sum()
    for s, idx in enumerate(net.groups):
        for j, r in enumerate(idx):
            rows.append({"flow": net.source_names[s], "subflow": j, "path": net.route_names[r],
                         "fluid_pps": eq.x[r], "price": eq.q[r]})
        rows.append({"flow": net.source_names[s], "subflow": -1, "path": "",
                     "fluid_pps": eq.x[idx].sum(), "price": np.nan})
    df = pd.DataFrame(rows)
    df["fluid_mbps"] = df.fluid_pps * WIRE_BYTES * 8 / 1e6
    df["calibrated_pps"] = df.fluid_pps * SAWTOOTH_FACTOR
    df["share"] = df.fluid_pps / total
    df.insert(0, "algorithm", get_algorithm(algorithm).title)
    df.insert(0, "network", network)
    df.attrs["residual"] = eq.residual
    return df


def scenario(network: str, algorithm: str, duration: float = 100.0, seeds=(1, 2, 3), **kw) -> dict:
    """The scenario dict (for :func:`pathpool.run`) matching :func:`fluid_network`.

    Every path's ACKs return over an uncongested fixed delay equal to the forward delay, so the
    propagation RTT equals the fluid model's ``tau``.

    Parameters
    ----------
    network : {"two_paths", "shared", "khalili"}
    algorithm : str
        e.g. ``"lia"`` or ``"ewtcp(a=1)"``.
    duration : float
        Simulated seconds.
    seeds : sequence of int
    **kw
        ``n1``, ``n2`` for the Khalili network.

    Returns
    -------
    dict
    """
    name, params = _split(algorithm)

    def ms(t):
        return f"{t * 1e3:g}ms"

    def mpflow(fname, paths):
        f = {"name": fname, "kind": "mptcp", "paths": paths, "algorithm": name, "start_jitter": "1s"}
        if params:
            f["params"] = params
        return f

    def spflow(fname, path):
        return {"name": fname, "kind": "tcp", "path": path, "algorithm": "reno", "start_jitter": "1s"}

    big = {"rate": "100Mbps", "buffer": "1000pkt"}
    if network == "two_paths":
        links = [dict(name=f"l{p}", delay=ms(t / 2), loss=l, **big)
                 for p, t, l in zip("ab", _TWO["rtt"], _TWO["loss"])]
        paths = [{"name": p, "links": [f"l{p}"], "ack_delay": ms(t / 2)} for p, t in zip("ab", _TWO["rtt"])]
        flows = [mpflow("mptcp", ["a", "b"])]
    elif network == "shared":
        # the bottleneck carries the loss and no delay; per-path access links carry the delay
        links = [dict(name="bottleneck", delay="0ms", loss=_SHARED["loss"], **big)]
        taus = {"mp1": _SHARED["rtt_mp"][0], "mp2": _SHARED["rtt_mp"][1], "sp": _SHARED["rtt_sp"]}
        links += [dict(name=f"acc_{p}", delay=ms(t / 2), **big) for p, t in taus.items()]
        paths = [{"name": p, "links": [f"acc_{p}", "bottleneck"], "ack_delay": ms(t / 2)} for p, t in taus.items()]
        flows = [mpflow("mptcp", ["mp1", "mp2"]), spflow("tcp", "sp")]
    elif network == "khalili":
        n1 = kw.get("n1") or _KHALILI["n1"]
        n2 = kw.get("n2") or _KHALILI["n2"]
        t = _KHALILI["rtt"]
        bdp = int(_KHALILI["capacity_bps"] * t / (8 * WIRE_BYTES))
        links = [{"name": f"link{i}", "rate": "10Mbps", "delay": ms(t / 2), "buffer": f"{bdp}pkt"} for i in (1, 2)]
        paths = [{"name": f"p{i}", "links": [f"link{i}"], "ack_delay": ms(t / 2)} for i in (1, 2)]
        flows = [mpflow(f"mp{u}", ["p1", "p2"]) for u in range(n1)] + [spflow(f"sp{u}", "p2") for u in range(n2)]
    else:
        raise ValueError(f"unknown cross-validation network {network!r}; allowed: {', '.join(NETWORKS)}")
    return {
        "name": f"crossval_{network}_{name}",
        "description": f"fluid-model cross-validation ({network}, {algorithm}); pathpool.analysis.crossval",
        "duration": f"{duration:g}s",
        "seeds": list(seeds),
        "links": links,
        "paths": paths,
        "flows": flows,
    }


def compare(network: str, algorithm: str, duration: float = 100.0, seeds=(1, 2, 3), **kw) -> pd.DataFrame:
    """Run the simulator on :func:`scenario` and put its long-run rates beside the fluid model.

    Rates are mean goodput over the run (seeds averaged) in packets/s of ``MSS_BYTES`` payload.

    Returns
    -------
    pandas.DataFrame
        :func:`fluid_prediction`'s columns plus ``sim_pps``, ``sim_share``, ``err_raw``
        (``sim/fluid - 1``), ``err_calibrated`` (``sim/calibrated - 1``) and ``err_share``
        (``sim_share - share``).
    """
    import pathpool

    pred = fluid_prediction(network, algorithm, **kw)
    res = pathpool.run(scenario(network, algorithm, duration, seeds, **kw))
    sub = res.subflows.groupby(["flow", "subflow"], as_index=False)["goodput_bps"].mean()
    sub["sim_pps"] = sub.goodput_bps / (8 * MSS_BYTES)
    flows = res.flows.groupby("flow", as_index=False)["goodput_bps"].mean()
    flows["sim_pps"] = flows.goodput_bps / (8 * MSS_BYTES)
    flows["subflow"] = -1
    sim = pd.concat([sub[["flow", "subflow", "sim_pps"]], flows[["flow", "subflow", "sim_pps"]]])
    out = pred.merge(sim, on=["flow", "subflow"], how="left")
    total = out.loc[out.subflow == -1, "sim_pps"].sum()
    out["sim_share"] = out.sim_pps / total
    out["err_raw"] = out.sim_pps / out.fluid_pps - 1
    out["err_calibrated"] = out.sim_pps / out.calibrated_pps - 1
    out["err_share"] = out.sim_share - out.share
    return out
