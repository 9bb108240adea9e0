"""two_subflow_gap.py: the factor identity G = A x W / S x u x k x b, the stall and
growth measures, and the ratio bootstrap, checked against hand-made series; and the script's
kernel plans are the report's (RSF Table 2 s2 under the quickack reading, 100 ms sampling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def gap(script_module):
    return script_module("two_subflow_gap")


def _flow(name, start, end, delivered, sent, retx, rto=0.0):
    return {"flow": name, "start_s": start, "end_s": end, "completion_time_s": end - start,
            "delivered_bytes": delivered, "goodput_bps": delivered * 8 / (end - start),
            "sent_packets": sent, "retransmitted_packets": retx, "rto_count": rto}


def _series(name, t, cwnds, srtts, goodput=None):
    rows = []
    for i, ti in enumerate(t):
        for k, (c, r) in enumerate(zip(cwnds, srtts)):
            if c[i] is not None:
                rows.append((ti, "subflow", f"{name}/{k}", "cwnd", c[i]))
                rows.append((ti, "subflow", f"{name}/{k}", "srtt_s", r[i]))
        rows.append((ti, "flow", name, "goodput_bps", 1e6 if goodput is None else goodput[i]))
    return pd.DataFrame(rows, columns=["time_s", "entity", "id", "metric", "value"])


def test_one_connection_by_hand(gap):
    # Download from 0 to 1 s: samples at 0.1 .. 1.0 (10), one more at 1.1 outside it.
    t = np.round(np.arange(1, 12) * 0.1, 10)
    a, b = [10.0] * 11, [20.0] * 11
    ra, rb = [0.1] * 11, [0.2] * 11
    s = _series("c", t, [a, b], [ra, rb])
    f = pd.DataFrame([_flow("c", 0.0, 1.0, 150_000, 180, 9)])
    rows = gap.connection_rows(f, s)
    assert len(rows) == 1 and rows.n_samples[0] == 10
    fx = gap.factors(rows)
    # W = 10 + 20; the windows allow 10 / 0.1 + 20 / 0.2 = 200 packets/s, so S = 30 / 200.
    assert fx["W"] == pytest.approx(30.0)
    assert fx["S"] == pytest.approx(0.15)
    # 180 packets sent in 1 s against 200 allowed; 9 of 180 retransmitted; 150 kB over 171.
    assert fx["u"] == pytest.approx(0.9)
    assert fx["k"] == pytest.approx(1 - 9 / 180)
    assert fx["b"] == pytest.approx(150_000 / 171)
    assert fx["A"] == pytest.approx(1.0)
    assert fx["G"] == pytest.approx(150_000.0)
    assert gap.product(fx) == pytest.approx(fx["G"], rel=1e-12)


def test_unequal_downloads_and_a_late_subflow(gap):
    # Connection x: 1 s, 100 kB; y: 2 s, 100 kB. Pooled 200 kB / 3 s; mean of goodputs
    # (100 + 50) / 2 = 75 kB/s, so A = 75 / (200 / 3) = 1.125.
    t = np.round(np.arange(1, 21) * 0.1, 10)
    cx = [4.0] * 20
    late = [None] * 5 + [6.0] * 15            # y's second subflow is up from 0.6 s on
    sx = _series("x", t[:10], [cx[:10]], [[0.1] * 10])
    sy = _series("y", t, [cx, late], [[0.0] + [0.1] * 19, [0.2] * 20])   # srtt 0: not known yet
    f = pd.DataFrame([_flow("x", 0.0, 1.0, 100_000, 80, 0), _flow("y", 0.0, 2.0, 100_000, 90, 2)])
    rows = gap.connection_rows(f, pd.concat([sx, sy]))
    fx = gap.factors(rows)
    assert fx["A"] == pytest.approx(1.125)
    # Window integrals: x 4 x 1 s; y 4 x 2 s + 6 x 1.5 s (the late subflow's 5 samples count 0).
    assert fx["W"] == pytest.approx((4 + 8 + 9) / 3)
    # Rates: x 40/s for 1 s; y 40/s for 2 s (its first srtt backfilled from 0.1) + 30/s for 1.5 s.
    assert fx["S"] == pytest.approx(fx["W"] / ((40 + 80 + 45) / 3))
    assert gap.product(fx) == pytest.approx(fx["G"], rel=1e-12)


def test_download_window_of_an_unfinished_download(gap):
    f = pd.Series(_flow("c", 0.5, 3.0, 1, 1, 0))
    assert gap.download_window(f) == (0.5, 3.0)
    f["completion_time_s"] = np.nan
    f["start_s"] = 0.0
    assert gap.download_window(f) == (0.0, 3.0)


def test_stall_time_counts_runs_of_at_least_one_rto(gap):
    g = np.array([1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0], dtype=float)
    # Runs of 4 (0.4 s), 2 (0.2 s) and 5 (0.5 s, at the end); RTO 0.35 s keeps the first and last.
    assert gap.stall_time(g, 0.35) == pytest.approx(0.9)
    assert gap.stall_time(g, 0.45) == pytest.approx(0.5)


def test_growth_per_rtt_and_jumps(gap):
    # Steps +1, 0, +1, -5 (left out), +1, +6 (a jump: >= 3 and >= 30% of 6), +0.5.
    c = np.array([10, 11, 11, 12, 7, 8, 14, 14.5])
    srtt = np.full(len(c), 0.2)                 # each 0.1 s step is half an RTT
    gained, rtts, jumps = gap.growth(c, srtt)
    assert (gained, jumps) == (pytest.approx(3.5), 1)
    assert rtts == pytest.approx(5 * 0.5)       # five non-falling, non-jumping steps


def test_ratios_multiply_to_the_goodput_ratio(gap):
    t = np.round(np.arange(1, 11) * 0.1, 10)

    def run(seed, w, sent):
        s = _series("c", t, [[w] * 10], [[0.1] * 10])
        r = gap.connection_rows(pd.DataFrame([_flow("c", 0.0, 1.0, 100_000 * w / 10, sent, 1)]), s)
        return r.assign(seed=seed)

    kernel = pd.concat([run(1, 8.0, 70), run(2, 9.0, 80)])
    sim = pd.concat([run(1, 10.0, 90), run(2, 10.0, 95), run(3, 11.0, 100)])
    r = gap.ratios(kernel, sim, n_boot=200).set_index("factor")
    # W / S enters as W x (1 / S): S's ratio divides.
    prod = r.ratio["A"] * r.ratio["W"] / r.ratio["S"] * r.ratio["u"] * r.ratio["k"] * r.ratio["b"]
    assert prod == pytest.approx(r.ratio["G"], rel=1e-12)
    assert r.ratio["W"] == pytest.approx(8.5 / (31 / 3))
    assert (r.lo <= r.ratio + 1e-12).all() and (r.ratio <= r.hi + 1e-12).all()


def test_plans_are_the_reports(gap):
    jobs = gap.report_jobs("table2_s2", [1, 2], None)
    kjobs = gap.kernel_jobs(jobs)
    assert sorted({kj.job.tags["run_algorithm"] for kj in kjobs}) == ["balia", "lia", "olia", "rsf-db"]
    assert {kj.plan.sample_ms for kj in kjobs} == {100}
    assert all(kj.plan.quickack for kj in kjobs)   # the report's Table 2 is the quickack reading
    assert len({kj.key() for kj in kjobs}) == 8


def test_a_corrupted_cwnd_sample_takes_the_previous_one(gap):
    # The kernel reported cwnd 1,082,663,049 for two samples of one recovery (RSF s2, OLIA).
    t = np.round(np.arange(1, 11) * 0.1, 10)
    a = [4.0, 4.0, 5.0, 1.08e9, 1.08e9, 2.0, 2.0, 3.0, 3.0, 3.0]
    s = _series("c", t, [a], [[0.1] * 10])
    rows = gap.connection_rows(pd.DataFrame([_flow("c", 0.0, 1.0, 10_000, 30, 1)]), s)
    assert rows.bad_cwnd[0] == 2
    assert gap.factors(rows)["W"] == pytest.approx((4 + 4 + 5 + 5 + 5 + 2 + 2 + 3 + 3 + 3) / 10)


def test_growth_skips_the_steps_asked(gap):
    c = np.array([10, 11, 12, 5, 6, 7, 8])
    srtt = np.full(len(c), 0.1)                 # each step is one RTT
    assert gap.growth(c, srtt)[:2] == (pytest.approx(5.0), pytest.approx(5.0))
    # Without the steps starting at samples 3 and 4 (5 -> 6, 6 -> 7): 3 packets in 3 RTTs.
    assert gap.growth(c, srtt, skip=frozenset({3, 4}))[:2] == (pytest.approx(3.0), pytest.approx(3.0))


def test_not_full_share_from_in_flight(gap):
    t = np.round(np.arange(1, 5) * 0.1, 10)
    s = _series("c", t, [[4.0, 4.5, 5.0, 5.0]], [[0.1] * 4])
    extra = pd.DataFrame([(ti, "subflow", "c/0", "in_flight", v) for ti, v in zip(t, [4, 3, 5, 4])],
                         columns=s.columns)
    rows = gap.connection_rows(pd.DataFrame([_flow("c", 0.0, 0.4, 1000, 5, 0)]), pd.concat([s, extra]))
    # 4 of floor(4.5) = 4 is full; 3 of 4 and 4 of 5 are not.
    assert rows.not_full_share[0] == pytest.approx(0.5)


def test_full_growth_splits_by_a_full_window(gap):
    # One subflow, srtt 0.1 s (a step is one RTT): full while unacked >= cwnd. Steps 0->1 and
    # 1->2 start full (+1 each), 2->3 and 3->4 start not full (+0, +1); no reduction.
    cw = [10, 11, 12, 12, 13]
    un = [10, 11, 5, 6, 13]
    senders = [{"samples": [{"subflows": [{"local": "a", "data_segs_out": 1, "rtt_us": 100_000,
                                           "snd_cwnd": c, "unacked": u}]} for c, u in zip(cw, un)]}]
    g = gap.full_growth(senders)
    assert g["ca_growth_full"] == pytest.approx(1.0)
    assert g["ca_growth_not_full"] == pytest.approx(0.5)
    assert g["ca_rtts_not_full_share"] == pytest.approx(0.5)
