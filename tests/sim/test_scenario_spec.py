"""The validated scenario Rust hands Python: every Python consumer reads it, so a
unit the simulator accepts means the same thing everywhere, and nothing is parsed twice."""

from __future__ import annotations

import copy

import pathpool
import pytest
from pathpool.kernel.mapping import map_scenario
from pathpool.reproduce.experiments import parse_bytes, parse_rate, parse_seconds

BASE = {
    "name": "units",
    "duration": "3s",
    "links": [
        {"name": "a", "rate": "10Mbps", "delay": "0.5ms", "buffer": "64KB"},
        {"name": "b", "rate": "20Mbps", "delay": "30ms", "buffer": 40, "loss": "1%"},
    ],
    "paths": [{"name": "pa", "links": ["a"]}, {"name": "pb", "links": ["b"], "ack_delay": "10ms"}],
    "flows": [{"name": "m", "kind": "mptcp", "paths": ["pa", "pb"], "algorithm": "lia", "count": 2}],
}


def _spelled_otherwise() -> dict:
    d = copy.deepcopy(BASE)
    d["links"][0].update(rate="10Mbit/s", delay="500µs", buffer="64kB")
    d["links"][1].update(rate=20e6, delay=0.03, loss=0.01)
    d["paths"][1]["ack_delay"] = "10000us"
    return d


def test_other_spellings_give_the_same_spec():
    a = pathpool.load_scenario(BASE).spec
    b = pathpool.load_scenario(_spelled_otherwise()).spec
    assert a == b
    ln = a["links"][0]
    assert (ln["rate_bps"], ln["delay_s"], ln["buffer_bytes"], ln["buffer_packets"]) == (10_000_000, 0.0005, 64_000, None)
    # Defaults filled from Rust; the ACK return of a path without ack_delay is its forward delay.
    assert a["paths"][0]["ack_delay_s"] == 0.0005 and a["paths"][0]["ack_links"] is None
    assert [f["name"] for f in a["flows"]] == ["m-0", "m-1"] and {f["index"] for f in a["flows"]} == {0}
    assert a["flows"][0]["written"] == ["paths", "algorithm", "count"]


def test_the_test_bed_mapping_reads_the_spec_not_the_text():
    # Before, mapping.py and experiments.py each had a copy of the units (experiments.py refused
    # "10Mbit/s" and "500µs"); now the spec is the one reading, and both spellings map alike.
    a, b = map_scenario(BASE).describe(), map_scenario(_spelled_otherwise()).describe()
    assert a == b
    assert a["paths"][0]["queue_pkts"] == round(64_000 / 1500)
    assert a["paths"][1]["rev_delay_ms"] == pytest.approx(10.0)
    assert [f["name"] for f in a["flows"]] == ["m-0", "m-1"]


def test_reproduce_units_are_the_simulators():
    sc = pathpool.load_scenario(_spelled_otherwise()).spec
    assert parse_rate("10Mbit/s") == sc["links"][0]["rate_bps"]
    assert parse_seconds("500µs") == sc["links"][0]["delay_s"]
    assert parse_bytes("64kB") == sc["links"][0]["buffer_bytes"]
    for bad, fn in (("10MBps", parse_rate), ("10MS", parse_seconds), ("10mb", parse_bytes)):
        with pytest.raises(ValueError):
            fn(bad)
