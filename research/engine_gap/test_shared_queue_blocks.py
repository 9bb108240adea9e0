"""shared_queue_blocks.py: clustering of cuts across flows, episodes and window cuts, by hand."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def sq(script_module):
    return script_module("shared_queue_blocks")


def test_cuts_cluster_across_flows_and_count_by_who_is_in_them(sq):
    ev = {"a": [1.0, 5.0, 9.0], "b": [1.1, 5.2, 12.0], "t": [1.2, 7.0, 12.1]}
    got = sq.clusters(ev, within_s=0.25)
    # 1.0-1.2 all three; 5.0 and 5.2 the pair; 7.0 t alone; 9.0 a alone; 12.0-12.1 b and t.
    assert got == [{"a", "b", "t"}, {"a", "b"}, {"t"}, {"a"}, {"b", "t"}]
    c = sq.tally(got, {"a", "b"}, {"a", "b", "t"})
    assert c == {"all": 1, "group only": 1, "others only": 1, "mixed": 2}


def test_a_chain_of_close_events_is_one_cluster(sq):
    # Each within 0.25 s of the one before: one cluster, although 0.0 and 0.6 are far apart.
    assert sq.clusters({"a": [0.0, 0.4], "b": [0.2, 0.6]}) == [{"a", "b"}]


def test_episodes_start_after_a_gap(sq):
    assert sq.episodes(np.array([3.0, 0.1, 0.2, 0.45, 3.1])) == [0.1, 0.45, 3.0]


def test_retransmissions_are_repeated_sequence_numbers_per_port(sq):
    from bed_timing_probe import PAYLOAD, SEQ, SPORT, T

    rows = np.zeros((5, 9), dtype=np.int64)
    rows[:, T] = [10, 20, 30, 40, 50]
    rows[:, SPORT] = [1, 1, 2, 1, 1]
    rows[:, SEQ] = [100, 200, 100, 100, 300]
    rows[:, PAYLOAD] = [1448, 1448, 1448, 1448, 0]
    assert sq.retransmissions(rows).tolist() == [40]   # port 2's 100 is its first; the ACK is no data


def test_a_window_cut_is_counted_once_per_recovery(sq):
    t = np.arange(12) * 0.1
    w = np.array([10, 11, 12, 12, 9, 7, 6, 6.5, 7, 7.5, 8, 5.0])
    # 0.4: 9 < 0.85 x 12; 0.5 and 0.6 fall further within 0.5 s; 1.1: 5 < 0.85 x 8 again.
    assert sq.cuts(w, t) == [pytest.approx(0.4), pytest.approx(1.1)]
