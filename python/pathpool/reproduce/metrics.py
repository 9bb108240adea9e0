"""Per-run metrics of each experiment, from the simulator's tidy tables.

Every function takes the merged sweep tables of one experiment (rows tagged ``experiment``,
``algorithm``, ``x`` by :mod:`pathpool.reproduce.experiments`) and returns long-form rows
``experiment, algorithm, x, seed, metric, value``: one value per run, so that means and
confidence intervals are over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from pathpool.reproduce.experiments import Experiment, Options
from pathpool.sim.results import jain_index

__all__ = ["METRICS", "compute", "recovery_time"]

#: The job tag naming the algorithm under test ("algorithm" is a column of the flows table).
ALG = "run_algorithm"


def _of(flows: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Rows of flows named ``n`` or ``n-<k>`` (``count`` expands names) for ``n`` in ``names``."""
    base = flows["flow"].str.replace(r"-\d+$", "", regex=True)
    return flows[flows["flow"].isin(names) | base.isin(names)]


def _rows(groups: dict[tuple, dict[str, float]], exp: str) -> list[dict]:
    out = []
    for (alg, x, seed), metrics in groups.items():
        for m, v in metrics.items():
            out.append({"experiment": exp, "algorithm": alg, "x": x, "seed": int(seed), "metric": m, "value": float(v)})
    return out


def _per_run(t: dict[str, pd.DataFrame], e: Experiment, fn: Callable[[pd.DataFrame], dict[str, float]]) -> list[dict]:
    flows = t["flows"]
    groups = {}
    for key, df in flows.groupby([ALG, "x", "seed"], dropna=False, sort=False):
        groups[key] = fn(df)
    return _rows(groups, e.key)


def download(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """RSF test bed: mean per-connection throughput (file size / download time), Mbps.

    A download that did not finish within the run counts with its goodput so far (a lower
    bound) and is counted in ``incomplete``.
    """
    names = e.spec["flows"]

    def fn(df: pd.DataFrame) -> dict[str, float]:
        f = _of(df, names)
        return {
            "throughput_mbps": f["goodput_bps"].mean() / 1e6,
            "jain": jain_index(f["goodput_bps"].to_numpy()),
            "incomplete": float(f["completion_time_s"].isna().sum()),
        }

    return _per_run(t, e, fn)


def jain(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """Jain's index of the connections' throughputs (and the throughput itself)."""
    return download(t, e, o)


def friendliness(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """Aggregate goodput of the multipath user(s) and of the single-path users, Mbps."""
    mp, sp = e.spec["flows"], e.spec.get("sp_flows", [])

    def fn(df: pd.DataFrame) -> dict[str, float]:
        out = {"mptcp_mbps": _of(df, mp)["goodput_bps"].sum() / 1e6}
        if sp:
            out["sptcp_mbps"] = _of(df, sp)["goodput_bps"].sum() / 1e6
        return out

    return _per_run(t, e, fn)


def khalili(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """Aggregate goodput of type-1 and of type-2 users, Mbps."""
    t1, t2 = e.spec["flows"], e.spec["sp_flows"]

    def fn(df: pd.DataFrame) -> dict[str, float]:
        return {
            "type1_mbps": _of(df, t1)["goodput_bps"].sum() / 1e6,
            "type2_mbps": _of(df, t2)["goodput_bps"].sum() / 1e6,
        }

    return _per_run(t, e, fn)


def recovery_time(time_s: np.ndarray, cwnd: np.ndarray, reference: tuple[float, float], leave: float) -> tuple[float, bool]:
    """Peng et al. 2016, Table V footnote: first time after ``leave`` that ``cwnd`` reaches its average.

    Parameters
    ----------
    time_s, cwnd : arrays
        The window's samples.
    reference : (t0, t1)
        The period whose mean window is "the average congestion window".
    leave : float
        When the single-path users left.

    Returns
    -------
    (seconds, censored)
        Seconds from ``leave``; if the window never got back, the time to the last sample and
        ``censored = True``.
    """
    ref = (time_s >= reference[0]) & (time_s < reference[1])
    if not ref.any():
        return math.nan, True
    target = float(np.mean(cwnd[ref]))
    after = time_s >= leave
    hit = np.nonzero(after & (cwnd >= target))[0]
    if hit.size:
        return float(time_s[hit[0]] - leave), False
    return float(time_s[after][-1] - leave) if after.any() else math.nan, True


def responsiveness(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """SP-TCP aggregate throughput while present, and the second path's window recovery time."""
    mp, sp = e.spec["flows"][0], e.spec["sp_flows"]
    ref = tuple(v * o.time_scale for v in e.spec["reference"])
    leave = e.spec["sp_window"][1] * o.time_scale
    s = t["series"]
    s = s[(s["entity"] == "subflow") & (s["metric"] == "cwnd") & (s["id"] == f"{mp}/1")]
    # NaN != NaN, so key the lookup on x's text.
    series = {(a, repr(x), sd): g for (a, x, sd), g in s.groupby([ALG, "x", "seed"], dropna=False, sort=False)}
    groups = {}
    for key, df in t["flows"].groupby([ALG, "x", "seed"], dropna=False, sort=False):
        out = {
            "sptcp_mbps": _of(df, sp)["goodput_bps"].sum() / 1e6,
            "mptcp_mbps": _of(df, [mp])["goodput_bps"].sum() / 1e6,
        }
        g = series.get((key[0], repr(key[1]), key[2]))
        if g is not None and len(g):
            g = g.sort_values("time_s")
            rec, censored = recovery_time(g["time_s"].to_numpy(), g["value"].to_numpy(), ref, leave)
            out["recovery_s"] = rec
            out["recovery_censored"] = float(censored)
        groups[key] = out
    return _rows(groups, e.key)


def oscillation(t: dict[str, pd.DataFrame], e: Experiment, o: Options) -> list[dict]:
    """Coefficient of variation (std/mean) of the flow's aggregate window over the window period."""
    mp = e.spec["flows"][0]
    t0, t1 = (v * o.time_scale for v in e.spec["window"])
    s = t["series"]
    s = s[(s["entity"] == "subflow") & (s["metric"] == "cwnd") & s["id"].str.startswith(f"{mp}/")]
    s = s[(s["time_s"] >= t0) & (s["time_s"] <= t1)]
    groups = {}
    for key, g in s.groupby([ALG, "x", "seed"], dropna=False, sort=False):
        agg = g.groupby("time_s")["value"].sum().to_numpy()
        mean = float(np.mean(agg))
        groups[key] = {"window_cv": float(np.std(agg)) / mean if mean > 0 else math.nan, "mean_window": mean}
    return _rows(groups, e.key)


METRICS: dict[str, Callable[[dict[str, pd.DataFrame], Experiment, Options], list[dict]]] = {
    "download": download,
    "jain": jain,
    "friendliness": friendliness,
    "khalili": khalili,
    "responsiveness": responsiveness,
    "oscillation": oscillation,
}


def compute(tables: dict[str, pd.DataFrame], experiments: list[Experiment], o: Options) -> pd.DataFrame:
    """Per-run metric rows of every experiment (long form)."""
    rows: list[dict] = []
    for e in experiments:
        sub = {}
        for name, df in tables.items():
            sub[name] = df[df["experiment"] == e.key] if len(df) and "experiment" in df else df.iloc[0:0]
        if not len(sub["flows"]):
            continue
        rows.extend(METRICS[e.metric](sub, e, o))
    cols = ["experiment", "algorithm", "x", "seed", "metric", "value"]
    return pd.DataFrame(rows, columns=cols)
