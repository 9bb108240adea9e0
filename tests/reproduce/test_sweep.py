"""pathpool.sweep: cache resume, --force, job-order merge, and a real local Dask cluster."""

from __future__ import annotations

import tomllib

import pytest
from pathpool import sweep
from pathpool.sweep import Job, run_sweep


@pytest.fixture(scope="module")
def jobs(repo_root):
    with open(repo_root / "scenarios/examples/two_paths.toml", "rb") as fh:
        base = tomllib.load(fh)
    base["duration"] = "2s"
    out = []
    for alg in ("lia", "olia"):
        sc = {**base, "flows": [{**f, "algorithm": alg} if f["kind"] == "mptcp" else f for f in base["flows"]]}
        out += [Job(sc, seed, {"run_algorithm": alg}) for seed in (1, 2)]
    return out


def test_cache_resume_and_force(jobs, tmp_path, monkeypatch):
    calls = []
    real = sweep.run_job
    monkeypatch.setattr(sweep, "run_job", lambda job: calls.append(job.seed) or real(job))
    first = run_sweep(jobs, cache_dir=tmp_path, workers=1)
    assert len(calls) == len(jobs)
    progress = []
    second = run_sweep(jobs, cache_dir=tmp_path, workers=1, progress=lambda d, t: progress.append((d, t)))
    assert len(calls) == len(jobs)  # nothing recomputed
    assert progress[-1] == (len(jobs), len(jobs))
    for name in sweep.TABLES:
        assert first[name].equals(second[name])
    run_sweep(jobs, cache_dir=tmp_path, workers=1, force=True)
    assert len(calls) == 2 * len(jobs)
    # a half-written job (no done marker) is recomputed
    (tmp_path / jobs[0].key() / "done").unlink()
    run_sweep(jobs, cache_dir=tmp_path, workers=1)
    assert len(calls) == 2 * len(jobs) + 1


def test_merge_in_job_order_with_tags(jobs):
    t = run_sweep(jobs, workers=1)
    f = t["flows"]
    assert list(f.columns[:1]) == ["run_algorithm"]
    assert list(f.drop_duplicates(["run_algorithm", "seed"])[["run_algorithm", "seed"]].itertuples(index=False,
                name=None)) == [("lia", 1), ("lia", 2), ("olia", 1), ("olia", 2)]


def test_tag_clash_is_an_error(jobs):
    bad = Job(jobs[0].scenario, 1, {"algorithm": "x"})
    with pytest.raises(ValueError, match="clash"):
        run_sweep([bad], workers=1)


def test_local_processes_and_dask_give_identical_bytes(jobs, tmp_path):
    pytest.importorskip("distributed")
    local = run_sweep(jobs, workers=1)
    pool = run_sweep(jobs, workers=2, cache_dir=tmp_path / "pool")
    dask = run_sweep(jobs, workers=2, dask="local", cache_dir=tmp_path / "dask")
    for name in sweep.TABLES:
        assert local[name].equals(pool[name]), name
        assert local[name].equals(dask[name]), name
        a = local[name].to_parquet(index=False)
        b = dask[name].to_parquet(index=False)
        assert a == b, name


def test_cache_key_does_not_depend_on_where_the_scenario_was_loaded_from(repo_root, tmp_path):
    # The key once hashed the rendering's first line, the absolute path it was loaded from, so
    # a moved checkout (or a worktree) missed every cached run of the same scenario.
    import shutil

    import pathpool

    src = repo_root / "scenarios/examples/two_paths.toml"
    moved = tmp_path / "elsewhere" / "two_paths.toml"
    moved.parent.mkdir()
    shutil.copy(src, moved)
    # Overrides make Rust render the document anew, under a "# ORIGIN --set ..." line.
    here, there = (pathpool.load_scenario(p, ["duration=2s"]) for p in (src, moved))
    assert here.text.startswith(f"# {src} --set duration=2s\n")
    assert here.text != there.text  # the origin line differs ...
    assert Job(here, 1).key() == Job(there, 1).key()  # ... the run does not
    assert Job(here, 1).key() != Job(here, 2).key()
    assert Job(pathpool.load_scenario(src, ["duration=3s"]), 1).key() != Job(here, 1).key()
    # A file read as is keeps every byte in its key (its comments are its own).
    plain = pathpool.load_scenario(src)
    assert sweep._without_origin(plain) == plain.text == src.read_text()
