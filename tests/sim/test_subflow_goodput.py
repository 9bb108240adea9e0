"""Per-subflow goodput in the time series: what the receiver delivered, by subflow."""

from __future__ import annotations

import numpy as np
import pathpool
from pathpool.data import scenario_path


def test_subflow_goodput_rows_sum_to_the_flow_and_to_its_delivered_bytes():
    res = pathpool.run(scenario_path("examples/two_paths"), seeds=[1, 2])
    s = res.series
    dt = res.scenario.spec["metrics_interval_s"]
    g = s[s["metric"] == "goodput_bps"].copy()
    g["bytes"] = np.rint(g["value"] * dt / 8).astype(np.int64)
    g["flow"] = g["id"].str.split("/").str[0]
    flow = g[g["entity"] == "flow"].set_index(["seed", "time_s", "flow"])["bytes"].sort_index()
    sub = g[g["entity"] == "subflow"].groupby(["seed", "time_s", "flow"])["bytes"].sum().sort_index()
    # every flow row has its subflows' rows, and they add up in every interval
    assert flow.index.equals(sub.index)
    assert (flow == sub).all()
    total = flow.groupby(level=["seed", "flow"]).sum()
    f = res.flows.set_index(["seed", "flow"])["delivered_bytes"]
    assert (total.sort_index() == f.sort_index()).all()
    # the multipath flow's subflows both carried data
    mp = g[(g["entity"] == "subflow") & (g["flow"] == "mptcp")].groupby("id")["bytes"].sum()
    assert len(mp) == 2 and (mp > 0).all()
