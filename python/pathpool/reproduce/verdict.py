"""Statistics and verdicts: our numbers against the published ones.

The tolerance is data (:data:`TOLERANCE`), stated once, printed at the top of the report.

Numbers (a published value P, ours a mean m with a t-based 95% confidence interval [lo, hi]
over seeds):

- **reproduced**: ``|m - P| <= rel * |P|``, or our interval overlaps the paper's (P +- its
  published margin, 0 when none is given) *and* is narrow: its half-width is at most
  ``max_halfwidth`` of ``|m|``. A wide interval (few seeds, a noisy metric) overlaps almost
  anything, so it never makes a number "reproduced" on its own;
- **same ordering only**: not reproduced, but the algorithms of the same row are ordered as in
  the paper: of the pairs whose published values differ by more than ``tie`` (relative; pairs
  the paper ties are not checked), every pair our intervals separate (disjoint 95% CIs) is in
  the paper's order, and at least one is. Two means inside each other's interval are not an
  order, nor two within ``tie`` of each other: such a pair whose intervals are both narrow is a
  tie in ours and is not checked either, as the paper's ties; one whose intervals overlap while
  one is wide leaves the ordering *open* (:data:`ORDER_OPEN`);
- **not reproduced**: otherwise (a separated pair in the other order, or no pair to check);
- **undecided** (replaces any of the three): our interval is wide (half-width above
  ``max_halfwidth`` of ``|m|``) and contains a boundary of the tolerance band,
  ``P * (1 - rel)`` or ``P * (1 + rel)``: the mean sits on one side of it only by the luck of
  few seeds, and more seeds could flip the verdict. The simulator's seed counts are raised until
  every published quantity's interval is narrow (``--ci-target``), so this marks the kernel's
  few repetitions; a narrow interval across a boundary is decided. Likewise a number outside the
  band whose row's ordering is open (and has no separated pair against the paper): whether it
  is *same ordering only* or *not reproduced* would be the luck of few seeds.

Claims (statements in the text, checked in code against thresholds that come from
``published/claims_checks.csv``) use the same three words: *reproduced* when the claim holds as
stated (quantities within ``rel``), *same ordering only* when its direction holds but not its
size or not for every algorithm, *not reproduced* otherwise. Each check's docstring says exactly.
A claim is *undecided* when a wide interval could change its verdict (:func:`check_claim`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from pathpool.stats import t_interval

__all__ = [
    "NOT",
    "ORDERING",
    "ORDER_OPEN",
    "REPRODUCED",
    "TOLERANCE",
    "UNDECIDED",
    "cell_verdict",
    "check_claim",
    "ci95",
    "kendall_tau",
    "ordering_agrees",
    "summarise",
]

#: The tolerance, stated once.
TOLERANCE: dict[str, float] = {
    "rel": 0.15,  # a number is reproduced within 15% relative ...
    "tie": 0.02,  # ... published values within 2% of each other are a tie for ordering
    "confidence": 0.95,  # t-based confidence level of our intervals
    "max_halfwidth": 0.05,  # ... and an interval counts for overlap only if its half-width is <= 5% of the mean
}

REPRODUCED = "reproduced"
ORDERING = "same ordering only"
NOT = "not reproduced"
UNDECIDED = "undecided"

#: :func:`ordering_agrees` when no separated pair is reversed but a pair the paper separates has
#: overlapping intervals of which one is wide: more seeds could order it either way.
ORDER_OPEN = "open"


def ci95(values: Sequence[float], confidence: float = TOLERANCE["confidence"]) -> tuple[float, float, float, int]:
    """Mean, lower and upper bound of the t-based confidence interval, and n (NaNs dropped);
    :func:`pathpool.stats.t_interval` at the report's confidence level."""
    return t_interval(values, confidence)


def summarise(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI over seeds for every (experiment, algorithm, x, metric)."""
    rows = []
    for (exp, alg, x, metric), g in per_run.groupby(["experiment", "algorithm", "x", "metric"], dropna=False, sort=False):
        m, lo, hi, n = ci95(g["value"].tolist())
        rows.append({"experiment": exp, "algorithm": alg, "x": x, "metric": metric, "mean": m, "lo": lo, "hi": hi, "n": n})
    return pd.DataFrame(rows, columns=["experiment", "algorithm", "x", "metric", "mean", "lo", "hi", "n"])


def cell_verdict(paper: float, paper_ci: float, mean: float, lo: float, hi: float,
                 ordering_ok: bool | str | None) -> str:
    """Verdict for one published number (see the module docstring).

    Examples
    --------
    >>> cell_verdict(2.0, float("nan"), 2.1, 2.05, 2.15, None)  # within 15%, narrow
    'reproduced'
    >>> cell_verdict(2.0, float("nan"), 2.1, 1.5, 2.7, None)  # within 15%, but 1.7 and 2.3 inside
    'undecided'
    >>> cell_verdict(2.0, float("nan"), 1.72, 1.69, 1.75, None)  # across 1.7, yet narrow: decided
    'reproduced'
    >>> cell_verdict(2.0, float("nan"), 3.0, 2.9, 3.1, ORDER_OPEN)  # outside, the row's order open
    'undecided'
    """
    if math.isnan(paper) or math.isnan(mean):
        return "—"
    known = not (math.isnan(lo) or math.isnan(hi))
    narrow = known and not _wide(mean, lo, hi)
    if known and not narrow and any(lo <= paper * (1 + s * TOLERANCE["rel"]) <= hi for s in (-1, 1)):
        return UNDECIDED
    if abs(mean - paper) <= TOLERANCE["rel"] * abs(paper):
        return REPRODUCED
    pc = 0.0 if paper_ci is None or math.isnan(paper_ci) else paper_ci
    if narrow and lo <= paper + pc and hi >= paper - pc:
        return REPRODUCED
    if ordering_ok == ORDER_OPEN:
        return UNDECIDED
    return ORDERING if ordering_ok else NOT


def _tie(x: float, y: float) -> bool:
    return abs(x - y) <= TOLERANCE["tie"] * max(abs(x), abs(y))


def _wide(m, lo, hi):
    """Half-width above ``max_halfwidth`` of the mean (floats, or element-wise on Series)."""
    return (hi - lo) / 2 > TOLERANCE["max_halfwidth"] * np.abs(m)


def ordering_agrees(paper: dict[str, float], ours: dict[str, float],
                    intervals: dict[str, tuple[float, float]] | None = None) -> bool | str | None:
    """Whether our values order the pairs the paper separates (by more than ``tie``) as it does.

    Our values within ``tie`` of each other are a tie, as the paper's, and not checked. Without
    ``intervals`` our values are otherwise exact: True if every checked pair is in the paper's
    order, False if one is not, None when there is none. With ``intervals`` (our 95% CI per key)
    only the pairs our intervals separate are an order (see the module docstring):
    False if one of them is reversed; else :data:`ORDER_OPEN` if a pair's intervals overlap
    while one of them is wide; else True if at least one separated pair is in the paper's order;
    else None. A key without a finite interval (one run) counts as exact.

    Examples
    --------
    >>> paper = {"a": 1.0, "b": 2.0}
    >>> ordering_agrees(paper, {"a": 1.5, "b": 1.6})
    True
    >>> ordering_agrees(paper, {"a": 1.5, "b": 1.6}, {"a": (1.48, 1.52), "b": (1.58, 1.62)})
    True
    >>> ordering_agrees(paper, {"a": 1.5, "b": 1.6}, {"a": (1.0, 2.0), "b": (1.58, 1.62)})
    'open'
    >>> ordering_agrees(paper, {"a": 1.6, "b": 1.5}, {"a": (1.57, 1.63), "b": (1.47, 1.53)})
    False
    >>> ordering_agrees(paper, {"a": 1.5, "b": 1.52}, {"a": (1.47, 1.53), "b": (1.49, 1.55)}) is None
    True
    """
    keys = [k for k in paper if k in ours and not math.isnan(paper[k]) and not math.isnan(ours[k])]
    agree = is_open = False
    for a, b in itertools.combinations(keys, 2):
        if _tie(paper[a], paper[b]):
            continue
        pa, pb = paper[a], paper[b]
        ia = (intervals or {}).get(a, (math.nan, math.nan))
        ib = (intervals or {}).get(b, (math.nan, math.nan))
        known = all(math.isfinite(v) for v in (*ia, *ib))
        if _tie(ours[a], ours[b]) or (known and ia[0] <= ib[1] and ib[0] <= ia[1]):
            # No order in ours (as close as the paper's ties, or inside each other's intervals);
            # open if more seeds could still give one.
            is_open = is_open or (known and bool(_wide(ours[a], *ia) or _wide(ours[b], *ib)))
            continue
        if (pa - pb) * (ours[a] - ours[b]) <= 0:
            return False
        agree = True
    if is_open:
        return ORDER_OPEN
    return True if agree else None


def kendall_tau(paper: dict[str, float], ours: dict[str, float]) -> float:
    """Kendall's tau-b between the paper's and our values over the common keys (NaN if < 3)."""
    keys = [k for k in paper if k in ours and not math.isnan(paper[k]) and not math.isnan(ours[k])]
    if len(keys) < 3:
        return math.nan
    tau = stats.kendalltau([paper[k] for k in keys], [ours[k] for k in keys]).statistic
    return float(tau)


# --- claims ---------------------------------------------------------------------------------------


def _means(summary: pd.DataFrame, exp: str, metric: str) -> pd.DataFrame:
    s = summary[(summary["experiment"] == exp) & (summary["metric"] == metric)]
    return s


#: Which way each check wants an algorithm's value, for its listed ``algorithms`` and its
#: ``others``: +1 the claim holds better when the value is larger, -1 when smaller.
_ROLES: dict[str, tuple[int, int]] = {"ratio_at_least": (1, -1), "at_least": (1, -1), "largest": (1, -1),
                                      "smallest": (-1, 1), "below": (-1, 1)}


def check_claim(row: pd.Series, summary: pd.DataFrame) -> tuple[str, str]:
    """Evaluate one row of ``claims_checks.csv``; returns (verdict, what we measured, in words).

    The verdict is the check's on our means, *undecided* when an interval made wide by few runs
    (half-width above ``max_halfwidth`` of the mean) could change it: for the checks of
    :data:`_ROLES`, when the check gives another verdict with every wide interval's value moved
    to the end that works against the claim, or to the end that works for it (narrow intervals
    stay at their means, as for numbers); for ``all_equal`` the same with the values above the
    middle of the means moved up and those below it down (against), or the reverse. For
    ``order_desc`` neighbours of the claimed order count as a row's pairs do
    (:func:`ordering_agrees`): overlapping intervals of which one is wide make it undecided;
    overlapping narrow ones are no order, so the claim is at most *same ordering only*. The
    sweep checks are judged on the means (only the simulator sweeps, with narrow intervals).

    Examples
    --------
    RSF-DB 1.8 against LIA 1.0 for a claimed 2x (1.7 with the tolerance): reproduced on the
    means, undecided once RSF-DB's interval is [1.5, 2.1]:

    >>> row = pd.Series({"claim_id": "c", "experiment": "e", "metric": "m", "check": "ratio_at_least",
    ...                  "algorithms": "rsf", "others": "lia", "x": float("nan"), "threshold": 2.0})
    >>> s = pd.DataFrame({"experiment": "e", "algorithm": ["rsf", "lia"], "x": float("nan"), "metric": "m",
    ...                   "mean": [1.8, 1.0], "lo": [1.79, 0.99], "hi": [1.81, 1.01], "n": 30})
    >>> check_claim(row, s)[0]
    'reproduced'
    >>> check_claim(row, s.assign(lo=[1.5, 0.99], hi=[2.1, 1.01]))[0]
    'undecided'
    """
    s = _means(summary, row["experiment"], row["metric"])
    if s.empty:
        return "—", "not run"
    if s["x"].notna().any() and not pd.isna(row["x"]):
        s = s[np.isclose(s["x"], float(row["x"]))]
    verdict, text = _claim_at(row, s)
    check = row["check"]
    wide = np.isfinite(s["lo"]) & np.isfinite(s["hi"]) & _wide(s["mean"], s["lo"], s["hi"])
    algs = str(row["algorithms"]).split()
    others = str(row["others"]).split() if isinstance(row["others"], str) else []
    if check == "order_desc" and verdict != "—":
        # As a row's ordering: neighbours inside each other's intervals or within the tie are no order.
        ci = {r.algorithm: (r.lo, r.hi, w) for r, w in zip(s.itertuples(), wide, strict=True)}
        means = dict(zip(s["algorithm"], s["mean"], strict=True))
        tied = [f"{a} and {b}" for a, b in itertools.pairwise(algs) if a in ci and b in ci and (
            (ci[a][0] <= ci[b][1] and ci[b][0] <= ci[a][1]) or _tie(means[a], means[b]))]
        said = f"{text}; no order between {', '.join(tied)} (overlapping intervals or within {TOLERANCE['tie']:.0%})"
        if any(ci[a][2] or ci[b][2] for a, b in itertools.pairwise(algs) if f"{a} and {b}" in tied):
            return UNDECIDED, said
        if tied and verdict == REPRODUCED:
            return ORDERING, said
        return verdict, text
    if not wide.any() or verdict == "—":
        return verdict, text
    if check in _ROLES:
        ra, ro = _ROLES[check]
        role = {**{o: ro for o in others}, **{a: ra for a in algs}}
    elif check == "all_equal":
        mid = float(np.median(s.loc[s["algorithm"].isin(algs), "mean"]))
        role = {a: -1 if float(s.loc[s["algorithm"] == a, "mean"].mean()) >= mid else 1 for a in algs}
    else:
        return verdict, text
    ends = set()
    for end in (-1, 1):
        # end -1: every wide value at the end that works against the claim; +1: for it.
        moved = s.copy()
        for i in moved.index[wide]:
            r = role.get(moved.at[i, "algorithm"], 0) * end
            if r:
                moved.at[i, "mean"] = moved.at[i, "hi"] if r > 0 else moved.at[i, "lo"]
        ends.add(_claim_at(row, moved)[0])
    if ends != {verdict}:
        return UNDECIDED, f"{text}; {' or '.join(sorted(ends - {verdict}))} within the intervals"
    return verdict, text


def _claim_at(row: pd.Series, s: pd.DataFrame) -> tuple[str, str]:
    """:func:`check_claim` on the values in ``s['mean']``."""
    algs = str(row["algorithms"]).split()
    others = str(row["others"]).split() if isinstance(row["others"], str) else []
    thr = float(row["threshold"]) if not pd.isna(row["threshold"]) else math.nan
    tol = TOLERANCE["rel"]

    def mean_of(a: str, frame: pd.DataFrame = s) -> float:
        v = frame.loc[frame["algorithm"] == a, "mean"]
        return float(v.mean()) if len(v) else math.nan

    def ci_of(a: str) -> tuple[float, float]:
        v = s[s["algorithm"] == a]
        return (float(v["lo"].iloc[0]), float(v["hi"].iloc[0])) if len(v) else (math.nan, math.nan)

    fmt = lambda d: ", ".join(f"{k} {v:.3g}" for k, v in d.items())
    check = row["check"]
    if check == "all_equal":
        # Reproduced when the spread max/min - 1 of the means is within rel.
        m = {a: mean_of(a) for a in algs}
        vals = [v for v in m.values() if not math.isnan(v)]
        spread = max(vals) / min(vals) - 1 if vals and min(vals) > 0 else math.inf
        return (REPRODUCED if spread <= tol else NOT), f"{fmt(m)}; spread {spread:.1%}"
    if check == "ratio_at_least":
        # r = mean(A) / max(mean(others)). Reproduced if r >= threshold (1 - rel) and, for a
        # threshold of 1 ("better", no size given), the intervals do not overlap; same ordering
        # only if r > 1.
        a = algs[0]
        best = max(others, key=lambda o: mean_of(o) if not math.isnan(mean_of(o)) else -math.inf)
        r = mean_of(a) / mean_of(best)
        text = f"{a} {mean_of(a):.3g} vs best other ({best}) {mean_of(best):.3g}: ratio {r:.2f} (claimed {thr:g})"
        if thr > 1:
            ok = r >= thr * (1 - tol)
        else:
            (alo, _ahi), (_blo, bhi) = ci_of(a), ci_of(best)
            ok = r > 1 and alo > bhi
        return (REPRODUCED if ok else ORDERING if r > 1 else NOT), text
    if check == "at_least":
        a = algs[0]
        m = mean_of(a)
        others_m = {o: mean_of(o) for o in s["algorithm"].unique() if o != a}
        text = f"{a} {m:.3f} (claimed about {thr:g}); others {fmt(others_m)}"
        if m >= thr * (1 - tol):
            return REPRODUCED, text
        return (ORDERING if others_m and m >= min(others_m.values()) else NOT), text
    if check in ("grows_others_flat", "falls_least", "above_all"):
        xs = sorted(s["x"].dropna().unique())
        if len(xs) < 2:
            return "—", "needs a sweep"
        first, last = xs[0], xs[-1]
        at = lambda a, x: mean_of(a, s[np.isclose(s["x"], x)])
        change = {a: at(a, last) / at(a, first) - 1 for a in algs + others}
        text = f"change from x={first:g} to x={last:g}: {fmt({k: round(v * 100, 1) for k, v in change.items()})} (%)"
        a = algs[0]
        if check == "grows_others_flat":
            # Reproduced: A gains more than rel while every other changes by at most rel.
            if change[a] > tol and all(abs(change[o]) <= tol for o in others):
                return REPRODUCED, text
            return (ORDERING if change[a] > max(change[o] for o in others) else NOT), text
        if check == "falls_least":
            # Reproduced: every algorithm falls and A falls least; same ordering only: A falls least.
            least = change[a] > max(change[o] for o in others)
            if least and all(c < 0 for c in change.values()):
                return REPRODUCED, text
            return (ORDERING if least else NOT), text
        # above_all: A above every other at every x and the others fall; same ordering only if A
        # is above every other on average over x.
        above_every = all(at(a, x) > max(at(o, x) for o in others) for x in xs)
        avg = {k: float(np.mean([at(k, x) for x in xs])) for k in algs + others}
        text += f"; mean over x: {fmt(avg)}"
        if above_every and all(change[o] < 0 for o in others):
            return REPRODUCED, text
        return (ORDERING if avg[a] > max(avg[o] for o in others) else NOT), text
    if check == "order_desc":
        # Reproduced: means strictly decreasing in the listed order; same ordering only: most
        # pairs concordant (Kendall tau > 0).
        m = {a: mean_of(a) for a in algs}
        vals = [m[a] for a in algs]
        if all(x > y for x, y in itertools.pairwise(vals)):
            return REPRODUCED, fmt(m)
        tau = stats.kendalltau(list(range(len(vals), 0, -1)), vals).statistic
        return (ORDERING if tau > 0 else NOT), f"{fmt(m)}; Kendall tau with the claimed order {tau:.2f}"
    if check == "smallest":
        m = {k: mean_of(k) for k in algs + others}
        a = algs[0]
        rest = min(m[o] for o in others)
        if m[a] < rest:
            return REPRODUCED, fmt(m)
        return (ORDERING if m[a] <= rest * (1 + tol) else NOT), fmt(m)
    if check == "largest":
        m = {k: mean_of(k) for k in algs + others}
        lo_a, hi_o = min(m[a] for a in algs), max(m[o] for o in others)
        if lo_a > hi_o:
            return REPRODUCED, fmt(m)
        med = float(np.median([m[o] for o in others]))
        return (ORDERING if lo_a > med else NOT), fmt(m)
    if check == "below":
        ref = mean_of(others[0])
        m = {a: mean_of(a) for a in algs}
        below = [a for a in algs if m[a] < ref]
        text = f"{others[0]} {ref:.3g}; {fmt(m)}"
        if len(below) == len(algs):
            return REPRODUCED, text
        return (ORDERING if len(below) > len(algs) / 2 else NOT), text
    raise ValueError(f"unknown check {check!r} in claims_checks.csv (claim {row['claim_id']})")
