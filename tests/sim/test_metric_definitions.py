"""The simulator's flow and subflow rates follow :mod:`pathpool.metrics`, the definitions the
Linux backend uses: each rate is its own count over the flow's active interval, and a flow's
subflows add up to it."""

from __future__ import annotations

import numpy as np
import pathpool
import pytest
from pathpool.metrics import HEADER_BYTES, active_interval, rate_bps


def _scenario() -> dict:
    return {
        "name": "defs", "duration": "8s", "seeds": [1, 2],
        "links": [{"name": "la", "rate": "10Mbps", "delay": "10ms", "buffer": "50pkt"},
                  {"name": "lb", "rate": "10Mbps", "delay": "20ms", "buffer": "50pkt"}],
        "paths": [{"name": "a", "links": ["la"]}, {"name": "b", "links": ["lb"]}],
        "flows": [
            {"name": "bulk", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia"},
            {"name": "dl", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "olia", "app": "file",
             "size": "2MB", "start": "1s", "option_bytes": 24},
            {"name": "late", "kind": "tcp", "path": "b", "algorithm": "reno", "start": "2s", "stop": "5s"},
        ],
    }


@pytest.fixture(scope="module")
def res():
    return pathpool.run(_scenario(), seeds=[1, 2])


def test_each_rate_is_its_count_over_the_flows_active_interval(res):
    f = res.flows.set_index(["seed", "flow"])
    for (seed, flow), r in f.iterrows():
        spec = next(x for x in res.scenario.spec["flows"] if x["name"] == flow)
        done = r["start_s"] + r["completion_time_s"] if np.isfinite(r["completion_time_s"]) else None
        iv = active_interval(spec["start_s"], 8.0, spec["stop_s"], done)
        assert (r["start_s"], r["end_s"]) == pytest.approx((iv.start_s, iv.end_s))
        assert r["goodput_bps"] == pytest.approx(rate_bps(r["delivered_bytes"], iv), rel=1e-12)
        s = res.subflows[(res.subflows["seed"] == seed) & (res.subflows["flow"] == flow)]
        assert list(s["goodput_bps"]) == pytest.approx([rate_bps(b, iv) for b in s["acked_bytes"]], rel=1e-12)
        # The flow's throughput is its subflows' together.
        assert r["throughput_bps"] == pytest.approx(s["throughput_bps"].sum(), rel=1e-12)
    dl = f.xs("dl", level="flow")
    assert dl["completion_time_s"].notna().all() and (dl["end_s"] < 8.0).all()
    assert (f.xs("late", level="flow")["end_s"] == 5.0).all()


def test_subflows_add_up_to_their_flow(res):
    """The download's subflows acknowledged every byte of it once each (no reinjection here),
    so they add up to its goodput exactly; a bulk flow's up to the bytes in flight at the end
    (acknowledged on a subflow but not yet delivered in order, or the reverse)."""
    for (seed, flow), g in res.subflows.groupby(["seed", "flow"]):
        r = res.flows[(res.flows["seed"] == seed) & (res.flows["flow"] == flow)].iloc[0]
        if flow == "dl":
            assert r["reinjected_segments"] == 0
            assert g["acked_bytes"].sum() == r["delivered_bytes"] == 2_000_000
            assert g["goodput_bps"].sum() == pytest.approx(r["goodput_bps"], rel=1e-12)
        else:
            assert g["goodput_bps"].sum() == pytest.approx(r["goodput_bps"], rel=0.02)


def test_wire_bytes_are_payload_plus_header_and_options_per_segment(res):
    """An MPTCP segment with 24 option bytes carries 1424 payload bytes and is 1500 bytes
    on the wire: the download's throughput over its goodput is at least 1500/1424 (its
    retransmissions only add)."""
    f = res.flows[res.flows["flow"] == "dl"]
    ratio = f["throughput_bps"] / f["goodput_bps"]
    assert (ratio >= (1424 + HEADER_BYTES + 24) / 1424 - 1e-9).all()
