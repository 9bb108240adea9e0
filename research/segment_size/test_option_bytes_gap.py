"""option_bytes_gap.py: the option is set on the MPTCP entries only, and the goodput
ratio splits exactly into A x b x r, checked on hand-built rows."""

from __future__ import annotations

import pandas as pd
import pathpool
import pytest


@pytest.fixture(scope="module")
def gap(script_module):
    return script_module("option_bytes_gap")


def test_option_bytes_go_on_the_mptcp_entries_only(gap):
    from pathpool.sweep import Job

    sc = pathpool.load_scenario({
        "name": "t", "duration": "1s",
        "links": [{"name": "la", "rate": "10Mbps"}, {"name": "lb", "rate": "10Mbps"}],
        "paths": [{"name": "a", "links": ["la"]}, {"name": "b", "links": ["lb"]}],
        "flows": [{"name": "mp", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia"},
                  {"name": "tcp", "kind": "tcp", "path": "a"}],
    })
    job = Job(sc, 1, {"run_algorithm": "lia"})
    j = gap.with_options(job, 24)
    assert {f["name"]: f["option_bytes"] for f in j.scenario.spec["flows"]} == {"mp": 24, "tcp": 0}
    assert (j.seed, j.tags) == (1, {"run_algorithm": "lia"})


def _rows(option_bytes: int, goodputs: list[float], times: list[float], payload: int) -> pd.DataFrame:
    """Two seeds of two connections each; every connection moves 100 new packets of ``payload``
    bytes, 2 of them retransmitted; its goodput is given (not bytes / time: A measures that)."""
    n = len(goodputs)
    return pd.DataFrame({
        "algorithm": "lia", "seed": [1, 1, 2, 2][:n], "option_bytes": option_bytes,
        "goodput_bps": goodputs, "time_s": times, "bytes": [100 * payload] * n, "new_packets": [100] * n,
        "retransmitted": [2] * n, "sent": [102] * n, "rto": [0] * n, "cwnd": [10.0] * n,
        "rtt_s": [0.15] * n, "loss_events": [1] * n,
    })


def test_the_goodput_ratio_is_a_times_b_times_r_by_hand(gap):
    runs = pd.concat([_rows(0, [8e5, 8e5, 8e5, 8e5], [1.0, 1.0, 1.0, 1.0], 1448),
                      _rows(24, [7e5, 9e5, 7e5, 9e5], [1.0, 1.0, 2.0, 2.0], 1424)], ignore_index=True)
    s = gap.summary(runs, n_boot=50).iloc[0]
    # G: mean goodput 0.8 Mbit/s both ways; b: 1424 / 1448; r: 400 packets in 4 s against 6 s.
    assert s.G_ratio == pytest.approx(1.0)
    assert s.b == pytest.approx(1424 / 1448)
    assert s.r == pytest.approx(4 / 6)
    # A: mean goodput over pooled goodput (bytes / time, in bits), for each setting.
    a0 = 8e5 / (8 * 4 * 144_800 / 4)
    a24 = 8e5 / (8 * 4 * 142_400 / 6)
    assert s.A == pytest.approx(a24 / a0)
    assert s.G_ratio == pytest.approx(s.A * s.b * s.r)
    assert s.retx0 == pytest.approx(2 / 102)
    d = gap.dynamics(runs).iloc[0]
    assert (d.packets, d.time, d.cwnd, d.loss_events_per_packet) == (1.0, 1.5, 1.0, 1.0)
