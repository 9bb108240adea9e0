"""bed_timing_probe.py: the capture reader and the three measures on hand-made captures."""

from __future__ import annotations

import struct

import numpy as np
import pytest


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("bed_timing_probe")


def _pcap(path, packets, ethernet=True):
    """A nanosecond pcap of IPv4/TCP packets (t_ns, src, sport, dst, dport, seq, ack, payload, ipid)."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1 if ethernet else 101)]
    for t, src, sport, dst, dport, seq, ack, payload, ipid in packets:
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, 0x10, 512, 0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + 20 + payload, ipid, 0, 64, 6, 0,
                         bytes([10, 77, 0, src]), bytes([10, 79, 0, dst]))
        frame = (b"\0" * 14 if ethernet else b"") + ip + tcp
        out.append(struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame) + payload) + frame)
    path.write_bytes(b"".join(out))


def test_reader_keeps_the_fields(probe, tmp_path):
    _pcap(tmp_path / "a.pcap", [(1_500_000_001, 1, 4000, 1, 5201, 7, 9, 1448, 33)])
    _pcap(tmp_path / "b.pcap", [(2, 1, 4000, 1, 5201, 7, 9, 0, 34)], ethernet=False)
    a, b = probe.read_pcap(tmp_path / "a.pcap"), probe.read_pcap(tmp_path / "b.pcap")
    assert a.tolist() == [[1_500_000_001, 1, 4000, 1, 5201, 7, 9, 1448, 33]]
    assert b.tolist() == [[2, 1, 4000, 1, 5201, 7, 9, 0, 34]]


def test_reaction_time_is_from_an_advancing_ack_to_the_next_data_packet(probe):
    P, S = 4000, 5201
    rows = [
        (0, 1, P, 1, S, 0, 0, 1448, 1),          # data (no ACK before it: not counted)
        (100, 1, S, 1, P, 0, 1448, 0, 2),        # ACK advances: since 100
        (108, 1, P, 1, S, 1448, 0, 1448, 3),     # 8 ns later
        (200, 1, S, 1, P, 0, 1448, 0, 4),        # a duplicate ACK: not a new start
        (300, 1, S, 1, P, 0, 2896, 0, 5),        # advances: since 300
        (450, 1, P, 1, S, 2896, 0, 1448, 6),     # 150 ns later
        (451, 1, P, 1, S, 4344, 0, 1448, 7),     # the second of a pair: not counted
    ]
    got = probe.reaction_times(np.array(rows, dtype=np.int64))
    assert got[P].tolist() == [8, 150]


def test_hold_excess_matches_the_two_sightings(probe):
    rows = [(0, 1, 4000, 1, 5201, 10, 0, 1448, 1), (5, 1, 4000, 1, 5201, 20, 0, 1448, 2),
            (50_000_060, 1, 4000, 1, 5201, 10, 0, 1448, 1), (50_000_125, 1, 4000, 1, 5201, 20, 0, 1448, 2)]
    assert probe.hold_excess(np.array(rows, dtype=np.int64), 50_000_000).tolist() == [60, 120]


def test_drops_are_what_entered_and_never_left(probe):
    into = [(0, 1, 4000, 1, 5201, 0, 0, 1448, 1), (6_000_000, 1, 4000, 1, 5201, 1448, 0, 1448, 2),
            (6_000_010, 1, 4000, 1, 5201, 2896, 0, 1448, 3), (7_000_000, 1, 4001, 1, 5201, 0, 0, 1448, 9)]
    out = [(1, 1, 4000, 1, 5201, 0, 0, 1448, 1), (7_000_001, 1, 4000, 1, 5201, 1448, 0, 1448, 2),
           (8_000_000, 1, 4001, 1, 5201, 0, 0, 1448, 9)]
    got = probe.drops(np.array(into, dtype=np.int64), np.array(out, dtype=np.int64))
    assert (got[4000]["packets"], got[4000]["dropped"], got[4000]["gaps_ns"].tolist()) == (3, 1, [10])
    assert got[4001]["dropped"] == 0


def test_acks_per_flow_counts_pure_acks_from_the_server(probe):
    P, S = 4000, 5201
    rows = [(0, 1, P, 1, S, 0, 0, 1448, 1), (1, 1, P, 1, S, 1448, 0, 1448, 2),
            (2, 1, P, 1, S, 2896, 0, 1448, 3), (5, 1, S, 1, P, 0, 2896, 0, 4),
            (6, 1, S, 1, P, 0, 4344, 0, 5), (7, 1, S, 1, P, 0, 4344, 100, 6)]  # the last carries data
    assert probe.acks_per_flow(np.array(rows, dtype=np.int64)) == {P: {"data": 3, "acks": 2, "per_ack": 1.5}}


def test_trains_split_at_the_gap(probe):
    P, S = 4000, 5201
    # Trains of 3, 1 and 2 packets at a 10-ns gap: 6 packets, mean 2, one third-or-later packet.
    t = [0, 5, 9, 100, 200, 205]
    rows = [(x, 1, P, 1, S, 1448 * i, 0, 1448, i) for i, x in enumerate(t)] + [(300, 1, S, 1, P, 0, 1, 0, 99)]
    got = probe.trains(np.array(rows, dtype=np.int64), 10)
    assert got == {P: {"packets": 6, "mean": 2.0, "third_on": 1 / 6}}
