"""linux_reading_agreement.py: the kernel cells it reads from a published per-run table."""

from __future__ import annotations

import math

import pandas as pd


def test_cells_are_read_once_each_in_order(script_module):
    cells_of = script_module("linux_reading_agreement").cells_of
    per_run = pd.DataFrame({
        "experiment": ["rsf/fig2", "rsf/fig2", "balia/table3", "balia/table3", "balia/table3"],
        "algorithm": ["lia", "lia", "olia", "olia", "lia"],
        "x": [4.0, 4.0, math.nan, math.nan, math.nan],
        "seed": [1, 2, 1, 1, 1],
        "metric": ["throughput_mbps", "throughput_mbps", "mptcp_mbps", "sptcp_mbps", "mptcp_mbps"],
        "value": [1.0, 1.1, 2.0, 1.0, 2.1],
    })
    cells = cells_of(per_run)
    assert [(e, a) for e, a, _ in cells] == [("rsf/fig2", "lia"), ("balia/table3", "olia"), ("balia/table3", "lia")]
    assert cells[0][2] == 4.0 and math.isnan(cells[1][2]) and math.isnan(cells[2][2])
