"""`pathpool plot RESULTS_DIR`: figures from a run's and a sweep's tables."""

from __future__ import annotations

import pathpool
import pytest
from pathpool.data import scenario_path
from pathpool.errors import ResultSetError
from pathpool.plot import plot_results


def _run(tmp_path):
    d = tmp_path / "run"
    pathpool.run(scenario_path("examples/two_paths"), seeds=[1, 2]).write(d)
    return d


def test_plot_a_run(tmp_path, cli):
    d = _run(tmp_path)
    r = cli("plot", d)
    assert r.code == 0, r.err
    names = [p.rsplit("/", 1)[-1] for p in r.out.split()]
    assert names == ["timeseries.png", "timeseries.pdf", "flows.png", "flows.pdf"]
    assert (d / "plots" / "flows.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (d / "plots" / "timeseries.pdf").read_bytes()[:5] == b"%PDF-"


def test_plot_seed_and_where_and_refuse_an_incomplete_set(tmp_path):
    d = _run(tmp_path)
    files = plot_results(d, tmp_path / "figs", seed=2, where={"flow": "mptcp"})
    assert [f.name for f in files] == ["timeseries.png", "timeseries.pdf", "flows.png", "flows.pdf"]
    # the CSV files alone are not the set manifest.json lists
    for name in ("flows", "subflows", "series", "links"):
        (d / f"{name}.parquet").unlink()
    with pytest.raises(ResultSetError, match="flows.parquet is missing"):
        plot_results(d, tmp_path / "figs2")


def test_plot_errors_are_one_line(tmp_path, cli):
    r = cli("plot", tmp_path)
    assert r.code == 2 and "not a pathpool results directory" in r.err and r.err.count("\n") == 1
    d = _run(tmp_path)
    r = cli("plot", d, "--where", "nosuch=1")
    assert r.code == 2 and "no column 'nosuch'" in r.err
    r = cli("plot", d, "--where", "flow=nosuch")
    assert r.code == 2 and "allowed values of flow: mptcp, tcp" in r.err


def test_timeseries_draws_goodput_per_subflow(tmp_path, monkeypatch):
    from pathpool import plot

    figs = []
    monkeypatch.setattr(plot, "_save", lambda fig, stem: figs.append(fig) or [stem])
    d = _run(tmp_path)
    plot_results(d, tmp_path / "figs", seed=1)
    ax = next(a for a in figs[0].axes if a.get_ylabel().startswith("subflow goodput"))
    # two_paths: mptcp over two paths, tcp over one
    assert sorted(line.get_label() for line in ax.get_lines()) == ["mptcp/0", "mptcp/1", "tcp/0"]
    assert all(len(line.get_xdata()) > 10 for line in ax.get_lines())
