"""scripts/kernel_cell.py: one kernel cell to many repetitions, placed against the tolerance.

No kernel needed: the plans are compared with the runner's, and the placement is checked on
hand-made runs against hand computation.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pathpool.reproduce.verdict import summarise

T975_2 = 4.302652729911275  # Student's t, 97.5% quantile, 2 degrees of freedom


@pytest.fixture(scope="module")
def kc(script_module):
    return script_module("kernel_cell")


@pytest.fixture(scope="module")
def table3(kc):
    return kc.experiment("balia/table3")


def test_seed_ranges(kc):
    assert kc.seed_range("1-30") == list(range(1, 31))
    assert kc.seed_range("4,7-8") == [4, 7, 8]
    for bad in ("0-3", "5-2"):
        with pytest.raises(Exception, match="ranges A-B"):
            kc.seed_range(bad)


def test_plans_are_the_reports(kc, table3):
    """The cell's jobs are exactly the runner's jobs of that algorithm: same cache keys."""
    from pathpool.reproduce import kernel as kb
    from pathpool.reproduce.experiments import build_jobs

    mine = kc.cell_jobs(table3, ["olia"], [1, 2, 3])
    everything, _ = kb.plan_jobs(build_jobs([table3], [1, 2, 3], kc.options()), "quickack", kb.DEFAULT_MAX_DURATION_S)
    theirs = [k for k in everything if k.job.tags["run_algorithm"] == "olia"]
    assert len(mine) == 3 and len(everything) == 3 * len(table3.algorithms)
    assert sorted(k.key() for k in mine) == sorted(k.key() for k in theirs)
    assert {k.job.seed for k in mine} == {1, 2, 3}
    with pytest.raises(SystemExit, match="no algorithm 'nope'"):
        kc.cell_jobs(table3, ["olia", "nope"], [1])


def test_position_against_the_band(kc):
    # band for 2.0: [1.7, 2.3]
    assert kc.position(2.0, 1.8, 2.2, 0.15) == "inside"
    assert kc.position(2.0, 1.5, 1.69, 0.15) == "below"
    assert kc.position(2.0, 2.31, 2.5, 0.15) == "above"
    assert kc.position(2.0, 1.6, 1.8, 0.15) == "across"
    assert kc.position(2.0, 1.5, 2.5, 0.15) == "across"


def _runs(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"experiment": "balia/table3", "algorithm": "olia", "x": math.nan, "seed": i + 1,
                          "metric": m, "value": v} for m, vs in values.items() for i, v in enumerate(vs)])


def _others(mptcp: dict[str, tuple[float, float, float]]) -> pd.DataFrame:
    """A report's summary of Table III's MP-TCP row: algorithm -> (mean, lo, hi)."""
    return pd.DataFrame([{"experiment": "balia/table3", "algorithm": a, "x": math.nan, "metric": "mptcp_mbps",
                          "mean": m, "lo": lo, "hi": hi, "n": 10} for a, (m, lo, hi) in mptcp.items()])


def test_placed_by_hand(kc, table3):
    """Three runs 2.0, 2.1, 2.2 (sd 0.1): half-width t * 0.1 / sqrt(3) = 0.2484, CI [1.8516,
    2.3484] across 0.85 x 2.61 = 2.2185: undecided; Stein for 5%: ceil(3 * (0.11829/0.05)^2) = 17.
    SP-TCP 2.00, 2.01, 2.02 against 1.12: narrow (1.2%), above the band."""
    cell = summarise(_runs({"mptcp_mbps": [2.0, 2.1, 2.2], "sptcp_mbps": [2.00, 2.01, 2.02]}))
    # the report's own olia row must be replaced, not used
    others = _others({"ewtcp": (2.39, 2.34, 2.43), "olia": (9.0, 8.9, 9.1)})
    out = kc.placed(table3, ["olia"], cell, others)
    assert list(out["metric"]) == ["mptcp_mbps", "sptcp_mbps"]  # only the cell's algorithm
    mp = out.set_index("metric").loc["mptcp_mbps"]
    hw = T975_2 * 0.1 / math.sqrt(3)
    assert mp["paper"] == 2.61 and mp["n"] == 3
    assert mp["lo"] == pytest.approx(2.1 - hw) and mp["hi"] == pytest.approx(2.1 + hw)
    assert mp["halfwidth"] == pytest.approx(hw / 2.1)
    assert mp["band_lo"] == pytest.approx(0.85 * 2.61)
    assert mp["position"] == "across" and mp["verdict"] == "undecided"
    assert mp["stein_5pct"] == math.ceil(3 * (hw / 2.1 / 0.05) ** 2) == 17
    sp = out.set_index("metric").loc["sptcp_mbps"]
    assert sp["paper"] == 1.12 and sp["position"] == "above" and sp["stein_5pct"] == 3
    # no other algorithm in the SP-TCP row: nothing ordered, so not reproduced
    assert sp["verdict"] == "not reproduced"


def test_placed_uses_the_rows_order(kc, table3):
    """Narrow olia runs below the band (2.00-2.02 against 2.61): the verdict is the row's order.
    ewtcp (paper 2.75 > olia's 2.61) separated above: same ordering only; separated below:
    not reproduced; overlapping and wide: open, so undecided."""
    cell = summarise(_runs({"mptcp_mbps": [2.00, 2.01, 2.02]}))
    verdict = {}
    for name, ewtcp in (("above", (2.39, 2.34, 2.43)), ("below", (1.80, 1.78, 1.82)), ("open", (2.0, 1.5, 2.5))):
        out = kc.placed(table3, ["olia"], cell, _others({"ewtcp": ewtcp}))
        verdict[name] = (out.loc[0, "position"], out.loc[0, "ordering_agrees"], out.loc[0, "verdict"])
    assert verdict == {"above": ("below", "True", "same ordering only"),
                       "below": ("below", "False", "not reproduced"),
                       "open": ("below", "open", "undecided")}


def test_table_from_a_per_run_csv(kc, tmp_path, capsys):
    """`table --per-run`: the kept metrics instead of the cache; a missing seed is refused."""
    import argparse

    csv = tmp_path / "per_run.csv"
    _runs({"mptcp_mbps": [2.0, 2.1, 2.2], "sptcp_mbps": [2.00, 2.01, 2.02]}).to_csv(csv, index=False)
    args = argparse.Namespace(experiment="balia/table3", algorithms=["olia"], seeds=[1, 2, 3], per_run=str(csv),
                              others=str(tmp_path / "none.csv"), out=None, csv=None)
    kc.table(args)
    lines = capsys.readouterr().out.splitlines()
    mp = next(line for line in lines if "mptcp_mbps" in line)
    assert "across" in mp and "undecided" in mp and " 3 " in mp
    args.seeds = [1, 2, 3, 4]
    with pytest.raises(SystemExit, match=r"no olia run of seed\(s\) \[4\]"):
        kc.table(args)


def test_two_cells_decide_their_pair(kc):
    """RSF s1's open pair is LIA/OLIA (the paper: 2.52 < 2.58); run both, replace both. With the
    report's TCP (narrow) and Balia (wide, but tied with both in the paper) the row's order is
    then theirs: separated in the paper's order -> same ordering only (both 19-36% above the
    band's centre); reversed -> not reproduced."""
    s1 = kc.experiment("rsf/table2_s1")
    others = pd.DataFrame([{"experiment": "rsf/table2_s1", "algorithm": a, "x": math.nan, "metric": "throughput_mbps",
                            "mean": m, "lo": lo, "hi": hi, "n": 3}
                           for a, (m, lo, hi) in {"tcp": (2.27, 2.25, 2.29), "balia": (3.66, 3.08, 4.23),
                                                  "lia": (3.79, 3.07, 4.51), "olia": (3.65, 3.27, 4.04)}.items()])

    def runs(lia, olia):
        return summarise(pd.DataFrame([{"experiment": "rsf/table2_s1", "algorithm": a, "x": math.nan, "seed": i + 1,
                                        "metric": "throughput_mbps", "value": v}
                                       for a, vs in (("lia", lia), ("olia", olia)) for i, v in enumerate(vs)]))

    out = kc.placed(s1, ["lia", "olia"], runs([3.00, 3.01, 3.02], [3.50, 3.51, 3.52]), others)
    assert list(out["algorithm"]) == ["lia", "olia"] and set(out["verdict"]) == {"same ordering only"}
    assert list(out["n"]) == [3, 3]  # the new runs', not the report's
    out = kc.placed(s1, ["lia", "olia"], runs([3.50, 3.51, 3.52], [3.00, 3.01, 3.02]), others)
    assert set(out["verdict"]) == {"not reproduced"}
    # with the report's own lia/olia rows the order is open, as in report/kernel
    assert set(kc.placed(s1, ["tcp"], summarise(pd.DataFrame([{"experiment": "rsf/table2_s1", "algorithm": "tcp",
                                                                 "x": math.nan, "seed": i, "metric": "throughput_mbps",
                                                                 "value": v} for i, v in enumerate([2.26, 2.27, 2.28])])),
                             others)["verdict"]) == {"undecided"}
