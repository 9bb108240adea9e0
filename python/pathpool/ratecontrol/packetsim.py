"""Pluntke & Rio's rate controllers driving the packet-level simulator.

The simulator's ``kind = "rate"`` flow (``crates/pathpool-sim/src/rate/``) is a paced multipath
sender with FEC blocks and a deadline; its receiver reports cumulative per-path counters (sent,
lost, arrived, late, RTT and one-way-delay sums) back to the sender over a return route, every
``feedback_interval``. :func:`run_rate_flow` steps the simulation (``pathpool._core.Simulation``)
one control interval at a time: it reads the feedback that has reached the sender, feeds it to the
same sliding-window estimator and controllers as :func:`pathpool.ratecontrol.run_stream`
(:class:`~pathpool.ratecontrol.stream.MptcpEquationController`,
:class:`~pathpool.ratecontrol.stream.OptimisingController`), and sets the new per-path rates and
FEC source count. Everything else in the network (TCP flows, queues, losses) is the simulator's.

:func:`friendliness` measures the result the way Pluntke & Rio 2011, eq. (1) asks: on a bottleneck the rate
flow shares with TCP flows, its throughput against the mean TCP flow's; and whether its measured
per-path rates lie in the TCP-friendly region computed from the loss rates and RTTs it measured.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from pathpool import _core
from pathpool.errors import ScenarioError, SimulationError
from pathpool.ratecontrol.equations import tcp_rate
from pathpool.ratecontrol.region import friendliness_violation
from pathpool.ratecontrol.stream import (
    Feedback,
    MptcpEquationController,
    OptimisingController,
    StreamConfig,
    WindowEstimator,
    fec_source_count,
)
from pathpool.sim.results import Results
from pathpool.sim.scenario import RATE_CONTROLLERS, ScenarioLike, load_scenario

__all__ = ["CONTROLLERS", "PacketSimResult", "friendliness", "run_rate_flow"]

#: Controller names a rate flow may be driven by; ``"fixed"`` keeps the scenario's initial rates.
#: The controllers a rate flow can be driven by: the labels the scenario validator accepts.
CONTROLLERS = RATE_CONTROLLERS

LOSS_MEASURES = ("packets", "events")

FEEDBACK_FIELDS = ("sent", "lost", "arrived", "late", "rtt_sum", "rtt_sq_sum", "delay_sum", "delay_sq_sum")


@dataclass
class PacketSimResult:
    """Output of :func:`run_rate_flow`.

    Attributes
    ----------
    results : pathpool.sim.Results
        The simulator's tables for the whole run (flows, subflows, links, series, stats).
    intervals : pandas.DataFrame
        One row per control step: ``t`` (s, when the decision was taken), ``controller``,
        ``reports`` (receiver reports that arrived in the step), ``sent_pps`` (sender),
        ``source_sent_pps``, ``goodput_pps`` (in-time decoded source packets reported),
        ``k`` and ``fec_ratio`` in force during the step, ``decided`` (whether rates were set).
    paths : pandas.DataFrame
        One row per step and path (long form): ``rate_pps`` in force during the step, the
        sender's ``sender_sent``, the feedback counters (``sent, lost, arrived, late, rtt_sum,
        rtt_sq_sum, delay_sum, delay_sq_sum``), and the estimates after the step (``p_hat,
        rtt_mean_hat, rtt_var_hat, delay_mean_hat, late_hat``).
    flow : str
        The rate flow that was driven.
    controller : str
    loss_measure : str
    seed : int
    interval : float
        Control interval, seconds.
    config : StreamConfig
        Controller settings used (deadline, block length, probing, estimation window, ...).
    """

    results: Results
    intervals: pd.DataFrame
    paths: pd.DataFrame
    flow: str
    controller: str
    loss_measure: str
    seed: int
    interval: float
    config: StreamConfig = field(repr=False)


def _pick_flow(sim: Any, flow: str | None, origin: str) -> str:
    names = list(sim.rate_flows())
    if flow is not None:
        return flow  # the core names the alternatives if it is wrong
    if len(names) != 1:
        raise ScenarioError(
            f"{'no' if not names else len(names)} flows of kind \"rate\"; "
            + ("add one (see `pathpool scenarios schema`)" if not names else f"name one with flow=: {', '.join(names)}"),
            origin=origin, field="flows",
        )
    return names[0]


def run_rate_flow(
    scenario: ScenarioLike,
    controller: str | Any | None = None,
    interval: float | None = None,
    seed: int | None = None,
    flow: str | None = None,
    loss_measure: str = "packets",
    **options: Any,
) -> PacketSimResult:
    """Run a scenario with its rate flow driven by one of Pluntke & Rio's controllers.

    Parameters
    ----------
    scenario : str, os.PathLike, dict or pathpool.Scenario
        A simulator scenario with a ``kind = "rate"`` flow.
    controller : {"mptcp", "optimised", "fixed"} or object, optional
        Default: the flow's ``controller`` field. An object with ``rates(est, cfg) -> rates`` and
        a ``name`` attribute is used as is.
    interval : float, optional
        Control interval, seconds (default: the flow's ``feedback_interval``). Decisions are
        taken at ``start + m * interval + report delay + 1 ms``, just after the report made at
        ``start + m * interval`` reaches the sender over an idle return route.
    seed : int, optional
        Default: the scenario's first seed. Same scenario, controller and seed give identical
        results.
    flow : str, optional
        The rate flow to drive, if the scenario has several.
    loss_measure : {"packets", "events"}, default "packets"
        The loss rate ``p`` the controller's equations use: ``"packets"`` = lost packets / sent
        (Pluntke & Rio's "loss rate", what their run draws); ``"events"`` = TFRC loss events / sent
        (RFC 5348 section 5.2: losses within one RTT of an event's start are one event), the
        quantity the TCP throughput equations are derived for. FEC is always sized from the
        packet loss rate (it must repair every lost packet).
    **options
        :class:`~pathpool.ratecontrol.stream.StreamConfig` fields for the controller, e.g.
        ``estimation_window=20.0``, ``probe_fraction=0.05``, ``target_residual_loss=0.01``,
        ``late_bound="chebyshev"``, ``tcp_formula="sqrt2"``, ``mptcp_cap=True``.
        ``deadline`` and ``block_length`` come from the scenario.

    Returns
    -------
    PacketSimResult

    Raises
    ------
    ScenarioError
        Bad scenario, or no (or an ambiguous) rate flow.
    SimulationError
        The simulator refused an input (e.g. an unknown flow name) or failed.
    ValueError
        Unknown controller name or option.
    """
    sc = load_scenario(scenario)
    seed = int(sc.seeds[0] if seed is None else seed)
    wall0 = time.perf_counter()
    sim = _core.Simulation(sc.text, sc.origin, seed)
    name = _pick_flow(sim, flow, sc.origin)
    info = sim.rate_info(name)
    ctrl_name = info["controller"] if controller is None else controller
    if isinstance(ctrl_name, str):
        if ctrl_name not in CONTROLLERS:
            raise ValueError(f"unknown controller {ctrl_name!r}; allowed: {', '.join(CONTROLLERS)}")
        label = ctrl_name
    else:
        label = str(getattr(ctrl_name, "name", type(ctrl_name).__name__))
    bad = set(options) - set(StreamConfig.__dataclass_fields__) | ({"deadline", "block_length"} & set(options))
    if bad:
        raise ValueError(f"options not allowed: {sorted(bad)}; allowed: StreamConfig fields except deadline, block_length")
    cfg = replace(StreamConfig(paths=()), deadline=info["deadline_s"], block_length=int(info["block_length"]),
                  source=sc.origin, seed=seed, **options)
    mptcp_cap = cfg.mptcp_cap
    ctrl = {"mptcp": lambda: MptcpEquationController(mptcp_cap), "optimised": OptimisingController,
            "fixed": lambda: None}[ctrl_name]() if isinstance(ctrl_name, str) else ctrl_name
    T = float(info["feedback_interval_s"] if interval is None else interval)
    if not (math.isfinite(T) and T > 0):
        raise ValueError(f"interval = {interval!r}: must be a time > 0 (seconds)")
    if loss_measure not in LOSS_MEASURES:
        raise ValueError(f"unknown loss_measure {loss_measure!r}; allowed: {', '.join(LOSS_MEASURES)}")
    n_paths = len(info["paths"])
    bins = max(1, round(cfg.estimation_window / T))
    # Two windows over the same reports: the controller's (loss = packets or TFRC events) and
    # FEC's (loss = packets).
    estimator = WindowEstimator(n_paths, bins)
    fec_estimator = WindowEstimator(n_paths, bins) if loss_measure == "events" else estimator
    rates = np.asarray(info["rates"], dtype=float)
    k = int(info["source_per_block"])
    lag = float(info["report_delay_s"]) + 1e-3
    end = float(sim.end_s)
    rows: list[dict[str, Any]] = []
    prow: list[dict[str, Any]] = []
    m = 1
    while True:
        t = info["start_s"] + m * T + lag
        if t > end:
            break
        sim.run_until(t)
        fb = sim.rate_feedback(name)
        decided = False
        est = None
        if fb["reports"] > 0:
            arrays = {f: np.asarray(fb[f], dtype=float) for f in FEEDBACK_FIELDS}
            if loss_measure == "events":
                fec_est = fec_estimator.update(Feedback(**arrays))
                arrays["lost"] = np.asarray(fb["loss_events"], dtype=float)
            est = estimator.update(Feedback(**arrays))
            if loss_measure == "packets":
                fec_est = est
        rows.append({"t": t, "controller": label, "reports": int(fb["reports"]),
                         "sent_pps": float(sum(fb["sender_sent"])) / T, "source_sent_pps": fb["source_sent"] / T,
                         "goodput_pps": fb["decoded_source"] / T, "k": k, "fec_ratio": (cfg.block_length - k) / cfg.block_length,
                         "decided": False})
        for r in range(n_paths):
            row = {"t": t, "path": info["paths"][r], "path_index": r, "controller": label, "rate_pps": float(rates[r]),
                       "sender_sent": int(fb["sender_sent"][r])}
            row.update({f: float(fb[f][r]) for f in FEEDBACK_FIELDS})
            row["loss_events"] = float(fb["loss_events"][r])
            last = estimator.last
            for a, b in (("p_hat", "p"), ("rtt_mean_hat", "rtt_mean"), ("rtt_var_hat", "rtt_var"),
                         ("delay_mean_hat", "delay_mean"), ("late_hat", "late")):
                row[a] = float(getattr(last, b)[r]) if last is not None else math.nan
            prow.append(row)
        if ctrl is not None and est is not None and estimator.ready() and fec_estimator.ready():
            new = np.asarray(ctrl.rates(est, cfg), dtype=float)
            if new.shape != (n_paths,) or not np.all(np.isfinite(new)) or np.any(new < 0):
                raise SimulationError(f"controller {label!r} returned invalid rates {new.tolist()} at t = {t:.3f} s")
            k = int(fec_source_count(fec_est, new, cfg))
            sim.set_rates(name, new.tolist(), k)
            rates = new
            decided = True
        rows[-1]["decided"] = decided
        m += 1
    raw = sim.finish()
    results = Results.from_core(sc, (seed,), [raw], time.perf_counter() - wall0)
    return PacketSimResult(results, pd.DataFrame(rows), pd.DataFrame(prow), name, label, loss_measure, seed, T, cfg)


def _scenario_tables(res: PacketSimResult) -> dict[str, Any]:
    """The run's validated scenario (SI units, defaults filled, ``count`` expanded)."""
    return res.results.scenario.spec


def friendliness(res: PacketSimResult, warmup: float = 20.0, link: str | None = None) -> dict[str, Any]:
    """TCP-friendliness of the rate flow in a finished run.

    Parameters
    ----------
    res : PacketSimResult
    warmup : float, default 20
        Seconds left out at the start (estimation window filling, TCP slow start).
    link : str, optional
        The shared bottleneck; default: the slowest link that one of the rate flow's paths
        shares with TCP flows.

    Returns
    -------
    dict
        ``link``, ``shared_paths`` (the rate flow's paths through it; ``shared_path`` the
        first), ``tcp_flows`` (names), ``tcp_bps`` and ``tcp_mean_bps`` (the
        TCP flows' goodput, payload bits/s delivered), ``rate_flow_arrived_bps`` (payload bits/s
        of the rate flow's packets that arrived over the shared paths, in time or not),
        ``rate_flow_sent_bps`` (its wire bits/s sent on them), ``ratio`` (arrived payload
        over the mean TCP goodput: the friendliness number), ``ratio_sent`` (sent payload over
        the mean TCP goodput), ``per_path`` (measured loss rate ``p = max(lost, 1)/sent``, TFRC
        loss event rate ``p_events``, mean RTT, sending rate, and the TCP rates for each loss
        measure and formula) and ``region`` (per ``"packets"|"events"/"sqrt2"|"sqrt3/2"``:
        ``violation_pps`` of Pluntke & Rio 2011, eq. (1), ``max_S (sum_S x - max_S x^TCP)``, <= 0 means
        inside the TCP-friendly region, and ``violation_rel``, the same over the largest
        x^TCP), plus the stream's ``rate_flow_goodput_pps`` and ``rate_flow_fec_ratio``.

    Notes
    -----
    TCP throughput comes from the ``goodput_bps`` time series (the scenario needs
    ``[metrics] interval``); the rate flow's from its per-step feedback (packets that arrived
    on the shared path, in time or not) and the sender's counts, over the same window.
    """
    sc = _scenario_tables(res)
    paths = {p["name"]: p for p in sc["paths"]}
    flows = sc["flows"]
    rate_spec = next(f for f in flows if f["name"] == res.flow)
    rate_paths = list(rate_spec["paths"])
    tcp_names: dict[str, list[str]] = {}
    for f in flows:
        if f["kind"] != "tcp":
            continue
        for l in paths[f["paths"][0]]["links"]:
            tcp_names.setdefault(l, []).append(f["name"])

    lk = res.results.links
    link_rate = dict(zip(lk["link"], lk["rate_bps"]))

    candidates = [l for p in rate_paths for l in paths[p]["links"] if tcp_names.get(l)]
    if link is None:
        if not candidates:
            raise ValueError(f"flow {res.flow!r} shares no link with a TCP flow")
        link = min(candidates, key=lambda name: link_rate[name])
    if link not in tcp_names:
        raise ValueError(f"link {link!r} carries no TCP flow; candidates: {sorted(set(candidates))}")
    shared_paths = [p for p in rate_paths if link in paths[p]["links"]]
    r_shared = [rate_paths.index(p) for p in shared_paths]
    tcp = sorted(set(tcp_names[link]))
    series = res.results.series
    s = series[(series.entity == "flow") & (series.metric == "goodput_bps") & (series.time_s > warmup)]
    tcp_bps = np.array([s[s.id == n].value.mean() for n in tcp])
    # Each row covers the control step (t - interval, t]: keep the steps wholly after the warm-up.
    pf = res.paths[res.paths.t - res.interval >= warmup]
    steps = pf.t.nunique()
    if steps == 0:
        raise ValueError(f"no control step after warmup = {warmup} s")
    span = steps * res.interval
    sub = pf[pf.path_index.isin(r_shared)]
    mss = int(rate_spec["mss"])
    wire = (mss + 52) * 8
    arrived_pps = sub.arrived.sum() / span
    sent_pps = sub.sender_sent.sum() / span
    per_path = []
    agg = pf.groupby("path_index").sum(numeric_only=True)
    p_meas = np.maximum(agg.lost, 1.0) / agg.sent
    p_events = np.maximum(agg.loss_events, 1.0) / agg.sent
    rtt_meas = agg.rtt_sum / agg.arrived
    x_meas = pf.groupby("path_index").sender_sent.sum() / span
    region = {}
    for measure, pm in (("packets", p_meas), ("events", p_events)):
        for formula in ("sqrt2", "sqrt3/2"):
            x_tcp = tcp_rate(pm.to_numpy(), rtt_meas.to_numpy(), formula)
            v = friendliness_violation(x_meas.to_numpy(), x_tcp)
            region[f"{measure}/{formula}"] = {"x_tcp_pps": x_tcp.tolist(), "violation_pps": v,
                                                 "violation_rel": v / float(np.max(x_tcp))}
    for r, pth in enumerate(rate_paths):
        per_path.append(dict(path=pth, p=float(p_meas.iloc[r]), p_events=float(p_events.iloc[r]),
                             rtt_s=float(rtt_meas.iloc[r]), rate_pps=float(x_meas.iloc[r]),
                             **{f"x_tcp_{k.replace('/', '_')}_pps": v["x_tcp_pps"][r] for k, v in region.items()}))
    tcp_mean = float(np.mean(tcp_bps))
    return {
        "link": link, "shared_path": shared_paths[0], "shared_paths": shared_paths, "tcp_flows": tcp, "warmup_s": warmup, "window_s": float(span),
        "tcp_bps": tcp_bps.tolist(), "tcp_mean_bps": tcp_mean,
        "rate_flow_arrived_bps": float(arrived_pps * mss * 8), "rate_flow_sent_bps": float(sent_pps * wire),
        "ratio": float(arrived_pps * mss * 8 / tcp_mean), "ratio_sent": float(sent_pps * mss * 8 / tcp_mean),
        "per_path": per_path, "region": region,
        "rate_flow_goodput_pps": float(res.intervals[res.intervals.t - res.interval >= warmup].goodput_pps.mean()),
        "rate_flow_fec_ratio": float(res.intervals[res.intervals.t - res.interval >= warmup].fec_ratio.mean()),
    }
