"""Verdict logic and statistics against hand-worked cases."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from pathpool.reproduce.verdict import (
    NOT,
    ORDER_OPEN,
    ORDERING,
    REPRODUCED,
    TOLERANCE,
    UNDECIDED,
    cell_verdict,
    check_claim,
    ci95,
    ordering_agrees,
)
from scipy import stats


def test_ci95_by_hand():
    m, lo, hi, n = ci95([1.0, 2.0, 3.0, 4.0])
    half = stats.t.ppf(0.975, 3) * (math.sqrt(5 / 3) / 2)  # s = sqrt(5/3), sqrt(n) = 2
    assert (m, n) == (2.5, 4)
    assert lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)
    assert math.isnan(ci95([3.0])[1]) and ci95([])[3] == 0


def test_cell_verdicts_inside():
    assert TOLERANCE["rel"] == 0.15
    assert cell_verdict(1.0, math.nan, 1.14, 1.13, 1.15, None) == REPRODUCED  # within 15%
    # A narrow interval (half-width 4% of the mean) that reaches the paper's (1.0 +- 0.2) counts ...
    assert cell_verdict(1.0, 0.2, 1.25, 1.20, 1.30, None) == REPRODUCED
    assert cell_verdict(math.nan, math.nan, 1.0, 0.9, 1.1, None) == "—"


def test_a_wide_interval_never_reproduces_on_its_own():
    # ... a wide one (half-width 14% of the mean: few seeds) overlapping the paper's 1.0 +- 0.3
    # does not count; it holds neither 0.85 nor 1.15, so the verdict is decided.
    assert cell_verdict(1.0, 0.3, 1.40, 1.20, 1.60, None) == NOT
    assert cell_verdict(1.0, 0.3, 1.40, 1.20, 1.60, True) == ORDERING


def test_a_wide_interval_across_the_band_boundary_is_undecided():
    # Half-width 25% of the mean and 1.15 inside: the mean's side of the boundary is luck.
    assert cell_verdict(1.0, math.nan, 1.30, 0.95, 1.6, None) == UNDECIDED
    assert cell_verdict(1.0, math.nan, 1.30, 0.95, 1.6, True) == UNDECIDED
    # Inside the band by the mean, but 0.85 inside the interval: undecided too.
    assert cell_verdict(1.0, math.nan, 0.90, 0.80, 1.00, None) == UNDECIDED
    # The kernel's RSF s5 LIA at n = 3 (report/kernel): 2.71 [1.66, 3.76] against 2.59, both
    # boundaries (2.20, 2.98) inside: it was "reproduced" on its mean alone.
    assert cell_verdict(2.59, math.nan, 2.709, 1.659, 3.759, None) == UNDECIDED
    # Narrow (half-width 1.7%) across 1.15: decided on the mean.
    assert cell_verdict(1.0, math.nan, 1.16, 1.14, 1.18, True) == ORDERING
    assert cell_verdict(1.0, math.nan, 1.14, 1.12, 1.16, None) == REPRODUCED
    # No interval (one run): nothing to call wide, the mean decides.
    assert cell_verdict(1.0, math.nan, 1.3, math.nan, math.nan, None) == NOT


def test_cell_verdicts_outside():
    assert cell_verdict(1.0, 0.0, 1.30, 1.25, 1.35, True) == ORDERING
    assert cell_verdict(1.0, 0.0, 1.30, 1.25, 1.35, False) == NOT
    assert cell_verdict(1.0, 0.0, 1.30, 1.25, 1.35, None) == NOT
    assert cell_verdict(1.0, 0.26, 1.30, 1.25, 1.35, False) == REPRODUCED  # 1.26 >= 1.25: overlap
    assert cell_verdict(1.0, 0.24, 1.30, 1.25, 1.35, False) == NOT


def test_ordering_ignores_ties():
    paper = {"a": 1.0, "b": 1.01, "c": 2.0}
    assert ordering_agrees(paper, {"a": 5.0, "b": 1.0, "c": 9.0}) is True  # a,b tie in the paper
    assert ordering_agrees(paper, {"a": 5.0, "b": 1.0, "c": 3.0}) is False
    assert ordering_agrees({"a": 1.0, "b": 1.01}, {"a": 1.0, "b": 0.5}) is None


def test_ordering_counts_only_pairs_our_intervals_separate():
    paper = {"tcp": 1.58, "lia": 2.52, "olia": 2.58}  # lia/olia 2.3% apart: the paper separates them
    means = {"tcp": 2.27, "lia": 3.79, "olia": 3.65}
    # Without intervals the means decide: olia below lia, against the paper.
    assert ordering_agrees(paper, means) is False
    # The kernel's RSF s1 at n = 3 (report/kernel): lia and olia overlap and are wide, so their
    # order is open; tcp is separated from both, in the paper's order.
    wide = {"tcp": (2.10, 2.44), "lia": (3.07, 4.51), "olia": (3.27, 4.04)}
    assert ordering_agrees(paper, means, wide) == ORDER_OPEN
    # The simulator's at n = 30: lia and olia overlap but both are narrow: a tie in ours, not
    # checked; tcp's pairs agree.
    narrow = {"tcp": (2.19, 2.21), "lia": (4.18, 4.20), "olia": (4.18, 4.20)}
    assert ordering_agrees(paper, {"tcp": 2.2, "lia": 4.19, "olia": 4.19}, narrow) is True
    # A separated pair in the other order decides, whatever is open.
    reversed_tcp = {"tcp": (4.60, 4.70), "lia": (3.07, 4.51), "olia": (3.27, 4.04)}
    assert ordering_agrees(paper, {"tcp": 4.65, "lia": 3.79, "olia": 3.65}, reversed_tcp) is False
    # Every separated pair tied in ours: nothing ordered.
    ties = {"tcp": (2.18, 2.22), "lia": (2.18, 2.22), "olia": (2.18, 2.22)}
    assert ordering_agrees(paper, {"tcp": 2.2, "lia": 2.2, "olia": 2.2}, ties) is None
    # One run (no interval) counts as exact.
    assert ordering_agrees(paper, means, {"lia": (3.07, 4.51)}) is False
    # The simulator's RSF s0 (n = 30): RSF-DB 2.2045 [2.2030, 2.2060] above LIA's 2.2012 [2.2000,
    # 2.2025], separated, in the paper's direction (1.58 > 1.53), but 0.15% apart: as close as
    # the paper's ties, so no order (it made all six rows 'same ordering only').
    s0 = {"lia": (2.2000, 2.2025), "rsf-db": (2.2030, 2.2060)}
    assert ordering_agrees({"lia": 1.53, "rsf-db": 1.58}, {"lia": 2.2012, "rsf-db": 2.2045}, s0) is None
    # within the tie but one interval wide: open
    assert ordering_agrees({"lia": 1.53, "rsf-db": 1.58}, {"lia": 2.20, "rsf-db": 2.22},
                           {"lia": (2.0, 2.4), "rsf-db": (2.21, 2.23)}) == ORDER_OPEN


def test_an_open_ordering_makes_a_number_outside_the_band_undecided():
    assert cell_verdict(2.52, math.nan, 3.79, 3.07, 4.51, ORDER_OPEN) == UNDECIDED
    # inside the band it is reproduced whatever the ordering
    assert cell_verdict(2.52, math.nan, 2.60, 2.55, 2.65, ORDER_OPEN) == REPRODUCED


def test_compare_marks_the_kernels_rsf_s1_undecided():
    """report/kernel's RSF Table 2 scenario 1 (n = 3): every number outside the band; only the
    lia/olia pair (2.52 against 2.58 in the paper) is reversed in the means, and its intervals
    overlap: the six verdicts were 'not reproduced' by that pair alone."""
    from pathpool.reproduce.compare import compare
    from pathpool.reproduce.experiments import load_experiments

    exp = [e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s1"]
    kernel = {"tcp": (2.27, 2.10, 2.44), "lia": (3.79, 3.07, 4.51), "olia": (3.65, 3.27, 4.04),
              "balia": (3.66, 3.08, 4.23), "rsf-db": (3.59, 3.32, 3.85), "rsf-lb": (3.61, 3.49, 3.73)}
    summary = pd.DataFrame([{"experiment": "rsf/table2_s1", "algorithm": a, "x": math.nan,
                             "metric": "throughput_mbps", "mean": m, "lo": lo, "hi": hi, "n": 3}
                            for a, (m, lo, hi) in kernel.items()])
    out = compare(exp, summary)
    assert len(out) == 6 and set(out["verdict"]) == {UNDECIDED} and set(out["ordering_agrees"]) == {ORDER_OPEN}
    # lia's mean below olia's (the paper's order): the pair is still open, the verdicts too
    summary.loc[summary["algorithm"] == "lia", ["mean", "lo", "hi"]] = [3.60, 3.00, 4.20]
    assert set(compare(exp, summary)["verdict"]) == {UNDECIDED}


def _summary(rows):
    return pd.DataFrame([{"experiment": "e", "algorithm": a, "x": x, "metric": "m", "mean": v, "lo": v - 0.01,
                          "hi": v + 0.01, "n": 10} for a, x, v in rows])


def _claim(check, algorithms, others="", threshold=math.nan, x=math.nan):
    return pd.Series({"claim_id": "c", "experiment": "e", "metric": "m", "check": check, "algorithms": algorithms,
                      "others": others if others else math.nan, "x": x, "threshold": threshold})


def test_ratio_claim():
    s = _summary([("rsf", math.nan, 1.8), ("lia", math.nan, 1.0), ("olia", math.nan, 0.9)])
    assert check_claim(_claim("ratio_at_least", "rsf", "lia olia", 2.0), s)[0] == REPRODUCED  # 1.8 >= 1.7
    s = _summary([("rsf", math.nan, 1.5), ("lia", math.nan, 1.0)])
    assert check_claim(_claim("ratio_at_least", "rsf", "lia", 2.0), s)[0] == ORDERING
    s = _summary([("rsf", math.nan, 0.9), ("lia", math.nan, 1.0)])
    assert check_claim(_claim("ratio_at_least", "rsf", "lia", 2.0), s)[0] == NOT


def test_sweep_claims():
    flat = [("lia", x, 1.0) for x in (1, 2, 3)]
    grows = [("rsf", x, v) for x, v in ((1, 1.0), (2, 1.3), (3, 1.6))]
    assert check_claim(_claim("grows_others_flat", "rsf", "lia"), _summary(flat + grows))[0] == REPRODUCED
    assert check_claim(_claim("grows_others_flat", "rsf", "lia"),
                       _summary(flat + [("rsf", x, 1.0) for x in (1, 2, 3)]))[0] == NOT
    falls = [("lia", 1, 2.0), ("lia", 3, 1.0), ("rsf", 1, 2.0), ("rsf", 3, 1.8)]
    assert check_claim(_claim("falls_least", "rsf", "lia"), _summary(falls))[0] == REPRODUCED
    falls_more = [("lia", 1, 2.0), ("lia", 3, 1.8), ("rsf", 1, 2.0), ("rsf", 3, 1.0)]
    assert check_claim(_claim("falls_least", "rsf", "lia"), _summary(falls_more))[0] == NOT


def test_order_and_extremes():
    s = _summary([("a", math.nan, 3.0), ("b", math.nan, 2.0), ("c", math.nan, 1.0)])
    assert check_claim(_claim("order_desc", "a b c"), s)[0] == REPRODUCED
    assert check_claim(_claim("order_desc", "a c b"), s)[0] == ORDERING
    assert check_claim(_claim("order_desc", "c b a"), s)[0] == NOT
    assert check_claim(_claim("smallest", "c", "a b"), s)[0] == REPRODUCED
    assert check_claim(_claim("largest", "a", "b c"), s)[0] == REPRODUCED
    assert check_claim(_claim("below", "b c", "a"), s)[0] == REPRODUCED
    assert check_claim(_claim("all_equal", "a b"), s)[0] == NOT


def _ci_summary(rows):
    """(algorithm, mean, lo, hi) rows of experiment e, metric m."""
    return pd.DataFrame([{"experiment": "e", "algorithm": a, "x": math.nan, "metric": "m", "mean": v, "lo": lo,
                          "hi": hi, "n": 10} for a, v, lo, hi in rows])


def test_a_ratio_claim_within_wide_intervals_is_undecided():
    """report/kernel's RSF s2 claim (RSF-DB 2x LIA): 1.221 [1.147, 1.296] over 0.700 [0.675,
    0.725] = 1.745 >= 1.7 on the means, but RSF-DB's interval is 6.1% wide: at its low end over
    LIA's high end the ratio is 1.147 / 0.725 = 1.58, 'same ordering only'."""
    claim = _claim("ratio_at_least", "rsf-db", "lia", 2.0)
    s = _ci_summary([("rsf-db", 1.2212, 1.1465, 1.2960), ("lia", 0.6999, 0.6751, 0.7246)])
    verdict, text = check_claim(claim, s)
    assert verdict == UNDECIDED and "same ordering only within the intervals" in text
    # the same means with narrow intervals: decided on the means
    narrow = _ci_summary([("rsf-db", 1.2212, 1.20, 1.24), ("lia", 0.6999, 0.69, 0.71)])
    assert check_claim(claim, narrow)[0] == REPRODUCED
    # far from the threshold, wide intervals change nothing
    far = _ci_summary([("rsf-db", 2.0, 1.8, 2.2), ("lia", 0.70, 0.60, 0.80)])
    assert check_claim(claim, far)[0] == REPRODUCED


def test_all_equal_smallest_and_below_within_wide_intervals():
    # Balia Table V on the kernel, n = 3: balia 39.0 [29.9, 48.2], max 41.1 [29.0, 53.2] s,
    # spread 5.4% on the means; at the ends 29.0 and 48.2 are 66% apart.
    equal = _claim("all_equal", "balia max")
    s = _ci_summary([("balia", 39.03, 29.90, 48.17), ("max", 41.14, 29.04, 53.24)])
    assert check_claim(equal, s)[0] == UNDECIDED
    assert check_claim(equal, _ci_summary([("balia", 39.03, 38.5, 39.5), ("max", 41.14, 40.5, 41.7)]))[0] == REPRODUCED
    # smallest: 1.0 below 1.1 on the means; a's interval reaches 1.3
    smallest = _claim("smallest", "a", "b")
    assert check_claim(smallest, _ci_summary([("a", 1.0, 0.7, 1.3), ("b", 1.1, 1.09, 1.11)]))[0] == UNDECIDED
    assert check_claim(smallest, _ci_summary([("a", 1.0, 0.99, 1.01), ("b", 1.1, 1.09, 1.11)]))[0] == REPRODUCED
    below = _claim("below", "a", "ref")
    assert check_claim(below, _ci_summary([("a", 1.0, 0.7, 1.3), ("ref", 1.1, 1.09, 1.11)]))[0] == UNDECIDED
    assert check_claim(below, _ci_summary([("a", 0.5, 0.4, 0.6), ("ref", 1.1, 1.09, 1.11)]))[0] == REPRODUCED


def test_an_order_claim_counts_neighbours_as_a_rows_pairs():
    claim = _claim("order_desc", "a b c")
    separated = _ci_summary([("a", 3.0, 2.95, 3.05), ("b", 2.0, 1.95, 2.05), ("c", 1.0, 0.98, 1.02)])
    assert check_claim(claim, separated)[0] == REPRODUCED
    # b and c inside each other's narrow intervals: decreasing means, but no order between them
    tied = _ci_summary([("a", 3.0, 2.95, 3.05), ("b", 1.02, 1.0, 1.04), ("c", 1.0, 0.98, 1.02)])
    verdict, text = check_claim(claim, tied)
    assert verdict == ORDERING and "no order between b and c" in text
    # b 1.5% above c with disjoint narrow intervals: within the tie, no order either
    close = _ci_summary([("a", 3.0, 2.95, 3.05), ("b", 1.015, 1.012, 1.018), ("c", 1.0, 0.998, 1.002)])
    assert check_claim(claim, close)[0] == ORDERING
    # ... and one of them wide: open
    wide = _ci_summary([("a", 3.0, 2.95, 3.05), ("b", 1.2, 0.8, 1.6), ("c", 1.0, 0.98, 1.02)])
    assert check_claim(claim, wide)[0] == UNDECIDED


def test_the_committed_reports_give_the_current_codes_verdicts():
    """current_verdicts.py (beside this file) on the committed summaries of report/ and report/kernel
    (both engines): every published number's and every claim's verdict is the one the current
    verdict code gives, so a change of the rule without regenerating the reports fails here."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("current_verdicts", Path(__file__).with_name("current_verdicts.py"))
    cv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cv)
    kres = root / "report/kernel/results"
    for res, prefix in ((root / "report/results", ""), (kres, ""), (kres, "linux_")):
        summary = pd.read_csv(res / f"{prefix}summary.csv")
        moved, _, now = cv.changes(summary, pd.read_csv(res / f"{prefix}comparison.csv"))
        assert moved.empty, (res, prefix, moved[["table", "algorithm", "verdict_was", "verdict_now"]])
        assert sum(now.values()) > 20
        claims_moved = cv.claim_changes(summary, pd.read_csv(res / f"{prefix}claims.csv"))
        assert claims_moved.empty, (res, prefix, claims_moved)
