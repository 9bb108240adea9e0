"""The receive window as Linux autotunes it (``receive_window = "linux"``), against closed forms.

A flow whose window is smaller than its path's bandwidth-delay product moves one window per
round trip. Linux offers half its receive buffer as window (the default scaling ratio), so an
autotuned buffer capped at ``rcv_buffer`` = 256 KiB gives the rate of a fixed 128 KiB window,
90 segments of 1,448 bytes per round trip.
"""

from __future__ import annotations

import pathpool
import pytest

RTT_S = 0.100 + 1500 * 8 / 100e6   # propagation plus one data packet's serialisation


def _window_limited(receive_window: str, rcv_buffer: str, kind: str = "tcp") -> float:
    """Goodput (bit/s) from 4 s to 12 s of one flow over a 100 Mbit/s, 100 ms path whose
    bandwidth-delay product (1.25 MB) is far above its window (no send jitter: each segment
    leaves as its ACK arrives)."""
    flow = {"name": "f", "kind": kind, "algorithm": "reno", "receive_window": receive_window,
            "rcv_buffer": rcv_buffer, "send_jitter": 0}
    flow.update({"path": "p"} if kind == "tcp" else {"paths": ["p"]})
    sc = {"name": "rwnd", "duration": "12s", "seeds": [1],
          "links": [{"name": "l", "rate": "100Mbps", "delay": "50ms", "buffer": "2000pkt"}],
          "paths": [{"name": "p", "links": ["l"]}],
          "flows": [flow],
          "metrics": {"interval": "1s"}}
    res = pathpool.run(sc)
    assert res.flows.integrity_errors.sum() == 0 and res.flows.lost_packets.sum() == 0
    s = res.series
    g = s[(s.entity == "flow") & (s.metric == "goodput_bps") & (s.time_s > 4)]
    return float(g.value.mean())


@pytest.mark.parametrize("kind", ["tcp", "mptcp"])
def test_an_autotuned_window_is_half_the_buffer(kind):
    closed_form = (131_072 // 1448) * 1448 * 8 / RTT_S
    linux = _window_limited("linux", "256KiB", kind)
    fixed = _window_limited("fixed", "128KiB", kind)
    assert linux == pytest.approx(closed_form, rel=0.002)
    assert fixed == pytest.approx(closed_form, rel=0.002)


def test_autotuning_keeps_ahead_of_slow_start():
    """A single flow delivers in order: its buffer grows by what was read each round trip and
    every segment raises ``rcv_ssthresh`` by two, so the window that starts at 64 KiB never holds
    slow start back; a 4 MB download ends when it does with a fixed 32 MiB window."""
    sc = {"name": "rwnd", "duration": "3s", "seeds": [1],
          "links": [{"name": "l", "rate": "100Mbps", "delay": "50ms", "buffer": "2000pkt"}],
          "paths": [{"name": "p", "links": ["l"]}],
          "flows": [{"name": "f", "kind": "tcp", "path": "p", "algorithm": "reno", "app": "file",
                     "size": "4MB", "send_jitter": 0, "rcv_buffer": "32MiB"}]}
    done = {}
    for rw in ("linux", "fixed"):
        f = {**sc["flows"][0], "receive_window": rw}
        done[rw] = pathpool.run({**sc, "flows": [f]}).flows.completion_time_s.iloc[0]
    assert done["linux"] == done["fixed"] < 1.0


SLOW_FAST = {
    "name": "hol", "duration": "1.5s", "seeds": [1],
    "links": [{"name": "slow", "rate": "0.3Mbps", "delay": "100ms", "buffer": "20pkt"},
              {"name": "fast", "rate": "4Mbps", "delay": "30ms", "buffer": "50pkt"}],
    "paths": [{"name": "p1", "links": ["slow"]}, {"name": "p2", "links": ["fast"]}],
    "flows": [{"name": "m", "kind": "mptcp", "paths": ["p1", "p2"], "algorithm": "lia", "reading": "linux",
               "delayed_ack": False, "option_bytes": 28, "send_jitter": 0, "writer": "poll"}],
}


def test_data_held_behind_a_slow_subflow_is_bounded_by_the_first_window():
    """Linux's first window is half of ``tcp_rmem[1]`` = 65,536 bytes, 46 segments of 1,420 past
    the data-level ACK; it grows only once a round trip of the slowest subflow has been read.
    While the slow subflow holds the connection's head (its first burst takes 1.7 s at
    0.3 Mbit/s), the fast one cannot run ahead by more than that. With a fixed 4 MiB window it
    runs ahead by hundreds of segments."""
    got = {}
    for rw in ("linux", "fixed"):
        f = {**SLOW_FAST["flows"][0], "receive_window": rw}
        r = pathpool.run({**SLOW_FAST, "flows": [f]}).flows.iloc[0]
        assert r.integrity_errors == 0
        got[rw] = (r.sent_packets - r.retransmitted_packets, r.delivered_bytes / 1420)
    sent, delivered = got["linux"]
    assert sent <= delivered + 46
    sent, delivered = got["fixed"]
    assert sent > delivered + 200
