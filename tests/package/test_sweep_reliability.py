"""`pathpool sweep`: grids that cannot label rows wrongly, results that never mix, output that is
one unit, and one line (never a traceback) for what is wrong."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pandas as pd
import pathpool.reproduce.runner  # noqa: F401 - bound to the real experiments before any test patches them
import pytest
from pathpool import sweep
from pathpool.sweep import Job, run_sweep
from pathpool.sweep_cli import GridError, load_grid

SCENARIO = "examples/two_paths"


def _grid(tmp_path, text: str, name: str = "grid.toml"):
    p = tmp_path / name
    p.write_text(f'scenario = "{SCENARIO}"\n' + textwrap.dedent(text))
    return p


def _one_line(r, code: int, *words: str) -> None:
    assert r.code == code, r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    for w in words:
        assert w in r.err, r.err


@pytest.mark.parametrize("a, b", [
    ("flows.0.algorithm", "flows.mptcp.algorithm"),
    ("flows[0].algorithm", "flows.mptcp.algorithm"),
    ("links.0.rate", "links.bottleneck_a.rate"),
    ("duration", " duration"),
])
def test_two_axes_on_one_field_are_refused(tmp_path, cli, a, b):
    # Both axes set the same field: the second one wins in every point, so the rows labelled
    # with the first axis's values all ran the second's value.
    import tomllib

    from pathpool.data import scenario_path

    doc = tomllib.loads(scenario_path(SCENARIO).read_text())
    assert doc["flows"][0]["name"] == "mptcp" and doc["links"][0]["name"] == "bottleneck_a"
    va = '["lia", "olia"]' if "algorithm" in a else '["10Mbps", "20Mbps"]' if "rate" in a else '["2s", "3s"]'
    vb = '["balia"]' if "algorithm" in b else '["30Mbps"]' if "rate" in b else '["4s"]'
    g = _grid(tmp_path, f'seeds = [1]\n[axes]\n"{a}" = {va}\n"{b}" = {vb}\n')
    with pytest.raises(GridError, match="same field"):
        load_grid(g)
    r = cli("sweep", g, "-o", tmp_path / "out", "-j", "1")
    _one_line(r, 2, "same field", a.strip(), b.strip())
    assert not (tmp_path / "out").exists()


def test_two_grids_sharing_a_point_do_not_mix_through_the_cache(tmp_path, cli):
    out = tmp_path / "out"
    ga = _grid(tmp_path, '[axes]\n"flows.mptcp.algorithm" = ["lia"]\n', "a.toml")
    # Both points are the scenario unchanged (LIA, 10 s): the same runs, one cache entry each.
    gb = _grid(tmp_path, '[axes]\n"duration" = ["10s"]\n', "b.toml")
    for g in (ga, gb):
        r = cli("sweep", g, "-o", out, "-j", "1", "--seeds", "1", "--json")
        assert r.code == 0, r.err
    flows = pd.read_parquet(out / "flows.parquet")
    summary = pd.read_csv(out / "summary.csv")
    assert "flows.mptcp.algorithm" not in flows.columns and "flows.mptcp.algorithm" not in summary.columns
    assert list(flows["duration"]) == ["10s", "10s"] and list(summary["duration"]) == ["10s", "10s"]
    assert flows["goodput_bps"].gt(0).all()


def test_the_cache_keeps_no_labels_and_relabels_each_job(tmp_path):
    import pathpool
    from pathpool.data import scenario_path

    sc = pathpool.load_scenario(scenario_path(SCENARIO), ["duration=2s"])
    first = run_sweep([Job(sc, 1, {"a": 1})], cache_dir=tmp_path, workers=1)
    second = run_sweep([Job(sc, 1, {"b": "x"})], cache_dir=tmp_path, workers=1)
    assert list(first["flows"].columns[:2]) == ["a", "seed"]
    assert list(second["flows"].columns[:2]) == ["b", "seed"] and "a" not in second["flows"].columns
    pd.testing.assert_frame_equal(first["flows"].drop(columns="a"), second["flows"].drop(columns="b"))


@pytest.mark.parametrize("seeds, option", [("seeds = [1, 1]\n", None), ("", "1,1"), ("", "1-2,2")])
def test_duplicate_seeds_are_refused(tmp_path, cli, seeds, option):
    g = _grid(tmp_path, seeds + '[axes]\n"duration" = ["2s"]\n')
    r = cli("sweep", g, "-o", tmp_path / "out", "-j", "1", *(["--seeds", option] if option else []))
    _one_line(r, 2, "seed", "twice")
    assert not (tmp_path / "out").exists()


def test_a_second_sweep_into_the_same_folder_is_refused(tmp_path, cli):
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathpool.atomic import directory_lock
            with directory_lock({str(out)!r}):
                print("held", flush=True)
                time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = cli("sweep", _grid(tmp_path, 'seeds = [1]\n[axes]\n"duration" = ["2s"]\n'), "-o", out, "-j", "1")
        _one_line(r, 2, "another process is writing")
    finally:
        holder.kill()
        holder.wait()


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_leaves_the_previous_sweep_whole(tmp_path, cli, monkeypatch):
    out = tmp_path / "out"
    ga = _grid(tmp_path, 'seeds = [1]\n[axes]\n"duration" = ["2s"]\n', "a.toml")
    gb = _grid(tmp_path, 'seeds = [1]\n[axes]\n"flows.mptcp.algorithm" = ["olia"]\n"duration" = ["3s"]\n', "b.toml")
    assert cli("sweep", ga, "-o", out, "-j", "1").code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".cache.lock"}
    monkeypatch.setattr(pd.DataFrame, "to_csv", _enospc)
    r = cli("sweep", gb, "-o", out, "-j", "1", "--json")  # --json: no progress lines on stderr
    _one_line(r, 1, str(out), "No space left on device")
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".cache.lock"}
    assert after == before  # grid A's complete set, nothing of B beside it
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name or ".new-" in p.name]


def test_mixed_value_types_on_an_axis_are_refused_before_running(tmp_path, cli):
    g = _grid(tmp_path, 'seeds = [1]\n[axes]\n"duration" = [1, "2s"]\n')
    with pytest.raises(GridError, match="axes.duration"):
        load_grid(g)
    _one_line(cli("sweep", g, "-o", tmp_path / "out", "-j", "1"), 2, "axes.duration", "one type")


def test_huge_grid_is_refused_before_it_is_built(tmp_path, cli, monkeypatch):
    values = ", ".join(f'"{k}s"' for k in range(1, 101))
    axes = "".join(f'"flows.{f}.start" = [{values}]\n' for f in ("mptcp", "tcp")) + \
        f'"duration" = [{values}]\n"links.0.delay" = [{", ".join(f"{chr(34)}{k}ms{chr(34)}" for k in range(1, 101))}]\n'
    g = _grid(tmp_path, f"seeds = [1]\n[axes]\n{axes}")
    from pathpool import sweep_cli

    monkeypatch.setattr(sweep_cli.Grid, "points", lambda self: pytest.fail("the grid was expanded"))
    _one_line(cli("sweep", g, "-o", tmp_path / "out", "-j", "1"), 2, "100000000", "at most")


def test_a_cache_entry_with_a_missing_file_is_run_again(tmp_path):
    import pathpool
    from pathpool.data import scenario_path

    sc = pathpool.load_scenario(scenario_path(SCENARIO), ["duration=2s"])
    job = Job(sc, 1, {})
    first = run_sweep([job], cache_dir=tmp_path, workers=1)
    (tmp_path / job.key() / "links.parquet").unlink()
    again = run_sweep([job], cache_dir=tmp_path, workers=1)
    for name in sweep.TABLES:
        pd.testing.assert_frame_equal(first[name], again[name])
    assert (tmp_path / job.key() / "links.parquet").exists()


def test_orphaned_temporaries_in_the_cache_are_removed(tmp_path):
    import pathpool
    from pathpool.data import scenario_path

    sc = pathpool.load_scenario(scenario_path(SCENARIO), ["duration=2s"])
    job = Job(sc, 1, {})
    run_sweep([job], cache_dir=tmp_path, workers=1)
    # what a writer SIGKILLed between creating and renaming its temporary leaves
    orphan = tmp_path / job.key() / ".flows.parquet.k3j2x.tmp.parquet"
    orphan.write_bytes(b"PAR1 half")
    run_sweep([job], cache_dir=tmp_path, workers=1)
    assert not orphan.exists()


def test_reproduce_on_a_full_disk_is_one_line(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(pd.DataFrame, "to_parquet", _enospc)
    r = cli("reproduce", "balia", "--seeds", "1", "--only", "table3", "--time-scale", "0.05", "-j", "1",
            "-o", tmp_path / "rep")
    assert r.code == 1, r.err
    last = r.err.strip().splitlines()[-1]
    assert "Traceback" not in r.err and "No space left on device" in last and str(tmp_path / "rep") in last, r.err
    assert not (tmp_path / "rep" / "results").exists()


def test_entries_written_with_labels_by_earlier_versions_are_relabelled(tmp_path, monkeypatch):
    # Entries once kept the job's tags as leading columns; they stay valid (no rerun) and a
    # later sweep's rows carry its own labels only.
    import pathpool
    from pathpool.data import scenario_path

    sc = pathpool.load_scenario(scenario_path(SCENARIO), ["duration=2s"])
    old = Job(sc, 1, {"flows.mptcp.algorithm": "lia"})
    tables = sweep.run_job(old)
    d = tmp_path / old.key()
    d.mkdir()
    for name in sweep.TABLES:
        tables[name].to_parquet(d / f"{name}.parquet", index=False)
    (d / "done").write_text(old.key())
    calls = []
    real = sweep.run_job
    monkeypatch.setattr(sweep, "run_job", lambda job: calls.append(job) or real(job))
    got = run_sweep([Job(sc, 1, {"duration": "2s"})], cache_dir=tmp_path, workers=1)
    assert calls == []
    assert list(got["flows"].columns[:2]) == ["duration", "seed"] and "flows.mptcp.algorithm" not in got["flows"]
    pd.testing.assert_frame_equal(got["flows"].drop(columns="duration"),
                                  tables["flows"].drop(columns="flows.mptcp.algorithm"), check_dtype=False)
