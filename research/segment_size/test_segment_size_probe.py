"""segment_size_probe.py: the packet parser reads payload, option bytes and an MPTCP DSS
mapping from hand-built IPv4/TCP packets (RFC 8684 Section 3.3 layout), and the summary counts
retransmissions, sub-MSS segments and mapping tails as computed by hand."""

from __future__ import annotations

import struct

import pytest


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("segment_size_probe")


def _packet(payload: int, options: bytes, seq: int = 1000, sport: int = 40000, dport: int = 5201) -> bytes:
    assert len(options) % 4 == 0
    doff = 20 + len(options)
    total = 20 + doff + payload
    ip = bytes([0x45, 0]) + struct.pack("!H", total) + bytes(5) + bytes([6]) + bytes(2) \
        + bytes([10, 77, 0, 1, 10, 79, 0, 1])
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (doff // 4) << 4, 0x18, 0, 0, 0)
    return ip + tcp + options  # the capture keeps headers only: no payload bytes needed


TS = bytes([1, 1, 8, 10]) + bytes(8)   # NOP NOP timestamps: 12 bytes


def _dss(dsn: int, ssn: int, dll: int) -> bytes:
    # DSS with a 64-bit data ACK (A|a) and a mapping with a 64-bit DSN (M|m), no checksum:
    # 4 + 8 + 8 + 4 + 2 = 26 bytes, padded to 28 with two NOPs (Linux: ALIGN(dss_size, 4)).
    body = struct.pack("!BBBB", 30, 26, 2 << 4, 0x01 | 0x02 | 0x04 | 0x08) + struct.pack("!Q", 77) \
        + struct.pack("!QIH", dsn, ssn, dll)
    return body + bytes([1, 1])


def test_parse_plain_tcp(probe):
    p = probe.parse_segment(_packet(1448, TS, seq=123))
    assert (p["payload"], p["opt"], p["seq"]) == (1448, 12, 123)
    assert p["src"] == "10.77.0.1:40000" and p["dst"] == "10.79.0.1:5201"
    assert "dss_len" not in p


def test_parse_dss_mapping(probe):
    p = probe.parse_segment(_packet(1420, TS + _dss(2**40 + 5, 9, 2840)))
    assert (p["payload"], p["opt"]) == (1420, 40)
    assert (p["dss_len"], p["dsn"], p["ssn"], p["dll"]) == (26, 2**40 + 5, 9, 2840)


def test_parse_rejects_non_tcp(probe):
    pkt = bytearray(_packet(10, TS))
    pkt[9] = 17
    assert probe.parse_segment(bytes(pkt)) is None


def test_summary_by_hand(probe):
    mk = lambda seq, n, dsn, ssn, dll: probe.parse_segment(_packet(n, TS + _dss(dsn, ssn, dll), seq=seq))
    # Mapping A: 3000 bytes as 1420 + 1420 + 160 (the 160 is its tail); mapping B: 1420 alone;
    # then the 160-byte segment again (a TCP retransmission) and a 700-byte segment in
    # mapping C of 1500 bytes that is not its tail (800 more would follow).
    segs = [mk(0, 1420, 0, 1, 3000), mk(1420, 1420, 0, 1, 3000), mk(2840, 160, 0, 1, 3000),
            mk(3000, 1420, 3000, 3001, 1420), mk(2840, 160, 0, 1, 3000), mk(4420, 700, 4420, 4421, 1500)]
    s = probe.summarize(segs, 1420)["all"]
    assert (s["segments"], s["retrans"], s["new"]) == (6, 1, 5)
    assert s["mean_new_payload"] == round((1420 * 3 + 160 + 700) / 5, 1)
    assert (s["below_mss"], s["mean_below_mss"], s["share_below_mss"]) == (2, 430.0, 0.4)
    assert s["mappings"] == 3 and s["mean_mapping_bytes"] == round((3000 + 1420 + 1500) / 3, 1)
    assert s["below_mss_at_mapping_end"] == 1
    assert s["option_bytes"] == [(40, 6)]
