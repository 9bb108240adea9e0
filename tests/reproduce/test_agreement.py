"""The agreement table's simulator side: the kernel's cells run again in the simulator as the
test bed runs them (``--agreement-reading linux``), and the counts the report prints."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pathpool.kernel.mapping import as_testbed_runs
from pathpool.reproduce import compare as cmp
from pathpool.reproduce.experiments import Options, load_experiments
from pathpool.reproduce.report import agreement_counts, multipath_experiments
from pathpool.reproduce.runner import KernelOptions, simulate_as_testbed
from pathpool.sim.scenario import load_scenario

QUICK = Options(time_scale=0.05, recovery_reading="linux")


def test_cells_run_once_each_as_the_test_bed_runs_them(tmp_path):
    """An unswept experiment's x is NaN in every kernel job: two NaN cells are one cell (each
    seed ran once, not once per kernel job), and the summary is that of the simulator on the
    scenario with ``as_testbed_runs`` applied, run directly."""
    import pathpool

    e = next(e for e in load_experiments(["balia"]) if e.key == "balia/table4")
    cells = [("balia/table4", "lia", float("nan")), ("balia/table4", "lia", float("nan"))]
    tables, summary = simulate_as_testbed([e], cells, [1, 2], tmp_path, QUICK, workers=1)
    assert len(tables["flows"]) == 2 and "series" not in tables
    sc = e.scenario("lia", math.nan, QUICK)
    direct = pathpool.run(load_scenario(sc, as_testbed_runs(sc, start_jitter=False)), seeds=[1, 2]).flows
    want = direct.groupby("seed")["goodput_bps"].sum().mean() / 1e6
    row = summary[summary["metric"] == "mptcp_mbps"].iloc[0]
    assert row["n"] == 2 and row["mean"] == pytest.approx(want, rel=1e-12)
    # The scenario columns' own run differs: no DSS bytes, minimum-RTT scheduler, jitter.
    plain = pathpool.run(sc, seeds=[1, 2]).flows.groupby("seed")["goodput_bps"].sum().mean() / 1e6
    assert plain != pytest.approx(want, rel=1e-6)


def test_the_start_jitter_is_what_the_kernel_runs_had(tmp_path):
    """Kernel runs started at the written starts (``--kernel-start-jitter off``): the simulator's
    flows beside them start there too; runs started at the simulator's draws: they keep them."""
    import pathpool

    e = next(e for e in load_experiments(["balia"]) if e.key == "balia/table3")
    sc = e.scenario("lia", math.nan, QUICK)
    assert any(f["start_jitter_s"] > 0 for f in sc.spec["flows"])
    got = {}
    for bed in ("off", "scenario"):
        _, summary = simulate_as_testbed([e], [("balia/table3", "lia", math.nan)], [1, 2], tmp_path / bed, QUICK,
                                         start_jitter=bed, workers=1)
        got[bed] = summary[summary["metric"] == "mptcp_mbps"].iloc[0]["mean"]
        direct = pathpool.run(load_scenario(sc, as_testbed_runs(sc, start_jitter=bed != "off")), seeds=[1, 2])
        f = direct.flows
        assert got[bed] == pytest.approx(f[f["flow"] == "mp"]["goodput_bps"].mean() / 1e6, rel=1e-12)
    assert got["off"] != pytest.approx(got["scenario"], rel=1e-9)


def _summary(means: dict[tuple[str, str], float], metric: str = "throughput_mbps") -> pd.DataFrame:
    return pd.DataFrame([{"experiment": e, "algorithm": a, "x": math.nan, "metric": metric, "mean": m,
                          "lo": m * 0.99, "hi": m * 1.01, "n": 5} for (e, a), m in means.items()])


def test_agreements_stack_the_readings_and_the_counts_are_hand_checked():
    cells = [("rsf/table2_s2", "lia"), ("rsf/table2_s2", "olia"), ("rsf/table2_s2", "balia"),
             ("rsf/table2_s2", "rsf-db"), ("rsf/table2_s2", "tcp"), ("rsf/table2_s0", "lia")]
    kernel = _summary(dict.fromkeys(cells, 1.0))
    # kernel / simulator = 0.95, 0.88, 1.12, 0.80 on the multipath rows; tcp and the
    # single-path experiment are left out of the counts whatever their ratio.
    linux = _summary(dict(zip(cells, [1 / 0.95, 1 / 0.88, 1 / 1.12, 1 / 0.80, 3.0, 3.0])))
    scenario = _summary(dict.fromkeys(cells, 1.25))
    a = cmp.agreements([("linux", linux), ("scenario", scenario)], kernel)
    assert list(a.columns[:2]) == ["sim_reading", "experiment"]
    assert list(a["sim_reading"]) == ["linux"] * 6 + ["scenario"] * 6
    assert a[a["sim_reading"] == "linux"]["ratio"].tolist()[:4] == pytest.approx([0.95, 0.88, 1.12, 0.80])
    exps = [e for e in load_experiments(["rsf"]) if e.key in ("rsf/table2_s2", "rsf/table2_s0")]
    assert multipath_experiments(exps) == {"rsf/table2_s2"}
    text = agreement_counts(a, multipath_experiments(exps))
    gm = float(np.exp(np.mean(np.log([0.95, 0.88, 1.12, 0.80]))))
    assert ("Under `linux`, of the 4 rows that are an MPTCP connection's rate over several paths "
            in text)
    assert f"1 are within 10% and 3 within 15%, the kernel below the simulator in 3 (geometric mean of kernel / " \
           f"simulator {gm:.3f})" in text
    assert "Under `scenario`, of the 4 rows" in text and "0 are within 10% and 0 within 15%" in text


def test_the_agreement_reading_is_checked():
    assert KernelOptions().agreement == "linux"
    with pytest.raises(ValueError, match="agreement = 'kernel' is not allowed.*linux, scenario"):
        KernelOptions(agreement="kernel")


def test_testbed_time_is_each_runs_last_flow_end_summed():
    from pathpool.reproduce.report import _testbed_hours

    flows = pd.DataFrame({"experiment": ["e", "e", "e", "f"], "run_algorithm": ["lia", "lia", "lia", "tcp"],
                          "x": [math.nan, math.nan, math.nan, 4.0], "seed": [1, 1, 2, 1],
                          "end_s": [10.0, 30.0, 50.0, 3600.0]})
    # Runs: (e, lia, 1) ends at 30 s, (e, lia, 2) at 50 s, (f, tcp, 4, 1) at 3600 s.
    assert _testbed_hours(flows) == pytest.approx((30 + 50 + 3600) / 3600)
    assert _testbed_hours(None) == 0.0 and _testbed_hours(flows.iloc[0:0]) == 0.0
    # A table that does not say when its flows ended: unknown, and the text gives the wall time only.
    from pathpool.reproduce.report import _kernel_time

    assert math.isnan(_testbed_hours(flows.drop(columns="end_s")))
    assert _kernel_time(math.nan, 12.0) == "0.2 min of wall time"
    assert _kernel_time(9.62, 12.0) == ("9.6 h of test-bed time (the runs' lengths; 0.2 min of wall time for this "
                                        "report, cached runs included at ~0)")
