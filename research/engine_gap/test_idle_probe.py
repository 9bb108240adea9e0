"""kernel_idle_restart_probe.py: the reduction detector, the idle measure and the queue
classification that explain Balia Fig. 3's engine gap, checked against hand-made series; and
the probe's plans are the report's (Fig. 3 under the quickack reading, 50 ms sampling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("kernel_idle_restart_probe")


def test_reductions_by_hand(probe):
    # Peak 30, then 14 < 0.7 * 30 = 21: one; the peak restarts at 14 and climbs to 31, then
    # 10 < 21.7: two. 20 after 30 is not below 21.
    c = np.array([10, 20, 30, 14, 15, 30, 31, 10, 20, 16], dtype=float)
    got = probe.reductions(c)
    assert [(j, peak, after) for j, peak, after in got] == [(3, 30.0, 14.0), (7, 31.0, 10.0)]


def test_idle_counts_runs_of_four_unchanged_samples(probe):
    # Samples 2-6 equal (4 unchanged steps: 0.2 s) count; samples 8-10 (2 steps) do not.
    srtt = np.array([1, 2, 3, 3, 3, 3, 3, 4, 5, 5, 5, 6], dtype=float)
    cwnd = np.full(len(srtt), 10.0)
    assert probe.idle(srtt, cwnd) == pytest.approx(0.2)
    # A window that moves while the srtt does not is not idle (ACKs arrive).
    cwnd2 = cwnd.copy()
    cwnd2[4] = 11
    assert probe.idle(srtt, cwnd2) == 0.0


def _series(t, cwnd_a, cwnd_b, srtt):
    rows = []
    for i, ti in enumerate(t):
        for sub, w in (("mp/0", cwnd_a[i]), ("mp/1", cwnd_b[i])):
            rows.append(("subflow", sub, "cwnd", ti, w))
            rows.append(("subflow", sub, "srtt_s", ti, srtt[i]))
    return pd.DataFrame(rows, columns=["entity", "id", "metric", "time_s", "value"])


def test_classify_full_and_empty_queue(probe):
    t = 20 + np.arange(200) * 0.05
    srtt = np.full(len(t), 0.1005)          # 0.5 ms of queue: empty
    srtt[40:50] = 0.145                      # 45 ms of queue just before sample 50: full
    a = np.full(len(t), 40.0)
    a[50:] = 20.0                            # halved at a full queue
    b = np.full(len(t), 30.0)
    b[150:] = 10.0                           # to the restart window with the queue empty
    row = probe.classify(_series(t, a, b, srtt))
    assert (row["full"], row["empty"], row["mid"], row["to_iw"]) == (1, 1, 0, 1)
    # Sum 70 then 50 then 30 packets: below the 83-packet BDP all the time.
    assert row["below_bdp"] == 1.0
    # Summed window 70 (50 samples), 50 (100), 30 (50): mean 50, population std sqrt(200).
    assert row["window_cv"] == pytest.approx(200 ** 0.5 / 50)


def test_probe_plans_are_the_reports(probe):
    kjobs = probe.jobs(["coupled", "olia"], [1, 2])
    assert sorted((kj.job.tags["run_algorithm"], kj.job.seed) for kj in kjobs) == [
        ("coupled", 1), ("coupled", 2), ("olia", 1), ("olia", 2)]
    assert {kj.plan.sample_ms for kj in kjobs} == {50}
    assert all(kj.plan.quickack for kj in kjobs)   # the report ran Fig. 3 under quickack
    assert len({kj.key() for kj in kjobs}) == 4
    assert probe.folder([probe.DEFAULT_SYSCTL]) == "after_idle_0"
    assert probe.folder([]) == "as_report"
    assert probe.folder(["net.ipv4.tcp_wmem=4096 4194304 33554432"]) == "tcp_wmem-4096_4194304_33554432"
