"""s2_idle_probe.py: every label of a subflow sample from a hand-made tick, the
congestion-avoidance selection, and shares counted by hand on a hand-made run record."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("s2_idle_probe")


def _sf(local, cwnd, unacked, notsent=0, ca_state=0, ssthresh=5):
    return {"local": local, "snd_cwnd": cwnd, "unacked": unacked, "notsent_bytes": notsent,
            "ca_state": ca_state, "snd_ssthresh": ssthresh, "data_segs_out": 100}


def _conn(written, unassigned=0, outq=0, sndbuf=90_000, wmem_queued=0):
    return {"written": written, "unassigned": unassigned, "outq": outq, "sndbuf": sndbuf,
            "wmem_queued": wmem_queued}


SIZE = 4_000_000


@pytest.mark.parametrize("x, sib, conn, want", [
    (_sf("a", 10, 10), 0, _conn(1000), "full"),
    (_sf("a", 10, 12), 0, _conn(1000), "full"),             # packets_out above cwnd (recovery)
    (_sf("a", 10, 9, notsent=1), 0, _conn(1000), "queued"),  # one byte queued: TCP holds it
    # Idle: the connection still holds unassigned data, whatever the sibling has.
    (_sf("a", 10, 4), 5000, _conn(1000, unassigned=1), "unassigned"),
    (_sf("a", 10, 4), 5000, _conn(1000), "sibling"),
    # Nothing anywhere: the whole file written is the tail, even with a full buffer.
    (_sf("a", 10, 4), 0, _conn(SIZE, wmem_queued=90_000), "tail"),
    # Not all written: a buffer above 2/3 full blocks the writer; at 2/3 exactly it does not.
    (_sf("a", 10, 4), 0, _conn(SIZE - 1, wmem_queued=60_001), "sndbuf"),
    (_sf("a", 10, 4), 0, _conn(SIZE - 1, wmem_queued=60_000), "app"),
])
def test_label_by_hand(probe, x, sib, conn, want):
    assert probe.label(x, sib, conn, SIZE) == want


def test_a_sample_without_the_connection_side_is_skipped_and_a_silent_subflow_left_out(probe):
    s = {"mptcp": True, "size_bytes": SIZE, "samples": [
        {"t": 0.1, "subflows": [_sf("a", 10, 4)]},   # recorded before conn was kept
        {"t": 0.2, "subflows": [_sf("a", 10, 4), {**_sf("b", 10, 0), "data_segs_out": 0}],
         "conn": _conn(1000)}]}
    rows = probe.sender_rows(s)
    assert [(r["t"], r["local"], r["label"], r["n_subflows"]) for r in rows] == [(0.2, "a", "app", 1)]


def test_sibling_is_the_other_subflow_of_the_same_tick(probe):
    s = {"mptcp": True, "size_bytes": SIZE, "samples": [
        {"t": 0.1, "subflows": [_sf("a", 10, 4), _sf("b", 10, 10, notsent=3000)], "conn": _conn(1000)}]}
    rows = {r["local"]: r for r in probe.sender_rows(s)}
    assert rows["a"]["label"] == "sibling" and rows["a"]["sibling_notsent"] == 3000
    assert (rows["a"]["sibling_cwnd"], rows["b"]["sibling_cwnd"]) == (10, 10)
    assert rows["b"]["label"] == "full" and rows["b"]["sibling_notsent"] == 0


def test_shares_counted_by_hand(probe):
    # Ten ticks, two subflows. Subflow a: congestion avoidance throughout (cwnd 10 >= ssthresh
    # 5, Open), full in 6, idle with data unassigned in 3, queued in 1. Subflow b: slow start
    # (ssthresh above cwnd) in ticks 0-4, then Recovery (ca_state 3) in 5-9: never CA.
    samples = []
    for t in range(10):
        a_unacked = 10 if t < 6 else 4
        a = _sf("a", 10, a_unacked, notsent=100 if t == 9 else 0)
        b = _sf("b", 8, 8, ssthresh=50 if t < 5 else 4, ca_state=0 if t < 5 else 3)
        samples.append({"t": t / 10, "subflows": [a, b], "conn": _conn(1000, unassigned=500 if t < 9 else 0)})
    rec = {"raw": {"senders": {"conn-0": {"mptcp": True, "size_bytes": SIZE, "samples": samples},
                               "tcp-0": {"mptcp": False, "samples": samples}}}}
    rows = probe.run_rows(rec)
    assert len(rows) == 20 and set(rows.conn) == {"conn-0"}   # the plain TCP sender left out
    sh = probe.shares(rows)
    assert sh["ca_n"] == 10
    assert sh["ca_full"] == pytest.approx(0.6)
    assert sh["ca_unassigned"] == pytest.approx(0.3)
    assert sh["ca_queued"] == pytest.approx(0.1)
    assert sh["ca_below"] == pytest.approx(0.4)
    # Of all 20 samples: b is full in all 10, a as above.
    assert sh["all_full"] == pytest.approx(16 / 20)
    assert sum(sh[f"all_{lab}"] for lab in probe.LABELS) == pytest.approx(1.0)
    d = probe.idle_detail(rows)
    assert d["unassigned_median_bytes"] == 500
    assert d["idle_free_window_median"] == 6
    assert np.isnan(d["sibling_median_bytes"])


def test_mean_ci_by_hand(probe):
    m, lo, hi = probe.mean_ci(np.array([0.1, 0.2, 0.3]))
    # t(0.975, 2) = 4.3027; sd 0.1; half-width 4.3027 * 0.1 / sqrt(3).
    assert m == pytest.approx(0.2)
    assert hi - m == pytest.approx(4.302653 * 0.1 / np.sqrt(3), rel=1e-5)
    assert m - lo == pytest.approx(hi - m)
    assert np.isnan(probe.mean_ci(np.array([0.5]))[1])


def test_sim_rows_by_hand(probe):
    import pandas as pd

    # One download from 0 to 2.0 s, samples every 0.1 s from 0.1 to 2.0 (20), one subflow.
    # cwnd 20 until 0.5 s, 8 from 0.6 s (a reduction at the 6th sample: 8 < 0.7 x 20); in
    # flight 20 (full) until then, 8 after, except 7 at 1.2 s (below, mid-download) and 3 at
    # 1.9 and 2.0 s (below, within the 0.25 s tail).
    t = np.round(np.arange(1, 21) * 0.1, 10)
    cw = [20.0 if ti <= 0.5 else 8.5 for ti in t]
    fl = [20 if ti <= 0.5 else 7 if ti == 1.2 else 3 if ti >= 1.9 else 8 for ti in t]
    rows = [(ti, "subflow", "c/0", "cwnd", c) for ti, c in zip(t, cw)]
    rows += [(ti, "subflow", "c/0", "in_flight", float(f)) for ti, f in zip(t, fl)]
    rows += [(ti, "subflow", "c/0", "srtt_s", 0.15) for ti in t]
    series = pd.DataFrame(rows, columns=["time_s", "entity", "id", "metric", "value"])
    flows = pd.DataFrame([{"flow": "c", "start_s": 0.0, "end_s": 2.0, "completion_time_s": 2.0}])
    r = probe.sim_rows(flows, series, tail_s=0.25)
    assert len(r) == 15                                   # from the reduction at 0.6 s to 2.0 s
    assert r.t.min() == pytest.approx(0.6)
    # floor(8.5) = 8 packets in flight is full; 7 and 3 are below.
    assert sorted(r.loc[~r.full, "t"].round(1)) == [1.2, 1.9, 2.0]
    assert sorted(r.loc[~r.full & r.at_tail, "t"].round(1)) == [1.9, 2.0]


def test_idle_detail_says_why_nothing_was_unassigned(probe):
    # Four ticks of subflow a idle with the sibling's queue full: twice with the file all
    # written, once with the connection's buffer above 2/3 (blocked writer), once below.
    ticks = [(SIZE, 10_000), (SIZE, 10_000), (1000, 60_001), (1000, 60_000)]
    # The sibling b: window 4, in Recovery (3) at the first tick, Open after.
    samples = [{"t": i / 10, "subflows": [_sf("a", 10, 0),
                                          _sf("b", 4, 4, notsent=7000, ca_state=3 if i == 0 else 0, ssthresh=2)],
                "conn": _conn(w, wmem_queued=q)} for i, (w, q) in enumerate(ticks)]
    rows = probe.run_rows({"raw": {"senders": {"c": {"mptcp": True, "size_bytes": SIZE, "samples": samples}}}})
    d = probe.idle_detail(rows)
    assert d["sibling_median_bytes"] == 7000
    assert d["sibling_app_done"] == pytest.approx(0.5)
    assert d["sibling_blocked"] == pytest.approx(0.25)
    assert d["idle_free_window_median"] == 10
    # The idle subflow's window 10, its sibling's 4, in recovery at 1 of the 4 ticks; the CA
    # samples: a's four (10) and b's three in Open (4): median 10.
    assert (d["sibling_own_cwnd_median"], d["sibling_sib_cwnd_median"], d["ca_cwnd_median"]) == (10, 4, 10)
    assert d["sibling_sib_recovery"] == pytest.approx(0.25)


def test_end_phase_by_hand(probe):
    # 1 MB file. Ticks every second from 0 to 10. Both subflows busy until 8 s, 800 kB acked
    # by then (100 kB/s); at 8 s the file is all written and subflow a is idle while b holds
    # the rest; the download ends at 10 s. The last 200 kB took 2 s against 2 s at the earlier
    # rate: nothing lost. Then the same with the end at 12 s: 2 s of 12 lost.
    size = 1_000_000

    def sender(done):
        samples = []
        for t in range(11):
            acked = min(100_000 * t, 800_000)
            a = {**_sf("a", 10, 10 if t < 8 else 0), "bytes_acked": acked // 2}
            b = {**_sf("b", 10, 10, notsent=5000), "bytes_acked": acked - acked // 2}
            samples.append({"t": float(t), "subflows": [a, b],
                            "conn": _conn(size if t >= 8 else 900_000)})
        return {"mptcp": True, "size_bytes": size, "done_s": done, "samples": samples}

    e = probe.end_phase(sender(10.0))
    assert e["T"] == 10 and e["phase_share"] == pytest.approx(0.2)
    assert e["bytes_share"] == pytest.approx(0.2) and e["rate_ratio"] == pytest.approx(1.0)
    assert e["lost_share"] == pytest.approx(0.0)
    e = probe.end_phase(sender(12.0))
    assert e["rate_ratio"] == pytest.approx(0.5)
    assert e["lost_share"] == pytest.approx(2 / 12)
    assert probe.end_phase({**sender(12.0), "done_s": None}) is None


def test_goodput_is_the_mean_over_connections_per_run(probe, tmp_path, capsys):
    import argparse

    import pandas as pd

    for key, seed, gps in (("k1", 1, [1e6, 3e6]), ("k2", 2, [2e6, 2e6]), ("k3", 1, [5e5, 5e5])):
        d = tmp_path / "cache-linux" / "6.18" / key
        d.mkdir(parents=True)
        alg = "lia" if key != "k3" else "olia"
        pd.DataFrame({"run_algorithm": alg, "seed": seed, "flow": ["a", "b"], "goodput_bps": gps}).to_parquet(
            d / "flows.parquet")
    probe.goodput(argparse.Namespace(cache=str(tmp_path)))
    out = capsys.readouterr().out
    # lia: runs of 2.0 and 2.0 Mbit/s (interval of zero width); olia: one run, no interval.
    assert "lia: n = 2 runs (seeds 1, 2): 2.000 Mbit/s [2.000, 2.000]" in out
    assert "olia: n = 1 runs (seeds 1): 0.500 Mbit/s [nan, nan]" in out
    with pytest.raises(SystemExit) as e:
        probe.goodput(argparse.Namespace(cache=str(tmp_path / "none")))
    assert e.value.code == 2
