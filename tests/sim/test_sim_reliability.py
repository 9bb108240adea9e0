"""Fault injection: result sets stay one complete unit (kills at random points, concurrent
writers, mixed files), and SIGINT/SIGTERM/SIGKILL stop `pathpool run` with its workers.

Signals go to real `pathpool` subprocesses. Waits are generous bounds (a stop is expected within
about a second; the bounds allow ten times that on a loaded 2-core machine), never speed claims:
the runs they cut short would take a minute or more.
"""

from __future__ import annotations

import _thread
import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pathpool
import psutil
import pytest
import tomli_w
from pathpool.atomic import atomic_directory, directory_lock
from pathpool.errors import OutputError, ResultSetError

STOP_BOUND_S = 10.0


@pytest.fixture
def long_dict(tiny_dict):
    """The tiny scenario run for ten simulated days without time series: about 100 s of wall
    time on a 2-core VM (one day took 9.9 s for two seeds with -j 2, Intel Xeon KVM), long
    enough that only a working stop can end it in time."""
    doc = {**tiny_dict, "name": "long", "duration": "864000s"}
    del doc["metrics"]
    return doc


def _write_toml(path: Path, doc: dict) -> Path:
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


def _start(*args: object, cwd: Path) -> subprocess.Popen:
    # A session of its own, as a shell job: Ctrl-C can then go to the whole group.
    return subprocess.Popen(
        [sys.executable, "-m", "pathpool.cli", *[str(a) for a in args]],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


@contextlib.contextmanager
def _running(*args: object, cwd: Path):
    """A `pathpool` command (:func:`_start`) that is killed on the way out if it still runs,
    whatever the test did to it or failed on."""
    proc = _start(*args, cwd=cwd)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _lock_held(out: Path) -> bool:
    lock = out.parent / f".{out.name}.lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _wait_for(cond, timeout: float = 60.0) -> None:
    t_end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > t_end:
            raise AssertionError("condition not reached")
        time.sleep(0.05)


def _workers(proc: subprocess.Popen) -> list[psutil.Process]:
    # The spawn context also starts a resource tracker; the pool's workers run pathpool's
    # worker module.
    kids = psutil.Process(proc.pid).children(recursive=True)
    return [k for k in kids if "resource_tracker" not in " ".join(k.cmdline())]


# -- result sets -----------------------------------------------------------------------------


def _assert_stopped(proc: subprocess.Popen, err: str, workers: list[psutil.Process], code: int, word: str,
                    out: Path | None) -> None:
    """What every interrupted command must leave: its exit code, one line naming the signal, no
    worker alive, and no half-written result set."""
    assert proc.returncode == code, err
    assert err.count("\n") == 1 and word in err and "Traceback" not in err, err
    _, alive = psutil.wait_procs(workers, timeout=STOP_BOUND_S)
    assert not alive
    assert out is None or not out.exists()


def test_read_results_refuses_summary_of_another_run(tmp_path, tiny_dict):
    a, b = tmp_path / "a", tmp_path / "b"
    pathpool.run(tiny_dict, seeds=[1]).write(a)
    pathpool.run(tiny_dict, seeds=[2]).write(b)
    assert pathpool.read_results(a).seeds == (1,)
    # What a killed rerun used to leave: the old summary.json beside new Parquet files.
    shutil.copy(b / "summary.json", a / "summary.json")
    with pytest.raises(ResultSetError, match="summary.json is not the file manifest.json lists"):
        pathpool.read_results(a)


def test_read_results_refuses_parquet_of_another_run_and_foreign_timing(tmp_path, tiny_dict):
    a, b = tmp_path / "a", tmp_path / "b"
    pathpool.run(tiny_dict, seeds=[1]).write(a)
    pathpool.run(tiny_dict, seeds=[2]).write(b)
    shutil.copy(b / "timing.json", a / "timing.json")
    with pytest.raises(ResultSetError, match="timing.json belongs to another run"):
        pathpool.read_results(a)
    shutil.copy(b / "manifest.json", a / "manifest.json")
    shutil.copy(b / "timing.json", a / "timing.json")
    with pytest.raises(ResultSetError, match="is not the file manifest.json lists"):
        pathpool.read_results(a)


def test_read_results_refuses_a_set_without_manifest(tmp_path, tiny_dict):
    pathpool.run(tiny_dict, seeds=[1]).write(tmp_path / "a")
    (tmp_path / "a" / "manifest.json").unlink()
    with pytest.raises(ResultSetError, match="manifest.json is missing"):
        pathpool.read_results(tmp_path / "a")


def test_write_replaces_a_whole_set_and_keeps_nothing_of_the_old(tmp_path, tiny_dict):
    out = tmp_path / "r"
    pathpool.run(tiny_dict, seeds=[1, 2]).write(out)
    (out / ".flows.parquet.abc.tmp.parquet").write_bytes(b"left by an old killed writer")
    pathpool.run(tiny_dict, seeds=[3]).write(out)
    assert pathpool.read_results(out).seeds == (3,)
    assert sorted(p.name for p in out.iterdir()) == sorted(pathpool.sim.results.RESULT_FILES)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.lock", "r"]


def test_write_refuses_a_file_and_a_directory_of_other_files(tmp_path, tiny_dict):
    res = pathpool.run(tiny_dict, seeds=[1])
    f = tmp_path / "f"
    f.write_text("mine")
    with pytest.raises(OutputError, match="not a directory"):
        res.write(f)
    d = tmp_path / "d"
    d.mkdir()
    (d / "thesis.tex").write_text("mine")
    with pytest.raises(OutputError, match="other files than a pathpool result set"):
        res.write(d)
    assert f.read_text() == "mine" and (d / "thesis.tex").read_text() == "mine"


def test_stale_temporaries_of_killed_writers_are_removed(tmp_path, tiny_dict):
    out = tmp_path / "r"
    for stale in (tmp_path / ".r.new-abc123", tmp_path / ".r.old-xyz"):
        stale.mkdir()
        (stale / "flows.parquet").write_bytes(b"half")
    pathpool.run(tiny_dict, seeds=[1]).write(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.lock", "r"]


def test_body_error_leaves_the_old_set(tmp_path):
    out = tmp_path / "r"
    with atomic_directory(out) as tmp:
        (tmp / "a").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(out, lambda p: True) as tmp:
        (tmp / "a").write_text("new")
        raise RuntimeError("crash")
    assert (out / "a").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.lock", "r"]


def test_a_second_writer_is_refused(tmp_path, tiny_dict):
    out = tmp_path / "r"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time; from pathpool.atomic import directory_lock\n"
          "with directory_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)"), str(out)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputError, match="another process is writing"):
            pathpool.run(tiny_dict, seeds=[1]).write(out)
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    pathpool.run(tiny_dict, seeds=[1]).write(out)  # the kernel dropped the dead holder's lock
    assert pathpool.read_results(out).seeds == (1,)


def test_lock_is_reentrant_within_a_process(tmp_path, tiny_dict):
    out = tmp_path / "r"
    with directory_lock(out):
        pathpool.run(tiny_dict, seeds=[1]).write(out)
    assert pathpool.read_results(out).seeds == (1,)


def test_two_concurrent_cli_runs_into_one_directory(tmp_path, long_dict):
    sc = _write_toml(tmp_path / "long.toml", long_dict)
    out = tmp_path / "r"
    first = _start("run", sc, "-o", out, "--seeds", "1", "-j", "1", "-q", cwd=tmp_path)
    try:
        _wait_for(lambda: _lock_held(out))
        second = subprocess.run(
            [sys.executable, "-m", "pathpool.cli", "run", str(sc), "-o", str(out), "--seeds", "2", "-q"],
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert second.returncode == 2
        assert second.stderr.count("\n") == 1 and "another process is writing" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)


def test_sigkill_at_random_points_leaves_old_or_new_complete_set(tmp_path, tiny_dict):
    old_seed, new_seed = 1, 2
    # Dense time series make the write phase long (0.8 s of 1.2 s on a 2-core Intel Xeon KVM),
    # longer than the odd trials' wait after the temporary appears (at most 0.6 s), so that
    # those kills land inside it (seen as a `.r.new-*` temporary left behind). With 30 s at
    # 5 ms it was 0.27 s, and five misses in a row came about once in twenty runs.
    doc = {**tiny_dict, "duration": "60s", "metrics": {"interval": "2ms"}}
    sc = _write_toml(tmp_path / "s.toml", doc)
    out = tmp_path / "r"
    pathpool.run(doc, seeds=[old_seed]).write(out)
    rng = random.Random(14)
    outcomes = []
    for trial in range(10):
        proc = _start("run", sc, "-o", out, "--seeds", str(new_seed), "-j", "1", "-q", cwd=tmp_path)
        if trial % 2:
            # Inside the write phase: once the new set's temporary exists, after a random delay.
            with contextlib.suppress(AssertionError):
                _wait_for(lambda p=proc: any(tmp_path.glob(".r.new-*")) or p.poll() is not None, timeout=60)
            time.sleep(rng.uniform(0.0, 0.6))
        else:
            time.sleep(rng.uniform(0.5, 6.0))
        proc.kill()
        proc.communicate()
        stale = list(tmp_path.glob(".r.new-*"))
        mid_write = bool(stale)
        seeds = pathpool.read_results(out).seeds  # raises if the set is mixed or incomplete
        assert seeds in ((old_seed,), (new_seed,))
        outcomes.append((seeds[0], mid_write))
        if trial < 9:  # (the last trial's temporary is left for the final writer to clean)
            for d in stale:
                shutil.rmtree(d)
        if seeds == (new_seed,):  # start over from the old set
            shutil.rmtree(out)
            pathpool.run(doc, seeds=[old_seed]).write(out)
    pathpool.run(doc, seeds=[new_seed]).write(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.lock", "r", "s.toml"]
    print("kills (seed found, killed while writing):", outcomes)
    assert any(mid for _, mid in outcomes)  # the write phase itself was hit


# -- interrupts --------------------------------------------------------------------------------


def test_keyboard_interrupt_stops_a_run_in_this_process(long_dict):
    doc = long_dict
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            pathpool.run(doc, seeds=[1])
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < STOP_BOUND_S


def test_an_exception_from_the_progress_callback_stops_the_run(long_dict):
    seen: list[float] = []

    def progress(f: float) -> None:
        seen.append(f)
        if f > 0.01:
            raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        pathpool.run(long_dict, seeds=[1], progress=progress)
    # Stopped at the first report past 1%, not after the whole run.
    assert seen[-1] < 0.1


@pytest.mark.parametrize(
    ("sig", "code", "word", "group"),
    [
        (signal.SIGINT, 130, "interrupted", False),
        (signal.SIGINT, 130, "interrupted", True),  # Ctrl-C in a terminal: every process of the job
        (signal.SIGTERM, 143, "terminated", False),
    ],
)
@pytest.mark.parametrize("jobs", [1, 2])
def test_signal_stops_pathpool_run_with_its_workers(tmp_path, long_dict, sig, code, word, group, jobs):
    sc = _write_toml(tmp_path / "long.toml", long_dict)
    out = tmp_path / "r"
    with _running("run", sc, "-o", out, "--seeds", "1,2", "-j", jobs, "-q", cwd=tmp_path) as proc:
        _wait_for(lambda: _lock_held(out))
        if jobs > 1:
            _wait_for(lambda: len(_workers(proc)) >= jobs)
        workers = _workers(proc)
        time.sleep(0.5)  # well inside the simulation
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=STOP_BOUND_S)
    _assert_stopped(proc, err, workers, code, word, out)


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                 (signal.SIGTERM, 143, "terminated")])
def test_signal_after_progress_lines_still_gives_one_line(tmp_path, long_dict, sig, code, word):
    # Off a terminal `run` prints a progress line every 10 s, from the parent (no queue from
    # the workers); a signal after the first one still stops everything with one more line.
    sc = _write_toml(tmp_path / "long.toml", long_dict)
    out = tmp_path / "r"
    with _running("run", sc, "-o", out, "--seeds", "1,2", "-j", "2", cwd=tmp_path) as proc:
        first = proc.stderr.readline()  # about 10 s in; both seeds still running
        assert first.startswith("run long: seeds: 0/2 (0%), "), first
        workers = _workers(proc)
        assert len(workers) >= 2
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=STOP_BOUND_S)
    _assert_stopped(proc, err, workers, code, word, out)


def test_workers_exit_when_the_parent_is_killed(tmp_path, long_dict):
    sc = _write_toml(tmp_path / "long.toml", long_dict)
    proc = _start("run", sc, "-o", tmp_path / "r", "--seeds", "1,2", "-j", "2", "-q", cwd=tmp_path)
    try:
        _wait_for(lambda: len(_workers(proc)) >= 2)
        workers = _workers(proc)
        time.sleep(0.5)
    finally:
        proc.kill()
        proc.communicate()
    _, alive = psutil.wait_procs(workers, timeout=STOP_BOUND_S)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert not alive


def test_json_of_timing_names_its_manifest(tmp_path, tiny_dict):
    pathpool.run(tiny_dict, seeds=[1]).write(tmp_path / "r")
    timing = json.loads((tmp_path / "r" / "timing.json").read_text())
    import hashlib

    assert timing["manifest_sha256"] == hashlib.sha256((tmp_path / "r" / "manifest.json").read_bytes()).hexdigest()


def test_sigterm_stops_reproduce_with_its_pool(tmp_path):
    # 20 seeds (2,820 runs, about a minute): the signal must find the pool at work. With 2
    # seeds the whole sweep took 6 s on a loaded CI machine and ended before the signal came.
    with _running("reproduce", "rsf", "-n", "20", "--jobs", "2", "--out", tmp_path / "rep",
                  cwd=tmp_path) as proc:
        _wait_for(lambda: len(_workers(proc)) >= 2)
        workers = _workers(proc)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=STOP_BOUND_S)
    _assert_stopped(proc, err, workers, 143, "terminated", None)
    assert err == "pathpool: terminated (SIGTERM); stopped\n"


def test_seed_check_is_linear():
    # 2 * 10^5 seeds: a quadratic duplicate check would make 2 * 10^10 comparisons (minutes);
    # the last one repeats the first and must still be found.
    from pathpool.errors import ScenarioError
    from pathpool.sim.runner import _check_seeds

    seeds = list(range(200_000))
    assert _check_seeds(seeds, "<test>") == tuple(seeds)
    with pytest.raises(ScenarioError, match="seed 0 is listed twice"):
        _check_seeds([*seeds, 0], "<test>")


def test_sliced_run_equals_one_uninterrupted_run(tiny_dict):
    # run_scenario advances in wall-time-sized slices of simulated time (to look for signals);
    # Simulation.finish() runs to the end in one call. Every table must be the same.
    import tomli_w
    from pathpool import _core

    text = tomli_w.dumps({**tiny_dict, "duration": "20s"})
    for seed in (1, 2):
        sliced = _core.run_scenario(text, "<t>", seed, lambda f: None)
        whole = _core.Simulation(text, "<t>", seed).finish()
        for name in ("flows", "subflows", "links", "series"):
            np.testing.assert_equal(sliced[name], whole[name])  # NaN equals NaN here
        assert sliced["series"]["value"] == whole["series"]["value"]  # (dtype, bytes): exact
        assert {k: v for k, v in sliced["stats"].items() if k != "wall_s"} == {
            k: v for k, v in whole["stats"].items() if k != "wall_s"
        }


def test_the_cache_key_names_the_simulator_build(monkeypatch):
    """A cache of simulator runs never answers for another simulator build with the same
    version number: the key hashes ``pathpool._core.engine_id`` (a hash of the simulator's and
    the algorithms' sources made at build time) beside the scenario, the seed and the version."""
    import pathpool._core as core
    from pathpool.sim.scenario import load_scenario
    from pathpool.sweep import Job

    assert len(core.engine_id) == 16 and int(core.engine_id, 16) >= 0
    job = Job(load_scenario("examples/two_paths"), 1, {})
    before = job.key()
    assert job.key() == before
    monkeypatch.setattr(core, "engine_id", "0" * 16)
    assert job.key() != before
