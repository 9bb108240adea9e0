"""Rough CLI edges: bad --out / --output, --jobs 0 and -1, an unreachable Dask
scheduler. Each gives one line on stderr and exit 2, before any simulation."""

from __future__ import annotations

import pytest
from pathpool import sweep
from pathpool.sweep import Job, run_sweep


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("bad", ["file", "file/sub", "/proc/pathpool-out"])
def test_reproduce_out_that_cannot_be_a_folder(tmp_path, cli, monkeypatch, bad):
    (tmp_path / "file").write_text("mine")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sweep, "run_job", lambda job: pytest.fail("simulated before checking --out"))
    r = cli("reproduce", "rsf", "--seeds", "1", "--out", bad)
    assert r.code == 2 and _one_line(r.err), r.err
    assert bad in r.err
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("bad", ["file", "file/sub", "/proc/pathpool-out", "other"])
def test_run_output_that_cannot_hold_a_result_set(tmp_path, cli, tiny_path, monkeypatch, bad):
    (tmp_path / "file").write_text("mine")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    r = cli("run", tiny_path, "-o", bad, "-q")
    assert r.code == 2 and _one_line(r.err), r.err
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("command", [("run", "SCENARIO"), ("reproduce", "rsf")])
@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_below_one_is_refused(cli, tiny_path, command, jobs):
    args = [tiny_path if a == "SCENARIO" else a for a in command]
    r = cli(*args, "--jobs", jobs)
    assert r.code == 2
    assert "--jobs" in r.err and "Traceback" not in r.err


def test_api_refuses_jobs_below_one(tiny_dict):
    import pathpool

    for bad in (0, -1):
        with pytest.raises(ValueError, match="jobs must be an integer >= 1"):
            pathpool.run(tiny_dict, jobs=bad)
        with pytest.raises(ValueError, match="jobs must be an integer >= 1"):
            run_sweep([Job(tiny_dict, 1)], workers=bad)


def test_unreachable_dask_scheduler(tmp_path, cli, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep, "DASK_CONNECT_TIMEOUT_S", 1.0)
    r = cli("reproduce", "rsf", "--seeds", "1", "--out", tmp_path / "rep", "--dask", "tcp://127.0.0.1:1")
    assert r.code == 2 and _one_line(r.err), r.err
    assert "cannot reach a Dask scheduler" in r.err
