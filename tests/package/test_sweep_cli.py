"""`pathpool sweep GRID.toml`: grid files, their errors, and agreement with `pathpool.run`."""

from __future__ import annotations

import inspect

import pandas as pd
import pathpool
import pytest
from pathpool.data import scenario_path
from pathpool.sweep_cli import Grid, GridError, load_grid, overrides, run_grid

SCENARIO = "examples/two_paths"


def _grid(tmp_path, text: str):
    p = tmp_path / "grid.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, where", [
    ('scenario = "examples/two_paths"\nfoo = 1\n', "foo: unknown field"),
    ("seeds = [1]\n", "scenario: missing"),
    ('scenario = "examples/two_paths"\nseeds = []\n', "seeds: empty"),
    ('scenario = "examples/two_paths"\n[axes]\n"duration" = []\n', "axes.duration: empty"),
    ('scenario = "examples/two_paths"\n[axes]\n"duration" = "5s"\n', "axes.duration: not a list"),
    ('scenario = "examples/two_paths"\nseeds = "x"\n', "seeds:"),
])
def test_bad_grids_are_one_line_errors(tmp_path, cli, text, where):
    g = _grid(tmp_path, text)
    with pytest.raises(GridError, match=where):
        load_grid(g)
    r = cli("sweep", g, "-o", tmp_path / "out")
    assert r.code == 2 and r.err.count("\n") == 1 and where in r.err
    assert not (tmp_path / "out").exists()


def test_points_and_overrides():
    g = Grid("g", "s", None, {"links.a.rate": ["10Mbps", "20Mbps"], "flows.f.algorithm": ["lia", "olia"]})
    pts = g.points()
    assert len(pts) == 4 and pts[1] == {"links.a.rate": "10Mbps", "flows.f.algorithm": "olia"}
    assert overrides(pts[1]) == ['links.a.rate="10Mbps"', 'flows.f.algorithm="olia"']
    assert overrides({"x": 1.5, "y": True}) == ["x=1.5", "y=true"]


def test_seed_sweep_agrees_with_run_and_is_cached(tmp_path):
    g = load_grid(_grid(tmp_path, f'scenario = "{SCENARIO}"\nseeds = "1-2"\n'))
    out = tmp_path / "out"
    res = run_grid(g, out, workers=1)
    direct = pathpool.run(scenario_path(SCENARIO), seeds=[1, 2]).flows
    pd.testing.assert_series_equal(res["flows"]["goodput_bps"], direct["goodput_bps"], check_names=False)
    # summary = mean and sd over seeds of the flows table, by hand
    for flow, grp in direct.groupby("flow"):
        row = res["summary"][res["summary"]["flow"] == flow].iloc[0]
        assert row["goodput_bps_mean"] == pytest.approx(grp["goodput_bps"].mean(), rel=1e-12)
        assert row["goodput_bps_std"] == pytest.approx(grp["goodput_bps"].std(), rel=1e-12)
        assert row["seeds"] == 2
    first = (out / "flows.csv").read_bytes()
    assert len(list((out / "cache").iterdir())) == 2
    run_grid(g, out, workers=1)  # from the cache: the same bytes
    assert (out / "flows.csv").read_bytes() == first


def test_axes_go_through_the_scenario_overrides(tmp_path, cli):
    from pathpool.sim.scenario import load_scenario

    g = _grid(tmp_path, f'scenario = "{SCENARIO}"\nseeds = [1]\n[axes]\n"flows.mptcp.algorithm" = ["lia", "olia"]\n')
    r = cli("sweep", g, "-o", tmp_path / "out", "-j", "1", "--json")
    if "overrides" not in inspect.signature(load_scenario).parameters:
        assert r.code == 2 and "overrides" in r.err  # this build's loader cannot apply them
        return
    assert r.code == 0, r.err
    flows = pd.read_csv(tmp_path / "out" / "flows.csv")
    assert list(flows.columns[:2]) == ["flows.mptcp.algorithm", "seed"]
    mp = flows[flows["flow"] == "mptcp"]
    assert list(mp["flows.mptcp.algorithm"]) == ["lia", "olia"] == list(mp["algorithm"])


def test_the_sweep_table_keeps_every_digit_at_80_columns(tmp_path):
    """Piped into 80 columns, the summary table folds headers and never cuts a number."""
    import os
    import subprocess
    import sys

    g = _grid(tmp_path, f'scenario = "{SCENARIO}"\nseeds = [1]\n[axes]\n"flows.mptcp.algorithm" = ["lia", "olia"]\n'
                        '"links.bottleneck_a.rate" = ["10Mbps", "20Mbps"]\n"duration" = ["2s"]\n')
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "pathpool.cli", "sweep", str(g), "-o", str(tmp_path / "out"), "-j", "1"],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    for line in r.stdout.splitlines():
        assert len(line) <= 80 or "Mb/s" in line  # a row wider than 80 is printed whole, not cut
    for v in summary["goodput_bps_mean"]:
        assert f"{v / 1e6:.3f} Mb/s" in r.stdout


def test_sweep_dask_without_the_extra_is_one_line(tmp_path, cli, monkeypatch):
    """Without the 'dask' extra, --dask names the extra to install instead of a traceback."""
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    g = _grid(tmp_path, f'scenario = "{SCENARIO}"\nseeds = [1]\n')
    r = cli("sweep", g, "-o", tmp_path / "out", "--dask", "local")
    assert r.code == 2
    assert r.err.strip() == "pathpool sweep: --dask needs Dask, an extra: pip install 'pathpool[dask]'"
    assert not (tmp_path / "out").exists()
