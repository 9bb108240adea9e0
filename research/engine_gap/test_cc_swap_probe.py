"""kernel_cc_swap_probe.py: the share it prints, from hand-made run records. No kernel needed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("kernel_cc_swap_probe")


def _rec(**flows):
    return {"raw": {"senders": {f: {"final": [{"bytes_acked": b} for b in bs]} for f, bs in flows.items()}}}


def test_an_mptcp_flow_counts_every_subflow(probe):
    rec = _rec(mptcp=[3_000, 5_000], tcp=[10_000])
    assert probe.acked_bytes(rec, "mptcp") == 8_000
    assert probe.share(rec, "mptcp", "tcp") == 0.8
