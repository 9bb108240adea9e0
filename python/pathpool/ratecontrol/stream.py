"""Packet-level simulation of Pluntke & Rio's live-streaming run (Figure 1).

The sender emits a paced stream of FEC blocks (``n`` packets: ``k`` source, ``n - k`` repair), spreads
the packets over the paths by smooth weighted round robin in proportion to the controller's rates,
and every feedback interval ``T`` receives the receiver's per-path measurements. Each packet on
path ``r`` is dropped with probability ``p_r`` (independently) and otherwise delivered after one draw
of the path's delay distribution. A source packet counts towards goodput when it, or the decoding of
its block (any ``k`` packets of the block arrived), reaches the receiver within the deadline of its
send time.

The control loop (:class:`Feedback` in, rates and FEC out) is the interface a packet-level
simulator needs to drive the same controllers; see ``README.md`` in this package.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pathpool.ratecontrol.equations import TCP_FORMULAS, mptcp_rates
from pathpool.ratecontrol.fec import choose_source_count
from pathpool.ratecontrol.objective import LATE_BOUNDS, late_bound, optimise

__all__ = [
    "ConfigError",
    "Estimates",
    "Feedback",
    "MptcpEquationController",
    "OptimisingController",
    "PathSpec",
    "StreamConfig",
    "StreamResult",
    "WindowEstimator",
    "default_config_path",
    "fec_source_count",
    "load_config",
    "published_numbers",
    "run_stream",
]

DELAY_MODELS = ("rtt", "half_rtt")
RTT_DISTRIBUTIONS = ("exponential", "gamma", "constant")
FEC_LOSS_MODELS = ("measured", "chebyshev")


def _scenario_dir() -> Path:
    from pathpool.data import scenarios_dir

    return scenarios_dir() / "pluntke2011"


def default_config_path() -> Path:
    """Path of the shipped reconstruction of Pluntke & Rio's run, ``scenarios/pluntke2011/fig1_stream.toml``."""
    return _scenario_dir() / "fig1_stream.toml"


def published_numbers() -> dict[str, float]:
    """Pluntke & Rio's published numbers, read from ``scenarios/pluntke2011/published.csv``."""
    df = pd.read_csv(_scenario_dir() / "published.csv")
    return {str(q): float(v) for q, v in zip(df["quantity"], df["value"])}


@dataclass(frozen=True)
class PathSpec:
    """One path of the streaming run.

    Attributes
    ----------
    loss : float
        Independent per-packet drop probability.
    rtt_mean : float
        Mean RTT (s).
    rtt_std : float
        RTT standard deviation (s); equals the mean for ``"exponential"``.
    distribution : str
        ``"exponential"`` (Pluntke & Rio 2011), ``"gamma"`` (mean and std) or ``"constant"``.
    """

    loss: float
    rtt_mean: float
    rtt_std: float
    distribution: str = "exponential"


@dataclass(frozen=True)
class StreamConfig:
    """Parameters of a streaming run (see ``scenarios/pluntke2011/fig1_stream.toml`` for their reasons)."""

    paths: tuple[PathSpec, ...]
    duration: float = 500.0
    switch_at: float = 250.0
    deadline: float = 0.300
    delay_model: str = "rtt"
    feedback_interval: float = 1.0
    estimation_window: float = 20.0
    initial_rate: float = 10.0
    settle: float = 20.0
    seed: int = 1
    block_length: int = 10
    target_residual_loss: float = 0.01
    fec_loss_model: str = "measured"
    probe_fraction: float = 0.05
    late_bound: str = "chebyshev"
    tcp_formula: str = "sqrt2"
    mptcp_cap: bool = True
    source: str = "<dict>"


class ConfigError(ValueError):
    """A scenario value is missing or not allowed; the message names the file and the field."""


def _get(table: dict, key: str, kind, where: str, src: str, default=None, allowed=None, check=None):
    if key not in table:
        if default is None:
            raise ConfigError(f"{src}: missing field {where}.{key}")
        return default
    v = table[key]
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise ConfigError(f"{src}: field {where}.{key} must be {kind.__name__}; got {v!r}")
    if allowed is not None and v not in allowed:
        raise ConfigError(f"{src}: field {where}.{key} = {v!r}; allowed values: {', '.join(map(str, allowed))}")
    if check is not None and not check[0](v):
        raise ConfigError(f"{src}: field {where}.{key} = {v!r}; must be {check[1]}")
    return v


def load_config(source: str | Path | dict | None = None) -> StreamConfig:
    """Read and validate a streaming scenario (TOML file or an equivalent dict).

    Parameters
    ----------
    source : str, pathlib.Path, dict or None
        A TOML file, a dict with the same tables, or ``None`` for the shipped scenario (``scenarios/pluntke2011/fig1_stream.toml``).

    Returns
    -------
    StreamConfig

    Raises
    ------
    ConfigError
        Naming the file and the field, with the allowed values.
    """
    if source is None:
        source = default_config_path()
    if isinstance(source, dict):
        data, src = source, "<dict>"
    else:
        src = str(source)
        try:
            with open(source, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            raise ConfigError(f"{src}: no such scenario file") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{src}: not valid TOML: {e}") from None
    pos = (lambda v: v > 0, "> 0")
    nonneg = (lambda v: v >= 0, ">= 0")
    st = data.get("stream", {})
    fe = data.get("fec", {})
    co = data.get("controller", {})
    d = StreamConfig.__dataclass_fields__
    paths_raw = data.get("path")
    if not isinstance(paths_raw, list) or not paths_raw:
        raise ConfigError(f"{src}: need at least one [[path]] table")
    paths = []
    for i, pt in enumerate(paths_raw):
        w = f"path[{i}]"
        loss = _get(pt, "loss", float, w, src, check=(lambda v: 0 < v < 1, "in (0, 1)"))
        mean = _get(pt, "rtt_mean_ms", float, w, src, check=pos) / 1000.0
        dist = _get(pt, "rtt_distribution", str, w, src, "exponential", RTT_DISTRIBUTIONS)
        if dist == "exponential":
            std = mean
        elif dist == "constant":
            std = 0.0
        else:
            std = _get(pt, "rtt_std_ms", float, w, src, check=pos) / 1000.0
        paths.append(PathSpec(loss, mean, std, dist))
    cfg = StreamConfig(
        paths=tuple(paths),
        duration=_get(st, "duration_s", float, "stream", src, d["duration"].default, check=pos),
        switch_at=_get(st, "switch_at_s", float, "stream", src, d["switch_at"].default, check=nonneg),
        deadline=_get(st, "deadline_ms", float, "stream", src, 300.0, check=pos) / 1000.0,
        delay_model=_get(st, "delay_model", str, "stream", src, "rtt", DELAY_MODELS),
        feedback_interval=_get(st, "feedback_interval_s", float, "stream", src, 1.0, check=pos),
        estimation_window=_get(st, "estimation_window_s", float, "stream", src, 20.0, check=pos),
        initial_rate=_get(st, "initial_rate_pps", float, "stream", src, 10.0, check=pos),
        settle=_get(st, "settle_s", float, "stream", src, 20.0, check=nonneg),
        seed=_get(st, "seed", int, "stream", src, 1, check=nonneg),
        block_length=_get(fe, "block_length", int, "fec", src, 10, check=(lambda v: 2 <= v <= 255, "in 2..255")),
        target_residual_loss=_get(fe, "target_residual_loss", float, "fec", src, 0.01,
                                  check=(lambda v: 0 < v < 1, "in (0, 1)")),
        fec_loss_model=_get(fe, "loss_model", str, "fec", src, "measured", FEC_LOSS_MODELS),
        probe_fraction=_get(co, "probe_fraction", float, "controller", src, 0.05,
                            check=(lambda v: 0 <= v < 1, "in [0, 1)")),
        late_bound=_get(co, "late_bound", str, "controller", src, "chebyshev", LATE_BOUNDS),
        tcp_formula=_get(co, "tcp_formula", str, "controller", src, "sqrt2", tuple(TCP_FORMULAS)),
        mptcp_cap=_get(co, "mptcp_cap", bool, "controller", src, True),
        source=src,
    )
    if cfg.switch_at > cfg.duration:
        raise ConfigError(f"{src}: field stream.switch_at_s = {cfg.switch_at} exceeds stream.duration_s = {cfg.duration}")
    return cfg


@dataclass
class Feedback:
    """The receiver's report for one feedback interval, per path (arrays of length n).

    Attributes
    ----------
    sent, lost, arrived, late : numpy.ndarray
        Packet counts sent on / dropped on / arrived over / arrived after the deadline on each path.
    rtt_sum, rtt_sq_sum : numpy.ndarray
        Sum and sum of squares of the RTT samples of arrived packets (s, s^2).
    delay_sum, delay_sq_sum : numpy.ndarray
        The same for the delivery delay held against the deadline.
    """

    sent: np.ndarray
    lost: np.ndarray
    arrived: np.ndarray
    late: np.ndarray
    rtt_sum: np.ndarray
    rtt_sq_sum: np.ndarray
    delay_sum: np.ndarray
    delay_sq_sum: np.ndarray


@dataclass
class Estimates:
    """Per-path estimates the controllers use.

    Attributes
    ----------
    p : numpy.ndarray
        Loss rate; at least one loss is assumed per window (``max(lost, 1) / sent``) so that an
        unlucky loss-free window never gives an infinite TCP rate.
    rtt_mean, rtt_var : numpy.ndarray
        RTT mean and (population) variance.
    delay_mean, delay_var : numpy.ndarray
        Mean and variance of the delay held against the deadline.
    late : numpy.ndarray
        Measured fraction of arrived packets later than the deadline.
    """

    p: np.ndarray
    rtt_mean: np.ndarray
    rtt_var: np.ndarray
    delay_mean: np.ndarray
    delay_var: np.ndarray
    late: np.ndarray

    def measured_loss(self) -> np.ndarray:
        """Measured drop-or-late probability per path, ``1 - (1 - p)(1 - late)``."""
        return 1.0 - (1.0 - self.p) * (1.0 - self.late)


class WindowEstimator:
    """Sliding-window sums of the last ``bins`` feedback reports (shared by :func:`run_stream`
    and the packet-level sender of :mod:`pathpool.ratecontrol.packetsim`)."""

    def __init__(self, n_paths: int, bins: int):
        self.bins = bins
        self.hist = np.zeros((bins, 8, n_paths))
        self.count = 0
        self.last: Estimates | None = None

    def update(self, fb: Feedback) -> Estimates:
        row = np.stack([fb.sent, fb.lost, fb.arrived, fb.late, fb.rtt_sum, fb.rtt_sq_sum,
                        fb.delay_sum, fb.delay_sq_sum])
        self.hist[self.count % self.bins] = row
        self.count += 1
        sent, lost, arr, late, rs, rq, ds, dq = self.hist.sum(axis=0)
        prev = self.last
        have = arr >= 2
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(sent > 0, np.maximum(lost, 1.0) / sent, np.nan)
            rm = np.where(have, rs / arr, np.nan)
            rv = np.where(have, np.maximum(rq / arr - rm**2, 0.0), np.nan)
            dm = np.where(have, ds / arr, np.nan)
            dv = np.where(have, np.maximum(dq / arr - dm**2, 0.0), np.nan)
            lt = np.where(have, late / arr, np.nan)
        est = Estimates(p, rm, rv, dm, dv, lt)
        for name in ("p", "rtt_mean", "rtt_var", "delay_mean", "delay_var", "late"):
            v = getattr(est, name)
            if prev is not None:
                np.copyto(v, getattr(prev, name), where=~np.isfinite(v))
        p = np.clip(np.nan_to_num(est.p, nan=0.5), 1e-6, 1 - 1e-6)
        est.p = p
        self.last = est
        return est

    def ready(self) -> bool:
        return self.last is not None and all(
            np.all(np.isfinite(getattr(self.last, k))) for k in ("p", "rtt_mean", "rtt_var", "delay_mean", "delay_var", "late"))


class MptcpEquationController:
    """Equation-based MPTCP rates (Pluntke & Rio 2011, Section 2) from the current estimates."""

    name = "mptcp"

    def __init__(self, cap: bool = True):
        self.cap = cap

    def rates(self, est: Estimates, cfg: StreamConfig) -> np.ndarray:
        """New per-path rates (packets/s)."""
        return mptcp_rates(est.p, est.rtt_mean, cap=self.cap).rates


class OptimisingController:
    """Pluntke & Rio's optimising controller (Section 3) from the current estimates."""

    name = "optimised"

    def rates(self, est: Estimates, cfg: StreamConfig) -> np.ndarray:
        """New per-path rates (packets/s)."""
        return optimise(est.p, est.rtt_mean, est.rtt_var, cfg.deadline, cfg.probe_fraction, cfg.late_bound,
                        tcp_formula=cfg.tcp_formula, delay_mean=est.delay_mean, delay_var=est.delay_var).rates


def fec_source_count(est: Estimates, rates: np.ndarray, cfg: StreamConfig) -> int:
    """Source packets per FEC block for the rate-weighted loss ``q`` the estimates give
    (``cfg.fec_loss_model``: measured loss + late fraction, or the Chebyshev late bound), from
    :func:`pathpool.ratecontrol.fec.choose_source_count`."""
    if cfg.fec_loss_model == "measured":
        q_path = est.measured_loss()
    else:
        q_path = 1.0 - (1.0 - est.p) * (1.0 - late_bound(est.delay_mean, est.delay_var, cfg.deadline, cfg.late_bound))
    q = float(np.clip(rates @ q_path / rates.sum(), 0.0, 1.0))
    return choose_source_count(cfg.block_length, q, cfg.target_residual_loss)[0]


@dataclass
class StreamResult:
    """Output of :func:`run_stream`.

    Attributes
    ----------
    intervals : pandas.DataFrame
        One row per feedback interval: time, controller, throughput, goodput, FEC ratio, residual loss.
    paths : pandas.DataFrame
        One row per interval and path: rate, estimates, bounds (long form).
    summary : dict
        Phase averages beside Pluntke & Rio's numbers.
    config : StreamConfig
    """

    intervals: pd.DataFrame
    paths: pd.DataFrame
    summary: dict[str, Any]
    config: StreamConfig = field(repr=False)


def _draw_rtts(rng: np.random.Generator, spec: PathSpec, size: int) -> np.ndarray:
    if spec.distribution == "exponential":
        return rng.exponential(spec.rtt_mean, size)
    if spec.distribution == "constant":
        return np.full(size, spec.rtt_mean)
    shape = (spec.rtt_mean / spec.rtt_std) ** 2
    return rng.gamma(shape, spec.rtt_mean / shape, size)


def run_stream(config: str | Path | dict | StreamConfig | None = None, seed: int | None = None,
               **overrides: Any) -> StreamResult:
    """Run the streaming experiment of Pluntke & Rio 2011, Figure 1.

    Parameters
    ----------
    config : path, dict, StreamConfig or None
        Scenario; ``None`` is the shipped reconstruction ``scenarios/pluntke2011/fig1_stream.toml``.
    seed : int, optional
        Overrides the scenario's seed. Same scenario and seed give identical results.
    **overrides
        Any :class:`StreamConfig` field (e.g. ``duration=60.0, block_length=20``).

    Returns
    -------
    StreamResult
    """
    cfg = config if isinstance(config, StreamConfig) else load_config(config)
    if seed is not None:
        overrides["seed"] = seed
    bad = set(overrides) - set(StreamConfig.__dataclass_fields__)
    if bad:
        raise ConfigError(f"unknown StreamConfig fields: {sorted(bad)}; allowed: {sorted(StreamConfig.__dataclass_fields__)}")
    cfg = replace(cfg, **overrides)
    n_paths = len(cfg.paths)
    rng = np.random.default_rng(cfg.seed)
    loss = np.array([s.loss for s in cfg.paths])
    T = cfg.feedback_interval
    n_int = round(cfg.duration / T)
    estimator = WindowEstimator(n_paths, max(1, round(cfg.estimation_window / T)))
    controllers = {"mptcp": MptcpEquationController(cfg.mptcp_cap), "optimised": OptimisingController()}
    nb = cfg.block_length
    rates = np.full(n_paths, cfg.initial_rate)
    k = math.ceil(nb / 2)  # no feedback yet: half the block is redundancy
    credit = 0.0
    swrr = [0.0] * n_paths
    rows, prow = [], []
    for i in range(n_int):
        t0 = i * T
        phase = "mptcp" if t0 < cfg.switch_at else "optimised"
        total = float(rates.sum())
        credit += total * T / nb
        blocks = int(credit)
        credit -= blocks
        npk = blocks * nb
        send = t0 + (np.arange(npk) + 0.5) * (T / max(npk, 1))
        # Smooth weighted round robin: each path's share of any prefix stays within one packet of x_r/X.
        w = rates.tolist()
        path = np.empty(npk, dtype=np.int64)
        for j in range(npk):
            best = 0
            for r in range(n_paths):
                swrr[r] += w[r]
                if swrr[r] > swrr[best]:
                    best = r
            swrr[best] -= total
            path[j] = best
        u = rng.random(npk)
        rtt = np.empty(npk)
        for r, spec in enumerate(cfg.paths):
            m = path == r
            rtt[m] = _draw_rtts(rng, spec, int(m.sum()))
        dropped = u < loss[path]
        delay = rtt if cfg.delay_model == "rtt" else rtt / 2.0
        arrival = np.where(dropped, np.inf, send + delay)
        if blocks:
            arr_b = arrival.reshape(blocks, nb)
            kth = np.partition(arr_b, k - 1, axis=1)[:, k - 1]
            due = send.reshape(blocks, nb)[:, :k] + cfg.deadline
            ok = (arr_b[:, :k] <= due) | (kth[:, None] <= due)
            good = int(ok.sum())
            direct = int((arr_b[:, :k] <= due).sum())
        else:
            good = direct = 0
        src = blocks * k
        arrived = ~dropped
        late = arrived & (delay > cfg.deadline)
        fb = Feedback(
            sent=np.bincount(path, minlength=n_paths).astype(float),
            lost=np.bincount(path, weights=dropped, minlength=n_paths),
            arrived=np.bincount(path, weights=arrived, minlength=n_paths),
            late=np.bincount(path, weights=late, minlength=n_paths),
            rtt_sum=np.bincount(path, weights=np.where(arrived, rtt, 0.0), minlength=n_paths),
            rtt_sq_sum=np.bincount(path, weights=np.where(arrived, rtt**2, 0.0), minlength=n_paths),
            delay_sum=np.bincount(path, weights=np.where(arrived, delay, 0.0), minlength=n_paths),
            delay_sq_sum=np.bincount(path, weights=np.where(arrived, delay**2, 0.0), minlength=n_paths),
        )
        rows.append({"t": t0, "controller": phase, "packets": npk, "source_packets": src, "on_time_source": good,
                         "throughput_pps": npk / T, "goodput_pps": good / T, "fec_ratio": (nb - k) / nb, "k": k,
                         "residual_loss": (1.0 - good / src) if src else np.nan,
                         "loss_before_fec": (1.0 - direct / src) if src else np.nan})
        est = estimator.update(fb)
        for r in range(n_paths):
            prow.append({"t": t0, "path": r, "controller": phase, "rate_pps": rates[r], "sent": fb.sent[r], "lost": fb.lost[r],
                             "late": fb.late[r], "p_hat": est.p[r], "rtt_mean_hat": est.rtt_mean[r],
                             "rtt_var_hat": est.rtt_var[r], "late_hat": est.late[r]})
        if estimator.ready():
            next_phase = "mptcp" if (i + 1) * T < cfg.switch_at else "optimised"
            rates = np.asarray(controllers[next_phase].rates(est, cfg), dtype=float)
            k = fec_source_count(est, rates, cfg)
    intervals = pd.DataFrame(rows)
    paths = pd.DataFrame(prow)
    return StreamResult(intervals, paths, _summarise(intervals, paths, cfg), cfg)


def _phase_stats(df: pd.DataFrame, pf: pd.DataFrame, lo: float, hi: float, n_paths: int) -> dict[str, Any]:
    sel = df[(df.t >= lo) & (df.t < hi)]
    psel = pf[(pf.t >= lo) & (pf.t < hi)]
    if sel.empty:
        return {}
    src = int(sel.source_packets.sum())
    return {
        "window_s": [float(lo), float(hi)],
        "goodput_pps": float(sel.goodput_pps.mean()),
        "throughput_pps": float(sel.throughput_pps.mean()),
        "fec_ratio": float(sel.fec_ratio.mean()),
        "residual_loss": float(1.0 - sel.on_time_source.sum() / src) if src else None,
        "loss_before_fec": float(1.0 - (1.0 - sel.loss_before_fec) @ sel.source_packets / src) if src else None,
        "rates_pps": [float(psel[psel.path == r].rate_pps.mean()) for r in range(n_paths)],
    }


def _summarise(df: pd.DataFrame, pf: pd.DataFrame, cfg: StreamConfig) -> dict[str, Any]:
    n = len(cfg.paths)
    mp = _phase_stats(df, pf, cfg.settle, cfg.switch_at, n)
    op = _phase_stats(df, pf, cfg.switch_at + cfg.settle, cfg.duration, n)
    try:
        pub = published_numbers()
    except FileNotFoundError:
        pub = {}
    out: dict[str, Any] = {
        "scenario": cfg.source,
        "seed": cfg.seed,
        "config": {k: (list(map(vars, v)) if k == "paths" else v) for k, v in vars(cfg).items()},
        "mptcp": mp,
        "optimised": op,
    }
    if mp and op and mp["goodput_pps"] > 0:
        out["goodput_increase"] = op["goodput_pps"] / mp["goodput_pps"] - 1.0
    if pub:
        out["published"] = {
            "mptcp": {"goodput_pps": pub.get("mptcp_goodput"), "fec_ratio": pub.get("mptcp_fec_ratio"),
                      "rates_pps": [pub.get(f"mptcp_rate_path{r}") for r in (1, 2, 3)]},
            "optimised": {"goodput_pps": pub.get("optimised_goodput"), "fec_ratio": pub.get("optimised_fec_ratio")},
            "goodput_increase": pub.get("goodput_increase"),
            "switch_at_s": pub.get("switch_time"),
            "source": "the shipped pluntke2011/published.csv (Pluntke & Rio 2011)",
        }
    return out
