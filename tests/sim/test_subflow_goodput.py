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



def test_what_a_subflow_holds_before_its_first_ack_follows_the_scheduler():
    # Before the first ACK (5 ms in; the shorter path's RTT is 20 ms) each subflow has sent
    # its initial window of 10 segments. Linux's scheduler (6.18 mptcp_subflow_get_send,
    # __subflow_push_pending) goes on handing a subflow data while its memory is below its
    # send buffer, checked after each segment here: the buffer at establishment is 2 x 10 x
    # 2,304 bytes (tcp_sndbuf_expand) = 46,080, so a subflow stops at ceil(46,080 / 1,448) = 32
    # segments and 22 wait beyond its window. The minimum-RTT scheduler hands out only what
    # the window lets out.
    for sched, segs in (("linux", 32), ("minrtt", 10)):
        sc = pathpool.load_scenario(scenario_path("examples/two_paths"),
                                    overrides=[f'flows.0.scheduler="{sched}"', 'flows.0.send_buffer="linux"',
                                               "metrics.interval=5ms", "duration=5ms"])
        s = pathpool.run(sc, seeds=[1]).series
        s = s[(s["entity"] == "subflow") & s["id"].str.startswith("mptcp/")]
        w = s.pivot_table(index="id", columns="metric", values="value")
        assert list(w["in_flight"]) == [10, 10]
        assert list(w["send_queue_bytes"]) == [segs * 1448] * 2, sched
