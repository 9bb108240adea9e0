"""`pathpool plot` draws only complete, consistent result sets, lives beside them without
blocking the next run, and draws figures a reader can use at page width."""

from __future__ import annotations

import shutil

import pathpool
import pytest
from pathpool.data import scenario_path
from pathpool.plot import plot_results


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    a, b = base / "a", base / "b"
    sc = pathpool.load_scenario(scenario_path("examples/two_paths"), ["duration=3s"])
    pathpool.run(sc, seeds=[1, 2]).write(a)
    pathpool.run(sc, seeds=[3, 4]).write(b)
    return a, b


def _copy(src, tmp_path):
    d = tmp_path / "set"
    shutil.copytree(src, d)
    return d


def _refused(cli, d, *words):
    r = cli("plot", d)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    for w in words:
        assert w in r.err, r.err
    assert not (d / "plots").exists()


def test_a_table_of_another_run_is_refused(two_runs, tmp_path, cli):
    a, b = two_runs
    d = _copy(a, tmp_path)
    shutil.copy(b / "flows.parquet", d / "flows.parquet")
    _refused(cli, d, "flows.parquet", "another run")


def test_flipped_bytes_are_refused(two_runs, tmp_path, cli):
    d = _copy(two_runs[0], tmp_path)
    raw = bytearray((d / "series.parquet").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (d / "series.parquet").write_bytes(bytes(raw))
    _refused(cli, d, "series.parquet")


def test_a_set_without_manifest_is_refused(two_runs, tmp_path, cli):
    d = _copy(two_runs[0], tmp_path)
    (d / "manifest.json").unlink()
    _refused(cli, d, "manifest.json", "missing")


def test_a_sweep_output_is_checked_too(tmp_path, cli):
    g = tmp_path / "g.toml"
    g.write_text('scenario = "examples/two_paths"\nseeds = [1]\n[axes]\n"duration" = ["2s", "3s"]\n')
    out = tmp_path / "sw"
    assert cli("sweep", g, "-o", out, "-j", "1", "--json").code == 0
    r = cli("plot", out)
    assert r.code == 0, r.err
    (out / "flows.csv").write_text((out / "flows.csv").read_text().replace("mptcp", "MPTCP"))
    (out / "flows.parquet").unlink()
    _refused_again = cli("plot", out)
    assert _refused_again.code == 2 and "flows" in _refused_again.err, _refused_again.err


def test_run_again_into_a_plotted_folder(tmp_path, cli):
    d = tmp_path / "D"
    sc = scenario_path("examples/two_paths")
    assert cli("run", sc, "-o", d, "--seeds", "1", "--set", "duration=2s", "-q").code == 0
    assert cli("plot", d).code == 0 and (d / "plots" / "flows.png").exists()
    r = cli("run", sc, "-o", d, "--seeds", "1", "--set", "duration=3s", "-q")
    assert r.code == 0, r.err
    assert not (d / "plots").exists()  # the figures of the old results went with them
    assert pathpool.read_results(d).scenario.duration_s == 3.0


def test_a_refused_folder_names_the_entry(tmp_path, cli):
    d = tmp_path / "D"
    sc = scenario_path("examples/two_paths")
    assert cli("run", sc, "-o", d, "--seeds", "1", "--set", "duration=2s", "-q").code == 0
    (d / "notes.txt").write_text("mine")
    r = cli("run", sc, "-o", d, "--seeds", "1", "--set", "duration=2s", "-q")
    assert r.code == 2 and "notes.txt" in r.err and r.err.count("\n") == 1, r.err
    (d / "notes.txt").unlink()
    (d / "plots").mkdir()
    (d / "plots" / "mine.svg").write_text("<svg/>")
    r = cli("run", sc, "-o", d, "--seeds", "1", "--set", "duration=2s", "-q")
    assert r.code == 2 and "plots/" in r.err, r.err


def _figures(monkeypatch):
    from pathpool import plot

    figs = []
    monkeypatch.setattr(plot, "_save", lambda fig, stem: figs.append(fig) or [stem.with_suffix(".png")])
    return figs


def _colour_of(artist):
    import matplotlib.colors as mc

    c = artist.get_color() if hasattr(artist, "get_color") else artist.get_facecolor()
    return mc.to_hex(c)


def test_timeseries_title_names_the_scenario_and_colours_follow_the_flow(two_runs, tmp_path, monkeypatch):
    figs = _figures(monkeypatch)
    plot_results(two_runs[0], tmp_path / "figs")
    ts = figs[0]
    assert "two_paths" in ts._suptitle.get_text() and "seed 1" in ts._suptitle.get_text()
    colours: dict[str, set[str]] = {}
    for ax in ts.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith("_"):
                continue
            flow = label.split("/")[0]
            if flow in ("mptcp", "tcp"):
                colours.setdefault(flow, set()).add(_colour_of(line))
    # one colour per flow in every panel (its subflows included), and the two flows differ
    assert colours["mptcp"] and colours["tcp"]
    assert all(len(c) == 1 for c in colours.values()), colours
    assert colours["mptcp"] != colours["tcp"]
    # legends sit outside the plotting area: they cover no data
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(ts).get_renderer()
    ts.draw(renderer)
    for ax in ts.axes:
        leg = ax.get_legend()
        if leg is not None:
            fig_box = leg.get_window_extent(renderer)
            ax_box = ax.get_window_extent(renderer)
            assert fig_box.x0 >= ax_box.x1 - 1 or fig_box.y1 <= ax_box.y0 + 1 or fig_box.y0 >= ax_box.y1 - 1


def test_bars_have_error_bars_and_the_flows_colours(two_runs, tmp_path, monkeypatch):
    import numpy as np

    figs = _figures(monkeypatch)
    plot_results(two_runs[0], tmp_path / "figs")
    bars_fig, ts = figs[1], figs[0]
    ax = bars_fig.axes[0]
    patches = [p for p in ax.patches if p.get_height() > 0]
    assert len({_colour_of(p) for p in patches}) == 2  # mptcp and tcp
    assert not any("+-" in t.get_text() for a in bars_fig.axes for t in [a.yaxis.label, a.title, *a.texts])
    # error bars drawn: the sd over the two seeds, by hand
    flows = pathpool.read_results(two_runs[0]).flows
    sd = flows.groupby("flow")["goodput_bps"].std() / 1e6
    segments = [seg for coll in ax.collections for seg in coll.get_segments()]
    lengths = sorted(round(float(abs(s[1][1] - s[0][1])) / 2, 6) for s in segments)
    assert lengths == sorted(round(float(v), 6) for v in sd.to_numpy())
    # the bar of a flow has the colour of its lines in the time series
    line_colour = {ln.get_label(): _colour_of(ln) for a in ts.axes for ln in a.get_lines()}
    bar_colour = {t.get_text(): None for t in ax.get_xticklabels()}
    assert bar_colour  # labelled
    mptcp_bar = next(p for p in patches if np.isclose(p.get_height(), flows[flows.flow == "mptcp"].goodput_bps.mean() / 1e6))
    assert _colour_of(mptcp_bar) == line_colour["mptcp"]


def test_a_reproduce_results_folder_is_not_drawn_as_80_bars(tmp_path, cli):
    out = tmp_path / "rep"
    # Balia's four experiments at a twentieth of their durations: 43 bars in one panel.
    r = cli("reproduce", "balia", "--seeds", "1", "--time-scale", "0.05", "-o", out)
    assert r.code == 0, r.err
    r = cli("plot", out / "results")
    # one line that says how to narrow it down (or where the report's figures are)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "--where experiment=" in r.err and "balia/table3" in r.err and "figures" in r.err
    r = cli("plot", out / "results", "--where", "experiment=balia/table3")
    assert r.code == 0, r.err
