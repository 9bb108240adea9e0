"""Flows that start late and stop early on the real test bed (root; run under
``flock /run/pathpool-kernel.lock``): a TCP flow from 2 s to 4 s of a 6 s run carries data only
in that window, on the run's clock, while the MPTCP flow beside it is sampled for the whole run."""

from __future__ import annotations

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed, wait_gone

PREFIX = "ppl-"


@pytest.fixture
def lia(kernel_unclaimed):
    loader.load(("pp_lia",), rebuild=False)
    yield
    loader.unload()
    assert loader.registered() == []
    assert wait_gone(PREFIX), "a test-bed namespace was left behind"


def test_a_tcp_flow_from_2_to_4_s_carries_data_only_then(lia):
    flows = [FlowSpec("m", "mptcp", "pp_lia", 0), FlowSpec("t", "tcp", "reno", 1, start_s=2.0, stop_s=4.0)]
    with Testbed([PathSpec(10, 10, queue_pkts=30), PathSpec(10, 10, queue_pkts=30)], prefix=PREFIX) as tb:
        raw = tb.run_flows(flows, duration_s=6.0)
    assert raw["epoch"]
    t = raw["senders"]["t"]
    # It began its connect at its start (within the senders' scheduling) and took no sample outside
    # [2, 4] s; its acknowledged bytes grew from (near) zero there.
    assert 2.0 <= t["connect_s"] < 2.3 and t["connect_s"] <= t["connected_s"], t
    times = [s["t"] for s in t["samples"]]
    assert times and 2.0 <= min(times) and max(times) <= 4.0
    assert t["samples"][0]["subflows"][0]["bytes_acked"] < 100_000
    # Beside the LIA subflow on its 10 Mbit/s path its share is about 5 Mbit/s, 1.25 MB in 2 s,
    # minus slow start into a 30-packet queue; a CI run under load measured 0.92 MB, so the
    # bound asks for 2 Mbit/s on average: data carried, not a share.
    assert t["final"][0]["bytes_acked"] > 500_000
    assert t["notsent_lowat"]
    recv = next(c for c in raw["receiver"]["connections"] if c["port"] == t["local_port"])
    # The receiver saw nothing before 2 s and nothing after ~4.3 s (the window in flight
    # drains: 30 packets of queue + 10 of BDP at 10 Mbit/s is ~50 ms).
    assert recv["first_byte_s"] >= 2.0 and recv["last_byte_s"] <= 4.3, recv
    at = dict(recv["at_marks"])
    assert 0 < at[4.0] <= recv["bytes"] and recv["bytes"] - at[4.0] < 200_000
    # The MPTCP flow: both subflows' windows sampled over the whole run, on the same clock.
    m = raw["senders"]["m"]["samples"]
    for local in ("10.77.0.1", "10.77.1.1"):
        ts = [s["t"] for s in m if any(sf.get("local") == local for sf in s["subflows"])]
        assert ts and min(ts) < 0.5 and max(ts) > 5.8, (local, ts[:3], ts[-3:])
