"""Segment sizes as Linux cuts them (``segmentation = "linux"``), against the test bed's.

The reference is a tcpdump of both paths of Balia Table III's set-up on the test bed (kernel
Reno subflows and TCP, 30 s; Linux 6.18.44): the subflow sharing its link with the TCP flow
carried 1,393.6 payload bytes per data packet, the subflow on its own link 1,409.6, a full
segment 1,420 (1,448 less the 28-byte DSS option). The simulator runs the scenario as the
bed runs it (``as_testbed_runs``) with EWTCP, whose subflows are uncoupled as the measured
ones were.
"""

from __future__ import annotations

import pathpool
import pytest
from pathpool.data import scenario_path
from pathpool.kernel.mapping import as_testbed_runs

SCENARIO = "balia2016/table3_friendliness"
#: Payload bytes per data packet on the bed: (shared-link subflow, own-link subflow).
KERNEL = (1393.6, 1409.6)


def _payload_per_packet(segmentation: str) -> tuple[float, float]:
    path = scenario_path(SCENARIO)
    ov = as_testbed_runs(pathpool.load_scenario(path), start_jitter=False)
    sc = pathpool.load_scenario(path, [*ov, 'flows.0.algorithm="ewtcp"',
                                       f'flows.0.segmentation="{segmentation}"'])
    assert sc.spec["flows"][0]["kind"] == "mptcp"
    res = pathpool.run(sc, seeds=range(1, 6))
    assert res.flows.integrity_errors.sum() == 0
    s = res.subflows[res.subflows.flow == sc.spec["flows"][0]["name"]]
    g = s.groupby("subflow")[["acked_bytes", "sent_packets", "retransmitted_packets"]].sum()
    per = g.acked_bytes / (g.sent_packets - g.retransmitted_packets)
    return float(per.loc[0]), float(per.loc[1])


def test_linux_segmentation_gives_the_beds_payload_per_packet():
    shared, own = _payload_per_packet("linux")
    assert shared == pytest.approx(KERNEL[0], rel=0.005)
    assert own == pytest.approx(KERNEL[1], rel=0.005)
    # The subflow that takes writes alone (the shared one) has the shorter segments.
    assert shared < own


def test_whole_segments_carry_more_than_the_beds():
    shared, own = _payload_per_packet("whole")
    assert shared > KERNEL[0] * 1.01 and own > KERNEL[1] * 1.003
