"""Verdict logic and statistics against hand-worked cases."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pathpool.reproduce.verdict import (
    NOT,
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
